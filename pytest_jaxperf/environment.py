"""Which differences between two environment blocks make timings incomparable (pure; the
block itself is captured by `measure.machine`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .model import PROGRAM_SIZE

# The kinds of value a baseline entry holds, each compared between two environments on keys
# of its own (storage/resave.py's keep rules, `compare.Gating.between`'s gating), and the
# names a `pytest_jaxperf_compatible` hook is asked about.
COUNTS, SIZES, COMPILE, RUNTIME, INSTRUCTIONS = (
    "counts", PROGRAM_SIZE, "compile seconds", "runtime", "instructions"
)  # fmt: skip
# A rule from outside the core (a plugin's `pytest_jaxperf_compatible` hook, see
# hookcalls.py): (kind, baseline's block, this run's block) -> True (they gate that kind),
# False (they do not), None (the built-in rule decides).
Compatible = Callable[[str, Mapping[str, Any], Mapping[str, Any]], "bool | None"]

# Timings are compared only when all of these match the baseline's.
TIMING_KEYS = (
    "jax", "jaxlib", "backend", "device_kind", "device_count", "x64", "program_flags", "cpu",
    "cpu_count", "cpu_dispatch", "xdist_workers", "valgrind",
)  # fmt: skip
# Compared only when both sides have them (older reports lack them).
OPTIONAL_KEYS = frozenset(
    {"cpu_dispatch", "xdist_workers", "program_flags", "python_build", "libc"}
)
# Program metrics (jaxpr equations, HLO ops, cost and memory) depend on these only: what the
# same code lowers to (the versions, the backend and its device kind, x64, the XLA flags and
# JAX options in `program_flags`) and how many devices a sharded program is split over (a
# batch sharded over jax.devices() gave 10 optimized HLO ops on 1 CPU device, 22 on 4).
STATIC_KEYS = ("jax", "jaxlib", "backend", "device_kind", "device_count", "x64", "program_flags")
# Instructions per call (the instructions clock) depend on these only: the same code on the
# same simulated CPU, whatever the host's CPU model and load; and, for the compile clock's
# counts (most of a trace's instructions are Python's, a compile's malloc's), the same
# Python build and C library (compared where both sides have them: older files lack them);
# and the same counting rules (`instructions_counting`: a file without it was counted by
# 0.1.0's, so its counts are not compared with today's).
INSTRUCTION_KEYS = (
    *STATIC_KEYS, "python", "valgrind", "instructions_isa", "python_build", "libc",
    "instructions_counting",
)  # fmt: skip
# The machine: where only these differ, compile seconds are compared through each machine's
# reference compile (`reference.py`), stored under REFERENCE_KEY.
MACHINE_KEYS = ("cpu", "cpu_count")
REFERENCE_KEY = "reference_compile_cpu_s"
# Beside it: the relative spread of its samples ((max - min) / median) and their number.
SPREAD_KEY = "reference_compile_spread"
SAMPLES_KEY = "reference_compile_samples"
# Two references of one machine agree (the stored one stands) within this share of the stored
# one's seconds, or within the wider of their samples' spreads: one rule, for the session's
# check and for what a save keeps.
REFERENCE_AGREE = 0.1
# A reference whose samples spread more than this is not scaled by: the factor between two
# machines would be off by about as much (the cross-model data's references, one per run,
# ranged 0.364-0.558 s on one machine; its compile seconds stayed within 2.40x).
NOISY_SPREAD = 0.5
# Why compile seconds are not scaled where the baseline has a reference and this run none.
NO_REFERENCE_HERE = (
    "this run measured no reference compile (--jaxperf-no-reference-compile, or it failed) "
    "to scale by"
)
# A run made with --jaxperf-timing=off says so in its run file's environment ("timing":
# "off"): `jaxperf merge` keeps the stored timings of its tests, as its own save would, and
# `jaxperf compare` gates no runtime of it, as the plugin did not. No baseline holds it
# (storage/resave.py drops it), and no gating compares it.
TIMING_KEY = "timing"
# A run gated with other plugins' `pytest_jaxperf_compatible` hooks names them here: `jaxperf
# compare`, which judges by the built-in rules (no hook runs there), says its verdicts may
# then differ from the plugin's. No baseline holds it either.
HOOKED_KEY = "compatible_hooks"
# How a run was made or judged, not where: never an entry's environment, never compared.
RUN_KEYS = (TIMING_KEY, HOOKED_KEY)
# Why a run on pytest-xdist workers gates no timings (by the plugin, nor by `jaxperf compare`
# reading its report): they were measured beside other workers.
UNDER_XDIST = "measured under pytest-xdist, beside other workers"
# Why a run under valgrind (the instructions clock) gates no seconds: they include valgrind
# translating each piece of code on its first use, so they follow which tests ran before (the
# example's dense_relu compiled in 0.11 s in a full run, 3.6 s when its test ran alone).
UNDER_VALGRIND = "measured under valgrind, whose seconds follow which tests ran before"
# How the session says jit was switched off (JAX_DISABLE_JIT): nothing was compiled, so the
# run's counts and timings are no measure of the jitted code (see storage/resave.py).
JIT_DISABLED = "jax_disable_jit is on"


def differences(
    keys: tuple[str, ...], baseline: Mapping[str, Any], current: Mapping[str, Any]
) -> list[str]:
    """'jax 0.10.1 -> 0.10.2' for each of `keys` that differs (a key of OPTIONAL_KEYS only
    where both sides have it)."""
    found = []
    for key in keys:
        before, now = baseline.get(key), current.get(key)
        if before == now or (key in OPTIONAL_KEYS and (key not in baseline or key not in current)):
            continue
        if isinstance(before, Mapping) and isinstance(now, Mapping):
            found += _flag_differences(before, now)
        else:
            found.append(f"{key} {before} -> {now}")
    return found


def _flag_differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """'jax_default_prng_impl threefry2x32 -> rbg', 'XLA_FLAGS --xla_x unset -> true': one
    per flag that differs, not the whole mapping."""
    found = []
    for name in sorted({*before, *now}):
        old, new = before.get(name, "unset"), now.get(name, "unset")
        if old != new:
            found.append(f"{'XLA_FLAGS ' if name.startswith('--') else ''}{name} {old} -> {new}")
    return found


def timing_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """'jax 0.10.1 -> 0.10.2' for each timing-relevant difference; empty when comparable."""
    found = differences(TIMING_KEYS, baseline, current)
    if current.get("valgrind"):
        found.append(UNDER_VALGRIND)
    return found


def instruction_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Differences that change instructions per call; empty when they are comparable."""
    return differences(INSTRUCTION_KEYS, baseline, current)


def static_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Differences that change program metrics; empty when they are comparable."""
    return differences(STATIC_KEYS, baseline, current)


@dataclass(frozen=True)
class MachineScale:
    """How much faster or slower this machine compiles than the baseline entry's: the CPU
    seconds of the same reference compile on each."""

    before_s: float
    now_s: float
    differences: tuple[str, ...]  # "cpu AMD EPYC -> Intel(R) Xeon(R) Processor", ...

    @property
    def factor(self) -> float:
        return self.now_s / self.before_s


def machine_scale(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> MachineScale | None:
    """The scale between the two machines where the machine (CPU model, core count) is the
    only timing difference and both measured the reference compile; else None."""
    every = timing_differences(baseline, current)
    machine = differences(MACHINE_KEYS, baseline, current)
    if not machine or len(every) != len(machine) or too_noisy(baseline, current):
        return None
    before, now = baseline.get(REFERENCE_KEY), current.get(REFERENCE_KEY)
    if not all(_positive(v) for v in (before, now)):
        return None
    return MachineScale(float(before), float(now), tuple(machine))  # type: ignore[arg-type]


def _positive(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def too_noisy(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why compile seconds are not scaled between the two machines although the machine is
    the only difference: a reference whose samples spread more than NOISY_SPREAD (a
    reference saved before its spread was stored is taken as it is), or none measured by
    this run where the baseline has one. None otherwise."""
    machine = differences(MACHINE_KEYS, baseline, current)
    if not machine:
        return None
    if REFERENCE_KEY in baseline and REFERENCE_KEY not in current:
        only = len(timing_differences(baseline, current)) == len(machine)
        return NO_REFERENCE_HERE if only else None
    noisy = []
    for where, env in (("there", baseline), ("here", current)):
        spread = env.get(SPREAD_KEY)
        if _positive(spread) and spread > NOISY_SPREAD:
            noisy.append(f"{where} {spread:.0%}")
    if not noisy:
        return None
    return (
        f"the reference compile is too noisy to scale by (its samples spread {', '.join(noisy)}"
        f"; at most {NOISY_SPREAD:.0%} is used)"
    )


def other_machine(envs: Iterable[Mapping[str, Any]], here: Mapping[str, Any]) -> bool:
    """Whether any of `envs` was measured on another machine (CPU model, core count) than
    `here`: only against such an environment does a reference compile scale anything."""
    return any(differences(MACHINE_KEYS, env, here) for env in envs)


def reference_missing(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether compile seconds would be compared across the two machines but for the
    baseline's reference compile (saved before it existed): re-saving it gates them."""
    every = timing_differences(baseline, current)
    machine = differences(MACHINE_KEYS, baseline, current)
    return (
        bool(machine)
        and len(every) == len(machine)
        and REFERENCE_KEY not in baseline
        and REFERENCE_KEY in current
    )


def references_agree(
    stored_s: float, stored_spread: float, fresh_s: float, fresh_spread: float
) -> bool:
    """Whether a fresh reference compile of the same machine agrees with the stored one."""
    tol = max(REFERENCE_AGREE, stored_spread, fresh_spread)
    return abs(fresh_s - stored_s) <= tol * stored_s


def stored_reference_agrees(stored: Mapping[str, Any], fresh: Mapping[str, Any]) -> bool:
    """references_agree() of the references two environment blocks store (a spread not
    stored counts as none); a side without one agrees only with another without one."""
    before, now = stored.get(REFERENCE_KEY), fresh.get(REFERENCE_KEY)
    if not (_positive(before) and _positive(now)):
        return before == now
    spreads = [env.get(SPREAD_KEY) for env in (stored, fresh)]
    a, b = (float(s) if _positive(s) else 0.0 for s in spreads)
    return references_agree(float(before), a, float(now), b)


def timing_off(env: Mapping[str, Any]) -> bool:
    """Whether the run was made with --jaxperf-timing=off (its run file says so)."""
    return env.get(TIMING_KEY) == "off"


def under_xdist(env: Mapping[str, Any]) -> bool:
    """Whether the report's tests ran on pytest-xdist workers."""
    return bool(env.get("xdist_workers"))


def unmeasured(env: Mapping[str, Any]) -> dict[str, str]:
    """{metric: why} for the metrics the run's self-check could not vouch for (never gated)."""
    value = env.get("not_measured")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def other_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """'gpu_driver 550 -> 555' for each key that differs besides those the built-in rules
    compare (a key a plugin added, `python`, `platform`): what a plugin's rule may have
    looked at. The reference compile's figures are scaled by, never matched, and how the run
    was made (not_measured, RUN_KEYS) is no environment: left out."""
    ruled = {*TIMING_KEYS, *INSTRUCTION_KEYS, REFERENCE_KEY, SPREAD_KEY, SAMPLES_KEY}
    ruled |= {"not_measured", *RUN_KEYS}
    keys = tuple(sorted({*baseline, *current} - ruled))
    return differences(keys, baseline, current)


@dataclass(frozen=True)
class EnvironmentChanges:
    """What a `pytest_jaxperf_environment` hook did to the block it was shown: the keys it
    set (added or changed) and those it removed. Made once, where the hook runs (the
    controller), and applied to the block each process captures (its pytest-xdist workers
    too), so that every process gates and saves in the same environment."""

    set: Mapping[str, Any] = field(default_factory=dict)
    removed: tuple[str, ...] = ()

    @classmethod
    def between(cls, shown: Mapping[str, Any], after: Mapping[str, Any]) -> EnvironmentChanges:
        changed = {k: v for k, v in after.items() if k not in shown or shown[k] != v}
        return cls(changed, tuple(sorted(k for k in shown if k not in after)))

    def apply(self, env: dict[str, Any]) -> None:
        """Set and remove the keys in `env`, in place."""
        for key in self.removed:
            env.pop(key, None)
        env.update(self.set)

    def to_json(self) -> dict[str, Any]:
        """As plain values (what pytest-xdist hands a worker at its start)."""
        return {"set": dict(self.set), "removed": list(self.removed)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EnvironmentChanges:
        return cls(dict(data.get("set", {})), tuple(data.get("removed", ())))
