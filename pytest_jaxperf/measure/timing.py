"""Steady-state runtime: warm-up, calibrated rounds under a time budget, and their statistics."""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..model import RuntimeStats

T = TypeVar("T")
Clock = Callable[[], float]

# Raw per-round times kept in a record, so a later run can test significance against them.
MAX_SAMPLES = 100


@dataclass(frozen=True)
class TimingConfig:
    """How long and how often to measure."""

    min_rounds: int = 20
    # Seconds of timed rounds, not counting warm-up and calibration: 250 rounds of >= 2 ms
    # at least, plenty for a rank test, in half of pytest-benchmark's default budget.
    max_time: float = 0.5
    max_rounds: int = 10_000
    warmup_time: float = 0.05
    # A round repeats the call until it lasts this long: well above timer resolution and
    # dispatch jitter, and long enough to average over the two speed modes that tiny
    # functions show on CPU.
    min_round_time: float = 2e-3


def summarize(
    samples: Sequence[float], iterations: int = 1, cpu_samples: Sequence[float] | None = None
) -> RuntimeStats:
    """The statistics of per-call round times (and of their CPU seconds, when read)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    iqr = q3 - q1
    low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    return RuntimeStats(
        min_s=ordered[0],
        max_s=ordered[-1],
        median_s=statistics.median(ordered),
        mean_s=statistics.fmean(ordered),
        stddev_s=statistics.stdev(ordered) if len(ordered) >= 2 else 0.0,
        q1_s=q1,
        q3_s=q3,
        iqr_s=iqr,
        rounds=len(ordered),
        iterations=iterations,
        outliers=sum(1 for s in ordered if s < low or s > high),
        samples_s=tuple(_thin(list(samples), MAX_SAMPLES)),
        cpu_median_s=statistics.median(cpu_samples) if cpu_samples else None,
    )


def _no_cpu() -> float:
    return 0.0


def _thin(samples: list[float], most: int) -> list[float]:
    """At most `most` samples, evenly spread over the run (so drift stays visible)."""
    if len(samples) <= most:
        return samples
    step = len(samples) / most
    return [samples[math.floor(i * step)] for i in range(most)]


def calibrate(call: Callable[[], object], target: float, clock: Clock) -> int:
    """How many calls make one round last at least `target` seconds."""
    iterations = 1
    while True:
        start = clock()
        for _ in range(iterations):
            call()
        elapsed = clock() - start
        if elapsed >= target or iterations >= 1 << 20:
            return iterations
        # Aim past the target from the observed rate; at least double to converge fast.
        guess = iterations * target / elapsed * 1.2 if elapsed > 0 else iterations * 10
        iterations = max(iterations * 2, math.ceil(guess))


def measure(
    call: Callable[[], object],
    config: TimingConfig = TimingConfig(),
    clock: Clock = time.perf_counter,
    cpu_clock: Clock | None = None,
) -> RuntimeStats:
    """Warm up, calibrate, then time rounds until both min_rounds and max_time are reached
    (or max_rounds). `call` must include whatever makes the work finish (block_until_ready).
    With `cpu_clock` (time.process_time on the CPU backend) each round's CPU seconds are
    read too."""
    cpu = cpu_clock or _no_cpu
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside a round is noise, not the function's cost
    try:
        start = clock()
        call()
        while clock() - start < config.warmup_time:
            call()
        iterations = calibrate(call, config.min_round_time, clock)
        samples: list[float] = []
        cpu_samples: list[float] = []
        begin = clock()
        while len(samples) < config.max_rounds:
            c0, t0 = cpu(), clock()
            for _ in range(iterations):
                call()
            t1, c1 = clock(), cpu()
            samples.append((t1 - t0) / iterations)
            cpu_samples.append((c1 - c0) / iterations)
            if len(samples) >= config.min_rounds and clock() - begin >= config.max_time:
                break
        return summarize(samples, iterations, cpu_samples if cpu_clock else None)
    finally:
        if gc_was_enabled:
            gc.enable()


def measure_each(
    prepare: Callable[[], T],
    call: Callable[[T], object],
    config: TimingConfig = TimingConfig(),
    clock: Clock = time.perf_counter,
    cpu_clock: Clock | None = None,
) -> RuntimeStats:
    """Like `measure`, for calls that need fresh inputs (donated buffers, a user's setup):
    `prepare()` runs untimed before every call, so a round is one call (iterations 1), and
    `prepare` must return inputs that are ready (block_until_ready). The time budget counts
    the preparation too: it bounds the test's duration, and min_rounds are always taken."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        call(prepare())
        while clock() - start < config.warmup_time:
            call(prepare())
        cpu = cpu_clock or _no_cpu
        samples: list[float] = []
        cpu_samples: list[float] = []
        begin = clock()
        while len(samples) < config.max_rounds:
            inputs = prepare()
            c0, t0 = cpu(), clock()
            call(inputs)
            t1, c1 = clock(), cpu()
            samples.append(t1 - t0)
            cpu_samples.append(c1 - c0)
            if len(samples) >= config.min_rounds and clock() - begin >= config.max_time:
                break
        return summarize(samples, 1, cpu_samples if cpu_clock else None)
    finally:
        if gc_was_enabled:
            gc.enable()
