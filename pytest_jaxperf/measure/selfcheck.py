"""The start-up self-check in words: which metrics this JAX cannot be counted on for, the one
line that says why (a JAX whose internals moved, or a probe that misbehaved), and the metrics
left out where the user switched jit off. The session decides what a finding does (stop the
run, or warn under --jaxperf-allow-partial)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..environment import JIT_DISABLED


@dataclass(frozen=True)
class Finding:
    """What the self-check found: {metric: why} of the metrics it failed, the line naming
    them (None: none failed), and why traces and compiles are not measured where jit is off
    (None: it is on)."""

    failed: Mapping[str, str] = field(default_factory=dict)
    line: str | None = None
    jit_off: str | None = None


def run(rootdir: Path) -> Finding:
    """Probe this JAX once (the recorder's self-check) and read whether jit is switched off."""
    from . import _jaxhooks
    from .recorder import RECORDER

    problems = RECORDER.self_check(rootdir)
    line = problem_line(problems, _jaxhooks.jax_version(), _jaxhooks.SUPPORTED)
    jit_off = f"{JIT_DISABLED}: jitted functions run op by op" if _jaxhooks.jit_disabled() else None
    return Finding(dict(problems), line, jit_off)


def problem_line(problems: Mapping[str, str], version: str, supported: str) -> str | None:
    """One line naming what failed: a hook missing means a JAX this plugin does not support,
    anything else a probe that misbehaved; None where nothing failed."""
    if not problems:
        return None
    what = "; ".join(f"{metric}: {why}" for metric, why in sorted(problems.items()))
    if any(why.startswith("missing ") for why in problems.values()):
        return (
            f"pytest-jaxperf: jax {version} is not supported, its internals moved ({what}); "
            f"supported: {supported}"
        )
    return f"pytest-jaxperf: the self-check failed on jax {version} ({what})"
