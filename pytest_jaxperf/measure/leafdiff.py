"""The first leaf that differs between two values of a jit's static argument, which JAX
compares by hash and equality: its path below the argument, both values short, and why they
count as different (`causes.LeafDiff`).

It walks the user's live objects (tuples, namedtuples, dicts, dataclasses and equinox-style
modules, `functools.partial`, registered pytree nodes, the `(leaves, treedef)` pairs a
filter-jit passes as its static part, plain objects' attributes), so it runs here, beside
the user's code, at the retrace; the words are `causes`'. Whatever it cannot tell apart
gives None, and the cause falls back to JAX's text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
from typing import Any

from ..causes import CLOSURE, IDENTITY, JIT_WRAPPER, STRUCTURE, VALUE, LeafDiff
from . import _jaxhooks as hooks

# How deep and how wide the walk goes: a static argument is small, but a model held
# statically may not be.
_MAX_DEPTH = 16
_MAX_CHILDREN = 256
_SHORT = 40
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# A child of a node: (path suffix, old value, new value).
_Child = tuple[str, Any, Any]


def first_difference(old: Any, new: Any) -> LeafDiff | None:
    """The first leaf, in the order a pytree flattens, where `old` and `new` differ; None
    where they compare equal or where the walk fails."""
    try:
        return _diff(old, new, "", 0)
    except Exception:  # a user __eq__ or flatten that raises: JAX's text stands
        return None


def _equal(a: Any, b: Any) -> bool:
    """As JAX's cache compares static arguments: equal and with equal hashes."""
    if a is b:
        return True
    try:
        if not bool(a == b):
            return False
    except Exception:  # an array's elementwise ==, a raising __eq__
        return False
    try:
        return hash(a) == hash(b)
    except TypeError:  # a list or dict inside a rebuilt node: its equality is what counts
        return True


def _diff(old: Any, new: Any, path: str, depth: int) -> LeafDiff | None:
    if _equal(old, new):
        return None
    if depth < _MAX_DEPTH:
        children = _children(old, new)
        if isinstance(children, LeafDiff):
            return dataclasses.replace(children, path=path + children.path)
        if children is not None:
            for suffix, a, b in children:
                found = _diff(a, b, path + suffix, depth + 1)
                if found is not None:
                    return found
            # Every part equal, the whole not: compared by identity (or its own __eq__).
            if _identity_eq(old) and _short(old) == _short(new):
                return LeafDiff(path, _short(old), _short(new), IDENTITY)
            return LeafDiff(path, _short(old), _short(new), VALUE)
    return _leaf(old, new, path)


def _children(old: Any, new: Any) -> list[_Child] | LeafDiff | None:
    """The parts of two containers of the same kind, paired; a LeafDiff where their
    structure differs; None for leaves."""
    if type(old) is not type(new):
        if _is_node(old) and _is_node(new):
            return LeafDiff("", _node(old), _node(new), STRUCTURE)
        return None
    flat = _flat_pair(old, new)
    if flat is not None:
        return flat
    if isinstance(old, tuple) and hasattr(old, "_fields"):  # namedtuple
        return [(f".{name}", a, b) for name, a, b in zip(old._fields, old, new)]
    if isinstance(old, (tuple, list)):
        if len(old) != len(new):
            return LeafDiff("", _node(old), _node(new), STRUCTURE)
        return [(f"[{i}]", a, b) for i, (a, b) in enumerate(zip(old, new))][:_MAX_CHILDREN]
    if isinstance(old, dict):
        if list(old) != list(new):
            return LeafDiff("", _keys(old, new), _keys(new, old), STRUCTURE)
        return [(f"[{k!r}]", old[k], new[k]) for k in list(old)[:_MAX_CHILDREN]]
    if isinstance(old, functools.partial):
        if len(old.args) != len(new.args) or list(old.keywords) != list(new.keywords):
            return LeafDiff("", _short(old), _short(new), STRUCTURE)
        return [
            (".func", old.func, new.func),
            *((f".args[{i}]", a, b) for i, (a, b) in enumerate(zip(old.args, new.args))),
            *((f".keywords[{k!r}]", old.keywords[k], new.keywords[k]) for k in old.keywords),
        ]
    if dataclasses.is_dataclass(old) and not isinstance(old, type):
        names = [f.name for f in dataclasses.fields(old)][:_MAX_CHILDREN]
        return [(f".{n}", getattr(old, n, None), getattr(new, n, None)) for n in names]
    node = _pytree_children(old, new)
    if node is not None:
        return node
    if isinstance(old, (types.FunctionType, types.MethodType)) or hooks.is_jit_wrapper(old):
        return None
    attrs = getattr(old, "__dict__", None)
    if isinstance(attrs, dict) and _identity_eq(old):
        other = getattr(new, "__dict__", {})
        if list(attrs) != list(other):
            return None
        return [(f".{k}", v, other[k]) for k, v in list(attrs.items())[:_MAX_CHILDREN]]
    return None


def _flat_pair(old: Any, new: Any) -> list[_Child] | LeafDiff | None:
    """A filter-jit's static part `(leaves, treedef)` (equinox passes one per argument):
    rebuilt into the user's objects, so that the path names their fields."""
    if not (_is_flat(old) and _is_flat(new)):
        return None
    (old_leaves, old_def), (new_leaves, new_def) = old, new
    try:
        # Each rebuilt on its own treedef: a changed static field (node metadata) is then
        # that field's change, not the treedef's.
        return [("", old_def.unflatten(old_leaves), new_def.unflatten(new_leaves))]
    except Exception:
        if old_def != new_def:
            return LeafDiff("", _treedef(old_def), _treedef(new_def), STRUCTURE)
        return [(f"[0][{i}]", a, b) for i, (a, b) in enumerate(zip(old_leaves, new_leaves))]


def _is_flat(value: Any) -> bool:
    if not (isinstance(value, tuple) and len(value) == 2):
        return False
    leaves, treedef = value
    return (
        type(treedef).__name__ == "PyTreeDef"
        and isinstance(leaves, (tuple, list))
        and getattr(treedef, "num_leaves", -1) == len(leaves)
    )


def _pytree_children(old: Any, new: Any) -> list[_Child] | LeafDiff | None:
    """One level of a registered pytree node (not a container handled above)."""
    import jax

    def below(root: Any) -> Any:
        return lambda x: x is not root

    old_kids, old_def = jax.tree_util.tree_flatten_with_path(old, is_leaf=below(old))
    old_tree: Any = old_def  # jaxlib's PyTreeDef: untyped for mypy
    if not old_kids and old_tree.num_nodes == 1:  # a leaf: nothing is registered for it
        return None
    if len(old_kids) == 1 and old_kids[0][1] is old:
        return None
    new_kids, new_tree = jax.tree_util.tree_flatten_with_path(new, is_leaf=below(new))
    if old_tree != new_tree:
        return LeafDiff("", _treedef(old_tree), _treedef(new_tree), STRUCTURE)
    pairs = zip(old_kids, new_kids)
    return [(jax.tree_util.keystr(p), a, b) for (p, a), (_, b) in pairs][:_MAX_CHILDREN]


def _leaf(old: Any, new: Any, path: str) -> LeafDiff:
    if hooks.is_jit_wrapper(old) and hooks.is_jit_wrapper(new):
        a, b = old.__wrapped__, new.__wrapped__
        if a is b or getattr(a, "__code__", 0) is getattr(b, "__code__", 1):
            return LeafDiff(path, _short(old), _short(new), JIT_WRAPPER)
    functions = isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType)
    if functions and old.__code__ is new.__code__:
        return LeafDiff(path, _short(old), _short(new), CLOSURE)
    methods = isinstance(old, types.MethodType) and isinstance(new, types.MethodType)
    if methods and old.__func__ is new.__func__:
        owner = f"{type(new.__self__).__name__}.{new.__func__.__name__}"
        return LeafDiff(path, owner, owner, IDENTITY)
    if _identity_eq(old) and _short(old) == _short(new):
        return LeafDiff(path, _short(old), _short(new), IDENTITY)
    return LeafDiff(path, _short(old), _short(new), VALUE)


def _identity_eq(value: Any) -> bool:
    """Compared by identity: its type keeps object's __eq__ (functions, most classes)."""
    eq: Any = type(value).__eq__
    return eq is object.__eq__


def _name(fun: Any) -> str:
    return str(getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or fun)


def _short(value: Any) -> str:
    """A value in a few words: 'chain.<locals>.init_fn', 'jax.jit(fk)', 'Opt(...)', '3'."""
    if hooks.is_jit_wrapper(value):
        return f"jax.jit({_name(value.__wrapped__)})"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return _name(value)
    if isinstance(value, functools.partial):
        return f"functools.partial({_name(value.func)}, ...)"
    text = _ADDRESS.sub("", repr(value))
    if len(text) > _SHORT:
        cut = text.find("(")
        text = text[:cut] + "(...)" if 0 < cut < _SHORT else text[: _SHORT - 3] + "..."
    return text


def _node(value: Any) -> str:
    """A container by its type and size: 'tuple of 2', 'Traj'."""
    if isinstance(value, (tuple, list, dict)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def _keys(mine: dict[Any, Any], other: dict[Any, Any]) -> str:
    only = [k for k in mine if k not in other]
    extra = f", {', '.join(map(repr, only[:3]))} only here" if only else ""
    return f"dict of {len(mine)}{extra}"


def _treedef(treedef: Any) -> str:
    text = _ADDRESS.sub("", str(treedef))
    return text if len(text) <= _SHORT * 2 else text[: _SHORT * 2 - 3] + "..."


def _is_node(value: Any) -> bool:
    return isinstance(value, (tuple, list, dict)) or dataclasses.is_dataclass(value)
