"""Unit tests for pytest_jaxperf.measure.timing: statistics of samples, and calibrate/measure driven
by a fake clock (no real time is ever asserted)."""

from __future__ import annotations

import gc
import json
import math
import statistics
from collections.abc import Callable, Iterator

import pytest

from pytest_jaxperf.measure.timing import MAX_SAMPLES, TimingConfig, calibrate, measure, summarize
from pytest_jaxperf.model import runtime_to_json

# A power of two (~244 us): sums and quotients of small multiples of it are exact floats,
# so per-call times can be compared with ==.
COST = 2.0**-12


class FakeClock:
    """Time advances only when the measured function runs: call number n (from 1) costs
    `ticks(n)` ticks, one tick by default; the clock reads ticks * COST."""

    def __init__(self, ticks: Callable[[int], int] = lambda n: 1) -> None:
        self.calls = 0
        self.ticks = 0
        self.cost_of = ticks
        self.gc_enabled_during_calls: set[bool] = set()

    def call(self) -> None:
        self.calls += 1
        self.ticks += self.cost_of(self.calls)
        self.gc_enabled_during_calls.add(gc.isenabled())

    def __call__(self) -> float:
        return self.ticks * COST


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    """Start with gc enabled and leave it as it was found."""
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


# -- summarize --------------------------------------------------------------------------------


def test_single_sample() -> None:
    s = summarize([3.0], iterations=7)
    assert (s.min_s, s.max_s, s.median_s, s.mean_s) == (3.0, 3.0, 3.0, 3.0)
    assert s.stddev_s == 0.0
    assert (s.q1_s, s.q3_s, s.iqr_s) == (3.0, 3.0, 0.0)
    assert (s.rounds, s.iterations, s.outliers) == (1, 7, 0)
    assert s.samples_s == (3.0,)


def test_two_samples() -> None:
    s = summarize([3.0, 1.0])
    assert (s.min_s, s.max_s, s.median_s, s.mean_s) == (1.0, 3.0, 2.0, 2.0)
    assert s.stddev_s == math.sqrt(2.0)  # sample stddev: sqrt((1 + 1) / (2 - 1))
    # Inclusive quartiles of [1, 3]: linear interpolation at 1/4 and 3/4 of the range.
    assert (s.q1_s, s.q3_s, s.iqr_s) == (1.5, 2.5, 1.0)
    assert (s.rounds, s.iterations, s.outliers) == (2, 1, 0)
    assert s.samples_s == (3.0, 1.0)  # run order, not sorted


def test_outliers_on_both_sides() -> None:
    samples = [13.0, 10.0, 100.0, 11.0, 12.0, 1.0, 14.0, 15.0, 16.0, 17.0]
    s = summarize(samples, iterations=4)
    # sorted: 1 10 11 12 13 14 15 16 17 100; inclusive quartiles at positions 2.25 and 6.75
    assert s.q1_s == 11.25  # 11 + 0.25 * (12 - 11)
    assert s.q3_s == 15.75  # 15 + 0.75 * (16 - 15)
    assert s.iqr_s == 4.5
    # fences 11.25 - 6.75 = 4.5 and 15.75 + 6.75 = 22.5: 1 and 100 are outside
    assert s.outliers == 2
    assert (s.min_s, s.max_s) == (1.0, 100.0)
    assert s.median_s == 13.5
    assert s.mean_s == pytest.approx(20.9, rel=1e-15)
    expected_sd = math.sqrt(sum((x - 20.9) ** 2 for x in samples) / 9)
    assert s.stddev_s == pytest.approx(expected_sd, rel=1e-12)
    assert s.stddev_s == pytest.approx(statistics.stdev(samples), rel=1e-12)
    assert (s.rounds, s.iterations) == (10, 4)
    assert s.samples_s == tuple(samples)


def test_no_outliers_in_a_tight_cluster() -> None:
    s = summarize([2.0, 2.0, 2.0, 2.5, 2.0])
    assert s.outliers == 1  # iqr 0: anything off the cluster is outside the fences
    s = summarize([2.0, 2.0, 2.0, 2.0])
    assert (s.outliers, s.iqr_s, s.stddev_s) == (0, 0.0, 0.0)


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        summarize([])


# -- samples_s thinning -----------------------------------------------------------------------


def test_samples_kept_up_to_max_unchanged() -> None:
    samples = [float(i) for i in range(MAX_SAMPLES)]
    assert summarize(samples).samples_s == tuple(samples)


def test_samples_thinned_evenly_but_stats_use_all() -> None:
    assert MAX_SAMPLES == 100
    samples = [1000.0 + i for i in range(250)]
    samples[1] = 0.5  # the fastest round is one that thinning drops
    samples[249] = 5000.0  # and so is the slowest
    s = summarize(samples)
    assert len(s.samples_s) == MAX_SAMPLES
    # step 2.5: indices 0, 2, 5, 7, 10, ..., 247 (floor of i * 2.5), in run order
    expected = tuple(samples[math.floor(i * 2.5)] for i in range(100))
    assert s.samples_s == expected
    assert s.samples_s[:4] == (samples[0], samples[2], samples[5], samples[7])
    assert s.samples_s[-1] == samples[247]
    assert 0.5 not in s.samples_s and 5000.0 not in s.samples_s
    assert (s.min_s, s.max_s, s.rounds) == (0.5, 5000.0, 250)
    assert s.median_s == statistics.median(samples)


def test_thinning_spreads_over_the_whole_run() -> None:
    samples = [float(i) for i in range(10_000)]
    kept = summarize(samples).samples_s
    assert kept == tuple(float(i) for i in range(0, 10_000, 100))
    gaps = {b - a for a, b in zip(kept, kept[1:])}
    assert gaps == {100.0}


def recorded_test_to_json() -> None:
    s = summarize([3.0, 1.0, 2.0], iterations=5)
    data = runtime_to_json(s)
    assert data == {
        "min_s": 1.0,
        "max_s": 3.0,
        "median_s": 2.0,
        "mean_s": 2.0,
        "stddev_s": 1.0,
        "q1_s": 1.5,
        "q3_s": 2.5,
        "iqr_s": 1.0,
        "rounds": 3,
        "iterations": 5,
        "outliers": 0,
        "samples_s": [3.0, 1.0, 2.0],
    }
    assert isinstance(data["samples_s"], list)
    assert json.loads(json.dumps(data)) == data


# -- calibrate --------------------------------------------------------------------------------


def test_calibrate_from_observed_rate() -> None:
    clock = FakeClock()
    # One call takes COST; aim for 2e-3 s with 20% margin: ceil(2e-3 / COST * 1.2) =
    # ceil(9.83) = 10 calls, which last 10 * COST = 2.44e-3 s >= 2e-3.
    assert calibrate(clock.call, 2e-3, clock) == 10
    assert clock.calls == 1 + 10


def test_calibrate_slow_call_is_one_iteration() -> None:
    clock = FakeClock()
    assert calibrate(clock.call, COST, clock) == 1
    assert calibrate(clock.call, COST / 2, clock) == 1
    assert clock.calls == 2


def test_calibrate_one_call_short_of_the_target_takes_two() -> None:
    clock = FakeClock()
    # One call is 0.8 of the target: the rate says ceil(1.2 / 0.8) = 2.
    assert calibrate(clock.call, COST / 0.8, clock) == 2
    assert clock.calls == 1 + 2


def test_calibrate_aims_twenty_percent_past_the_target() -> None:
    clock = FakeClock()
    # The target is 100 calls: 1 call -> 100 * 1.2 = 120 calls, which reach it.
    assert calibrate(clock.call, 100 * COST, clock) == 120
    assert clock.calls == 1 + 120


def test_calibrate_at_least_doubles() -> None:
    # The first call costs 10 ticks, later ones 8 (target 100 ticks): 1 call (10 ticks) ->
    # ceil(100 / 10 * 1.2) = 12 calls = 96 ticks, still short; the rate now says
    # ceil(12 * 100 / 96 * 1.2) = 15, but it at least doubles: 24 calls = 192 ticks.
    clock = FakeClock(lambda n: 10 if n == 1 else 8)
    assert calibrate(clock.call, 100 * COST, clock) == 24
    assert clock.calls == 1 + 12 + 24


# -- measure ----------------------------------------------------------------------------------


def test_measure_default_config_exact_schedule(gc_enabled: None) -> None:
    clock = FakeClock()
    config = TimingConfig()  # min_rounds 20, max_time 0.5, warmup 0.05, round >= 2e-3
    s = measure(clock.call, config, clock)
    # warm-up: calls until 0.05 s have passed: ceil(0.05 / COST) = ceil(204.8) = 205
    # calibration: 1 + 10 calls -> 10 iterations per round
    # rounds: until 0.5 s of rounds: ceil(0.5 / (10 * COST)) = ceil(204.8) = 205 (>= 20)
    assert s.iterations == 10
    assert s.rounds == 205
    assert clock.calls == 205 + 11 + 205 * 10
    # per-call time of every round is exactly the fake cost
    assert s.median_s == s.min_s == s.max_s == s.mean_s == COST
    assert (s.stddev_s, s.iqr_s, s.outliers) == (0.0, 0.0, 0)
    assert s.samples_s == (COST,) * MAX_SAMPLES


def test_measure_min_rounds_when_time_budget_is_spent() -> None:
    clock = FakeClock()
    config = TimingConfig(min_rounds=7, max_time=0.0, warmup_time=0.0)
    s = measure(clock.call, config, clock)
    assert s.rounds == 7
    assert s.iterations == 10
    assert clock.calls == 1 + 11 + 7 * 10  # one warm-up call even with warmup_time 0


def test_measure_max_time_bounds_rounds() -> None:
    clock = FakeClock()
    # A call of COST with one call per round (min_round_time <= COST); 64 * COST = 1/64 s.
    config = TimingConfig(min_rounds=3, max_time=64 * COST, warmup_time=0.0, min_round_time=COST)
    s = measure(clock.call, config, clock)
    assert (s.iterations, s.rounds) == (1, 64)
    assert s.median_s == COST


def test_measure_min_rounds_beats_max_time() -> None:
    clock = FakeClock()
    config = TimingConfig(min_rounds=100, max_time=64 * COST, warmup_time=0.0, min_round_time=COST)
    assert measure(clock.call, config, clock).rounds == 100


def test_measure_max_rounds_caps_everything() -> None:
    clock = FakeClock()
    config = TimingConfig(min_rounds=20, max_time=10.0, max_rounds=7, warmup_time=0.0)
    s = measure(clock.call, config, clock)
    assert s.rounds == 7
    assert clock.calls == 1 + 11 + 7 * 10


def test_measure_warms_up_and_excludes_the_first_call() -> None:
    # The first call costs 4096 ticks (1 s, a compile): it alone exceeds the warm-up time,
    # so warm-up is exactly that call, and no sample contains it.
    clock = FakeClock(lambda n: 4096 if n == 1 else 1)
    config = TimingConfig(min_rounds=5, max_time=0.0, warmup_time=0.05)
    s = measure(clock.call, config, clock)
    assert clock.calls == 1 + 11 + 5 * 10
    assert s.max_s == COST


def test_measure_warm_up_runs_for_warmup_time() -> None:
    clock = FakeClock()
    config = TimingConfig(min_rounds=1, max_time=0.0, warmup_time=100 * COST)
    measure(clock.call, config, clock)
    # 100 warm-up calls (the loop stops once 100 * COST has passed), 11 calibration calls,
    # then one round of 10.
    assert clock.calls == 100 + 11 + 10


def test_measure_disables_gc_and_restores_it(gc_enabled: None) -> None:
    clock = FakeClock()
    measure(clock.call, TimingConfig(min_rounds=2, max_time=0.0, warmup_time=0.0), clock)
    assert clock.gc_enabled_during_calls == {False}
    assert gc.isenabled()


def test_measure_leaves_gc_disabled_if_it_was(gc_enabled: None) -> None:
    gc.disable()
    clock = FakeClock()
    measure(clock.call, TimingConfig(min_rounds=2, max_time=0.0, warmup_time=0.0), clock)
    assert clock.gc_enabled_during_calls == {False}
    assert not gc.isenabled()


def test_measure_restores_gc_when_the_call_raises(gc_enabled: None) -> None:
    clock = FakeClock()

    def boom() -> None:
        clock.call()
        if clock.calls == 5:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        measure(boom, TimingConfig(warmup_time=0.0), clock)
    assert gc.isenabled()


def test_rounded_keeps_six_significant_digits_and_four_for_samples() -> None:
    s = summarize([1.23456789e-4, 2.34567891e-4, 3.45678912e-4], iterations=3)
    r = s.rounded()
    assert (r.median_s, r.min_s, r.mean_s) == (2.34568e-4, 1.23457e-4, 2.34568e-4)
    assert r.samples_s == (1.235e-4, 2.346e-4, 3.457e-4)
    assert (r.rounds, r.iterations, r.outliers) == (3, 3, 0)
    assert r.cpu_median_s is None
