"""Calling the hooks of hookspecs.py for one --jaxperf session (the pytest side): the changes
a `pytest_jaxperf_environment` hook makes to the environment block, made once and handed to
pytest-xdist workers, and a `pytest_jaxperf_compatible` hook as the rule `compare.Gating`
takes (compare imports no pytest: the rule comes to it as a callable)."""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from . import _xdist
from .environment import Compatible, EnvironmentChanges


def environment_changes(config: pytest.Config) -> EnvironmentChanges:
    """What the plugins' `pytest_jaxperf_environment` hooks change of the block: asked once,
    in the process that started the session; a pytest-xdist worker takes its controller's
    (a hook that reads a clock or a file could answer each worker otherwise)."""
    handed = _xdist.controller_environment(config)
    if handed is not None:
        return EnvironmentChanges.from_json(handed)
    from .measure import machine

    shown = machine.before_jax()
    environment = copy.deepcopy(shown)
    config.hook.pytest_jaxperf_environment(config=config, environment=environment)
    bad = [repr(k) for k in environment if not isinstance(k, str)]
    try:
        json.dumps(environment, allow_nan=False)
    except (TypeError, ValueError) as exc:
        bad.append(str(exc))
    if bad:
        raise pytest.UsageError(
            "pytest-jaxperf: a pytest_jaxperf_environment hook left keys or values that are "
            f"not JSON in the environment block ({'; '.join(bad)}): the run file and the "
            "baseline store it as JSON"
        )
    return EnvironmentChanges.between(shown, environment)


def compatible_hooks(config: pytest.Config) -> list[str]:
    """The names of the plugins (a conftest: its file's name) that implement
    `pytest_jaxperf_compatible`: written into the run file (environment.HOOKED_KEY)."""
    impls = config.hook.pytest_jaxperf_compatible.get_hookimpls()
    return sorted({Path(impl.plugin_name).name for impl in impls})


def compatible_rule(config: pytest.Config) -> Compatible | None:
    """The plugins' `pytest_jaxperf_compatible` hooks as one rule (the first answer that is
    not None); None where no plugin implements it (the built-in rules alone)."""
    hook = config.hook.pytest_jaxperf_compatible
    if not hook.get_hookimpls():
        return None

    def rule(kind: str, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> bool | None:
        # Read-only views: a hook that wrote into a block would change what is saved.
        said = hook(
            config=config,
            metric_kind=kind,
            baseline=types.MappingProxyType(dict(baseline)),
            current=types.MappingProxyType(dict(current)),
        )
        return None if said is None else bool(said)

    return rule
