"""Which baseline entry a recorded function is, when its key no longer says so (pure).

A function's key is "name at file:line". An edit above a function moves its line; a baseline
saved before functions were named by `__qualname__` holds `__call__` where a run now records
`Model.__call__`; several functions of one file may share a name (two `jax.jit(lambda ...)`,
same-named helpers nested in one function). Rules, each applied to what earlier ones left:

1. the functions of one file that share a name are paired in order of definition, where
   the run and the baseline have as many of them (so a shifted line cannot pair a function
   with its neighbour's old line);
2. the same key;
3. rule 1 again, for what the same key left;
4. rules 1-3 on the last part of the name (`Model.__call__` -> `__call__`): baselines that
   hold names without their class or enclosing function;
5. the same name, then the same last part, in any file, where each side has exactly one.

A function matched by none is "new" and a baseline entry matched by none "no longer compiled".
Where the number of same-named functions in a file changed, only an unchanged key pairs them:
an added or removed function leaves no way to tell which of the others moved where.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from .model import FunctionRecord, short_name

# What a rule groups functions by: only functions of one group can be paired.
Group = Callable[[FunctionRecord], Hashable]


def match_functions(
    current: Mapping[str, FunctionRecord], base: Mapping[str, FunctionRecord]
) -> dict[str, FunctionRecord]:
    """Current key -> the baseline function it is (see the module's rules)."""
    if current.keys() == base.keys():
        # The usual case, and what the rules give for it: each function is its own key.
        return {key: base[key] for key in current}
    matched: dict[str, FunctionRecord] = {}
    for group, most in _RULES:
        if len(matched) == len(current) or len(matched) == len(base):
            break  # nothing left to pair
        _pair(current, base, matched, group, most)
    return matched


def _file(fn: FunctionRecord) -> str:
    path, _, line = fn.site.rpartition(":")
    return path if path and line.isdigit() else fn.site


def _line(fn: FunctionRecord) -> int:
    line = fn.site.rpartition(":")[2]
    return int(line) if line.isdigit() else 0


# (group, the most functions a group may hold on each side; None: any number).
_RULES: tuple[tuple[Group, int | None], ...] = (
    (lambda f: (f.name, _file(f)), None),
    (lambda f: f.key, 1),
    (lambda f: (f.name, _file(f)), None),
    (lambda f: (short_name(f.name), _file(f)), None),
    (lambda f: (short_name(f.name), f.site), 1),
    (lambda f: (short_name(f.name), _file(f)), None),
    (lambda f: f.name, 1),
    (lambda f: short_name(f.name), 1),
)


def _pair(
    current: Mapping[str, FunctionRecord],
    base: Mapping[str, FunctionRecord],
    matched: dict[str, FunctionRecord],
    group: Group,
    most: int | None,
) -> None:
    """Pairs, in order of definition line, the unmatched functions of each group that holds
    as many on both sides (and no more than `most`)."""
    used = {id(f) for f in matched.values()}
    groups: dict[Hashable, tuple[list[tuple[str, FunctionRecord]], list[FunctionRecord]]] = {}
    for key, fn in current.items():
        if key not in matched:
            groups.setdefault(group(fn), ([], []))[0].append((key, fn))
    for fn in base.values():
        if id(fn) not in used:
            groups.setdefault(group(fn), ([], []))[1].append(fn)
    for now, before in groups.values():
        if now and len(now) == len(before) and (most is None or len(now) <= most):
            now.sort(key=lambda kf: _line(kf[1]))
            before.sort(key=_line)
            for (key, _), old in zip(now, before):
                matched[key] = old
