"""The `jaxperf` fixture object: benchmark, no_recompile and scaling for one test."""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..causes import summary
from ..config import TimingMode
from ..model import (
    BenchmarkEntry,
    Counts,
    ProgramMetrics,
    RecordedTest,
    RuntimeStats,
    ScalingEntry,
    held,
    significant,
)
from . import program_metrics
from .recorder import RECORDER, Scope
from .timing import TimingConfig

# One call's arguments: what a benchmark `setup=` returns.
Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass
class BenchmarkResult:
    """What `jaxperf.benchmark` measured. `output` is what the function returned. With
    --jaxperf off the function runs once and nothing is measured: `measured` is False and
    every measured field is None (`trace_s`, `lower_s` and `compile_s` 0); `str(result)`
    says so.

    `runtime` is per call. When every call needs fresh arguments (`setup=`, or arguments the
    function donates) each round is one call: `runtime.iterations` is 1 and `runtime.rounds`
    counts the timed calls; the untimed setup and copies are in neither."""

    label: str
    output: Any
    first_call_s: float | None = None
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    compiled_on_first_call: bool = True
    runtime: RuntimeStats | None = None
    metrics: ProgramMetrics | None = None
    eager: RuntimeStats | None = None
    break_even_calls: float | None = None
    device_peak_bytes: int | None = None
    jitted_by_benchmark: bool = False
    # Under the instructions clock: instructions per steady-state call (then `runtime` and
    # `eager` are None: seconds on valgrind's simulated CPU say nothing).
    instructions: int | None = None

    @property
    def measured(self) -> bool:
        """False when pytest ran without --jaxperf: the function ran, nothing was measured."""
        return self.first_call_s is not None

    def __str__(self) -> str:
        """One line: what was measured, or that nothing was and why."""
        if self.first_call_s is None:
            return (
                f"benchmark {self.label!r}: not measured (pytest ran without --jaxperf); the "
                "function ran once, its return value is .output"
            )
        parts = [f"first call {self.first_call_s:.3f} s"]
        if self.runtime is not None:
            parts.append(
                f"{self.runtime.median_s * 1e6:.4g} us per call (median of "
                f"{self.runtime.rounds} rounds)"
            )
        if self.instructions is not None:
            parts.append(f"{self.instructions:,} instructions per call")
        if self.metrics is not None:
            parts.append(f"{self.metrics.jaxpr_eqns} jaxpr equations")
        if self.break_even_calls is not None:
            parts.append(f"jit pays off after {self.break_even_calls:.3g} calls")
        return f"benchmark {self.label!r}: " + ", ".join(parts)

    def entry(self) -> BenchmarkEntry:
        """The record of this result that reports and the baseline keep. Microseconds for
        one-off times, 6 significant digits for per-call ones: enough for any gate, and a
        baseline diff stays readable."""
        return BenchmarkEntry(
            first_call_s=None if self.first_call_s is None else round(self.first_call_s, 6),
            trace_s=round(self.trace_s, 6),
            lower_s=round(self.lower_s, 6),
            compile_s=round(self.compile_s, 6),
            compiled_on_first_call=self.compiled_on_first_call,
            runtime=None if self.runtime is None else self.runtime.rounded(),
            metrics=self.metrics,
            eager_median_s=None if self.eager is None else significant(self.eager.median_s, 6),
            break_even_calls=(
                None if self.break_even_calls is None else round(self.break_even_calls, 1)
            ),
            device_peak_bytes=self.device_peak_bytes,
            jitted_by_benchmark=self.jitted_by_benchmark,
            instructions=self.instructions,
        )


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

    def entry(self) -> ScalingEntry:
        """The record of this result that reports and the baseline keep."""
        return ScalingEntry(
            metric=self.metric,
            sizes=tuple(self.sizes),
            values=tuple(self.values),
            exponent=self.exponent,
            max_exponent=self.max_exponent,
        )


class JaxPerf:
    """Requesting the `jaxperf` fixture marks a test for recording.

    With --jaxperf off every method still runs the user's code, but measures nothing
    (benchmark makes one plain call; no_recompile and scaling still check)."""

    def __init__(
        self,
        nodeid: str,
        scope_getter: Callable[[], Scope | None] | None = None,
        timing: TimingConfig | None = None,
        timing_mode: TimingMode = "gate",
        rootdir: Path | None = None,
        count_instructions: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.nodeid = nodeid
        # Writes one line to the terminal as the test runs (the instructions clock's counted
        # calls can take minutes each).
        self._progress = progress
        self._scope_getter = scope_getter
        self._timing = timing or TimingConfig()
        self._timing_mode = timing_mode
        self._count_instructions = count_instructions
        self._rootdir = rootdir or Path.cwd()
        self._labels: set[str] = set()

    @property
    def enabled(self) -> bool:
        """True when pytest runs with --jaxperf, so this test is being recorded."""
        return self._scope_getter is not None

    def _scope(self) -> Scope | None:
        return self._scope_getter() if self._scope_getter is not None else None

    def snapshot(self) -> RecordedTest:
        """What has been recorded in this test so far (empty when --jaxperf is off)."""
        scope = self._scope()
        return scope.snapshot() if scope is not None else RecordedTest()

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
        setup: Callable[[], Inputs] | None = None,
        **kwargs: Any,
    ) -> BenchmarkResult:
        """First-call cost, steady-state runtime and program metrics of `fn(*args, **kwargs)`.

        `fn` should be jitted (a plain function is wrapped in jax.jit). With `eager=True` the
        un-jitted function is timed too (under jax.disable_jit), with `reference` any other
        implementation (e.g. NumPy); the result then has the break-even call count.

        `setup`, instead of arguments, returns fresh `(args, kwargs)` for every call, the first
        included; it is not timed. Without it, arguments that `fn` donates are copied, untimed,
        before every timed call; the first call consumes the caller's own, as it would without
        the plugin."""
        import jax

        label = label or _name(fn)
        self._claim(label)
        args, kwargs = self._benchmark_inputs(args, kwargs, setup)
        scope = self._scope()
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        if scope is None:
            return BenchmarkResult(label, jitted(*args, **kwargs))

        with RECORDER.paused():
            spares = None if setup is not None else _spares(jitted, args, kwargs)
        before = scope.totals()
        start = time.perf_counter()
        output = jax.block_until_ready(jitted(*args, **kwargs))
        first_call_s = time.perf_counter() - start
        result = _first_call_result(label, output, first_call_s, before, scope.totals())
        result.jitted_by_benchmark = jitted is not fn
        with RECORDER.paused(), _quiet_donation():
            fresh = (
                functools.partial(self._setup_inputs, setup)
                if setup is not None
                else _refresher(args, kwargs, spares)
            )
            # Traces from shapes only: arguments the first call consumed are fine here.
            result.metrics = program_metrics.measure(jitted, args, kwargs)
            if self._timing_mode != "off" and self._count_instructions:
                progress = CountProgress(f"{self.nodeid} benchmark {label!r}", start,
                                         self._progress)  # fmt: skip
                result.instructions = _count_instructions(jitted, args, kwargs, fresh, progress)
            elif self._timing_mode != "off":
                other = _eager(jitted) if eager and reference is None else reference
                self._time_calls(result, first_call_s, jitted, other, args, kwargs, fresh)
            result.device_peak_bytes = program_metrics.device_peak_bytes()
        scope.benchmarks[label] = result.entry()
        return result

    def _benchmark_inputs(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], setup: Callable[[], Inputs] | None
    ) -> Inputs:
        """The first call's (args, kwargs): those given, or setup()'s when setup= is."""
        if setup is None:
            return args, kwargs
        if args or kwargs:
            raise pytest.UsageError(
                f"{self.nodeid}: jaxperf.benchmark takes arguments or setup=, not both; "
                "return all the arguments from setup()"
            )
        return self._setup_inputs(setup)

    def _time_calls(
        self,
        result: BenchmarkResult,
        first_call_s: float,
        jitted: Any,
        other: Callable[..., Any] | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fresh: Callable[[], Inputs] | None,
    ) -> None:
        """Sets result's steady-state runtime and, when there is an `other` implementation to
        compare with (un-jitted or a reference), its runtime and the break-even call count."""
        result.runtime = _time(jitted, args, kwargs, fresh, self._timing)
        if other is None:
            return
        result.eager = _time(other, args, kwargs, fresh, _eager_config(self._timing))
        result.break_even_calls = break_even(
            first_call_s, result.runtime.median_s, result.eager.median_s
        )

    def _setup_inputs(self, setup: Callable[[], Inputs]) -> Inputs:
        """setup()'s (args, kwargs), checked and computed: a timed call that follows must not
        wait for them."""
        import jax

        value: Any = setup()
        if (
            isinstance(value, tuple)
            and len(value) == 2
            and isinstance(value[0], tuple)
            and isinstance(value[1], dict)
        ):
            inputs: Inputs = jax.block_until_ready((value[0], value[1]))
            return inputs
        got = (
            f"({type(value[0]).__name__}, {type(value[1]).__name__})"
            if isinstance(value, tuple) and len(value) == 2
            else type(value).__name__
        )
        raise pytest.UsageError(
            f"{self.nodeid}: jaxperf.benchmark setup= must return (args, kwargs), a tuple and "
            f"a dict, e.g. `return (x,), {{}}`; it returned {got}"
        )

    # -- no_recompile ------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_recompile(self) -> Iterator[None]:
        """Fail the test if a user function is traced or compiled inside the block.

        Eager operations (JAX's own helpers) do not count, cached or not."""
        scope = self._scope()
        with contextlib.ExitStack() as stack:
            if scope is None:  # --jaxperf off: record just this block
                scope = stack.enter_context(RECORDER.scope(self._rootdir))
            # The block's own tallies: the causes of its traces, not the tail of the test's
            # de-duplicated, capped list (which may name an earlier trace's cause).
            block = stack.enter_context(scope.block())
            yield
        changed = []
        fixed: set[str] = set()  # each kind's fix said once
        for tally in sorted(block.tallies.values(), key=lambda t: t.function.key):
            if tally.traces or tally.compiles:
                line = f"{tally.function.key}: {tally.traces} trace(s), {tally.compiles} compile(s)"
                short = summary(tally.retrace_reasons, tally.traces, fixed=fixed)
                causes = [f"    cause: {r}" for r in short]
                changed.append("\n".join([line, *causes]))
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
        jnp.sum: 0). The work done here is not counted in the test's traces and compiles, and
        leaves `fn` as it was: each size is measured on a fresh jit of the same function."""
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
        result = ScalingResult(label, metric, max_exponent=max_exponent)
        for n in sizes:
            result.sizes.append(int(n))
            result.values.append(self._scaling_point(fn, tuple(make_args(n)), metric))
        result.exponent = growth_exponent(result.sizes, result.values)
        scope = self._scope()
        if scope is not None:
            scope.benchmarks[label] = result.entry()
        if max_exponent is not None and result.exponent > max_exponent:
            pytest.fail(
                f"jaxperf.scaling: {metric} of {_name(fn)} grows with exponent "
                f"{result.exponent:.2f} > max_exponent {max_exponent:g}\n{result.table()}",
                pytrace=False,
            )
        return result

    def _scaling_point(self, fn: Callable[..., Any], args: tuple[Any, ...], metric: str) -> float:
        # A new jit per point: it shares no cache entry with the user's function (whose caches
        # stay as they were) nor with another size, so compile_s is a real compile each time.
        return _SCALING_POINTS[metric](_fresh_jit(fn), args, self._rootdir, self._timing)


# One scaling metric of a fresh jit at one size: (jitted, args, rootdir, timing) -> value.
_ScalingPoint = Callable[[Any, tuple[Any, ...], Path, TimingConfig], float]


def _jaxpr_eqns_point(
    jitted: Any, args: tuple[Any, ...], rootdir: Path, timing: TimingConfig
) -> float:
    with RECORDER.paused(), _quiet_donation():
        return float(program_metrics.count_eqns(jitted.trace(*args).jaxpr))


def _hlo_ops_point(
    jitted: Any, args: tuple[Any, ...], rootdir: Path, timing: TimingConfig
) -> float:
    with RECORDER.paused(), _quiet_donation():
        return float(program_metrics.hlo_ops(jitted.trace(*args).lower()))


def _compile_s_point(
    jitted: Any, args: tuple[Any, ...], rootdir: Path, timing: TimingConfig
) -> float:
    # Ahead of time: compiled, never run, so donated arguments are not consumed.
    with _quiet_donation(), RECORDER.scope(rootdir) as inner:
        jitted.trace(*args).lower().compile()
    return held(inner.totals().total_s, "wall seconds") + held(inner.eager.total_s, "wall seconds")


def _runtime_s_point(
    jitted: Any, args: tuple[Any, ...], rootdir: Path, timing: TimingConfig
) -> float:
    import jax

    with RECORDER.paused(), _quiet_donation():
        spares = _spares(jitted, args, {})
        jax.block_until_ready(jitted(*args))
        config = TimingConfig(min_rounds=5, max_time=timing.max_time / 4, warmup_time=0.01)
        return _time(jitted, args, {}, _refresher(args, {}, spares), config).median_s


_SCALING_POINTS: dict[str, _ScalingPoint] = {
    "jaxpr_eqns": _jaxpr_eqns_point,
    "hlo_ops": _hlo_ops_point,
    "compile_s": _compile_s_point,
    "runtime_s": _runtime_s_point,
}
# The metrics jaxperf.scaling accepts, in the order its error message lists them.
SCALING_METRICS = tuple(_SCALING_POINTS)


def growth_exponent(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) over log(size); values <= 0 count as tiny."""
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(v, 1e-12)) for v in values]
    if len(set(ys)) == 1:
        return 0.0
    return statistics.linear_regression(xs, ys).slope


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


def _time(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fresh: Callable[[], Inputs] | None,
    config: TimingConfig,
) -> RuntimeStats:
    """Steady-state seconds per call of fn(*args, **kwargs), or of fn on fresh() inputs, with
    the process CPU seconds per call on the CPU backend (elsewhere the work runs on the device
    and is no process CPU time)."""
    import jax

    from . import timing

    cpu = time.process_time if jax.default_backend() == "cpu" else None
    if fresh is None:
        return timing.measure(
            lambda: jax.block_until_ready(fn(*args, **kwargs)), config, cpu_clock=cpu
        )
    return timing.measure_each(
        fresh, lambda a: jax.block_until_ready(fn(*a[0], **a[1])), config, cpu_clock=cpu
    )


class CountProgress:
    """What the terminal hears while a benchmark's calls are counted under valgrind, where
    one call of 10 ms natively can take over a minute: one line per benchmark when its calls
    are counted (which, how many, seconds since the benchmark began), and, once a benchmark
    has taken longer than SLOW_S, a line after each counted call as well."""

    SLOW_S = 10.0

    def __init__(
        self,
        what: str,
        start: float,
        write: Callable[[str], None] | None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.what = what
        self.start = start
        self.write = write
        self.clock = clock

    def counted(self, done: int, total: int) -> None:
        """Call `done` of `total` has been counted."""
        if self.write is None:
            return
        elapsed = self.clock() - self.start
        if done == total:
            self.write(
                f"jaxperf: {self.what}: {done} of {total} calls counted under valgrind, "
                f"{elapsed:.1f} s"
            )
        elif elapsed > self.SLOW_S:
            self.write(
                f"jaxperf: {self.what}: call {done} of {total} counted under valgrind, "
                f"{elapsed:.1f} s so far"
            )


def _count_instructions(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fresh: Callable[[], Inputs] | None,
    progress: CountProgress | None = None,
) -> int:
    """Instructions per steady-state call of fn on valgrind's simulated CPU, less waiting
    workers' spinning: the smallest of a few calls' counts (instructions.py)."""
    import jax

    from . import instructions

    current: list[Inputs] = [(args, kwargs)]

    def prepare() -> None:
        if fresh is not None:
            current[0] = fresh()

    def call() -> None:
        a, k = current[0]
        jax.block_until_ready(fn(*a, **k))

    for _ in range(2):  # past the first call's one-off work (caches, allocations)
        prepare()
        call()
    counter = instructions.counter()
    counts = []
    for number in range(1, instructions.ROUNDS + 1):
        prepare()  # fresh inputs, when needed, are not counted
        counts.append(counter.count(call).work)
        if progress is not None:
            progress.counted(number, instructions.ROUNDS)
    return min(counts)


# The jax.jit options that decide what a fresh jit traces and compiles.
_JIT_OPTIONS = (
    "static_argnums",
    "static_argnames",
    "donate_argnums",
    "donate_argnames",
    "keep_unused",
)


def _fresh_jit(fn: Callable[..., Any]) -> Any:
    """A new jax.jit of the function under `fn` (itself jitted or not), with the same static
    and donated arguments: a new function object, so it shares no cache entry with `fn`."""
    import jax

    inner = getattr(fn, "__wrapped__", fn) if hasattr(fn, "lower") else fn

    def fresh(*args: Any, **kwargs: Any) -> Any:
        return inner(*args, **kwargs)

    # The user's name, definition site and signature (static_argnames resolve against it).
    functools.update_wrapper(fresh, inner)
    # No public API tells a jitted function's options: read JAX's private record of them,
    # where it is as expected; without them every argument is traced.
    info = getattr(fn, "_jit_info", None)
    return jax.jit(fresh, **{k: getattr(info, k) for k in _JIT_OPTIONS if hasattr(info, k)})


def _spares(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
    """Copies of the array arguments, taken before the first call in case it donates them;
    None when `jitted` declares no donated argument (JAX's private `_jit_info`; where that is
    missing, copies are taken anyway)."""
    import jax

    info = getattr(jitted, "_jit_info", None)
    donates = getattr(info, "donate_argnums", True) or getattr(info, "donate_argnames", True)
    if not donates:
        return None
    return [
        _copy(x) if isinstance(x, jax.Array) and not x.is_deleted() else None
        for x in jax.tree.leaves((args, kwargs))
    ]


def _refresher(
    args: tuple[Any, ...], kwargs: dict[str, Any], spares: list[Any] | None
) -> Callable[[], Inputs] | None:
    """None when the first call consumed no argument; otherwise a function that returns the
    arguments with ready, fresh copies in place of the consumed (deleted) arrays."""
    import jax

    if spares is None:
        return None
    leaves, treedef = jax.tree.flatten((args, kwargs))
    consumed = [
        i
        for i, x in enumerate(leaves)
        if isinstance(x, jax.Array) and x.is_deleted() and spares[i] is not None
    ]
    if not consumed:
        return None

    def fresh() -> Inputs:
        new = list(leaves)
        for i in consumed:
            new[i] = _copy(spares[i])
        jax.block_until_ready([new[i] for i in consumed])  # copying is not the call's time
        out: Inputs = jax.tree.unflatten(treedef, new)
        return out

    return fresh


def _copy(x: Any) -> Any:
    import jax

    # No target device: the copy keeps the sharding and committed-ness (and weak type), so
    # the compiled program is reused. jax.device_put(x, device) would commit an uncommitted
    # array, and a committed argument can make JAX compile again.
    return jax.device_put(x, may_alias=False)


@contextlib.contextmanager
def _quiet_donation() -> Iterator[None]:
    # The plugin's own compiles (scaling's fresh jits) repeat JAX's warning about a donation
    # the user's first compile already warned of; under filterwarnings=error it would fail
    # the user's test.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        yield


def _eager_config(config: TimingConfig) -> TimingConfig:
    # The un-jitted version is for a break-even estimate: fewer rounds are enough.
    return TimingConfig(min_rounds=5, max_time=config.max_time / 2, warmup_time=0.0)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _first_call_result(
    label: str, output: Any, first_call_s: float, before: Counts, after: Counts
) -> BenchmarkResult:
    """A benchmark's result so far: the first call's seconds and what it spent tracing,
    lowering and compiling (the scope's totals after it less those before)."""
    return BenchmarkResult(
        label,
        output,
        first_call_s=first_call_s,
        trace_s=held(after.trace_s, "trace_s") - held(before.trace_s, "trace_s"),
        lower_s=held(after.lower_s, "lower_s") - held(before.lower_s, "lower_s"),
        compile_s=held(after.compile_s, "compile_s") - held(before.compile_s, "compile_s"),
        compiled_on_first_call=after.compiles > before.compiles,
    )
