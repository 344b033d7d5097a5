"""When a run measures this machine's reference compile, decided once: "now" (before the
first test, in a child process of its own), "at_end" (a save alone into a baseline of this
machine model: measured only if the save writes something this run measured), or "never";
and which stored values of this machine it checks against. Pure (no pytest, no jax): the
session gives it the facts and measures as it says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY, other_machine

When = Literal["now", "at_end", "never"]


@dataclass(frozen=True)
class ReferencePlan:
    """What a run does about the reference compile (see `plan`)."""

    when: When
    # The baseline's environments measured on this machine model: the stored values a fresh
    # check agrees with or not (reference.for_session).
    known: tuple[Mapping[str, Any], ...] = ()
    # This machine's stored reference fields (the first environment holding one): what a
    # save that left the check for its end assumes until the check says otherwise.
    stored: Mapping[str, Any] = field(default_factory=dict)


def plan(
    *,
    switched_off: bool,
    save: bool,
    writes_report: bool,
    baseline_environments: Sequence[Mapping[str, Any]],
    this_machine: Mapping[str, Any],
) -> ReferencePlan:
    """The plan of a run. `switched_off`: the user or the setting said not to measure it
    (--jaxperf-no-reference-compile, `jaxperf ab`, an xdist worker, valgrind); `save`: the
    run saves a baseline; `writes_report`: it writes a run file or history line, which
    carries the reference to another machine's comparison; `baseline_environments`: the
    baseline's environment blocks (its own and its entries'), `this_machine` this
    machine's keys."""
    known = tuple(e for e in baseline_environments if not other_machine([e], this_machine))
    stored: dict[str, Any] = next(
        (
            {k: env[k] for k in (REFERENCE_KEY, SPREAD_KEY, SAMPLES_KEY) if k in env}
            for env in known
            if REFERENCE_KEY in env
        ),
        {},
    )
    # Used where a save stores it, a report carries it, or a gate compares an entry of
    # another CPU model or core count (it scales compile seconds across machines, nothing
    # else). Measuring it costs a process and five compiles (about 4 CPU seconds).
    used = save or writes_report or other_machine(baseline_environments, this_machine)
    if switched_off or not used:
        return ReferencePlan("never", known, stored)
    # A save alone into a baseline whose every environment is this machine model's, one
    # holding its reference: nothing compares across machines meanwhile, and a re-save that
    # writes nothing this run measured needs no check of the stored value.
    mine = len(known) == len(baseline_environments)
    if save and not writes_report and mine and stored:
        return ReferencePlan("at_end", known, stored)
    return ReferencePlan("now", known, stored)
