"""The hooks pytest-jaxperf offers other plugins and conftest.py files (declared here,
registered by `plugin.pytest_addhooks`, called by `hookcalls.py`): what the run's environment
block holds, and which environments gate which kind of value. Documented in
docs/plugin-hooks.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest


@pytest.hookspec
def pytest_jaxperf_environment(config: pytest.Config, environment: dict[str, Any]) -> None:
    """Add, change or remove keys of the run's environment block, in place, before any test
    is gated or saved: what the run file and the baseline store, and what the gates compare.

    Called once per session, in the process that starts it (the pytest-xdist controller:
    its workers apply the same changes to the block each captures). `environment` holds the
    keys known before JAX starts (`python`, `platform`, `cpu`, `cpu_count`); JAX's keys are
    captured later, where the tests run, and a key set here replaces the captured value.
    Values must be JSON values. A key no built-in rule compares (`gpu_driver`) is stored and
    shown, and gates nothing unless a `pytest_jaxperf_compatible` hook says so.

    .. code-block:: python

        def pytest_jaxperf_environment(config, environment):
            environment["gpu_driver"] = read_driver_version()
    """


@pytest.hookspec(firstresult=True)
def pytest_jaxperf_compatible(
    config: pytest.Config,
    metric_kind: str,
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
) -> bool | None:
    """Whether a baseline entry measured in `baseline` gates this run's values of
    `metric_kind` measured in `current` (environment blocks): True to gate them (compile
    seconds as measured, not scaled between machines), False to leave them out with an
    `environment_differs` note, None to leave it to the built-in rule. The first answer
    that is not None counts.

    `metric_kind` is one of "program size", "compile seconds", "runtime", "instructions"
    (counts are gated in every environment). What the run itself rules out (timings under
    pytest-xdist workers or valgrind) stays out whatever the answer. Only the plugin's gate
    asks: `jaxperf compare` and what `--jaxperf-save` keeps follow the built-in rules.

    .. code-block:: python

        def pytest_jaxperf_compatible(config, metric_kind, baseline, current):
            # Compile seconds move with the GPU driver: not compared across two.
            if metric_kind == "compile seconds" and (
                baseline.get("gpu_driver") != current.get("gpu_driver")
            ):
                return False
            return None
    """
