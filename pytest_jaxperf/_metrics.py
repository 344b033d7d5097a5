"""Tolerant readers of a record's free-form `benchmarks` entries, shared by the reports."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any


def number(value: object) -> float | None:
    """`value` as a finite float, or None (bools, None, NaN, strings and the like)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def runtime(bench: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `runtime` block of a benchmark entry, or an empty mapping."""
    block = bench.get("runtime")
    return block if isinstance(block, Mapping) else {}


def median_s(bench: Mapping[str, Any]) -> float | None:
    """The steady-state median seconds of a benchmark entry, when it was measured."""
    return number(runtime(bench).get("median_s"))


def samples_s(bench: Mapping[str, Any]) -> list[float]:
    """The per-round seconds kept in a benchmark entry (finite ones only; may be empty)."""
    raw = runtime(bench).get("samples_s")
    if not isinstance(raw, list):
        return []
    return [v for v in (number(x) for x in raw) if v is not None]


def upper_s(bench: Mapping[str, Any]) -> float | None:
    """The 75th percentile of the runtime: stored (q3_s, p75_s), from the samples, or
    estimated as median + IQR / 2 (exact for a symmetric distribution)."""
    block = runtime(bench)
    for key in ("q3_s", "p75_s"):
        value = number(block.get(key))
        if value is not None:
            return value
    samples = samples_s(bench)
    if len(samples) >= 2:
        return statistics.quantiles(samples, n=4, method="inclusive")[2]
    median, iqr = number(block.get("median_s")), number(block.get("iqr_s"))
    if median is not None and iqr is not None:
        return median + iqr / 2
    return None


def benchmarks(bench_map: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, entry) for each benchmark entry that is a mapping, sorted by label."""
    return sorted(
        ((str(label), entry) for label, entry in bench_map.items() if isinstance(entry, Mapping)),
        key=lambda item: item[0],
    )


def seconds(value: float) -> str:
    """A duration in the unit that keeps three significant digits readable."""
    magnitude = abs(value)
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.3f} s"
    if magnitude >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    if magnitude >= 1e-6:
        return f"{value * 1e6:.3g} µs"
    return f"{value * 1e9:.3g} ns"
