"""Turns JAX's cache-miss explanations into one-line retrace causes (pure text handling)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .model import MAX_REASONS

REDEFINED = (
    "function re-defined on every call (jit inside a loop?): a new {name} object was traced; "
    "create and jit it once, outside the loop"
)
# A new callable that wraps the function traced before, or is wrapped by it (`kf(x)`, then
# `jax.jit(jax.vmap(kf))(xs)`): another program of the same function, not a re-definition.
WRAPPER = (
    "traced for another wrapper of {name} (jax.jit of a vmap, grad, partial or decorator "
    "around it, or the function it wraps): a program of its own"
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


_NODE = re.compile(r"^<class '(?:[\w.]+\.)?(?P<cls>[^'.]+)'> with pytree metadata (?P<meta>.*)$")


_FUNCTION = re.compile(r"<function (\S+?)>(?=[,)\]}]|$)")


def _metadata(old: str, new: str) -> str:
    """'M with pytree metadata (1,)' twice: the node's static fields, said once where their
    repr is the same (new objects, compared by identity)."""
    a, b = _NODE.match(old), _NODE.match(new)
    if not (a and b and a["cls"] == b["cls"]):
        return f"{old} -> {new}"
    if a["meta"] == b["meta"]:
        # '<function f.<locals>.g>' -> 'f.g': a closure's qualified name, shorter.
        meta = _FUNCTION.sub(r"\1", a["meta"].replace(".<locals>.", "."))
        return f"static fields of {a['cls']} {meta}: equal repr, compared by identity"
    return f"static fields of {a['cls']}: {a['meta']} -> {b['meta']}"


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
                causes.append(f"{label}: {_metadata(old, new)} ({_strip(m['why'])})")
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
        return f"{where}: new closure {leaf.new} per call, compared by identity"
    if leaf.kind == JIT_WRAPPER:
        return f"{where}: a new {leaf.new} wrapper per call, compared by identity"
    if leaf.kind == IDENTITY:
        return f"{where}: a new {leaf.new} per call, equal repr but compared by identity"
    if leaf.kind == STRUCTURE:
        return f"{where}: {leaf.old} -> {leaf.new} (pytree structure changed)"
    return f"{where}: {leaf.old} -> {leaf.new}"


# -- the failure summary: one short line per cause, repeats folded, a fix per kind --------
# Past this a cause line is cut ("..."), its fix kept: the full text is in the test's
# jaxperf section and the JSON report.
LINE_LIMIT = 160
SHAPE = "shape"
DTYPE = "dtype"
WEAK_TYPE = "weak type"
_REDEFINED_KIND = "re-defined"
_METADATA = "node metadata"  # an argument's static field (pytree node metadata) changed
_METADATA_WHY = " (the pytree node metadata does not match)"
_FIXES = {
    SHAPE: "pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))",
    WEAK_TYPE: "create it with an explicit dtype ({ctor}, not a Python number)",
    DTYPE: "give it one dtype on every call ({ctor})",
    VALUE: "use a few fixed values (buckets), or pass it as an array",
    IDENTITY: "pass one object, or give its class __eq__ and __hash__ over its values",
    CLOSURE: "pass one object, or a hashable value in a static field",
    JIT_WRAPPER: "jit the function once at module level",
    STRUCTURE: "pass the same pytree structure on every call",
    _METADATA: "pass one object, or hashable values in its static fields",
    _REDEFINED_KIND: "create and jit it once, outside the loop",
}
# Each fix in a few words, for a line that the whole fix would push past LINE_LIMIT: the
# cause is what the reader cannot find elsewhere, the fix is the same for every cause of
# its kind (and in full in the docs' table of causes).
_SHORT_FIXES = {
    SHAPE: "pad to a fixed size or a few buckets",
    WEAK_TYPE: "give it an explicit dtype",
    DTYPE: "give it one dtype",
    VALUE: "use a few fixed values, or an array",
    IDENTITY: "pass one object, or give it __eq__/__hash__",
    CLOSURE: "pass one object",
    JIT_WRAPPER: "jit it once at module level",
    STRUCTURE: "keep one pytree structure",
    _METADATA: "pass one object",
    _REDEFINED_KIND: "jit it once, outside the loop",
}
_REDEFINED = re.compile(r"^function re-defined on every call .*: a new (?P<name>.+) object was ")
_AVAL = re.compile(r"(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?P<rest>.*)")
_WEAK = re.compile(r"\{weak_type=(True|False)\}")
_DTYPES = {"f": "float", "i": "int", "u": "uint", "c": "complex", "bf": "bfloat"}
_STATIC_VALUE = re.compile(r"^static argument (?P<name>[^:]+): (?P<old>.+?) -> (?P<new>.+)$")
_PYTREE_WHY = (
    "(pytree structure changed)",
    "(the lengths do not match)",
    "(their Python types differ)",
    "(the numbers of children do not match",
)


@dataclass(frozen=True)
class _Cause:
    kind: str | None  # None: a cause with no fix of its own
    name: str = ""  # the argument, where causes of its kind fold by argument
    old: str = ""
    new: str = ""


def _avals(text: str) -> _Cause | None:
    """'x: f32[3] -> f32[4]': which of shape, dtype or weak type changed."""
    name, sep, change = text.partition(": ")
    old, arrow, new = change.partition(" -> ")
    a, b = _AVAL.fullmatch(old), _AVAL.fullmatch(new)
    if not (sep and arrow and a and b) or ":" in name:
        return None
    if a["shape"] != b["shape"]:
        return _Cause(SHAPE, name, old, new)
    if a["dtype"] != b["dtype"]:
        return _Cause(DTYPE, name, old, new)
    if _WEAK.search(a["rest"]) and _WEAK.search(b["rest"]) and a["rest"] != b["rest"]:
        return _Cause(WEAK_TYPE, name, old, new)
    return None


def _classify(text: str) -> _Cause:
    if m := _REDEFINED.match(text):
        return _Cause(_REDEFINED_KIND, new=m["name"])
    found = _avals(text)
    if found is not None:
        return found
    if text.startswith("static argument "):
        if ": new closure " in text:
            return _Cause(CLOSURE)
        if text.endswith(" wrapper per call, compared by identity"):
            return _Cause(JIT_WRAPPER)
        if "equal repr but compared by identity" in text:
            return _Cause(IDENTITY)
    if text.endswith(_METADATA_WHY):
        return _Cause(_METADATA)
    if any(why in text for why in _PYTREE_WHY):
        return _Cause(STRUCTURE)
    if m := _STATIC_VALUE.match(text):
        if m["old"] == m["new"]:  # JAX's text of an object compared by identity
            return _Cause(IDENTITY)
        return _Cause(VALUE, m["name"], m["old"], m["new"])
    return _Cause(None)


def _fix(cause: _Cause) -> str:
    fix = _FIXES.get(cause.kind or "", "")
    if "{ctor}" in fix:
        m = _AVAL.fullmatch(cause.new)
        kind = re.fullmatch(r"([a-z]+?)(\d*)", m["dtype"]) if m else None
        base = _DTYPES.get(kind[1]) if kind else None
        ctor = f"jnp.{base}{kind[2]}(x)" if kind and base else "jnp.asarray(x, dtype)"
        fix = fix.format(ctor=ctor)
    return fix


def _folded(
    kind: str, name: str, changes: list[_Cause], count: str, traces: int | None, shown: int = 3
) -> str:
    """'idx: shape changed on 4 of 5 traces: i32[33], i32[36], i32[30], ...', at most
    `shown` of the values."""
    values: list[str] = []
    for c in changes:
        for v in (c.old, c.new):
            if v not in values:
                values.append(v)
    listed = ", ".join(values[:shown]) + (", ..." if len(values) > shown else "")
    count += f" of {traces}" if traces else ""
    what = f"static argument {name} changed" if kind == VALUE else f"{name}: {kind} changed"
    return f"{what} on {count} traces" + (f": {listed}" if shown else "")


# -- past MAX_REASONS: the retraces counted, each by the kept causes it folds into --------
_MORE = re.compile(
    r"^and (?P<n>\d+) more retraces(?:: (?:static argument (?P<value>.+)|(?P<name>.+): "
    r"(?P<kind>shape|dtype|weak type)) changed| of other causes)$"
)
_OTHER = ("", "other causes")


def _group(text: str, c: _Cause) -> tuple[str, str]:
    """Causes of one kind on one argument fold into one line; any other cause is its own."""
    return (c.kind or "", c.name) if c.kind in (SHAPE, DTYPE, WEAK_TYPE, VALUE) else ("", text)


def _parts(reason: str) -> list[tuple[str, _Cause]]:
    """A retrace's causes, one per argument where each is a change of type ('x: f32[3] ->
    f32[4]; y: ...'); any other reason whole."""
    parts = reason.split("; ")
    classified = [(p, _classify(p)) for p in parts]
    if len(parts) == 1 or not all(c.kind in (SHAPE, DTYPE, WEAK_TYPE) for _, c in classified):
        classified = [(reason, _classify(reason))]
    return classified


def _more_line(group: tuple[str, str], n: int) -> str:
    kind, name = group
    if group == _OTHER:
        return f"and {n} more retraces of other causes"
    if kind == VALUE:
        return f"and {n} more retraces: static argument {name} changed"
    return f"and {n} more retraces: {name}: {kind} changed"


def _more_group(line: str) -> tuple[tuple[str, str], int] | None:
    m = _MORE.match(line)
    if m is None:
        return None
    if m["value"] is not None:
        return (VALUE, m["value"]), int(m["n"])
    if m["name"] is not None:
        return (m["kind"], m["name"]), int(m["n"])
    return _OTHER, int(m["n"])


def add_reason(reasons: list[str], reason: str | None) -> None:
    """Each cause once, at most MAX_REASONS of them (a jit inside a loop of 10,000); past
    them, a retrace is counted on an "and N more retraces" line of the kept causes' fold it
    belongs to (or of other causes), so that `summary` says how many retraces each fold
    had, not "10+"."""
    if not reason or reason in reasons:
        return
    kept = [r for r in reasons if _MORE.match(r) is None]
    if len(kept) < MAX_REASONS:
        reasons.insert(len(kept), reason)
        return
    folds = {_group(t, c) for r in kept for t, c in _parts(r)}
    for text, c in _parts(reason):
        group = _group(text, c)
        group = group if group in folds and group[0] else _OTHER
        for i, line in enumerate(reasons):
            found = _more_group(line)
            if found is not None and found[0] == group:
                reasons[i] = _more_line(group, found[1] + 1)
                break
        else:
            reasons.append(_more_line(group, 1))


def label_name(name: str) -> str:
    """A function's name as a cause line's label: 'step', not 'test_x.<locals>.step' (a
    method keeps its class: 'Model.__call__'); the full name is in the test's section."""
    return name.rsplit(".<locals>.", 1)[-1]


def summary(
    reasons: Sequence[str],
    traces: int | None = None,
    label: str = "",
    fixed: set[str] | None = None,
) -> list[str]:
    """One function's retrace causes as the failure summary shows them: one line per cause,
    causes of one kind on one argument folded into one line with their exact count, the fix
    of each kind said once (`fixed`: the kinds already given one, shared between the calls of
    one summary), each line `label` + text at most LINE_LIMIT characters (see `_line`).
    `traces`: the function's traces. A full list of causes (MAX_REASONS) without the
    recorder's "and N more retraces" lines (a file written before them) makes the counts of
    a fold lower bounds ("10+")."""
    fixed = set() if fixed is None else fixed
    groups: dict[tuple[str, str], list[tuple[str, _Cause]]] = {}
    more: dict[tuple[str, str], int] = {}
    for reason in reasons:
        found = _more_group(reason)
        if found is not None:
            more[found[0]] = more.get(found[0], 0) + found[1]
            continue
        for text, c in _parts(reason):
            groups.setdefault(_group(text, c), []).append((text, c))
    kept = sum(1 for r in reasons if _MORE.match(r) is None)
    counted = sum(len(m) for m in groups.values()) + sum(more.values())
    lower_bound = kept >= MAX_REASONS and not more and (traces is None or traces - 1 > counted)
    lines = []
    for (kind, name), members in groups.items():
        first = members[0][1]
        extra = more.pop((kind, name), 0) if kind else 0
        if len(members) + extra > 1:
            count = f"{len(members) + extra}{'+' if lower_bound else ''}"
            changes = [c for _, c in members]
            texts = [_folded(kind, name, changes, count, traces, n) for n in (3, 2, 1, 0)]
        elif first.kind == _METADATA:  # the kind says what JAX's words would
            texts = [members[0][0].removesuffix(_METADATA_WHY)]
        elif first.kind == _REDEFINED_KIND:  # its fix said as every kind's
            texts = [f"function re-defined on every call: a new {first.new} object was traced"]
        else:
            texts = [members[0][0]]
        fixes = ("", "")
        if first.kind and first.kind not in fixed:
            fixes = (_fix(first), _SHORT_FIXES.get(first.kind, ""))
        if first.kind:
            fixed.add(first.kind)
        lines.append(_line(label, texts, fixes))
    lines += [label + _more_line(group, n) for group, n in more.items()]
    return lines


_ABBREVIATIONS = (
    # A weak type said once, a strong one left unsaid (the default): the change reads
    # 'i32[]{weak} -> i32[]'.
    (re.compile(r"\{weak_type=True\}"), "{weak}"),
    (re.compile(r"\{weak_type=False\}"), ""),
    # A closure's enclosing function, without the '<locals>' between: 'chain.init_fn'.
    (re.compile(r"\.<locals>\."), "."),
)


def _abbreviated(text: str) -> str:
    for pattern, short in _ABBREVIATIONS:
        text = pattern.sub(short, text)
    return text


def _line(label: str, texts: Sequence[str], fixes: tuple[str, str]) -> str:
    """`label` + a cause + '; fix: ...' in at most LINE_LIMIT characters. Where it does not
    fit, what repeats goes first: the fix in a few words (its kind's fix, the same for every
    cause), then the text's repeated parts abbreviated ({weak_type=True}, '<locals>'), then
    fewer of a fold's values (`texts`: the cause's forms, fullest first); only then is the
    cause cut. The leaf and its before/after come first in every form."""
    full, short = fixes
    forms = [(texts[0], full), (texts[0], short)]
    forms += [(form, short) for text in texts for form in (text, _abbreviated(text))]
    for text, fix in forms:
        line = label + text + (f"; fix: {fix}" if fix else "")
        if len(line) <= LINE_LIMIT:
            return line
    return shorten(label + _abbreviated(texts[-1]), f"; fix: {short}" if short else "")


def shorten(text: str, tail: str = "", limit: int = LINE_LIMIT) -> str:
    """`text` + `tail` in at most `limit` characters: `text` cut where needed."""
    room = limit - len(tail)
    if len(text) > room:
        text = text[: max(room - 3, 0)].rstrip() + "..."
    return text + tail


def redefined(reasons: Sequence[str]) -> bool:
    """Whether a function was traced anew as a new object (a jit inside a loop): what makes
    it new to a baseline, too."""
    return any(r.startswith("function re-defined") for r in reasons)
