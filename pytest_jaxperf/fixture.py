"""The `jaxperf` fixture object: benchmark, no_recompile and scaling for one test."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .analysis import ProgramMetrics
from .model import Counts, FunctionRecord, TestRecord
from .recorder import Scope
from .timing import Stats, TimingConfig

SCALING_METRICS = ("jaxpr_eqns", "hlo_ops", "compile_s", "runtime_s")


@dataclass
class BenchmarkResult:
    """What `jaxperf.benchmark` measured; the timing fields are None when --jaxperf is off."""

    label: str
    output: Any
    first_call_s: float | None = None
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    compiled_on_first_call: bool = True
    runtime: Stats | None = None
    metrics: ProgramMetrics | None = None
    eager: Stats | None = None
    break_even_calls: float | None = None
    device_peak_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        # Microseconds for one-off times, 6 significant digits for per-call ones: enough for
        # any gate, and a baseline diff stays readable.
        out: dict[str, Any] = {
            "kind": "benchmark",
            "first_call_s": None if self.first_call_s is None else round(self.first_call_s, 6),
            "trace_s": round(self.trace_s, 6),
            "lower_s": round(self.lower_s, 6),
            "compile_s": round(self.compile_s, 6),
            "compiled_on_first_call": self.compiled_on_first_call,
        }
        if self.runtime is not None:
            out["runtime"] = self.runtime.to_json()
        if self.metrics is not None:
            out.update(self.metrics.to_json())
        if self.eager is not None:
            out["eager_median_s"] = float(f"{self.eager.median_s:.6g}")
            out["break_even_calls"] = (
                None if self.break_even_calls is None else round(self.break_even_calls, 1)
            )
        if self.device_peak_bytes is not None:
            out["device_peak_bytes"] = self.device_peak_bytes
        return out


@dataclass
class ScalingResult:
    """A metric at growing sizes and its log-log growth exponent."""

    label: str
    metric: str
    sizes: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    exponent: float = 0.0
    max_exponent: float | None = None

    def table(self) -> str:
        rows = [f"{'size':>10}  {self.metric}"]
        rows += [f"{n:>10}  {v:g}" for n, v in zip(self.sizes, self.values, strict=True)]
        return "\n".join(rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "scaling",
            "metric": self.metric,
            "sizes": self.sizes,
            "values": self.values,
            "exponent": self.exponent,
            "max_exponent": self.max_exponent,
        }


class JaxPerf:
    """Requesting the `jaxperf` fixture marks a test for recording.

    With --jaxperf off every method still runs the user's code, but measures nothing
    (benchmark makes one plain call; no_recompile and scaling still check)."""

    def __init__(
        self,
        nodeid: str,
        scope_getter: Callable[[], Scope | None] | None = None,
        timing: TimingConfig | None = None,
        timing_mode: str = "gate",
        rootdir: Path | None = None,
    ) -> None:
        self.nodeid = nodeid
        self._scope_getter = scope_getter
        self._timing = timing or TimingConfig()
        self._timing_mode = timing_mode
        self._rootdir = rootdir or Path.cwd()
        self._labels: set[str] = set()

    @property
    def enabled(self) -> bool:
        """True when pytest runs with --jaxperf, so this test is being recorded."""
        return self._scope_getter is not None

    def _scope(self) -> Scope | None:
        return self._scope_getter() if self._scope_getter is not None else None

    def snapshot(self) -> TestRecord:
        """What has been recorded in this test so far (empty when --jaxperf is off)."""
        scope = self._scope()
        return snapshot(scope) if scope is not None else TestRecord()

    def _claim(self, label: str) -> None:
        if label in self._labels:
            raise pytest.UsageError(
                f"{self.nodeid}: jaxperf label {label!r} is used twice in this test; "
                "pass a distinct label=..."
            )
        self._labels.add(label)

    # -- benchmark ---------------------------------------------------------------------------
    def benchmark(
        self,
        fn: Callable[..., Any],
        *args: Any,
        label: str | None = None,
        eager: bool = False,
        reference: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> BenchmarkResult:
        """First-call cost, steady-state runtime and program metrics of `fn(*args, **kwargs)`.

        `fn` should be jitted (a plain function is wrapped in jax.jit). With `eager=True` the
        un-jitted function is timed too (under jax.disable_jit), with `reference` any other
        implementation (e.g. NumPy); the result then has the break-even call count."""
        import jax

        label = label or _name(fn)
        self._claim(label)
        scope = self._scope()
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        if scope is None:
            return BenchmarkResult(label, jitted(*args, **kwargs))

        from . import analysis, timing
        from .recorder import RECORDER

        before = _totals(scope)
        start = time.perf_counter()
        output = jax.block_until_ready(jitted(*args, **kwargs))
        first_call_s = time.perf_counter() - start
        spent = _totals(scope)
        result = BenchmarkResult(
            label,
            output,
            first_call_s=first_call_s,
            trace_s=spent.trace_s - before.trace_s,
            lower_s=spent.lower_s - before.lower_s,
            compile_s=spent.compile_s - before.compile_s,
            compiled_on_first_call=spent.compiles > before.compiles,
        )
        with RECORDER.paused():
            result.metrics = analysis.program_metrics(jitted, args, kwargs)
            if self._timing_mode != "off":
                result.runtime = timing.measure(
                    lambda: jax.block_until_ready(jitted(*args, **kwargs)), self._timing
                )
                other = reference
                if eager and other is None:
                    other = _eager(jitted)
                if other is not None:
                    ref = other
                    result.eager = timing.measure(
                        lambda: jax.block_until_ready(ref(*args, **kwargs)),
                        _eager_config(self._timing),
                    )
                    result.break_even_calls = break_even(
                        first_call_s, result.runtime.median_s, result.eager.median_s
                    )
            result.device_peak_bytes = analysis.device_peak_bytes()
        scope.benchmarks[label] = result.to_json()
        return result

    # -- no_recompile ------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_recompile(self) -> Iterator[None]:
        """Fail the test if a user function is traced or compiled inside the block.

        Eager operations (JAX's own helpers) do not count, cached or not."""
        from .recorder import RECORDER

        scope = self._scope()
        owned = None
        if scope is None:  # --jaxperf off: record just this block
            owned = RECORDER.scope(self._rootdir)
            scope = owned.__enter__()
        before = {k: (f.traces, f.compiles) for k, f in scope.functions.items()}
        try:
            yield
        finally:
            if owned is not None:
                owned.__exit__(None, None, None)
        changed = []
        for key, fn in sorted(scope.functions.items()):
            traces, compiles = before.get(key, (0, 0))
            if fn.traces > traces or fn.compiles > compiles:
                reasons = (
                    fn.retrace_reasons[-max(1, fn.traces - traces) :] if fn.traces > traces else []
                )
                line = f"{key}: {fn.traces - traces} trace(s), {fn.compiles - compiles} compile(s)"
                changed.append("\n".join([line] + [f"    cause: {r}" for r in reasons]))
        if changed:
            pytest.fail(
                "jaxperf.no_recompile: compiled inside the block:\n" + "\n".join(changed),
                pytrace=False,
            )

    # -- scaling -----------------------------------------------------------------------------
    def scaling(
        self,
        fn: Callable[..., Any],
        make_args: Callable[[int], Sequence[Any]],
        sizes: Sequence[int],
        metric: str = "jaxpr_eqns",
        max_exponent: float | None = None,
        label: str | None = None,
    ) -> ScalingResult:
        """Evaluate `metric` for fn(*make_args(n)) at each size, fit the log-log slope, and
        fail when it exceeds `max_exponent` (builtin sum over n elements: exponent 1;
        jnp.sum: 0). The work done here is not counted in the test's traces and compiles."""
        import jax

        if metric not in SCALING_METRICS:
            raise pytest.UsageError(
                f"{self.nodeid}: jaxperf.scaling metric {metric!r} is unknown; "
                f"expected one of {', '.join(SCALING_METRICS)}"
            )
        if len(set(sizes)) < 2 or any(n <= 0 for n in sizes):
            raise pytest.UsageError(
                f"{self.nodeid}: jaxperf.scaling needs at least two different positive sizes, "
                f"got {sizes!r}"
            )
        label = label or f"scaling:{_name(fn)}"
        self._claim(label)
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        result = ScalingResult(label, metric, max_exponent=max_exponent)
        for n in sizes:
            result.sizes.append(int(n))
            result.values.append(self._scaling_point(jitted, tuple(make_args(n)), metric))
        result.exponent = growth_exponent(result.sizes, result.values)
        scope = self._scope()
        if scope is not None:
            scope.benchmarks[label] = result.to_json()
        if max_exponent is not None and result.exponent > max_exponent:
            pytest.fail(
                f"jaxperf.scaling: {metric} of {_name(fn)} grows with exponent "
                f"{result.exponent:.2f} > max_exponent {max_exponent:g}\n{result.table()}",
                pytrace=False,
            )
        return result

    def _scaling_point(self, jitted: Any, args: tuple[Any, ...], metric: str) -> float:
        import jax

        from . import analysis, timing
        from .recorder import RECORDER

        if metric == "jaxpr_eqns":
            with RECORDER.paused():
                return float(analysis.count_eqns(jitted.trace(*args).jaxpr))
        if metric == "hlo_ops":
            with RECORDER.paused():
                return float(analysis.count_hlo_ops(jitted.trace(*args).lower().as_text()))
        if metric == "compile_s":
            if hasattr(jitted, "clear_cache"):
                jitted.clear_cache()
            with RECORDER.scope(self._rootdir) as inner:
                jax.block_until_ready(jitted(*args))
            return sum(f.total_s for f in inner.functions.values())
        with RECORDER.paused():
            jax.block_until_ready(jitted(*args))
            config = TimingConfig(
                min_rounds=5, max_time=self._timing.max_time / 4, warmup_time=0.01
            )
            return timing.measure(lambda: jax.block_until_ready(jitted(*args)), config).median_s


def growth_exponent(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) over log(size); values <= 0 count as tiny."""
    from scipy import stats

    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(v, 1e-12)) for v in values]
    if len(set(ys)) == 1:
        return 0.0
    return float(stats.linregress(xs, ys).slope)


def break_even(first_call_s: float, jit_s: float, eager_s: float) -> float | None:
    """Calls after which jit's one-off compile is paid back by its per-call saving; None
    when the jitted call is not faster."""
    saving = eager_s - jit_s
    if saving <= 0:
        return None
    return max(0.0, (first_call_s - jit_s) / saving)


def _eager(jitted: Any) -> Callable[..., Any]:
    import jax

    def run(*args: Any, **kwargs: Any) -> Any:
        with jax.disable_jit():
            return jitted(*args, **kwargs)

    return run


def _eager_config(config: TimingConfig) -> TimingConfig:
    # The un-jitted version is for a break-even estimate: fewer rounds are enough.
    return TimingConfig(min_rounds=5, max_time=config.max_time / 2, warmup_time=0.0)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _totals(scope: Scope) -> Counts:
    total = Counts()
    for fn in scope.functions.values():
        total.add(fn)
    return total


def snapshot(scope: Scope) -> TestRecord:
    """A TestRecord holding copies of what `scope` recorded so far."""
    rec = TestRecord(
        functions={
            k: FunctionRecord(**{**vars(f), "retrace_reasons": list(f.retrace_reasons)})
            for k, f in scope.functions.items()
        },
        benchmarks={k: dict(v) for k, v in scope.benchmarks.items()},
    )
    rec.eager.add(scope.eager)
    rec.recompute_totals()
    return rec
