"""Which user function a traced callable stands for: name, file and first line.

JAX traces whatever it was handed: a `functools.partial`, a bound method, the wrapper that
`jax.value_and_grad` / `jacfwd` / `checkpoint` / a `functools.wraps` decorator put around the
user's function, or a library's generic wrapper that only borrows the user's name
(equinox's `filter_jit` jits its own `fun_wrapped`, renamed after the user's function).
Each is resolved to the function the user wrote, so that two different functions never
merge under one key and one function never splits under its wrappers' keys. Its qualified
name (`Model.__call__`, `step.<locals>.body`) comes from the function object itself: JAX's
own DebugInfo carries only `__name__` on every supported release."""

from __future__ import annotations

import functools
import os
import sys
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import Any

# Frame locals that hold the user's callable in a library wrapper's __call__ (equinox's
# `_JitWrapper.__call__(self, ...)`, flax's `JitWrapped`, ...).
_HOLDERS = ("self", "fun", "fn", "f", "func", "function", "wrapped", "module")
_MAX_UNWRAP = 20
_MAX_FRAMES = 40


@dataclass(frozen=True)
class Identity:
    name: str  # __name__ (JAX's DebugInfo names a function by it, too)
    filename: str | None
    lineno: int | None
    wrapper: str | None = None  # "fun_wrapped at equinox/_jit.py:43" when resolved through it
    # __qualname__ ("Model.__call__"), where the function object was at hand; None otherwise.
    qualname: str | None = None


def unwrap(fun: Any) -> Any:
    """The innermost callable under partials, bound methods, weak references, JAX's
    WrappedFun and `__wrapped__` chains."""
    return _unwrap(fun, follow_wrapped=True)


def wraps(outer: Any, inner: Any) -> bool:
    """Whether `outer` is a wrapper around `inner` (not `inner` itself): `inner` is one of
    the layers `unwrap` peels off `outer` (a partial's function, a `__wrapped__`, a jitted
    function's own). Tracing such an `outer` traces `inner` inside it: `jax.jit(jax.vmap(
    jitted))`, `jax.jit(functools.partial(jitted, ...))`, a decorator around `jitted`."""
    if outer is inner:
        return False
    seen: set[int] = set()
    fun = outer
    for _ in range(_MAX_UNWRAP):
        seen.add(id(fun))
        layer = _unwrap_once(fun, follow_wrapped=True)
        if layer is None or id(layer) in seen:
            return False
        if layer is inner:
            return True
        fun = layer
    return False


def definition(fun: Any) -> Any:
    """What `fun` was made from: its code (shared by the closures one `def` or `lambda`
    makes, and by every `jax.vmap` wrapper), else the callable below its partials and
    bound methods. A jit inside a loop traces a new object of one definition on every
    call; the definition outlives those objects."""
    peeled = _peel(fun)
    code = getattr(peeled, "__code__", None)
    return peeled if code is None else code


def _peel(fun: Any) -> Any:
    """`fun` under partials, bound methods, weak references and WrappedFun, but before
    any `__wrapped__`: the outermost layer that carries a name."""
    return _unwrap(fun, follow_wrapped=False)


def _unwrap(fun: Any, follow_wrapped: bool) -> Any:
    seen: set[int] = set()
    for _ in range(_MAX_UNWRAP):
        seen.add(id(fun))
        inner = _unwrap_once(fun, follow_wrapped)
        if inner is None or id(inner) in seen:
            break
        fun = inner
    return fun


def _unwrap_once(fun: Any, follow_wrapped: bool) -> Any:
    """The callable one layer below `fun`, or None where `fun` wraps none."""
    inner: Any
    if isinstance(fun, functools.partial):
        inner = fun.func
    elif isinstance(fun, weakref.ref):
        inner = fun()
    elif _is_wrapped_fun(fun):
        inner = getattr(fun, "f", None)
    elif _is_wrapped_fun(getattr(fun, "__self__", None)):
        inner = fun.__self__  # `jit(wrapped.call_wrapped)`: jax 0.8's pmap
    else:
        try:
            inner = getattr(fun, "__func__", None) or (
                getattr(fun, "__wrapped__", None) if follow_wrapped else None
            )
        except Exception:  # an object whose __getattr__ misbehaves
            inner = None
    if inner is None or not (callable(inner) or _is_wrapped_fun(inner)):
        return None
    return inner


def _is_wrapped_fun(obj: Any) -> bool:
    # JAX's linear_util.WrappedFun (pmap wraps the user's function in one): `.f` is it.
    return type(obj).__name__ == "WrappedFun"


def _from_closure(fun: Any, jax_dirs: tuple[str, ...], depth: int = 0) -> Any:
    """A user callable held in the closure of one of JAX's own wrappers (pmap's `_fun`)."""
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, type) or not (callable(value) or _is_wrapped_fun(value)):
            continue
        inner = unwrap(value)
        code = _code(inner)
        if code is None:
            continue
        if not _under(code.co_filename, jax_dirs):
            # Not unwrapped, so that a rename on its outer layer shows, unless that layer
            # is JAX's own (jax 0.8's pmap holds `WrappedFun.call_wrapped`).
            outer = _peel(value)
            return inner if _under(_code_file(outer), jax_dirs) else outer
        if depth < 3 and (found := _from_closure(inner, jax_dirs, depth + 1)) is not None:
            return found
    return None


def _from_static(values: Any, name: str, depth: int = 0) -> Any:
    """A callable called `name` among (nested) static arguments."""
    if depth > 6:
        return None
    if isinstance(values, (tuple, list)):
        for value in values:
            if (found := _from_static(value, name, depth + 1)) is not None:
                return found
        return None
    if callable(values) and not isinstance(values, type):
        inner = unwrap(values)
        names = (outer_name(values), getattr(inner, "__name__", None))
        if name in names and _code(inner) is not None:
            return inner
    return None


def _code_file(fun: Any) -> str | None:
    code = getattr(fun, "__code__", None)
    return None if code is None else str(code.co_filename)


def _code(fun: Any) -> Any:
    code = getattr(fun, "__code__", None)
    if code is None and callable(fun) and not isinstance(fun, type):
        # A callable instance: its class's __call__, under any decorator on it
        # (jax.named_scope on equinox's modules).
        code = getattr(unwrap(type(fun).__call__), "__code__", None)
    return code


def of_callable(fun: Any) -> Identity | None:
    """Identity of `fun` from its code object, or None when it has none (a C callable)."""
    inner = unwrap(fun)
    code = _code(inner)
    if code is None:
        return None
    name = str(getattr(inner, "__name__", None) or type(inner).__name__)
    return Identity(name, code.co_filename, code.co_firstlineno, qualname=_qualname(inner, name))


def _qualname(fun: Any, name: str) -> str | None:
    """`fun`'s __qualname__ (its class's for a callable instance), when it names the same
    function as `name` (a function renamed by hand keeps its old __qualname__)."""
    try:
        owner = fun if getattr(fun, "__code__", None) is not None else type(fun)
        qualname = getattr(owner, "__qualname__", None)
    except Exception:  # an object whose __getattr__ misbehaves
        return None
    if isinstance(qualname, str) and (qualname == name or qualname.endswith("." + name)):
        return qualname
    return None


def outer_name(fun: Any) -> str | None:
    """The name `fun` presents: a rename lands on the outermost decorated layer
    (jaxtyping's checker around equinox's `fun_wrapped`), not on the code below."""
    name = getattr(_peel(fun), "__name__", None)
    return name if isinstance(name, str) else None


def renamed_to(fun: Any) -> str | None:
    """The user's name a wrapper was renamed after (equinox's `fun_wrapped`), else None."""
    code = getattr(unwrap(fun), "__code__", None)
    name = outer_name(fun)
    return name if code is not None and name is not None and name != code.co_name else None


def from_stack(
    name: str, exclude: str | None, frame: FrameType | None, jax_dirs: tuple[str, ...] = ()
) -> Identity | None:
    """The user's function called `name` held by a library wrapper frame on the stack (not
    one of JAX's own `functools.wraps` wrappers, which borrow the same name)."""
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        local = frame.f_locals
        for holder in _HOLDERS:
            obj = local.get(holder)
            if obj is None or not callable(obj):
                continue
            ident = of_callable(obj)
            if (
                ident is not None
                and ident.name == name
                and ident.filename != exclude
                and not _under(ident.filename, jax_dirs)
            ):
                return ident
        frame = frame.f_back
    return None


def user_callable(fun: Any, jax_dirs: tuple[str, ...]) -> Any:
    """`fun` unwrapped, or the callable in the closure of JAX's own wrapper (pmap's `_fun`)
    as held there."""
    inner = unwrap(fun)
    code = _code(inner)
    if code is not None and _under(code.co_filename, jax_dirs):
        return _from_closure(inner, jax_dirs) or inner
    return inner


def resolve(fun: Any, jax_dirs: tuple[str, ...], static: tuple[Any, ...] = ()) -> Identity | None:
    """The user's function behind `fun`; None when it cannot be told from `fun` alone.
    `static` are the static arguments of the jit call, where a generic library wrapper
    (equinox) carries the user's function."""
    user = user_callable(fun, jax_dirs)
    ident = of_callable(user)
    if ident is None or _under(ident.filename, jax_dirs):
        return ident
    inner = unwrap(user)
    source = _peel(fun if inner is unwrap(fun) else user)
    # Past JAX's own wraps-wrappers (jax 0.8's pmap `WrappedFun.call_wrapped`).
    for _ in range(_MAX_UNWRAP):
        if not _under(_code_file(source), jax_dirs) or not hasattr(source, "__wrapped__"):
            break
        source = _peel(source.__wrapped__)
    name = renamed_to(source)
    if name is None or _under(_code_file(source), jax_dirs):
        return ident
    wrapper = f"{_code(inner).co_name} at {ident.filename}:{ident.lineno}"
    carried = _from_static(static, name)
    found_ident = of_callable(carried) if carried is not None else None
    if found_ident is None or found_ident.filename == ident.filename:
        found_ident = from_stack(name, ident.filename, sys._getframe(1), jax_dirs)
    if found_ident is None:
        return Identity(name, ident.filename, ident.lineno)
    return Identity(
        found_ident.name, found_ident.filename, found_ident.lineno, wrapper, found_ident.qualname
    )


# Identities read from DebugInfos, by their `func_src_info`: JAX derives the name, file and
# line from that string alone (jax 0.6 - 0.11), with a regex per property (~12 us a trace).
_BY_SRC_INFO: dict[str, Identity | None] = {}
_MAX_SRC_INFOS = 4096


def from_debug_info(dbg: Any) -> Identity | None:
    """Identity from JAX's DebugInfo ('f at /path.py:12'), when it names one."""
    src = getattr(dbg, "func_src_info", None)
    if type(src) is not str or type(dbg).__name__ != "DebugInfo":
        return _from_debug_info(dbg)
    try:
        return _BY_SRC_INFO[src]
    except KeyError:
        if len(_BY_SRC_INFO) >= _MAX_SRC_INFOS:
            _BY_SRC_INFO.clear()
        found = _BY_SRC_INFO[src] = _from_debug_info(dbg)
        return found


def _from_debug_info(dbg: Any) -> Identity | None:
    name = getattr(dbg, "func_name", None)
    filename = getattr(dbg, "func_filename", None)
    if not name or name == "<unknown>":
        return None
    return Identity(str(name), filename, getattr(dbg, "func_lineno", None))


def _under(filename: str | None, dirs: tuple[str, ...]) -> bool:
    return bool(filename) and str(filename).startswith(dirs)


def is_jax(ident: Identity | None, jax_dirs: tuple[str, ...]) -> bool:
    """JAX's own code (its helpers and wrappers), as opposed to the user's or a library's."""
    return ident is None or _under(ident.filename, jax_dirs)


def jax_dirs() -> tuple[str, ...]:
    import jax
    import jaxlib

    return tuple(os.path.dirname(mod.__file__) + os.sep for mod in (jax, jaxlib) if mod.__file__)
