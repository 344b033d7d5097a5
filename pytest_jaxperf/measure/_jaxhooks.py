"""Every JAX internal the recorder reads, in one place: the rest of the plugin never touches
`jax._src` nor branches on JAX's version.

One hook set per range of JAX versions, chosen once by feature detection (attributes, not
version strings) in `_hooks()`:

jax >= 0.9.0 (checked on 0.9.2, 0.10.2, 0.11.2, 0.12.0.1): `_TraceToJaxpr`
- traces: test event "trace_to_jaxpr" inside the weakref_lru_cache'd
  `pe.trace_to_jaxpr(fun, in_avals, debug_info, ...)`; a jit's when the caller frame is
  `_trace_for_jit`, an eager body's when `core.trace_ctx.trace` is an EvalTrace;
  jax >= 0.11 (`_TraceToJaxprNocache`): the event fires in `pe.trace_to_jaxpr_nocache`,
  which the cached `pe.trace_to_jaxpr` calls: the same locals, one frame further down on
  0.11 (a Python `trace_to_jaxpr` between); on 0.12 the cache wraps `trace_to_jaxpr_nocache`
  itself, so the asker is its direct caller and every trace is read as a cache miss (the
  cache's miss count, which tells a cleared cache, is read at each);
- traces under way around a nested one: local `fun` of the frames of the same function
  (`trace_to_jaxpr`, or `trace_to_jaxpr_nocache` on jax >= 0.11) further up the stack;
- traced programs: the top-level jit trace's jaxpr, local `jaxpr` of `_trace_for_jit` when
  it emits the trace-duration event (top-level traces only, trace cache hits too);
- causes: `pe.trace_to_jaxpr.cache_keys()` and `pe.diff_tracing_cache_keys`; on jax >= 0.11,
  which cannot explain a changed static argument, the keys' `FTStatic` values compared here
  and ranked as 0.9 - 0.10 rank them (before a type difference);
- eviction: `evict_weakref` per function on every listable cache in `util._caches`,
  `evict_function` on the `lu.cache`s (pmap's).

jax 0.6.0 - 0.8.x: `_CreatePjitJaxpr`
- traces: test event "create_pjit_jaxpr" inside the `lu.cache`d
  `pjit._create_pjit_jaxpr(fun, in_type, ...)` called from `_infer_params_impl`: `fun` is a
  WrappedFun whose `.f` is the jitted callable, and the caller `memoized_fun` holds JAX's
  `key` and the function's earlier keys (`cache`). The pre-merge pmap
  (`jax_pmap_shmap_merge` off, the 0.6/0.7 default) traces in `pxla.stage_parallel_callable`
  under the `lu.cache`d `parallel_callable`, seen through the `jax.monitoring`
  trace-duration event; the traces under way around a nested one: the `_create_pjit_jaxpr`
  frames further up (not checked on these versions);
- traced programs: local `jaxpr` of either frame at that event (an open Jaxpr; not checked
  on these versions: not found reads as not measured), top-level when the current trace is
  an EvalTrace;
- causes: the `lu.cache` keys (transforms, params, in_type, args, trace context) diffed
  here, in jax >= 0.9's wording (JAX's own `pjit.explain_tracing_cache_miss` only logs);
  the trace context is a bare tuple there, so config options are named from a snapshot of
  `config.config_states` taken with each trace;
- eviction: per function on every `lu.cache` (its `fun_caches`, found through
  `util._caches`, or on 0.6 `util.cache_clearing_funs`); weakref_lru_caches have no
  `evict_weakref` there, so one holding a user function is cleared whole; the pre-merge
  pmap's C++ caches (`api._pmap_cache_clears`) are cleared.

Not available on 0.6 - 0.8: traces of eager `lax.scan` / `while_loop` / `cond` / `fori_loop`
bodies (they are traced in weakref_lru_caches, `_initial_style_open_jaxpr` on 0.6/0.7 and
`pe.trace_to_jaxpr` on 0.8, that fire no event: counting them would mean replacing JAX's
module attributes). Their lowerings and compiles are still charged to the body (through the
lowered jaxpr's DebugInfo). `eager_traces_counted()` says which applies.

Common to all: lowering / compile counts and seconds from `jax.monitoring` duration events
(public); the jaxpr being lowered and the MLIR module it became from frame
`_cached_lowering_to_hlo`, locals `closed_jaxpr` and `lowering_result` (whose size is read
then: no second lowering); the executable compiled from frame `_cached_compilation`, local
`xla_executable` (its HLO instructions counted then);
the jitted callable from pjit's `cache_miss` frame, local `fun`; pjit's dispatch caches
(`_infer_params_cached` when present, `_cpp_pjit_cache_*`, `PjitFunctionCache.clear_all`).

Anything not as expected makes `missing()` name it; the start-up self-check turns that into
a refusal (or, allowed, into metrics marked "not measured").
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"

# The JAX releases whose internals this module was checked against, oldest first: the test
# matrix runs each (noxfile.py; .ci/run the first and the last), and pyproject.toml admits
# jax and jaxlib from the first to below the minor release after the last (the recorder
# reads internals, so an untested newer minor may have moved them). tests/test_docs.py
# holds those, the README and the documentation's table to this one tuple.
TESTED_JAX = ("0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.10.2", "0.11.2", "0.12.0.1")
SUPPORTED = f"jax {TESTED_JAX[0]} - {'.'.join(TESTED_JAX[-1].split('.')[:2])}.x"

# How far up the stack a listener looks for JAX's frames.
_MAX_DEPTH = 40


@dataclass(frozen=True)
class TraceCall:
    """One real Python trace, as seen from inside `trace_to_jaxpr`."""

    fun: Any  # the callable handed to the trace (a user function, partial, JAX wrapper, ...)
    debug_info: Any  # JAX's DebugInfo: func_name, func_filename, func_lineno
    in_avals: Any
    by_jit: bool  # traced for a jit (top-level or nested)
    eager: bool  # traced outside any other trace (eager lax.scan / cond / while bodies)
    static: tuple[Any, ...] = ()  # the jit call's static arguments
    # The same by JAX's input path in its explanations: (("[0][1]", 3), ("[1]['k']", 2)).
    static_at: tuple[tuple[str, Any], ...] = ()
    # jax 0.6 - 0.8: JAX's cache key of this trace, and the function's lu.cache dict, whose
    # keys are its earlier traces' (looked up, not copied: see `miss_explanation`).
    key: Any = None
    cached: dict[Any, Any] | None = field(default=None, compare=False)
    # The callables of the traces under way around this one on its thread, innermost first
    # (empty for a top-level trace): `jax.jit(jax.vmap(jitted))` traces `jitted`'s function
    # inside the trace of vmap's wrapper around it (see `enclosing_traces`).
    enclosing: tuple[Any, ...] = field(default=(), compare=False)


def jax_version() -> str:
    import jax

    return str(jax.__version__)


def missing() -> list[str]:
    """The private hooks the recorder needs that this JAX lacks, by name."""
    try:
        hooks = _hooks()
    except ImportError as exc:  # pragma: no cover - a JAX without these modules
        return [f"jax._src modules ({exc})"]
    return hooks.missing()


def hook_set() -> str:
    """Which hook set this JAX uses, for messages: 'trace_to_jaxpr (jax >= 0.9)'."""
    return _hooks().name


def eager_traces_counted() -> bool:
    """Whether traces of eager control-flow bodies (lax.scan outside jit) are counted."""
    return _hooks().eager_traces


# -- the plugin's own programs ----------------------------------------------------------
# Settings a conftest, the environment or a fixture may make that would change what the
# plugin's own programs (the self-check's probe) trace to (x64 makes f64 arrays), whether
# they trace at all (disable_jit), whether they run (promotion rules, NaN checks, transfer
# guards), or what they leave behind (a persistent-cache entry in the user's directory,
# log records): pinned, thread-locally, around them. The compilation cache itself is left
# on: JAX decides once per process, at the first compile, whether it is used at all.
_OWN_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("jax_enable_x64", False),
    ("jax_disable_jit", False),
    ("jax_numpy_dtype_promotion", "standard"),
    ("jax_numpy_rank_promotion", "allow"),
    ("jax_default_matmul_precision", None),
    ("jax_debug_nans", False),
    ("jax_debug_infs", False),
    ("jax_check_tracer_leaks", False),
    ("jax_explain_cache_misses", False),
    ("jax_log_compiles", False),
    ("jax_transfer_guard_host_to_device", "allow"),
    ("jax_transfer_guard_device_to_device", "allow"),
    ("jax_transfer_guard_device_to_host", "allow"),
    ("jax_persistent_cache_min_compile_time_secs", 1e9),
)


def own_settings() -> contextlib.AbstractContextManager[None]:
    """JAX's defaults for the settings above, on this thread, whatever the user set (an
    option this JAX lacks is skipped)."""
    return _pinned(_OWN_SETTINGS)


# Pinned while a kept program is lowered and compiled again to confirm a compile-time
# breach: it must not write the user's persistent cache (nor log, nor explain).
_RECOMPILE_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("jax_disable_jit", False),
    ("jax_explain_cache_misses", False),
    ("jax_log_compiles", False),
    ("jax_persistent_cache_min_compile_time_secs", 1e9),
)


def lower_and_compile(closed_jaxpr: Any) -> None:
    """Lower and compile a kept program (the ClosedJaxpr a lowering had in hand, see
    `lowering()`) again, as a new function, so that no cache of JAX's holds it:
    `jax.jit(jaxpr_as_fun(closed_jaxpr)).lower(<its input types>).compile()`. Its trace
    evaluates the jaxpr's equations (not the user's Python); its lowering and backend
    compile are the program's. `jaxpr_as_fun` is `jax.extend.core`'s (jax 0.6 - 0.10),
    else `jax._src.core`'s."""
    import jax

    try:
        from jax.extend.core import jaxpr_as_fun
    except ImportError:  # pragma: no cover - a JAX without it in jax.extend
        from jax._src.core import jaxpr_as_fun
    avals = [
        jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=getattr(a, "weak_type", False))
        for a in closed_jaxpr.in_avals
    ]
    with _pinned(_RECOMPILE_SETTINGS):
        jax.jit(jaxpr_as_fun(closed_jaxpr)).lower(*avals).compile()


@contextlib.contextmanager
def _pinned(settings: tuple[tuple[str, Any], ...]) -> Iterator[None]:
    """`settings` on this thread (an option this JAX lacks, or whose values differ, is left
    as it is)."""
    with contextlib.ExitStack() as stack:
        for name, value in settings:
            state = _config_state(name)
            if state is None:
                continue
            try:
                stack.enter_context(state(value))
            except Exception:
                continue
        yield


# The first JAX on which programs compiled natively through the clock's path were shown to
# be those compiled under valgrind (the same object files). On 0.6.2 a program loaded from
# a persistent cache counted 0.3-0.5% more instructions per call than compiled in-process.
NATIVE_PASS_FROM = (0, 10)


def cache_key_problem() -> str | None:
    """Why `cache_key_without_topology` cannot work with this JAX, or None."""
    release = tuple(int(p) for p in re.findall(r"\d+", jax_version())[:2])
    if release < NATIVE_PASS_FROM:
        return (
            f"jax {jax_version()}: natively compiled programs are not shown to be those "
            f"compiled under valgrind before jax 0.10"
        )
    try:
        from jax._src import cache_key
    except ImportError as exc:
        return f"jax {jax_version()} has no jax._src.cache_key ({exc})"
    for name in ("_hash_accelerator_config", "_hash_devices"):
        if not callable(getattr(cache_key, name, None)):
            return f"jax {jax_version()} has no jax._src.cache_key.{name}"
    return None


def cache_key_without_topology(folder: str) -> str | None:
    """Key the entries of the persistent compilation cache in `folder` (only there) without
    the PJRT CPU topology's fingerprint, which follows the CPU the process sees (valgrind's
    simulated one differs from the host's): the device kinds are hashed in its place.
    `jax._src.cache_key._hash_accelerator_config(hash_obj, devices)`, looked up by name at
    each key (jax 0.6.2 hashes the serialized topology there, 0.10.2 its fingerprint).
    Returns why it could not be done, None when it was."""
    problem = cache_key_problem()
    if problem is not None:
        return problem
    from jax._src import cache_key

    original = cache_key._hash_accelerator_config
    devices = cache_key._hash_devices
    if getattr(original, "_jaxperf_folder", None) == folder:
        return None

    def hash_accelerator_config(hash_obj: Any, accelerators: Any) -> None:
        state = _config_state("jax_compilation_cache_dir")
        if state is not None and state.value == folder:
            devices(hash_obj, accelerators)
        else:
            original(hash_obj, accelerators)

    hash_accelerator_config._jaxperf_folder = folder  # type: ignore[attr-defined]
    cache_key._hash_accelerator_config = hash_accelerator_config
    return None


def jit_disabled() -> bool:
    """Whether jax_disable_jit is on (globally or in this thread): nothing is traced then."""
    state = _config_state("jax_disable_jit")
    return bool(state is not None and state.value)


def _config_state(name: str) -> Any:
    """JAX's state object of a config option (a context manager when called), or None."""
    from jax._src import config

    return getattr(config, "config_states", {}).get(name)


# -- what the same code lowers to --------------------------------------------------------
# JAX options (besides x64, kept on its own) under which the same function lowers to another
# program: the PRNG's implementation and partitioning, the matmul precision attribute, the
# sharding dialect. An option this JAX lacks is left out.
_LOWERING_OPTIONS = (
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_default_matmul_precision",
    "jax_use_shardy_partitioner",
    "jax_softmax_custom_jvp",
)


def lowering_options() -> dict[str, str]:
    """{option: value} of the JAX options that change what a function lowers to, as set
    now (globally: the value outside any thread's context manager)."""
    out = {}
    for name in _LOWERING_OPTIONS:
        state = _config_state(name)
        if state is not None:
            out[name] = str(getattr(state, "value", None))
    return out


# -- CPU dispatch ------------------------------------------------------------------------
_ASYNC_FLAG = "jax_cpu_enable_async_dispatch"


def cpu_dispatch() -> str:
    """'async' or 'sync': how the CPU client runs computations (read by JAX when it builds
    the client, so this is what runs once backends are initialised)."""
    import jax

    return "async" if jax.config.read(_ASYNC_FLAG) else "sync"


def make_cpu_dispatch_sync() -> str | None:
    """Make CPU computations run on the calling thread, before JAX builds its CPU client.

    With asynchronous dispatch the caller spin-waits for a worker thread, and that wait is
    process CPU time that grows with other processes' load. Returns why it was left alone
    (the user set the flag, or the backend already exists), None when it was changed."""
    import jax
    from jax._src import xla_bridge

    if _ASYNC_FLAG.upper() in os.environ:
        return f"{_ASYNC_FLAG.upper()} is set"
    if xla_bridge.backends_are_initialized():
        return "JAX's backends were initialised before pytest_configure (by a conftest?)"
    jax.config.update(_ASYNC_FLAG, False)
    return None


# -- traces ------------------------------------------------------------------------------
class TraceListener:
    """Chains into JAX's single test-event slot and hands each real trace to `callback`.

    JAX's own test utilities (and possibly a user's) use the same slot: the previous
    listener is always called too, and `ensure()` re-chains when someone replaced ours."""

    def __init__(self, callback: Callable[[TraceCall], None]) -> None:
        self._callback = callback
        self._previous: Callable[..., Any] | None = None
        self._hooks = _hooks()
        self._event = self._hooks.test_event
        self._monitoring = False
        # One bound-method object, so that `ensure` can recognise it in the slot.
        self.listen = self._listen

    def _listen(self, name: str, *args: Any) -> None:
        if name == self._event:
            call = self._hooks.trace_call(sys._getframe(2))
            if call is not None:
                self._callback(call)
        if self._previous is not None:
            self._previous(name, *args)

    def _on_duration(self, event: str, duration_secs: float, **kwargs: Any) -> None:
        if event == TRACE_EVENT:
            call = self._hooks.duration_trace_call()
            if call is not None:
                self._callback(call)

    def ensure(self) -> bool:
        """Put the listener in JAX's slot if it is not there; True when it had to."""
        from jax._src import util

        current = util.test_event_listener
        chained = current is not self.listen
        if chained:
            self._previous = current
            util.test_event_listener = self.listen
        if self._hooks.uses_trace_duration and not self._monitoring:
            import jax.monitoring

            # Registered once and never removed (jax's unregister asserts).
            jax.monitoring.register_event_duration_secs_listener(self._on_duration)
            self._monitoring = True
        return chained


def miss_explanation(call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
    """(seen before, JAX's text for the closest difference) for a trace of `call.fun`.

    Built from the trace cache's own keys, so it works whatever the logging configuration
    and wherever the function's file lies. `previous` is the cache key of this function's
    last trace (from `cache_key`), when known: a static argument then reads 2 -> 3, not
    0 -> 3. The text is in jax >= 0.9's wording on every version (see `causes`)."""
    return _hooks().miss_explanation(call, previous)


def cache_key(call: TraceCall) -> Any:
    """What `miss_explanation` compares against on this function's next trace."""
    return _hooks().cache_key(call)


def entry_key(call: TraceCall) -> Any:
    """The key of the trace-cache entry this trace fills, less the function: equal for two
    traces of one function that the cache would serve from one entry (jax >= 0.9: the
    trace context, input types and DebugInfo; 0.6 - 0.8: the `lu.cache` key)."""
    return _hooks().entry_key(call)


def watch_cache_clears(callback: Callable[[], None]) -> bool:
    """Call `callback` after each `jax.clear_caches()` (however it was imported): it empties
    JAX's caches through `jax._src.util.clear_all_caches` (jax 0.6 - 0.11), looked up as a
    module attribute at each call, which is wrapped here once. False where it is missing."""
    from jax._src import util

    original = getattr(util, "clear_all_caches", None)
    if not callable(original):
        return False
    if getattr(original, "_jaxperf_watch", None) is not None:
        original._jaxperf_watch.append(callback)
        return True

    watchers = [callback]

    @functools.wraps(original)
    def clear_all_caches(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            for watcher in list(watchers):
                watcher()

    clear_all_caches._jaxperf_watch = watchers  # type: ignore[attr-defined]
    util.clear_all_caches = clear_all_caches
    return True


# -- lowerings ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Lowering:
    """What JAX's lowering has in hand when it announces its duration: the ClosedJaxpr
    lowered and the MLIR module it became (either None where not found), and how many
    devices the program runs on (None where not known: the pre-merge pmap's lowering)."""

    jaxpr: Any
    module: Any
    devices: int | None = None


def lowering() -> Lowering:
    """The lowering whose duration event is being emitted, read from the frame of JAX's
    lowering (`_cached_lowering_to_hlo`, or `lower_parallel_callable`: the pre-merge pmap of
    jax 0.6 / 0.7): its locals `closed_jaxpr`, `lowering_result` and `num_devices` (jax 0.6.0
    - 0.11.0; the pmap frame has no device count)."""
    frame = _nearest(("_cached_lowering_to_hlo", "lower_parallel_callable"), start=2)
    if frame is None:
        return Lowering(None, None)
    result = frame.f_locals.get("lowering_result")
    devices = frame.f_locals.get("num_devices")
    return Lowering(
        frame.f_locals.get("closed_jaxpr"),
        getattr(result, "module", None),
        devices if isinstance(devices, int) else None,
    )


def compiled_executable() -> Any:
    """The executable whose backend-compile duration event is being emitted (or None),
    loaded from the persistent cache or compiled: the local `xla_executable` of
    `pxla._cached_compilation` (jax 0.6.0 - 0.11.0), or `compiled` of the pre-merge pmap's
    `UnloadedPmapExecutable.from_hlo` (jax 0.6 - 0.8)."""
    frame = _nearest(("_cached_compilation", "from_hlo"), start=2)
    if frame is None:
        return None
    local = frame.f_locals
    return local.get("xla_executable", local.get("compiled"))


def executable_ops(executable: Any) -> int:
    """HLO instructions of a compiled executable, every computation (fusions, loop bodies)
    of every module: `HloComputation.instructions()` where jaxlib has it (0.9 on), else its
    modules' text, one instruction a line (`%x = ...`, `ROOT %x = ...`: the same count)."""
    total = 0
    for module in executable.hlo_modules():
        computations = module.computations()
        if all(hasattr(c, "instructions") for c in computations):
            total += sum(len(c.instructions()) for c in computations)
            continue
        for line in module.to_string().splitlines():
            text = line.lstrip().removeprefix("ROOT ")
            total += text.startswith("%") and " = " in text
    return total


def module_ops(module: Any) -> int:
    """Operations of an MLIR module, every region walked (`func.call` and the region
    terminators included), the module itself not counted."""
    from jax.interpreters import mlir

    count = 0
    advance = mlir.ir.WalkResult.ADVANCE

    def visit(op: Any) -> Any:
        nonlocal count
        count += 1
        return advance

    module.operation.walk(visit)
    return count - 1


def eqn_user_line(eqn: Any) -> tuple[str, int] | None:
    """(file, line) of the innermost frame outside JAX that made a jaxpr equation, as JAX's
    own equation profile (`jaxpr_util.pprof_equation_profile`) finds it; None where the
    equation has no such frame. `source_info_util.user_frame` takes the equation's
    `source_info` on jax 0.6 and its `source_info.traceback` from 0.7 on."""
    frame = _user_frame()(eqn.source_info)
    if frame is None:
        return None
    return frame.file_name, frame.start_line


def scan_unroll(eqn: Any) -> int:
    """How many copies of its body a `scan` equation (a `lax.scan`, or a `lax.fori_loop` with
    static bounds) puts in the lowered program: its `unroll` parameter (an int on jax 0.6 -
    0.12, `unroll=True` already turned into the loop's length; True read as its `length`);
    1 for a loop not unrolled or any other equation."""
    unroll = eqn.params.get("unroll", 1)
    if unroll is True:
        unroll = eqn.params.get("length", 1)
    return unroll if isinstance(unroll, int) and unroll > 1 else 1


def closed_over_consts(jaxpr: Any) -> list[tuple[Any, int]]:
    """(constvar, bytes) of each array constant a ClosedJaxpr closes over (its `consts`, the
    values of `jaxpr.constvars` on jax 0.6 - 0.12: a closed-over NumPy or JAX array is
    embedded in the lowered program); empty for a plain Jaxpr or one without constants."""
    consts = getattr(jaxpr, "consts", None)
    if not consts:
        return []
    constvars = getattr(getattr(jaxpr, "jaxpr", None), "constvars", ())
    return [
        (var, int(getattr(value, "nbytes", 0) or 0))
        for var, value in zip(constvars, consts)
        if getattr(value, "nbytes", 0)
    ]


@functools.cache
def _user_frame() -> Callable[[Any], Any]:
    import inspect

    from jax._src import source_info_util

    user_frame = source_info_util.user_frame
    first = next(iter(inspect.signature(user_frame).parameters), "")
    if first == "source_info":  # jax 0.6
        return user_frame
    return lambda info: user_frame(info.traceback)


def traced_for_jit() -> tuple[Any, Any, tuple[Any, ...]] | None:
    """(callable, DebugInfo, static arguments) of the jit trace whose duration event is
    being emitted."""
    return _hooks().traced_for_jit()


@dataclass(frozen=True)
class TracedProgram:
    """What a jit trace has in hand when its duration event is emitted: the jaxpr it traced
    (a ClosedJaxpr, or an open Jaxpr on jax 0.6 - 0.8; None where not found: not measured)."""

    jaxpr: Any
    # Traced outside any other trace: a nested trace's equations are in its outer's.
    top_level: bool
    # Whether the event is emitted for real traces only (the lu.cache'd frames of jax
    # 0.6 - 0.8). jax >= 0.9 emits it around a call of the trace cache, hit or miss.
    misses_only: bool


def trace_raised() -> bool:
    """Whether the duration event being emitted leaves its timed block with an exception (a
    trace that raised made no program: no equation, rather than an unread one): the
    `exc_type` JAX's `LogElapsedTimeContextManager.__exit__` got (jax 0.10.2 times the trace
    with it; where the frame is not found, False: the program is then looked for as ever)."""
    frame = find_frame("__exit__", start=3)
    if frame is None or type(frame.f_locals.get("self")).__name__ != "LogElapsedTimeContextManager":
        return False
    return frame.f_locals.get("exc_type") is not None


def traced_program() -> TracedProgram:
    """The program of the jit trace whose duration event is being emitted: the local
    `jaxpr` of `_trace_for_jit` (jax >= 0.9), of `_create_pjit_jaxpr` or of the pre-merge
    pmap's `stage_parallel_callable` (jax 0.6 - 0.8), assigned inside the timed block."""
    return _hooks().traced_program()


def _jaxpr_local(frame: FrameType | None, name: str) -> Any:
    """A frame's local `name` when it is a (Closed)Jaxpr, else None (not found)."""
    value = None if frame is None else frame.f_locals.get(name)
    return value if hasattr(getattr(value, "jaxpr", value), "eqns") else None


def _top_level() -> bool:
    from jax._src import core

    return isinstance(core.trace_ctx.trace, core.EvalTrace)


def _only_jit_wrappers_around(frame: FrameType | None) -> bool:
    """Whether every trace enclosing the one in `frame` (a `_create_pjit_jaxpr`, jax 0.6 -
    0.8) traces a jitted object itself: `jax.eval_shape(jax.jit(f))` traces the jit object,
    whose trace only calls the jit, so `f`'s trace is the top-level one that counts (checked
    on jax 0.6.2)."""
    around = enclosing_traces(None if frame is None else frame.f_back, "_create_pjit_jaxpr")
    return bool(around) and all(is_jit_wrapper(_wrapped_f(fun)) for fun in around)


def is_jit_wrapper(fun: Any) -> bool:
    """A jitted callable handed to another trace (`make_jaxpr(jitted)`): tracing it only
    calls the jit, which traces (or finds cached) its own function."""
    return hasattr(fun, "lower") and hasattr(fun, "trace") and hasattr(fun, "__wrapped__")


def jitted_callable() -> Any:
    """The callable whose jit dispatch is on the stack (the `cache_miss` of pjit), or None."""
    frame = find_frame("cache_miss", start=3)
    return None if frame is None else frame.f_locals.get("fun")


def debug_infos(closed_jaxpr: Any, depth: int = 4) -> Iterator[Any]:
    """DebugInfo of a jaxpr, then of the jaxprs inside its equations, breadth first:
    the user's body of an eager scan sits one level below JAX's `prim_fun`."""
    level = [getattr(closed_jaxpr, "jaxpr", closed_jaxpr)]
    for _ in range(depth):
        nxt: list[Any] = []
        for jaxpr in level:
            dbg = getattr(jaxpr, "debug_info", None)
            if dbg is not None:
                yield dbg
            for eqn in getattr(jaxpr, "eqns", ()):
                for value in eqn.params.values():
                    for sub in value if isinstance(value, (tuple, list)) else (value,):
                        inner = getattr(sub, "jaxpr", sub)
                        if hasattr(inner, "eqns"):
                            nxt.append(inner)
        level = nxt
        if not level:
            return


# -- eviction ----------------------------------------------------------------------------
def evict(
    keep: Callable[[Any, Callable[[], Any]], bool],
    seen: list[Any],
    jitted: list[Any] | None = None,
    traced: list[tuple[Any, Any]] | None = None,
) -> int:
    """Forget every function in JAX's function-keyed caches for which `keep(fun, debug_info)`
    (`debug_info()` gives the DebugInfo of the function's cache entry; a call, as it costs)
    is false, and empty the dispatch caches above them (they re-fill from the trace cache
    without a trace). `seen` are callables traced since the last eviction, for the caches
    that cannot be listed (pmap's). Returns how many entries were evicted. Raises when the
    caches are not as expected: the caller then clears everything.

    `jitted`: the `jax.jit` objects of every evicted function, when all are known (see
    `calling_jitted`): only their C++ dispatch caches are emptied. None empties all of them,
    and each of JAX's helpers then takes the Python path once more (~0.2 ms each).

    `traced`: (callable, DebugInfo) of every trace since the last eviction, when none was
    missed: only these are looked at, where the hook set can (`evict_traced`), so that an
    eviction costs what was traced since the last one, not what JAX has cached (listing a
    cache's keys costs ~17 us each, and JAX's caches hold thousands late in a session).
    None walks every cache."""
    hooks = _hooks()
    evicted = hooks.evict(keep, seen) if traced is None else hooks.evict_traced(keep, seen, traced)
    _clear_dispatch_caches(clear_infer_params=not hooks.evicts_infer_params, jitted=jitted)
    return evicted


def calling_jitted(start: int = 3) -> Any | None:
    """The `jax.jit` object (jaxlib's PjitFunction) whose call is being traced, when the
    Python frame that called it holds it in a local variable, one attribute away
    (`self._cached(...)`) or in its module's globals; None otherwise."""
    frame = find_frame("cache_miss", start)
    if frame is None:
        return None
    fun, info = frame.f_locals.get("fun"), frame.f_locals.get("jit_info")
    if fun is None or info is None:
        return None

    def calls(obj: Any) -> bool:
        return getattr(obj, "_jit_info", None) is info and getattr(obj, "_fun", None) is fun

    # Past JAX's own frames (api_boundary's traceback filter wraps cache_miss).
    jax_src = os.path.dirname(os.path.dirname(frame.f_code.co_filename)) + os.sep
    caller: FrameType | None = frame.f_back
    while caller is not None and caller.f_code.co_filename.startswith(jax_src):
        caller = caller.f_back
    if caller is None:
        return None
    for value in list(caller.f_locals.values()):
        if calls(value):
            return value
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            for attr in list(attrs.values()):
                if calls(attr):
                    return attr
    # A module-level `@jax.jit` function called from a test.
    return next((v for v in list(caller.f_globals.values()) if calls(v)), None)


def _clear_dispatch_caches(clear_infer_params: bool, jitted: list[Any] | None = None) -> None:
    from jax._src import pjit

    # `_infer_params_cached` sits between the C++ caches and the trace cache: emptied
    # whole, every JAX helper (jnp.allclose, random.uniform) would be traced again at its
    # next call. Hook sets that evict user functions from it one by one keep it.
    # Absent on some releases: then the C++ caches below are the only ones above the trace.
    infer = getattr(pjit, "_infer_params_cached", None)
    if infer is not None and clear_infer_params:
        infer.cache_clear()
    if jitted is not None and all(hasattr(f, "_clear_cache") for f in jitted):
        for fun in jitted:
            fun._clear_cache()
    else:
        _clear_all_dispatch_caches()
    # The pre-0.8 pmap's C++ executables, per pmapped function (absent from 0.8 on).
    from jax._src import api

    for fun in list(getattr(api, "_pmap_cache_clears", ())):
        fun._cache_clear()


def _clear_all_dispatch_caches() -> None:
    from jax._src import pjit

    # Emptied whole: a function missing here takes the Python path once (~0.2 ms), which
    # refills it from the caches below without a trace.
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    type(pjit._cpp_pjit_cache_fun_only).clear_all()  # jaxlib's PjitFunctionCache


def _lists_keys(cache: Any) -> bool:
    return hasattr(cache, "evict_weakref") and hasattr(cache, "cache_keys")


# id(cache) -> whether its keys are callables, for JAX's module-level caches (which live as
# long as the process), learnt from the first key each one holds.
_FUNCTION_KEYED: dict[int, bool] = {}


def _function_keyed(cache: Any) -> bool:
    """Whether `cache` (a weakref_lru_cache) is keyed on callables. Only those are handed a
    function to evict: in a cache keyed on MLIR modules, a function whose hash collides with
    a key's is compared to it, and `Module.__eq__` raises TypeError on a function. An empty
    cache holds nothing to evict: False until it has a key."""
    known = _FUNCTION_KEYED.get(id(cache))
    if known is not None:
        return known
    keys = cache.cache_keys()
    for key in keys:
        ref = key[0] if isinstance(key, tuple) and key else None
        target = ref() if isinstance(ref, weakref.ref) else None
        if target is not None:
            _FUNCTION_KEYED[id(cache)] = callable(target)
            return callable(target)
    # Empty: nothing to evict. Every key dead: looked at again next time, evicted from now.
    return bool(keys)


def _key_debug_info(key: tuple[Any, ...]) -> Any:
    # (fun_ref, trace_context, (in_avals, debug_info, *context), kwargs); older caches hold
    # the DebugInfo elsewhere among the arguments.
    try:
        args = key[2]
    except (IndexError, TypeError):
        return None
    if not isinstance(args, tuple):
        return None
    if len(args) > 1 and hasattr(args[1], "func_src_info"):
        return args[1]
    return next((a for a in args if hasattr(a, "func_src_info")), None)


def static_args(frame: FrameType | None) -> tuple[Any, ...]:
    """The static arguments of the jit call being traced (equinox passes the user's
    function there, and jits a generic wrapper), from a `_trace_for_jit` frame (jax >= 0.9)
    or an `_infer_params_internal` frame (jax 0.6 - 0.8)."""
    if frame is None or frame.f_code.co_name not in ("_trace_for_jit", "_infer_params_internal"):
        return ()
    args, info = frame.f_locals.get("args"), frame.f_locals.get("ji")
    nums = getattr(info, "static_argnums", ()) or ()
    if not isinstance(args, tuple):
        return ()
    return tuple(args[i] for i in nums if isinstance(i, int) and -len(args) <= i < len(args))


def static_inputs(frame: FrameType | None) -> tuple[tuple[str, Any], ...]:
    """The static arguments of the jit call being traced by the input path JAX's
    explanations name them by ('[0][2]' positional, "[1]['k']" keyword), from the same
    frames as `static_args` (jax 0.6 - 0.11: locals `args`, `kwargs`, `ji`)."""
    if frame is None or frame.f_code.co_name not in ("_trace_for_jit", "_infer_params_internal"):
        return ()
    local = frame.f_locals
    args, kwargs, info = local.get("args"), local.get("kwargs"), local.get("ji")
    found: list[tuple[str, Any]] = []
    if isinstance(args, tuple):
        for i in getattr(info, "static_argnums", ()) or ():
            if isinstance(i, int) and -len(args) <= i < len(args):
                found.append((f"[0][{i % len(args)}]", args[i]))
    if isinstance(kwargs, dict):
        for name in getattr(info, "static_argnames", ()) or ():
            if name in kwargs:
                found.append((f"[1][{name!r}]", kwargs[name]))
    return tuple(found)


# -- frames ------------------------------------------------------------------------------
# How far above a trace the traces enclosing it are looked for: a user's wrapper stack
# between two traces is a few frames (vmap: 11, grad: 13 on jax 0.10.2).
_MAX_ENCLOSING_DEPTH = 200


def enclosing_traces(
    frame: FrameType | None, co_name: str, unwrap: Callable[[Any], Any] | None = None
) -> tuple[Any, ...]:
    """The callables (each passed through `unwrap`) held as local `fun` by the frames above
    `frame` that run `co_name`: the traces under way around the one in `frame`, innermost
    first."""
    found: list[Any] = []
    for _ in range(_MAX_ENCLOSING_DEPTH):
        if frame is None:
            break
        if frame.f_code.co_name == co_name:
            fun = frame.f_locals.get("fun")
            if fun is not None:
                found.append(fun if unwrap is None else unwrap(fun))
        frame = frame.f_back
    return tuple(found)


def _nearest(co_names: tuple[str, ...], start: int) -> FrameType | None:
    """The innermost frame running one of `co_names`."""
    frame: FrameType | None = sys._getframe(start)
    for _ in range(_MAX_DEPTH):
        if frame is None or frame.f_code.co_name in co_names:
            return frame
        frame = frame.f_back
    return None


def find_frame(co_name: str, start: int = 2) -> FrameType | None:
    frame: FrameType | None = sys._getframe(start)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == co_name:
            return frame
        frame = frame.f_back
    return None


# -- hook sets, one per range of JAX versions ---------------------------------------------
class _HookSet:
    """What differs between JAX version ranges. Methods are called only when `missing()` is
    empty."""

    name = ""
    test_event = ""
    eager_traces = True  # traces of eager control-flow bodies are counted
    uses_trace_duration = False  # some traces are seen only through jax.monitoring
    evicts_infer_params = False  # evict() covers pjit's _infer_params_cached per function

    def missing(self) -> list[str]:
        raise NotImplementedError

    def trace_call(self, frame: FrameType) -> TraceCall | None:
        raise NotImplementedError

    def duration_trace_call(self) -> TraceCall | None:
        return None

    def miss_explanation(self, call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
        raise NotImplementedError

    def cache_key(self, call: TraceCall) -> Any:
        raise NotImplementedError

    def entry_key(self, call: TraceCall) -> Any:
        raise NotImplementedError

    def traced_for_jit(self) -> tuple[Any, Any, tuple[Any, ...]] | None:
        raise NotImplementedError

    def traced_program(self) -> TracedProgram:
        raise NotImplementedError

    def evict(self, keep: Callable[[Any, Callable[[], Any]], bool], seen: list[Any]) -> int:
        raise NotImplementedError

    def evict_traced(
        self,
        keep: Callable[[Any, Callable[[], Any]], bool],
        seen: list[Any],
        traced: list[tuple[Any, Any]],
    ) -> int:
        """`evict` from the traces since the last eviction alone; hook sets whose caches
        get entries no trace announces walk them all instead."""
        return self.evict(keep, seen)


class _TraceToJaxpr(_HookSet):
    """jax >= 0.9.0: one weakref_lru_cache'd `pe.trace_to_jaxpr` for jit and eager bodies."""

    name = "trace_to_jaxpr (jax >= 0.9)"
    test_event = "trace_to_jaxpr"
    evicts_infer_params = True  # one of the listable weakref_lru_caches evict() walks

    def __init__(self) -> None:
        # The trace cache's miss count at the last miss announced, and the number of the
        # stretch of its life since it last did not go up by one from miss to miss (see
        # `_earlier_keys`).
        self._misses: int | None = None
        self._epoch = 0
        self._names_options: bool | None = None

    def _jax_names_options(self) -> bool:
        """Whether JAX's explanation of a trace-context miss names the options that differ
        (`config.trace_context_names`, jaxlib extension >= 455; not jax 0.9): a snapshot of
        every option per trace (about 35 us) is then not needed to name them."""
        if self._names_options is None:
            from jax._src import config

            try:
                names = config.trace_context_names()
                self._names_options = len(names) == len(config.trace_context())
            except Exception:
                self._names_options = False
        return self._names_options

    def missing(self) -> list[str]:
        from jax._src import core, util
        from jax._src.interpreters import partial_eval as pe

        problems: list[str] = []
        if not hasattr(util, "test_event_listener"):
            problems.append("jax._src.util.test_event_listener")
        cache = getattr(pe, "trace_to_jaxpr", None)
        for attr in ("cache_keys", "evict_weakref"):
            if not hasattr(cache, attr):
                problems.append(f"jax._src.interpreters.partial_eval.trace_to_jaxpr.{attr}")
        if not hasattr(pe, "diff_tracing_cache_keys"):
            problems.append("jax._src.interpreters.partial_eval.diff_tracing_cache_keys")
        if not hasattr(getattr(core, "trace_ctx", None), "trace"):
            problems.append("jax._src.core.trace_ctx")
        return problems

    def trace_call(self, frame: FrameType) -> TraceCall | None:
        if frame.f_code.co_name != "trace_to_jaxpr":
            return None
        self._observe_miss()
        return self._trace_call(frame, frame.f_back)

    def _observe_miss(self) -> None:
        """A miss of `pe.trace_to_jaxpr` was announced (JAX counts it before calling the
        function). A count that is not the last one plus one starts a new epoch: the cache
        was cleared since (the count restarts at 0), or misses went unannounced."""
        from jax._src.interpreters import partial_eval as pe

        try:
            misses: int | None = int(pe.trace_to_jaxpr.cache_info().misses)
        except Exception:
            misses = None
        if misses is None or self._misses is None or misses != self._misses + 1:
            self._epoch += 1
        self._misses = misses

    def _trace_call(self, frame: FrameType, caller: FrameType | None) -> TraceCall:
        """The trace whose locals (`fun`, `in_avals`, `debug_info`) `frame` holds, asked
        for by `caller`."""
        from jax._src import core

        local = frame.f_locals
        by_jit = caller is not None and caller.f_code.co_name == "_trace_for_jit"
        eager = isinstance(core.trace_ctx.trace, core.EvalTrace)
        return TraceCall(
            fun=local.get("fun"),
            debug_info=local.get("debug_info"),
            in_avals=local.get("in_avals"),
            by_jit=by_jit,
            eager=eager,
            static=static_args(caller) if by_jit else (),
            static_at=static_inputs(caller) if by_jit else (),
            # A top-level trace has none around it: its stack is not walked.
            enclosing=() if eager else enclosing_traces(caller, frame.f_code.co_name),
        )

    def miss_explanation(self, call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
        from jax._src.interpreters import partial_eval as pe

        new = self._key(call)
        last, config_then, epoch = _previous(previous)
        keys, same = self._earlier_keys(call, new, last, epoch)
        if not keys:
            return False, None
        # The context part of JAX's keys (0.9's qdd token) is compared as is: JAX does not
        # explain it.
        ctx, args, _ = new
        try:
            diffs = [pe.diff_tracing_cache_keys((ctx, (*args, *k[1][2:]), {}), k) for k in keys]
        except Exception:
            return True, None
        text = str(min(diffs)[-1])
        if same and _CONTEXT_MISS in text and "differs:" not in text:
            # jax 0.9 does not name the option (0.10 does): named from the snapshots.
            text = "\n".join([text, *_context_lines(_config_values(), config_then)])
        return True, text

    def _key(self, call: TraceCall) -> Any:
        """JAX's key of this trace as `cache_keys()` lists it, less the function and the
        context part: (trace context, (in_avals, debug_info), {})."""
        from jax._src import config

        return (config.trace_context(), (call.in_avals, call.debug_info), {})

    def _earlier_keys(
        self, call: TraceCall, new: Any, last: Any | None, epoch: int | None
    ) -> tuple[list[Any], bool]:
        """The keys of `call.fun`'s earlier traces to explain this trace by, and whether they
        are its last trace's (`last`, from `cache_key`) alone.

        The last trace's key is still in the cache when the cache was not cleared since (the
        same epoch) and the new key differs from it (an equal one would have been a hit, so
        that entry is gone: evicted, as `jitted.clear_cache()` does). It alone is then
        diffed, without reading the cache: listing its keys costs what the whole cache holds,
        thousands of entries in a test that traces thousands of times, on every retrace.
        Otherwise the function's keys are read from that listing (as JAX's own `explain`
        does), at most once per function after each new epoch."""
        from jax._src.interpreters import partial_eval as pe

        if last is not None and epoch == self._epoch:
            try:
                if new != last:
                    return [last], True
            except Exception:
                pass  # keys that cannot be compared: read from the cache
        keys: list[Any] = [
            (k[1], tuple(k[2]), {})
            for k in _all_keys(pe.trace_to_jaxpr)
            if k and k[0]() is call.fun
        ]
        same = [k for k in keys if (k[0], k[1][:2], {}) == last]
        return (same or keys), bool(same)

    def cache_key(self, call: TraceCall) -> Any:
        config = None if self._jax_names_options() else _config_values()
        return self._key(call), config, self._epoch

    def entry_key(self, call: TraceCall) -> Any:
        return self._key(call)

    def traced_for_jit(self) -> tuple[Any, Any, tuple[Any, ...]] | None:
        frame = find_frame("_trace_for_jit", start=4)
        if frame is None:
            return None
        return frame.f_locals.get("fun"), frame.f_locals.get("dbg"), static_args(frame)

    def traced_program(self) -> TracedProgram:
        # The event fires only for top-level traces (`core.trace_state_clean()`), after
        # `jaxpr, out_avals = pe.trace_to_jaxpr(...)` inside the timed block; also when the
        # trace cache hit (a new jax.jit object of a function traced before).
        frame = find_frame("_trace_for_jit", start=4)
        return TracedProgram(_jaxpr_local(frame, "jaxpr"), _top_level(), misses_only=False)

    def evict(self, keep: Callable[[Any, Callable[[], Any]], bool], seen: list[Any]) -> int:
        from jax._src import util
        from jax._src.interpreters import partial_eval as pe

        caches = [pe.trace_to_jaxpr]
        caches += [c for c in util._caches if c is not pe.trace_to_jaxpr and _lists_keys(c)]
        evicted = 0
        for cache in caches:
            done: set[int] = set()
            for key in cache.cache_keys():
                ref = key[0] if isinstance(key, tuple) and key else None
                fun = ref() if isinstance(ref, weakref.ref) else None
                if fun is None or id(fun) in done:
                    continue
                done.add(id(fun))
                if not keep(fun, functools.partial(_key_debug_info, key)):
                    cache.evict_weakref(fun)
                    evicted += 1
        _evict_functions(seen)
        return evicted

    def evict_traced(
        self,
        keep: Callable[[Any, Callable[[], Any]], bool],
        seen: list[Any],
        traced: list[tuple[Any, Any]],
    ) -> int:
        # Every entry of the function-keyed caches (the trace cache, `_infer_params_cached`)
        # comes with a trace event for its function; the other listable caches are keyed on
        # jaxprs and modules, which a retrace replaces.
        from jax._src import util

        caches = [c for c in util._caches if _lists_keys(c) and _function_keyed(c)]
        done: set[int] = set()
        evicted = 0
        for fun, dbg in traced:
            if id(fun) in done:
                continue
            done.add(id(fun))
            if not keep(fun, functools.partial(_given, dbg)):
                for cache in caches:
                    cache.evict_weakref(fun)
                evicted += 1
        _evict_functions(seen)
        return evicted


class _TraceToJaxprNocache(_TraceToJaxpr):
    """jax >= 0.11.0: the trace event moved into the uncached `pe.trace_to_jaxpr_nocache`,
    which the weakref_lru_cache'd `pe.trace_to_jaxpr` calls (Pallas calls it directly). The
    cache, its keys (after 0.11.0 without the qdd token) and the jit frames are as
    in 0.9 - 0.10; only the frame holding the trace's locals is one further down (0.11), or
    is the cached function itself (0.12: the cache wraps it, no Python frame between)."""

    name = "trace_to_jaxpr_nocache (jax >= 0.11)"
    # The keys `_earlier_keys` found for a trace, and the trace.
    _keys_of: tuple[TraceCall, tuple[list[Any], bool]] | None = None

    def missing(self) -> list[str]:
        from jax._src.interpreters import partial_eval as pe

        problems = super().missing()
        if not callable(getattr(pe, "trace_to_jaxpr_nocache", None)):
            problems.append("jax._src.interpreters.partial_eval.trace_to_jaxpr_nocache")
        return problems

    def _earlier_keys(
        self, call: TraceCall, new: Any, last: Any | None, epoch: int | None
    ) -> tuple[list[Any], bool]:
        found = super()._earlier_keys(call, new, last, epoch)
        # Kept for `miss_explanation`, which compares them again: listing the cache's keys
        # costs what the whole cache holds.
        self._keys_of = (call, found)
        return found

    def miss_explanation(self, call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
        self._keys_of = None
        seen, text = super().miss_explanation(call, previous)
        # jax 0.11 keeps static arguments out of the pytree JAX diffs (a FlatTree's
        # `FTStatic` has a leaf treedef), so it cannot explain them ("explanation
        # unavailable"): compared here. jax 0.9 - 0.10 ranked a static argument's change as a
        # pytree difference, before a debug-info or type difference (severity 1 against 2
        # and 3 in `diff_tracing_cache_keys`); so does this, so that a retrace explained by
        # either one earlier trace's static argument or another's shape names the static
        # argument on every version. A context or pytree difference JAX names stays.
        if not seen or text is None or text.startswith(_NAMED_BY_JAX):
            return seen, text
        try:
            if self._keys_of is not None and self._keys_of[0] is call:
                keys = self._keys_of[1][0]
            else:
                last, _, epoch = _previous(previous)
                keys, _ = self._earlier_keys(call, self._key(call), last, epoch)
            candidates = [k[1][0] for k in keys]
            diffs = [d for old in candidates if (d := _static_diffs(call.in_avals, old))]
        except Exception:
            return seen, text
        if not diffs:
            return seen, text
        fewest = min(diffs, key=lambda lines: len(lines))
        return seen, "different input pytree:\n" + "\n".join(fewest)

    def trace_call(self, frame: FrameType) -> TraceCall | None:
        if frame.f_code.co_name != "trace_to_jaxpr_nocache":
            return None
        # The cached entry point's caller is the one that asked for the trace (jit's
        # `_trace_for_jit`, a control-flow primitive); a direct call is its own. On 0.11 a
        # Python `trace_to_jaxpr` stands between the cache and this function; from 0.12 the
        # cache wraps this function itself, so its caller is the asker and a cached miss
        # cannot be told from a direct call (Pallas's) by the frames. Every trace is then
        # taken as a miss: a direct call, which leaves the miss count alone, only starts a
        # new epoch (the next explanation reads the cache's keys, and finds the same ones).
        caller = frame.f_back
        if caller is not None and caller.f_code.co_name == "trace_to_jaxpr":
            caller = caller.f_back
        self._observe_miss()
        return self._trace_call(frame, caller)


# The explanations of jax's `diff_tracing_cache_keys` that rank before a static argument's.
_NAMED_BY_JAX = ("Tracing context", "different input pytree")


def _static_diffs(new: Any, old: Any, path: str = "") -> list[str]:
    """jax >= 0.9's lines for the static arguments that differ between two of jax 0.11's
    FlatTrees of jit arguments (`FTTuple((FTTuple(args), FTDict(kwargs)))`, a static one
    an `FTStatic`); classes told by name, as the module is absent before 0.11."""
    kind = type(new).__name__
    if kind != type(old).__name__:
        return []
    if kind == "FTStatic":
        return [] if new == old else [_static_line(path, new.val, old.val)]
    if kind == "FTTuple" and len(new.elts) == len(old.elts):
        pairs = [(f"[{i}]", a, b) for i, (a, b) in enumerate(zip(new.elts, old.elts))]
    elif kind == "FTDict":
        olds = dict(zip(old.keys, old._vals))
        pairs = [(f"[{k!r}]", v, olds[k]) for k, v in zip(new.keys, new._vals) if k in olds]
    else:
        return []
    return [line for step, a, b in pairs for line in _static_diffs(a, b, path + step)]


class _CreatePjitJaxpr(_HookSet):
    """jax 0.6.0 - 0.8.x: jit traces in the `lu.cache`d `pjit._create_pjit_jaxpr`."""

    name = "create_pjit_jaxpr (jax 0.6 - 0.8)"
    test_event = "create_pjit_jaxpr"
    eager_traces = False
    uses_trace_duration = True  # the pre-0.8 pmap

    def missing(self) -> list[str]:
        from jax._src import core, pjit, util

        problems: list[str] = []
        if not hasattr(util, "test_event_listener"):
            problems.append("jax._src.util.test_event_listener")
        if _closure_var(getattr(pjit, "_create_pjit_jaxpr", None), "fun_caches") is None:
            problems.append("jax._src.pjit._create_pjit_jaxpr (an lu.cache)")
        if not hasattr(getattr(core, "trace_ctx", None), "trace"):
            problems.append("jax._src.core.trace_ctx")
        return problems

    def trace_call(self, frame: FrameType) -> TraceCall | None:
        if frame.f_code.co_name != "_create_pjit_jaxpr":
            return None
        memo = frame.f_back  # lu.cache's memoized_fun: JAX's key and this function's cache
        caller = memo.f_back if memo is not None else None
        if memo is None or caller is None or caller.f_code.co_name != "_infer_params_impl":
            return None
        wrapped = frame.f_locals.get("fun")
        return self._call(wrapped, frame.f_locals.get("in_type"), memo, by_jit=True)

    def duration_trace_call(self) -> TraceCall | None:
        # The pre-0.8 pmap traces in `stage_parallel_callable`, under the lu.cache'd
        # `parallel_callable`, and announces it only with the trace-duration event.
        frame = _nearest(("stage_parallel_callable", "_create_pjit_jaxpr"), start=4)
        if frame is None or frame.f_code.co_name != "stage_parallel_callable":
            return None  # none, or a jit traced inside the pmap's trace (counted by its event)
        memo: FrameType | None = frame
        for _ in range(4):
            assert memo is not None
            memo = memo.f_back
            if memo is None or memo.f_code.co_name == "memoized_fun":
                break
        if memo is None or memo.f_code.co_name != "memoized_fun":
            return None
        pci = frame.f_locals.get("pci")
        return self._call(
            frame.f_locals.get("orig_fun", frame.f_locals.get("fun")),
            getattr(pci, "avals", None),
            memo,
            by_jit=True,
        )

    def _call(self, wrapped: Any, in_avals: Any, memo: FrameType, by_jit: bool) -> TraceCall:
        from jax._src import core

        cache = memo.f_locals.get("cache")
        key = memo.f_locals.get("key")
        eager = isinstance(core.trace_ctx.trace, core.EvalTrace)
        return TraceCall(
            fun=getattr(wrapped, "f", wrapped),
            debug_info=getattr(wrapped, "debug_info", None),
            in_avals=in_avals,
            by_jit=by_jit,
            eager=eager,
            enclosing=() if eager else enclosing_traces(memo, "_create_pjit_jaxpr", _wrapped_f),
            static=_wrapped_static(key),
            static_at=_wrapped_static_at(key),
            key=key,
            cached=cache if isinstance(cache, dict) else None,
        )

    def miss_explanation(self, call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
        # The function's own lu.cache dict: its keys are its earlier traces' (this one's is
        # put in when the trace returns). Looked up, not listed: a function traced
        # thousands of times has thousands of keys.
        cached = call.cached if call.cached is not None else {}
        if not any(k != call.key for k in itertools.islice(cached, 2)):
            return False, None
        new = self.cache_key(call)
        last = previous[0] if isinstance(previous, tuple) and len(previous) == 2 else None
        try:
            in_cache = last is not None and last != call.key and last in cached
        except Exception:
            in_cache = False  # a key that cannot be hashed or compared: all are diffed
        candidates = (
            [previous] if in_cache else [(k, None) for k in _all_keys(cached) if k != call.key]
        )
        try:
            diffs = [_diff_old_keys(new, old, call.debug_info) for old in candidates]
        except Exception:
            return True, None
        return True, min(diffs)[-1]

    def cache_key(self, call: TraceCall) -> Any:
        # JAX's key and the values of the config options by name: the key's trace context
        # is a bare tuple, the names tell which option changed.
        return (call.key, _config_values())

    def entry_key(self, call: TraceCall) -> Any:
        return call.key

    def traced_for_jit(self) -> tuple[Any, Any, tuple[Any, ...]] | None:
        frame = _nearest(("stage_parallel_callable", "_create_pjit_jaxpr"), start=4)
        if frame is None:
            return None
        if frame.f_code.co_name == "stage_parallel_callable":
            wrapped = frame.f_locals.get("orig_fun", frame.f_locals.get("fun"))
            return getattr(wrapped, "f", wrapped), getattr(wrapped, "debug_info", None), ()
        wrapped = frame.f_locals.get("fun")
        memo = frame.f_back
        key = memo.f_locals.get("key") if memo is not None else None
        return (
            getattr(wrapped, "f", wrapped),
            getattr(wrapped, "debug_info", None),
            _wrapped_static(key),
        )

    def traced_program(self) -> TracedProgram:
        # Both frames trace inside their lu.cache'd function (a miss), nested jits included:
        # the current trace tells those apart. Written from the frames' layout at 0.6 - 0.8
        # (not run here): a local not found reads as not measured, never as 0.
        frame = _nearest(("stage_parallel_callable", "_create_pjit_jaxpr"), start=4)
        top = _top_level() or _only_jit_wrappers_around(frame)
        return TracedProgram(_jaxpr_local(frame, "jaxpr"), top, misses_only=True)

    def evict(self, keep: Callable[[Any, Callable[[], Any]], bool], seen: list[Any]) -> int:
        from jax._src import util

        evicted = 0
        for fun_caches in _lu_caches():
            for fun in list(fun_caches.keys()):
                entries = fun_caches.get(fun)
                if not keep(fun, functools.partial(_entries_debug_info, entries)):
                    fun_caches.pop(fun, None)
                    evicted += 1
        # weakref_lru_caches have no evict_weakref here: one holding a user function
        # (an eager body's trace, checkpoint's) is cleared whole.
        registry: Any = getattr(util, "_caches", None) or getattr(util, "_weakref_lru_caches", ())
        for cache in list(registry):
            if not hasattr(cache, "cache_keys") or hasattr(cache, "evict_function"):
                continue
            for key in cache.cache_keys():
                ref = key[0] if isinstance(key, tuple) and key else None
                fun = ref() if isinstance(ref, weakref.ref) else None
                if fun is not None and not keep(fun, functools.partial(_key_debug_info, key)):
                    cache.cache_clear()
                    evicted += 1
                    break
        return evicted


def _given(value: Any) -> Any:
    return value


def _wrapped_f(wrapped: Any) -> Any:
    """The callable a WrappedFun (jax 0.6 - 0.8's `fun` of `_create_pjit_jaxpr`) holds."""
    return getattr(wrapped, "f", wrapped)


def _evict_functions(seen: list[Any]) -> None:
    """Caches keyed on a WrappedFun's function (pmap's shard_map): evicted by object."""
    from jax._src import util

    for cache in util._caches:
        if hasattr(cache, "evict_function"):
            for fun in seen:
                cache.evict_function(fun)


def _closure_var(fun: Any, name: str) -> Any:
    code = getattr(fun, "__code__", None)
    if code is None or name not in code.co_freevars or not fun.__closure__:
        return None
    try:
        return fun.__closure__[code.co_freevars.index(name)].cell_contents
    except ValueError:
        return None


def _lu_caches() -> list[Any]:
    """The per-function dicts of every `lu.cache` (WeakKeyDictionary: fun.f -> {key: ...})."""
    from jax._src import util

    found: list[Any] = []
    for cache in list(getattr(util, "_caches", ())):  # 0.7 +: the memoized functions
        fun_caches = _closure_var(cache, "fun_caches")
        if isinstance(fun_caches, weakref.WeakKeyDictionary):
            found.append(fun_caches)
    for clear in list(getattr(util, "cache_clearing_funs", ())):  # 0.6: their clear methods
        owner = getattr(clear, "__self__", None)
        if isinstance(owner, weakref.WeakKeyDictionary) and owner not in found:
            found.append(owner)
    return found


def _entries_debug_info(entries: Any) -> Any:
    """The DebugInfo of a cached trace (`(closed_jaxpr, ...)`), to tell JAX's from users'."""
    if not isinstance(entries, dict):
        return None
    for value in list(entries.values())[:1]:
        ans = value[0] if isinstance(value, tuple) and value else None
        first = ans[0] if isinstance(ans, tuple) and ans else ans
        jaxpr = getattr(first, "jaxpr", first)
        return getattr(jaxpr, "debug_info", None)
    return None


def _transforms(key: Any) -> tuple[Any, ...]:
    try:
        return tuple(key[0])
    except (TypeError, IndexError):
        return ()


def _static_transform(key: Any) -> tuple[tuple[int, ...], tuple[Any, ...]] | None:
    """(dynamic argnums, static values) of the jit's `_argnums_partial`, if it has one."""
    found = None
    for t in _transforms(key):
        if getattr(t[0], "__name__", "") == "_argnums_partial" and t[1][1]:
            found = (tuple(t[1][0]), tuple(t[1][1]))
    return found


def _static_kwargs(key: Any) -> dict[str, Any]:
    for t in _transforms(key):
        if getattr(t[0], "__name__", "") == "_argnames_partial":
            return {k: getattr(v, "val", v) for k, v in t[1][0].val.items()}
    return {}


def _wrapped_static(key: Any) -> tuple[Any, ...]:
    statics = _static_transform(key)
    values = tuple(getattr(v, "val", v) for v in statics[1]) if statics else ()
    return values + tuple(_static_kwargs(key).values())


def _wrapped_static_at(key: Any) -> tuple[tuple[str, Any], ...]:
    """`static_inputs` from an `lu.cache` key, by the paths `_diff_old_keys` writes."""
    found: list[tuple[str, Any]] = []
    statics = _static_transform(key)
    if statics:
        dyn, values = statics
        positions = sorted(set(range(len(dyn) + len(values))) - set(dyn))
        found += [(f"[0][{p}]", getattr(v, "val", v)) for p, v in zip(positions, values)]
    found += [(f"[1][{k!r}]", v) for k, v in _static_kwargs(key).items()]
    return tuple(found)


def _in_tree(key: Any) -> Any:
    for t in _transforms(key):
        if getattr(t[0], "__name__", "").startswith("flatten_fun"):
            return t[1][0]
    return None


def _key_avals(key: Any) -> tuple[Any, ...]:
    args = key[3]
    if len(args) == 3:  # _create_pjit_jaxpr(fun, in_type, token, inline)
        return tuple(args[0])
    return tuple(args[10:])  # parallel_callable(fun, backend, ..., *avals)


def _config_values() -> dict[str, Any]:
    from jax._src import config

    values: dict[str, Any] = {}
    for name, state in getattr(config, "config_states", {}).items():
        try:
            values[name] = state.value
        except Exception:
            continue
    return values


def _all_keys(cache: Any) -> list[Any]:
    """Every key of one of JAX's caches (a weakref_lru_cache, or a function's lu.cache
    dict): what `miss_explanation` reads only when the last trace's key will not do, as
    its cost grows with what the cache holds."""
    return list(cache.cache_keys() if hasattr(cache, "cache_keys") else cache)


def _previous(previous: Any) -> tuple[Any | None, dict[str, Any] | None, int | None]:
    """(JAX's key, config snapshot, epoch) of a function's last trace, from `cache_key`."""
    if isinstance(previous, tuple) and len(previous) == 3:
        return previous
    return None, None, None


_CONTEXT_MISS = "Tracing context doesn't match"


def _context_lines(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    """jax >= 0.10's lines naming the config options that differ, from two snapshots."""
    if not before:
        return []
    return [
        f"  * {name} differs: now {value} and before {before[name]}"
        for name, value in sorted(now.items())
        if name in before and before[name] != value
    ]


def _static_line(path: str, new: Any, old: Any) -> str:
    static = "<class 'jax._src.tree_util.Static'> with pytree metadata Static(val={!r})"
    return (
        f"  * at input path {path}, now {static.format(new)} and before "
        f"{static.format(old)}, so the pytree node metadata does not match"
    )


def _diff_old_keys(new: Any, old: Any, dbg: Any) -> tuple[int, int, str]:
    """jax >= 0.9's `diff_tracing_cache_keys` for the `lu.cache` keys of jax 0.6 - 0.8:
    (severity, number of differences, explanation in jax >= 0.9's wording)."""
    (new_key, new_config), (old_key, old_config) = new, old
    if new_key[4] != old_key[4]:
        msg = f"{_CONTEXT_MISS}, e.g. due to config or context manager."
        lines = _context_lines(new_config, old_config)
        count = sum(a != b for a, b in zip(new_key[4], old_key[4])) or 1
        return 0, count, "\n".join([msg, *lines])
    new_static, old_static = _static_transform(new_key), _static_transform(old_key)
    lines = _static_arg_lines(new_key, old_key, new_static, old_static)
    lines += _pytree_lines(new_key, old_key, new_static[0] if new_static else None)
    if lines:
        return 1, len(lines), "different input pytree:\n" + "\n".join(lines)
    return _aval_diff(new_key, old_key, dbg)


def _static_arg_lines(new_key: Any, old_key: Any, new_static: Any, old_static: Any) -> list[str]:
    """The static positional arguments (`new_static`, `old_static`: `_static_transform`'s)
    and static keyword arguments that differ between two keys, in jax >= 0.9's lines."""
    lines = []
    if new_static and old_static and new_static[0] == old_static[0]:
        positions = sorted(set(range(len(new_static[0]) + len(new_static[1]))) - set(new_static[0]))
        for pos, a, b in zip(positions, new_static[1], old_static[1]):
            if a != b:
                lines.append(_static_line(f"[0][{pos}]", a.val, b.val))
    new_kw, old_kw = _static_kwargs(new_key), _static_kwargs(old_key)
    for name in sorted(set(new_kw) & set(old_kw)):
        if new_kw[name] != old_kw[name]:
            lines.append(_static_line(f"[1][{name!r}]", new_kw[name], old_kw[name]))
    return lines


def _pytree_lines(new_key: Any, old_key: Any, dyn: tuple[int, ...] | None) -> list[str]:
    """Where the input pytrees of two keys differ, each path in the caller's argument
    numbers (`dyn`: the dynamic argnums, where static ones were taken out)."""
    from jax._src import tree_util

    lines = []
    new_tree, old_tree = _in_tree(new_key), _in_tree(old_key)
    if new_tree is not None and old_tree is not None and new_tree != old_tree:
        for path, thing1, thing2, why in tree_util.equality_errors_pytreedef(new_tree, old_tree):
            keys = tuple(path)
            text = tree_util.keystr(keys)
            if dyn and len(keys) >= 2 and text.startswith("[0]["):
                index = getattr(keys[1], "idx", None)
                if isinstance(index, int) and index < len(dyn):
                    text = f"[0][{dyn[index]}]" + tree_util.keystr(keys[2:])
            lines.append(f"  * at input path {text}, now {thing1} and before {thing2}, so {why}")
    return lines


def _aval_diff(new_key: Any, old_key: Any, dbg: Any) -> tuple[int, int, str]:
    """The input types that differ between two keys (severity 3), each named by `dbg`'s
    argument names; severity 4 where none does."""
    from jax._src import core

    new_avals, old_avals = _key_avals(new_key), _key_avals(old_key)
    if new_avals != old_avals:
        names = (
            dbg.safe_arg_names(len(new_avals))
            if hasattr(dbg, "safe_arg_names")
            else tuple(f"args[{i}]" for i in range(len(new_avals)))
        )
        lines = []
        weak = False
        for name, new_ty, old_ty in zip(names, new_avals, old_avals):
            if new_ty == old_ty:
                continue
            new_str, old_str = new_ty.str_short(True), old_ty.str_short(True)
            if type(new_ty) is type(old_ty) is core.ShapedArray:
                if new_ty.sharding != old_ty.sharding:
                    new_str, old_str = new_ty.str_short(True, True), old_ty.str_short(True, True)
                if new_ty.weak_type != old_ty.weak_type:
                    weak = True
                    new_str += f"{{weak_type={new_ty.weak_type}}}"
                    old_str += f"{{weak_type={old_ty.weak_type}}}"
            lines.append(f"  * at {name}, now {new_str} and before {old_str}")
        if lines:
            msg = "different input types:\n" + "\n".join(lines)
            if weak:
                msg += "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
            return 3, len(lines), msg
    return 4, 0, "cache miss explanation unavailable"


_HOOKS: _HookSet | None = None


def _hooks() -> _HookSet:
    """The hook set of the installed JAX, by feature detection (chosen once)."""
    global _HOOKS
    if _HOOKS is None:
        from jax._src import pjit

        # jit traces through `_trace_for_jit` from 0.9 on; before, through the lu.cache'd
        # `_create_pjit_jaxpr`. A JAX with neither gets the newest set, whose `missing()`
        # then names what is absent.
        if hasattr(pjit, "_trace_for_jit") or not hasattr(pjit, "_create_pjit_jaxpr"):
            from jax._src.interpreters import partial_eval as pe

            # From 0.11 on the trace event fires one frame further down.
            nocache = hasattr(pe, "trace_to_jaxpr_nocache")
            _HOOKS = _TraceToJaxprNocache() if nocache else _TraceToJaxpr()
        else:
            _HOOKS = _CreatePjitJaxpr()
    return _HOOKS
