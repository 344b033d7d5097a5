"""`jaxperf ab --cpus`: the CPUs every run is confined to (Linux): the list it takes (the
syntax of `taskset -c`, or `all`), checked against the CPUs this process may use, the default
(one CPU), written back for the header, and applied to each run."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

SYNTAX = "all, or CPU numbers as taskset -c takes them, such as 1, 0-3 or 0,2"


# What `--cpus all` parses to: no confining.
ALL: frozenset[int] = frozenset()


def parse(text: str) -> frozenset[int]:
    """The CPUs `text` names, ALL for "all"; ValueError (its message says what is expected)
    otherwise."""
    if text.strip() == "all":
        return ALL
    cpus: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"expected {SYNTAX}, got {text!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"expected {SYNTAX}, got {text!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def available() -> frozenset[int] | None:
    """The CPUs this process may run on; None where the platform cannot confine a process."""
    if not hasattr(os, "sched_getaffinity") or not hasattr(os, "sched_setaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def default(allowed: frozenset[int] | None) -> frozenset[int] | None:
    """Where the runs go when --cpus is not given: one CPU, the highest this process may use;
    None (not confined) where the platform cannot confine a process."""
    return frozenset({max(allowed)}) if allowed else None


def problem(cpus: frozenset[int], allowed: frozenset[int] | None) -> str | None:
    """Why the runs cannot be confined to `cpus`, as one line; None when they can."""
    if allowed is None:
        return "--cpus needs a platform that confines a process to CPUs (Linux); leave it out"
    missing = cpus - allowed
    if missing:
        return (
            f"--cpus {label(cpus)}: CPU {label(missing)} is not among those this process may "
            f"use ({label(allowed)}); pick from those"
        )
    return None


def label(cpus: Iterable[int]) -> str:
    """`cpus` as taskset -c writes a list: runs of consecutive numbers as ranges."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def confine(cpus: frozenset[int] | None) -> Callable[[], None] | None:
    """What a run's child process calls before it starts (subprocess's preexec_fn): confine
    itself to `cpus`; None when every CPU is allowed."""
    if cpus is None:
        return None

    def child() -> None:
        os.sched_setaffinity(0, cpus)

    return child
