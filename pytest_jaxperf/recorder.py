"""Records traces, lowerings and backend compiles per jitted function inside a scope.

Sources: `jax.monitoring` duration events (timings of top-level traces, every lowering and
compile) and JAX's cache-miss explanations (one record per real trace, nested jits included,
with the cause). JAX is imported only when a scope is first opened.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from . import causes
from .model import MAX_REASONS, Counts, FunctionRecord, function_key

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"

# How far up the stack a listener looks for JAX's frames that carry the function identity.
_MAX_DEPTH = 40


class Scope:
    """What happened between opening and closing one recording block."""

    def __init__(self, rootdir: Path, jax_dirs: tuple[str, ...]) -> None:
        self._rootdir = str(rootdir)
        self._jax_dirs = jax_dirs
        self._lock = threading.Lock()
        self.functions: dict[str, FunctionRecord] = {}
        # Written by the jaxperf fixture (benchmark, scaling), keyed by label.
        self.benchmarks: dict[str, dict[str, Any]] = {}
        self.eager = Counts()
        self.listener_errors = 0
        # Per thread: the function whose lowering awaits its backend compile, and whether
        # a persistent-cache hit was announced for that compile.
        self._pending: dict[int, tuple[str, str | None, int | None]] = {}
        self._cache_hit: set[int] = set()
        self._sites: dict[str, str] = {}

    # -- identity -------------------------------------------------------------------------
    def _site(self, filename: str | None, lineno: int | None) -> str:
        if not filename:
            return ""
        rel = self._sites.get(filename)
        if rel is None:
            rel = _relative(filename, self._rootdir)
            self._sites[filename] = rel
        return f"{rel}:{lineno}" if lineno else rel

    def _is_user(self, filename: str | None) -> bool:
        return not (filename and filename.startswith(self._jax_dirs))

    def _function(self, name: str, site: str) -> FunctionRecord:
        key = function_key(name, site)
        fn = self.functions.get(key)
        if fn is None:
            fn = self.functions[key] = FunctionRecord(name=name, site=site)
        return fn

    def _target(self, name: str, filename: str | None, lineno: int | None) -> Counts:
        if not self._is_user(filename):
            return self.eager
        return self._function(name, self._site(filename, lineno))

    # -- listeners ------------------------------------------------------------------------
    def on_duration(self, event: str, seconds: float, fun_name: str | None) -> None:
        tid = threading.get_ident()
        with self._lock:
            if event == TRACE_EVENT:
                dbg = _local(_frame("_trace_for_jit"), "dbg")
                name, filename, lineno = _identity(dbg, fun_name)
                self._target(name, filename, lineno).trace_s += seconds
            elif event == LOWER_EVENT:
                closed = _local(_frame("_cached_lowering_to_hlo"), "closed_jaxpr")
                dbg = getattr(getattr(closed, "jaxpr", None), "debug_info", None)
                name, filename, lineno = _identity(dbg, _unwrap_jit_name(fun_name))
                target = self._target(name, filename, lineno)
                target.lowerings += 1
                target.lower_s += seconds
                self._pending[tid] = (name, filename, lineno)
            elif event == COMPILE_EVENT:
                pending = self._pending.pop(tid, None)
                if pending is None:
                    target = self._target(_unwrap_jit_name(fun_name), None, None)
                else:
                    target = self._target(*pending)
                target.compiles += 1
                if tid in self._cache_hit:
                    # A persistent-cache hit takes ~1 ms: never let it pass for a fast compile.
                    self._cache_hit.discard(tid)
                    target.cache_hits += 1
                else:
                    target.compile_s += seconds

    def on_event(self, event: str) -> None:
        if event == CACHE_HIT_EVENT:
            with self._lock:
                self._cache_hit.add(threading.get_ident())

    def on_explain(self, message: str) -> None:
        frame = _frame("explain")
        # Only jit traces count; scan bodies and cond branches are traced by lax instead.
        caller = frame.f_back if frame is not None else None
        if caller is not None and caller.f_code.co_name != "_trace_for_jit":
            return
        dbg = _local(frame, "debug_info")
        name, filename, lineno = _identity(dbg, _name_from_message(message))
        if not self._is_user(filename):
            return
        fun = _local(frame, "fun")
        with self._lock:
            fn = self._function(name, self._site(filename, lineno))
            first_sight = causes.is_first_sight(message)
            if fn.traces and first_sight:
                reason: str | None = causes.REDEFINED.format(name=name)
            elif first_sight:
                reason = None
            else:
                reason = causes.cause(message, _positional_names(fun))
            fn.traces += 1
            if (
                reason
                and reason not in fn.retrace_reasons
                and len(fn.retrace_reasons) < MAX_REASONS
            ):
                fn.retrace_reasons.append(reason)


class _ExplainFilter(logging.Filter):
    """Hands each cache-miss explanation to its scope while that scope is the active one.

    Records exist only because the recorder switched explanations on, unless the user had
    them on already; only in that case do they travel on to the user's handlers.
    """

    def __init__(self, recorder: Recorder, scope: Scope, pass_through: bool) -> None:
        super().__init__()
        self.recorder = recorder
        self.scope = scope
        self.pass_through = pass_through

    def filter(self, record: logging.LogRecord) -> bool:
        if self.recorder.active is self.scope:
            try:
                self.scope.on_explain(record.getMessage())
            except Exception:
                self.scope.listener_errors += 1
        return self.pass_through


class Recorder:
    """Process-wide: JAX listeners are registered once and route to the open scope."""

    def __init__(self) -> None:
        self.active: Scope | None = None
        self._installed = False
        self._jax_dirs: tuple[str, ...] = ()

    def _install(self) -> None:
        if self._installed:
            return
        import jax
        import jax.monitoring
        import jaxlib

        self._jax_dirs = tuple(
            os.path.dirname(mod.__file__) + os.sep for mod in (jax, jaxlib) if mod.__file__
        )
        # Registered once and never removed: jax's unregister asserts, and a dormant
        # listener costs one attribute check per compile.
        jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        jax.monitoring.register_event_listener(self._on_event)
        self._installed = True

    def _on_duration(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        scope = self.active
        if scope is None:
            return
        try:
            scope.on_duration(event, duration_secs, str(kwargs.get("fun_name", "")) or None)
        except Exception:
            # A listener error must never surface in the user's f(x).
            scope.listener_errors += 1

    def _on_event(self, event: str, **kwargs: Any) -> None:
        scope = self.active
        if scope is None:
            return
        try:
            scope.on_event(event)
        except Exception:
            scope.listener_errors += 1

    def isolate(self) -> None:
        """Forget every compiled user function, so that counts do not depend on earlier tests.

        JAX's own helpers (the eager bucket) stay cached: re-compiling them after a full
        `jax.clear_caches()` made `--jaxperf-all` runs twice as slow. Relies on private JAX
        caches; when they are not as expected, everything is cleared instead."""
        import jax

        self._install()
        try:
            _evict_user_functions(self._jax_dirs)
        except Exception:
            jax.clear_caches()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing inside the block is recorded (the plugin's own measurement work)."""
        outer, self.active = self.active, None
        try:
            yield
        finally:
            self.active = outer

    @contextlib.contextmanager
    def scope(self, rootdir: Path) -> Iterator[Scope]:
        """Record everything compiled inside the block; JAX's config and logging are restored."""
        self._install()
        import jax

        scope = Scope(rootdir, self._jax_dirs)
        logger = logging.getLogger(EXPLAIN_LOGGER)
        was_on = bool(getattr(jax.config, "jax_explain_cache_misses", False))
        old_level = logger.level
        filt = _ExplainFilter(self, scope, pass_through=was_on)
        logger.addFilter(filt)
        if not was_on:
            jax.config.update("jax_explain_cache_misses", True)
            if not logger.isEnabledFor(logging.WARNING):
                logger.setLevel(logging.WARNING)
        outer, self.active = self.active, scope
        try:
            yield scope
        finally:
            self.active = outer
            logger.removeFilter(filt)
            if not was_on:
                jax.config.update("jax_explain_cache_misses", False)
                logger.setLevel(old_level)


RECORDER = Recorder()


def _evict_user_functions(jax_dirs: tuple[str, ...]) -> None:
    """Evict user functions from JAX's trace cache and empty the dispatch caches above it.

    A user function then traces, lowers and compiles afresh (its jaxpr is new, so the
    lowering and compile caches, keyed on it, miss); a JAX helper finds its jaxpr, lowering
    and executable still cached and compiles nothing."""
    from jax._src import pjit
    from jax._src.interpreters import partial_eval as pe
    from jax._src.lib import _jax  # type: ignore[attr-defined]

    for key in pe.trace_to_jaxpr.cache_keys():
        fun = key[0]() if isinstance(key, tuple) and key and callable(key[0]) else None
        if fun is not None and not _defined_in(fun, jax_dirs):
            pe.trace_to_jaxpr.evict_weakref(fun)
    pjit._infer_params_cached.cache_clear()
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    _jax.PjitFunctionCache.clear_all()


def _defined_in(fun: Any, dirs: tuple[str, ...]) -> bool:
    """Whether `fun` (unwrapping partials, methods and decorators) comes from one of `dirs`."""
    for _ in range(10):
        code = getattr(fun, "__code__", None)
        if code is not None:
            return bool(code.co_filename.startswith(dirs))
        fun = (
            getattr(fun, "func", None)
            or getattr(fun, "__func__", None)
            or getattr(fun, "__wrapped__", None)
        )
        if fun is None:
            break
    return False  # unknown: treat as the user's, and evict


def _frame(co_name: str) -> FrameType | None:
    frame: FrameType | None = sys._getframe(2)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == co_name:
            return frame
        frame = frame.f_back
    return None


def _local(frame: FrameType | None, name: str) -> Any:
    return None if frame is None else frame.f_locals.get(name)


def _identity(dbg: Any, fallback_name: str | None) -> tuple[str, str | None, int | None]:
    """(name, filename, line) of a traced function from JAX's DebugInfo, if there is one."""
    name = getattr(dbg, "func_name", None) or fallback_name or "<unknown>"
    filename = getattr(dbg, "func_filename", None)
    lineno = getattr(dbg, "func_lineno", None)
    return name, filename, lineno


def _unwrap_jit_name(fun_name: str | None) -> str:
    if fun_name and fun_name.startswith("jit(") and fun_name.endswith(")"):
        return fun_name[4:-1]
    return fun_name or "<unknown>"


def _name_from_message(message: str) -> str | None:
    for line in message.splitlines()[1:3]:
        words = line.split()
        if words and words[0] not in ("never", "for", "but"):
            return words[0]
        if len(words) > 1 and words[0] == "for":
            return words[1]
    return None


def _positional_names(fun: Any) -> list[str]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _relative(filename: str, rootdir: str) -> str:
    """A definition site that reads the same on every machine: rootdir- or sys.path-relative."""
    path = os.path.abspath(filename)
    bases = [rootdir] + sorted((p for p in sys.path if p), key=len, reverse=True)
    for base in bases:
        base = os.path.abspath(base)
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base).replace(os.sep, "/")
    return path.replace(os.sep, "/")
