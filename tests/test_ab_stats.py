"""The statistics of `jaxperf ab` on fixed samples: estimates, intervals, verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_jaxperf.ab import stats


def spread(center: float, n: int = 40, rel: float = 0.02, seed: int = 0) -> list[float]:
    """`n` fixed per-call times around `center`, within +-rel."""
    rng = np.random.default_rng(seed)
    return list(center * (1 + rel * rng.uniform(-1, 1, n)))


def test_unchanged_code_gives_a_ratio_of_one_and_an_interval_around_it() -> None:
    rounds = [(spread(1e-3, seed=r), spread(1e-3, seed=100 + r)) for r in range(3)]
    r = stats.ratio(rounds)
    assert r is not None
    assert r.low < 1 < r.high
    assert r.high / r.low < 1.05  # 2% noise, three agreeing rounds: a narrow interval
    assert stats.ratio_status(r, 1.10) == "ok"
    assert r.rounds == 3 and r.confidence == 0.95


def test_twice_the_time_in_every_round_regresses() -> None:
    rounds = [(spread(1e-3, seed=r), spread(2e-3, seed=100 + r)) for r in range(3)]
    r = stats.ratio(rounds)
    assert r is not None
    assert r.estimate == pytest.approx(2.0, rel=0.02)
    assert 1.9 < r.low < r.estimate < r.high < 2.1
    assert r.base == pytest.approx(1e-3, rel=0.02) and r.head == pytest.approx(2e-3, rel=0.02)
    assert stats.ratio_status(r, 1.10) == "REGRESSED"


def test_the_estimate_is_the_geometric_mean_of_the_round_ratios_of_medians() -> None:
    rounds = [([1.0, 2.0, 3.0] * 3, [2.0, 4.0, 6.0] * 3), ([1.0] * 9, [8.0] * 9)]
    r = stats.ratio(rounds)
    assert r is not None
    assert r.estimate == pytest.approx(math.sqrt(2.0 * 8.0))
    assert r.base == pytest.approx(math.sqrt(2.0 * 1.0))  # geometric mean of the medians
    assert r.head == pytest.approx(math.sqrt(4.0 * 8.0))


def test_rounds_that_disagree_widen_the_interval_so_load_does_not_regress() -> None:
    # Each process is tight (1% noise), but the head process of two rounds ran while
    # something else loaded the machine: 1.35x and 1.3x, while the third round says 0.95x.
    factors = (1.35, 0.95, 1.30)
    rounds = [
        (spread(1e-3, rel=0.01, seed=r), spread(1e-3 * f, rel=0.01, seed=100 + r))
        for r, f in enumerate(factors)
    ]
    r = stats.ratio(rounds)
    assert r is not None
    assert r.estimate > 1.10  # slower on average ...
    assert r.low < 1.0  # ... but the rounds do not agree
    assert stats.ratio_status(r, 1.10) == "unclear"
    # A rank test over the pooled samples calls the same data a clear slowdown: it takes every
    # timed round as independent, which rounds of one process are not.
    base = [v for b, _ in rounds for v in b]
    head = [v for _, h in rounds for v in h]
    assert scipy_stats.mannwhitneyu(head, base, alternative="greater").pvalue < 1e-4


def test_one_round_gives_the_two_sample_bootstrap_interval_of_scipy() -> None:
    base, head = spread(1e-3, n=60, rel=0.05, seed=1), spread(1.3e-3, n=60, rel=0.05, seed=2)
    r = stats.ratio([(base, head)])
    assert r is not None

    def log_ratio_of_medians(h: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(np.log(h), axis=axis) - np.median(np.log(b), axis=axis)

    ref = scipy_stats.bootstrap(
        (np.asarray(head), np.asarray(base)),
        log_ratio_of_medians,
        method="percentile",
        n_resamples=stats.RESAMPLES,
        rng=np.random.default_rng(0),
    ).confidence_interval
    # Same statistic, same kind of interval: equal up to resampling noise.
    assert math.log(r.low) == pytest.approx(ref.low, abs=0.01)
    assert math.log(r.high) == pytest.approx(ref.high, abs=0.01)
    point = log_ratio_of_medians(np.array(head), np.array(base))
    assert r.estimate == pytest.approx(math.exp(point))


def test_the_interval_is_reproducible() -> None:
    rounds = [(spread(1e-3, seed=r), spread(1.2e-3, seed=9 + r)) for r in range(2)]
    assert stats.ratio(rounds) == stats.ratio(rounds)


def test_one_value_per_process_needs_two_rounds() -> None:
    # Compile seconds: one number per process.
    assert stats.ratio([((0.5,), (0.6,))]) is None
    r = stats.ratio([((0.5,), (0.6,)), ((0.5,), (0.7,))])
    assert r is not None
    # Two rounds: the interval spans the two round ratios (1.2 and 1.4).
    assert r.low == pytest.approx(1.2) and r.high == pytest.approx(1.4)
    assert r.estimate == pytest.approx(math.sqrt(1.2 * 1.4))


def test_a_single_round_with_few_samples_has_no_interval() -> None:
    assert stats.ratio([([1.0] * 4, [2.0] * 10)]) is None
    assert stats.ratio([([1.0] * 5, [2.0] * 5)]) is not None


def test_no_positive_samples_no_ratio() -> None:
    assert stats.ratio([]) is None
    assert stats.ratio([([0.0, 0.0], [1.0, 1.0])]) is None
    r = stats.ratio([([0.0, 1.0, 1.0, 1.0, 1.0, 1.0], [2.0] * 5)])  # zeros are dropped
    assert r is not None and r.estimate == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("low", "estimate", "high", "expected"),
    [
        (1.11, 1.2, 1.3, "REGRESSED"),
        (1.10, 1.2, 1.3, "unclear"),  # the interval must lie wholly above the threshold
        (1.05, 1.2, 1.3, "unclear"),
        (0.95, 1.05, 1.3, "ok"),
        (0.80, 0.85, 0.90, "improved"),  # wholly below 1/1.1
        (0.80, 0.85, 0.92, "ok"),
    ],
)
def test_verdicts(low: float, estimate: float, high: float, expected: str) -> None:
    assert stats.ratio_status(stats.Ratio(estimate, low, high, rounds=3), 1.10) == expected


def test_a_process_far_from_the_others_of_its_tree_is_left_out_with_its_round() -> None:
    # Head 2x slower in every round; in round 3 the base process ran 4x as long (a busy loop
    # beside it), which alone would say 0.5x and drag the interval below the threshold.
    base_levels, head_levels = (1e-3, 1e-3, 4e-3, 1e-3, 1e-3), (2e-3,) * 5
    rounds = [
        (spread(b, rel=0.01, seed=r), spread(h, rel=0.01, seed=100 + r))
        for r, (b, h) in enumerate(zip(base_levels, head_levels, strict=True))
    ]
    r = stats.ratio(rounds)
    assert r is not None
    assert r.left_out == 1 and r.rounds == 4
    assert 1.9 < r.low < r.estimate < r.high < 2.1
    assert stats.ratio_status(r, 1.10) == "REGRESSED"
    # Two rounds give no tree median to stand out from: both stay, and disagree.
    two = stats.ratio(rounds[1:3])
    assert two is not None and two.left_out == 0 and two.low < 1.10
    # Three rounds: the odd one out goes, two stay.
    three = stats.ratio(rounds[1:4])
    assert three is not None and three.left_out == 1 and three.rounds == 2


def test_a_change_that_moves_every_process_of_a_tree_is_never_left_out() -> None:
    # 3x slower in every head process: far from base, but not from its own tree.
    rounds = [(spread(1e-3, seed=r), spread(3e-3, seed=100 + r)) for r in range(5)]
    r = stats.ratio(rounds)
    assert r is not None and r.left_out == 0 and r.rounds == 5
    assert r.estimate == pytest.approx(3.0, rel=0.02)
    # Processes within 2x of their tree's median all stay (the spread goes into the interval).
    wobbly = [(spread(1e-3 * f, seed=r), spread(1e-3, seed=9 + r))
              for r, f in enumerate((1.0, 1.9, 0.55, 1.0, 1.2))]  # fmt: skip
    w = stats.ratio(wobbly)
    assert w is not None and w.left_out == 0
