"""Every JAX internal the recorder reads, in one place: the rest of the plugin never touches
`jax._src` nor branches on JAX's version.

Per fact, its source (checked on JAX 0.9.0 - 0.11.x unless said otherwise):
- one event per real Python trace, with the traced callable and its DebugInfo:
  `jax._src.util.test_event_listener`, event "trace_to_jaxpr" inside `pe.trace_to_jaxpr`;
- whether a trace is a jit's (nested included) or an eager control-flow body's: the caller
  frame (`_trace_for_jit`) and `core.trace_ctx.trace`;
- the retrace cause, without logging and for every file: `pe.trace_to_jaxpr.cache_keys()`
  and `pe.diff_tracing_cache_keys`;
- lowering / compile counts and seconds: `jax.monitoring` duration events (public, all);
- the jaxpr being lowered: frame `_cached_lowering_to_hlo`, local `closed_jaxpr`;
- forgetting one function: `evict_weakref` on JAX's function-keyed caches, `evict_function`
  on its `lu.cache`s (pmap), and clearing the pjit dispatch caches.

Anything not as expected makes `missing()` name it; the start-up self-check turns that into
a refusal (or, allowed, into metrics marked "not measured").
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"

# The versions whose internals this module was checked against (see the table above).
SUPPORTED = "jax 0.9.0 - 0.11.x"

_TRACE_TEST_EVENT = "trace_to_jaxpr"
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


def jax_version() -> str:
    import jax

    return str(jax.__version__)


def missing() -> list[str]:
    """The private hooks the recorder needs that this JAX lacks, by name."""
    problems: list[str] = []
    try:
        from jax._src import core, util
        from jax._src.interpreters import partial_eval as pe
    except ImportError as exc:  # pragma: no cover - a JAX without these modules
        return [f"jax._src modules ({exc})"]
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


# -- traces ------------------------------------------------------------------------------
class TraceListener:
    """Chains into JAX's single test-event slot and hands each real trace to `callback`.

    JAX's own test utilities (and possibly a user's) use the same slot: the previous
    listener is always called too, and `ensure()` re-chains when someone replaced ours."""

    def __init__(self, callback: Callable[[TraceCall], None]) -> None:
        self._callback = callback
        self._previous: Callable[..., Any] | None = None
        # One bound-method object, so that `ensure` can recognise it in the slot.
        self.listen = self._listen

    def _listen(self, name: str, *args: Any) -> None:
        if name == _TRACE_TEST_EVENT:
            call = _trace_call(sys._getframe(2))
            if call is not None:
                self._callback(call)
        if self._previous is not None:
            self._previous(name, *args)

    def ensure(self) -> None:
        from jax._src import util

        current = util.test_event_listener
        if current is not self.listen:
            self._previous = current
            util.test_event_listener = self.listen


def _trace_call(frame: FrameType) -> TraceCall | None:
    if frame.f_code.co_name != "trace_to_jaxpr":
        return None
    from jax._src import core

    local = frame.f_locals
    caller = frame.f_back
    by_jit = caller is not None and caller.f_code.co_name == "_trace_for_jit"
    return TraceCall(
        fun=local.get("fun"),
        debug_info=local.get("debug_info"),
        in_avals=local.get("in_avals"),
        by_jit=by_jit,
        eager=isinstance(core.trace_ctx.trace, core.EvalTrace),
        static=static_args(caller) if by_jit else (),
    )


def miss_explanation(call: TraceCall, previous: Any | None) -> tuple[bool, str | None]:
    """(seen before, JAX's text for the closest difference) for a trace of `call.fun`.

    Built from the trace cache's own keys, so it works whatever the logging configuration
    and wherever the function's file lies. `previous` is the cache key of this function's
    last trace, when known: a static argument then reads 2 -> 3, not 0 -> 3."""
    from jax._src.interpreters import partial_eval as pe

    keys: list[Any] = [
        (k[1], tuple(k[2][:2]), {})
        for k in pe.trace_to_jaxpr.cache_keys()
        if k and k[0]() is call.fun
    ]
    if not keys:
        return False, None
    new_key = cache_key(call)
    candidates = [previous] if previous is not None and previous in keys else keys
    try:
        diffs = [pe.diff_tracing_cache_keys(new_key, k) for k in candidates]
    except Exception:
        return True, None
    return True, str(min(diffs)[-1])


def cache_key(call: TraceCall) -> Any:
    """What `miss_explanation` compares against on this function's next trace."""
    from jax._src import config

    return (config.trace_context(), (call.in_avals, call.debug_info), {})


# -- lowerings ---------------------------------------------------------------------------
def lowered_jaxpr() -> Any:
    """The ClosedJaxpr being lowered, read from the frame of JAX's lowering (or None)."""
    frame = find_frame("_cached_lowering_to_hlo", start=3)
    return None if frame is None else frame.f_locals.get("closed_jaxpr")


def traced_for_jit() -> tuple[Any, Any, tuple[Any, ...]] | None:
    """(callable, DebugInfo, static arguments) of the jit trace whose duration event is
    being emitted."""
    frame = find_frame("_trace_for_jit", start=3)
    if frame is None:
        return None
    return frame.f_locals.get("fun"), frame.f_locals.get("dbg"), static_args(frame)


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
def evict(keep: Callable[[Any, Any], bool], seen: list[Any]) -> int:
    """Forget every function in JAX's function-keyed caches for which `keep(fun, debug_info)`
    is false, and empty the dispatch caches above them (they re-fill from the trace cache
    without a trace). `seen` are callables traced since the last eviction, for the caches
    that cannot be listed (pmap's). Returns how many entries were evicted. Raises when the
    caches are not as expected: the caller then clears everything."""
    from jax._src import pjit, util
    from jax._src.interpreters import partial_eval as pe
    from jax._src.lib import _jax  # type: ignore[attr-defined]

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
            if not keep(fun, _key_debug_info(key)):
                cache.evict_weakref(fun)
                evicted += 1
    # Caches keyed on a WrappedFun's function (pmap's shard_map): evicted by object.
    for cache in util._caches:
        if hasattr(cache, "evict_function"):
            for fun in seen:
                cache.evict_function(fun)
    # Absent on some releases: then the C++ caches below are the only ones above the trace.
    infer = getattr(pjit, "_infer_params_cached", None)
    if infer is not None:
        infer.cache_clear()
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    _jax.PjitFunctionCache.clear_all()
    return evicted


def _lists_keys(cache: Any) -> bool:
    return hasattr(cache, "evict_weakref") and hasattr(cache, "cache_keys")


def _key_debug_info(key: tuple[Any, ...]) -> Any:
    # (fun_ref, trace_context, (in_avals, debug_info, *context), kwargs)
    try:
        return key[2][1]
    except (IndexError, TypeError):
        return None


def static_args(frame: FrameType | None) -> tuple[Any, ...]:
    """The static arguments of the jit call being traced (equinox passes the user's
    function there, and jits a generic wrapper)."""
    if frame is None or frame.f_code.co_name != "_trace_for_jit":
        return ()
    args, info = frame.f_locals.get("args"), frame.f_locals.get("ji")
    nums = getattr(info, "static_argnums", ()) or ()
    if not isinstance(args, tuple):
        return ()
    return tuple(args[i] for i in nums if isinstance(i, int) and -len(args) <= i < len(args))


# -- frames ------------------------------------------------------------------------------
def find_frame(co_name: str, start: int = 2) -> FrameType | None:
    frame: FrameType | None = sys._getframe(start)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == co_name:
            return frame
        frame = frame.f_back
    return None
