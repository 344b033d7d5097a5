"""When a run measures the reference compile (reference_plan.py): decided once, from the
settings and the baseline's environments (unit)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_jaxperf.environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY
from pytest_jaxperf.reference_plan import ReferencePlan, plan

HERE: dict[str, Any] = {"cpu": "AMD EPYC", "cpu_count": 2}
STORED = {**HERE, REFERENCE_KEY: 0.3, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
OTHER = {"cpu": "Other CPU", "cpu_count": 2, REFERENCE_KEY: 0.6}


def _plan(envs: list[dict[str, Any]], **kw: bool) -> ReferencePlan:
    args = {"switched_off": False, "save": False, "writes_report": False, **kw}
    return plan(baseline_environments=envs, this_machine=HERE, **args)


@pytest.mark.parametrize(
    ("envs", "kw", "when"),
    [
        ([], {}, "never"),  # a gate without a baseline: nothing reads it
        ([STORED], {}, "never"),  # a gate of this machine's entries compares directly
        ([STORED, OTHER], {}, "now"),  # an entry of another CPU model: scaled by it
        ([], {"writes_report": True}, "now"),  # the run file carries it
        ([], {"save": True}, "now"),  # the first save stores it
        ([STORED], {"save": True}, "at_end"),  # a re-save: checked only if it writes
        ([HERE], {"save": True}, "now"),  # none stored yet for this machine
        ([STORED, OTHER], {"save": True}, "now"),  # compared across machines meanwhile
        ([STORED], {"save": True, "writes_report": True}, "now"),
        ([STORED, OTHER], {"save": True, "switched_off": True}, "never"),
    ],
)
def test_when_the_reference_is_measured(
    envs: list[dict[str, Any]], kw: dict[str, bool], when: str
) -> None:
    assert _plan(envs, **kw).when == when


def test_the_plan_knows_this_machines_stored_values_only() -> None:
    got = _plan([OTHER, STORED], save=True)
    assert got.known == (STORED,)
    assert got.stored == {REFERENCE_KEY: 0.3, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
