"""Head/base ratios of `jaxperf ab` with confidence intervals, from paired rounds.

A round is one base run followed by one head run, each a fresh pytest process. A change's
effect on a timing is measured within each round, from its two processes alone, so that load
drifting over the job hits both sides of a round alike and cancels out of its ratio; then the
rounds are pooled:

- per round r: d_r = median(log head samples) - median(log base samples), the log of the
  ratio of the two processes' median per-call times (compile seconds, and per-call CPU
  seconds on one CPU: one value per process);
- estimate: the mean of the d_r, i.e. the geometric mean of the per-round ratios;
- interval: a two-level (cluster) percentile bootstrap. Each resample draws the rounds with
  replacement, then within every drawn round each process's samples with replacement, and
  recomputes the estimate. The first level carries what differs from one process to the
  next (load that came and went, a process that runs slower than another for no reason in
  its code), the second the noise within a process.

Why not a rank test over all samples pooled (Mann-Whitney, a Hodges-Lehmann interval): it
takes every timed round as independent, but rounds within a process share that process's
state and whatever load it met, so its interval is as narrow after one unlucky process as
after ten good ones, and machine load makes false regressions (the plugin's README measured
+50% on unchanged code beside a second worker, p = 4e-6). Resampling whole rounds makes the
interval as wide as the rounds disagree. With one round there is no spread between processes
to see, so the interval holds only the noise within the two processes (too narrow to judge
by: table.py shows a one-round timing without a verdict); with two or three it
spans about the lowest to the highest round ratio (a whole resample of the lowest round is
more likely than the 2.5% tail), that is, a regression needs every round to agree.

From three rounds on, a round is left out when one of its processes is an outlier of its own
tree: its median more than OUTLIER (2x) away from the median of that tree's processes. Every
process of a tree ran the same code, so such a process measured what else ran beside it (with
a busy loop beside the runs now and then one ran several times as long as the others; on a
quiet machine they stayed closer than that: the README has benchmarks/ab_power.py's figures).
A change to the code moves every process of its tree alike and is never left out; at least
two rounds always stay.

The resampling is seeded: the same samples always give the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy is imported when a ratio is computed, not with the command
    import numpy as np
    from numpy.typing import NDArray

    Logs = list[tuple[NDArray[np.float64], NDArray[np.float64]]]

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 13
# Below this many samples per process, one round alone gives no interval (compile seconds,
# one value per process, need two rounds).
MIN_SAMPLES = 5
# A process whose median is this many times above (or below) the median of its tree's
# processes is left out with its round.
OUTLIER = 2.0

RatioStatus = Literal["REGRESSED", "unclear", "ok", "improved"]


@dataclass(frozen=True)
class Ratio:
    """head/base: the estimate and its confidence interval."""

    estimate: float
    low: float
    high: float
    rounds: int
    confidence: float = CONFIDENCE
    base: float = 0.0  # the geometric mean over rounds of each side's median (seconds)
    head: float = 0.0
    left_out: int = 0  # rounds left out: one of their processes was an outlier of its tree


Samples = Sequence[float]


def ratio(
    rounds: Sequence[tuple[Samples, Samples]],
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Ratio | None:
    """head/base from `rounds`, each `(base samples, head samples)` of one round (per-call
    seconds, or one compile time each). None when there is nothing to go on: no round, a
    side without a positive sample, or a single round with fewer than MIN_SAMPLES samples on
    a side."""
    import numpy as np

    logs: Logs = []
    for base, head in rounds:
        b = np.log(np.asarray([v for v in base if v > 0], dtype=float))
        h = np.log(np.asarray([v for v in head if v > 0], dtype=float))
        if not b.size or not h.size:
            return None
        logs.append((b, h))
    if not logs or (len(logs) == 1 and min(logs[0][0].size, logs[0][1].size) < MIN_SAMPLES):
        return None
    # Each process's median (log seconds), one row per round: base, head.
    levels = np.array([[np.median(b), np.median(h)] for b, h in logs])
    keep = _kept_rounds(levels)
    left_out = len(logs) - int(keep.sum())
    logs = [pair for pair, ok in zip(logs, keep, strict=True) if ok]
    n = len(logs)
    base_level, head_level = (float(v) for v in levels[keep].mean(axis=0))
    draws = _bootstrap(logs, resamples, np.random.default_rng(seed))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Ratio(
        estimate=float(np.exp(head_level - base_level)),
        low=float(np.exp(low)),
        high=float(np.exp(high)),
        rounds=n,
        confidence=confidence,
        base=float(np.exp(base_level)),
        head=float(np.exp(head_level)),
        left_out=left_out,
    )


def _kept_rounds(levels: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which rounds to keep, from each process's median (`levels`: one row per round, base and
    head): not those in which a process lies more than OUTLIER times away from the median of
    its own tree's processes (from three rounds on; never below two rounds). The same code ran
    in every process of a tree, so such a process measured what else ran beside it, not the
    code; see the module docstring."""
    import numpy as np

    every = np.ones(len(levels), dtype=bool)
    if len(levels) < 3:
        return every
    typical = np.median(levels, axis=0)
    keep = np.all(np.abs(levels - typical) <= float(np.log(OUTLIER)), axis=1)
    return every if keep.sum() < 2 else keep


def _bootstrap(logs: Logs, resamples: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """`resamples` draws of the estimate (in logs): rounds drawn with replacement, then each
    drawn round's samples. Every (resample, slot) draws its own within-round resample, so a
    round drawn twice counts as two processes, as the first level means."""
    import numpy as np

    n = len(logs)
    picks = rng.integers(0, n, size=(resamples, n))
    total = np.zeros(resamples)
    for slot in range(n):
        for r, (b, h) in enumerate(logs):
            chosen = np.flatnonzero(picks[:, slot] == r)
            if chosen.size:
                total[chosen] += _medians(h, chosen.size, rng) - _medians(b, chosen.size, rng)
    return total / n


def _medians(x: NDArray[np.float64], count: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The medians of `count` resamples (with replacement) of the 1-d array `x`."""
    import numpy as np

    if x.size == 1:
        return np.full(count, x[0])
    idx = rng.integers(0, x.size, size=(count, x.size))
    return np.median(x[idx], axis=1)


def ratio_status(r: Ratio, threshold: float) -> RatioStatus:
    """REGRESSED when the whole interval lies above `threshold`; improved when it lies below
    1/threshold; unclear when the estimate is above the threshold but the interval reaches
    below it; else ok."""
    if r.low > threshold:
        return "REGRESSED"
    if r.high < 1 / threshold:
        return "improved"
    if r.estimate > threshold:
        return "unclear"
    return "ok"
