"""Turns JAX's cache-miss explanations into one-line retrace causes (pure text handling)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

REDEFINED = (
    "function re-defined on every call (jit inside a loop?): a new {name} object was traced; "
    "create and jit it once, outside the loop"
)
SILENT_RECOMPILE = (
    "recompiled without a retrace (argument device, sharding or committed-ness changed, "
    "or an eager grad/vmap of the jitted function)"
)

_TYPES = re.compile(r"^\* at (?P<name>.+?), now (?P<new>.+?) and before (?P<old>.+)$")
_TREE = re.compile(
    r"^\* at input path (?P<path>\S+), now (?P<new>.+?) and before (?P<old>.+?), so (?P<why>.+)$"
)
_CONTEXT = re.compile(r"^\* (?P<name>\w+) differs: now (?P<new>.+) and before (?P<old>.+)$")
_STATIC = re.compile(r"pytree metadata Static\(val=(?P<val>.*)\)$")
_PATH_ITEM = re.compile(r"\[(?:'(?P<key>[^']*)'|(?P<index>\d+))\]")
_FLAT = re.compile(r"^(?:flat_)?args\[(?P<i>\d+)\]$")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_URL = re.compile(r"https?://\S+")


def is_first_sight(message: str) -> bool:
    """True when JAX had never traced this function object before."""
    return "never seen function" in message


def _argument(path: str, arg_names: Sequence[str]) -> str:
    """'[0][1]' -> the name of positional argument 1; "[1]['cutoff']" -> 'cutoff'."""
    items = [(m.group("key"), m.group("index")) for m in _PATH_ITEM.finditer(path)]
    if len(items) >= 2:
        (_, group), (key, index) = items[0], items[1]
        rest = "".join(f"[{k!r}]" if k is not None else f"[{i}]" for k, i in items[2:])
        if group == "1" and key is not None:
            return key + rest
        if group == "0" and index is not None:
            i = int(index)
            return (arg_names[i] if i < len(arg_names) else str(i)) + rest
    return f"input {path}"


def _strip(text: str) -> str:
    # "f32[]({})" carries an empty sharding: JAX prints it once weak types are involved.
    # Object addresses ("<function f at 0x7f...>") change from run to run: dropped.
    return _ADDRESS.sub("", _URL.sub("", text)).replace("({})", "").strip()


def _flat_arg(name: str, user_names: Sequence[str]) -> str:
    """pmap traces a flat wrapper: 'flat_args[1]' (jax 0.8: 'args[1]') is the user's second
    positional argument."""
    if m := _FLAT.match(name):
        i = int(m["i"])
        if i < len(user_names):
            return user_names[i]
    return name


def cause(
    message: str,
    arg_names: Sequence[str] = (),
    user_names: Sequence[str] = (),
    leaves: Mapping[str, LeafDiff] | None = None,
) -> str:
    """The cause of a retrace, e.g. 'x: f32[3] -> f32[4]', from a TRACING CACHE MISS message.

    `arg_names` are the positional parameter names of the traced function, used to name
    static arguments that JAX only reports by input path. `leaves`: the first leaf that
    differs in each static argument that changed, by JAX's input path ('[0][1]',
    "[1]['opt']"), where the recorder found one.
    """
    lines = [line.strip() for line in message.splitlines()]
    causes: list[str] = []
    for line in lines:
        if m := _TREE.match(line):
            arg = _argument(m["path"], arg_names)
            new, old = _strip(m["new"]), _strip(m["old"])
            new_static, old_static = _STATIC.search(new), _STATIC.search(old)
            leaf = (leaves or {}).get(m["path"])
            if new_static and old_static and leaf is not None:
                causes.append(static_line(arg, leaf))
            elif new_static and old_static:
                causes.append(f"static argument {arg}: {old_static['val']} -> {new_static['val']}")
            else:
                label = f"argument {arg}" if arg.isdigit() else arg
                causes.append(f"{label}: {old} -> {new} ({_strip(m['why'])})")
        elif m := _TYPES.match(line):
            name = _flat_arg(m["name"], user_names)
            causes.append(f"{name}: {_strip(m['old'])} -> {_strip(m['new'])}")
        elif m := _CONTEXT.match(line):
            causes.append(f"config {m['name']}: {_strip(m['old'])} -> {_strip(m['new'])}")
    if causes:
        return "; ".join(causes)
    for marker, text in (
        (
            "Tracing context doesn't match",
            "tracing context changed (a config option or context manager)",
        ),
        ("Debug info doesn't match", "debug info changed (argument names or source location)"),
    ):
        if any(marker in line for line in lines):
            return text
    for i, line in enumerate(lines):
        if "closest previous key" in line:
            rest = " ".join(x for x in lines[i + 1 :] if x)
            return _strip(rest) or "cache miss explanation unavailable"
    return "cause unknown"


# -- the first leaf that differs in a static argument ------------------------------------
# Why two values JAX compared by hash and equality count as different (see `LeafDiff`).
VALUE = "value"  # unequal by value: 2 -> 3
IDENTITY = "identity"  # equal repr, but compared by identity (no __eq__/__hash__ over values)
CLOSURE = "closure"  # a fresh closure of the same function, each call
JIT_WRAPPER = "jit wrapper"  # a new jax.jit wrapper of the same function, each call
STRUCTURE = "structure"  # a pytree node changed: its type, its length or its keys


@dataclass(frozen=True)
class LeafDiff:
    """The first leaf that differs between two values of a static argument, found by
    `measure.leafdiff` on the live objects: `path` below the argument (`.update`,
    `[1].forward`, '' for the argument itself), both values short, and `kind`, why they
    count as different (one of the kinds above)."""

    path: str
    old: str
    new: str
    kind: str


def static_line(name: str, leaf: LeafDiff) -> str:
    """The cause of a retrace whose static argument `name` changed at `leaf`, one line."""
    where = f"static argument {name}{leaf.path}"
    if leaf.kind == CLOSURE:
        return f"{where}: a new closure {leaf.new} each call, compared by identity"
    if leaf.kind == JIT_WRAPPER:
        return f"{where}: a new {leaf.new} wrapper each call, compared by identity"
    if leaf.kind == IDENTITY:
        return (
            f"{where}: a new {leaf.new} each call, equal repr but compared by identity "
            "(no __eq__/__hash__ over its values)"
        )
    if leaf.kind == STRUCTURE:
        return f"{where}: {leaf.old} -> {leaf.new} (pytree structure changed)"
    return f"{where}: {leaf.old} -> {leaf.new}"
