"""Unit tests for measure.leafdiff: the first leaf that differs between two values of a
static argument, on each container users pass, and why the two count as different."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import pytest

from pytest_jaxperf.causes import (
    CLOSURE,
    IDENTITY,
    JIT_WRAPPER,
    STRUCTURE,
    VALUE,
    LeafDiff,
    static_line,
)
from pytest_jaxperf.measure.leafdiff import first_difference

pytestmark = pytest.mark.jax_internals


def fk(x: Any) -> Any:
    return x * 2


def closure() -> Any:
    def init_fn(p: Any) -> Any:
        return p

    return init_fn


class Pair(NamedTuple):
    init: Any
    update: Any


@dataclasses.dataclass(frozen=True)
class Config:
    depth: int
    act: Any = None


@dataclasses.dataclass
class Traj:
    x: Any
    forward: Any


jax.tree_util.register_dataclass(Traj, data_fields=["x", "forward"], meta_fields=[])


@dataclasses.dataclass
class Static:
    """A module with a static field: its value is the pytree node's metadata."""

    x: Any
    act: Any


jax.tree_util.register_dataclass(Static, data_fields=["x"], meta_fields=["act"])


class Opaque:
    """No __eq__ / __hash__ over values: compared by identity."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Opaque({self.n})"


class Holder:
    def __init__(self, fn: Any) -> None:
        self.fn = fn


@jax.tree_util.register_pytree_with_keys_class
class Node:
    def __init__(self, children: tuple[Any, ...], meta: str) -> None:
        self.children, self.meta = children, meta

    def tree_flatten_with_keys(self) -> Any:
        keys = [jax.tree_util.GetAttrKey(f"c{i}") for i in range(len(self.children))]
        return list(zip(keys, self.children)), self.meta

    def tree_flatten(self) -> Any:
        return self.children, self.meta

    @classmethod
    def tree_unflatten(cls, meta: str, children: Any) -> Node:
        return cls(tuple(children), meta)


def flat(tree: Any) -> tuple[tuple[Any, ...], Any]:
    """A filter-jit's static part of `tree`, as equinox builds it: (leaves, treedef)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=lambda v: v is None)
    return tuple(leaves), treedef


SAME_FN = closure()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(2, 3, LeafDiff("", "2", "3", VALUE), id="int-value"),
        pytest.param((1, (2, 3)), (1, (2, 4)), LeafDiff("[1][1]", "3", "4", VALUE), id="tuple"),
        pytest.param(
            Pair(SAME_FN, closure()),
            Pair(SAME_FN, closure()),
            LeafDiff(".update", "closure.<locals>.init_fn", "closure.<locals>.init_fn", CLOSURE),
            id="namedtuple-of-fresh-closures",
        ),
        pytest.param(
            {"a": 1, "b": {"c": 2}},
            {"a": 1, "b": {"c": 5}},
            LeafDiff("['b']['c']", "2", "5", VALUE),
            id="dict",
        ),
        pytest.param(
            {"a": 1},
            {"a": 1, "b": 2},
            LeafDiff("", "dict of 1", "dict of 2, 'b' only here", STRUCTURE),
            id="dict-keys",
        ),
        pytest.param((1, 2), (1, 2, 3), LeafDiff("", "tuple of 2", "tuple of 3", STRUCTURE),
                     id="tuple-length"),  # fmt: skip
        pytest.param(
            Config(2, "relu"), Config(3, "relu"), LeafDiff(".depth", "2", "3", VALUE),
            id="dataclass",
        ),
        pytest.param(
            functools.partial(fk, 1),
            functools.partial(fk, 1),
            LeafDiff("", "functools.partial(fk, ...)", "functools.partial(fk, ...)", IDENTITY),
            id="partial-compared-by-identity",
        ),
        pytest.param(
            functools.partial(fk, scale=1),
            functools.partial(fk, scale=2),
            LeafDiff(".keywords['scale']", "1", "2", VALUE),
            id="partial-keyword",
        ),
        pytest.param(
            Opaque(1), Opaque(1), LeafDiff("", "Opaque(1)", "Opaque(1)", IDENTITY), id="identity"
        ),
        pytest.param(Opaque(1), Opaque(2), LeafDiff(".n", "1", "2", VALUE),
                     id="attribute-of-an-object-compared-by-identity"),  # fmt: skip
        pytest.param(
            Holder(closure()),
            Holder(closure()),
            LeafDiff(".fn", "closure.<locals>.init_fn", "closure.<locals>.init_fn", CLOSURE),
            id="attribute-of-a-plain-object",
        ),
        pytest.param(
            Config(1, jax.jit(fk)),
            Config(1, jax.jit(fk)),
            LeafDiff(".act", "jax.jit(fk)", "jax.jit(fk)", JIT_WRAPPER),
            id="jit-wrapper-in-a-dataclass",
        ),
        pytest.param(
            (flat(fk), flat(Traj(None, jax.jit(fk)))),
            (flat(fk), flat(Traj(None, jax.jit(fk)))),
            LeafDiff("[1].forward", "jax.jit(fk)", "jax.jit(fk)", JIT_WRAPPER),
            id="equinox-static-leaves-and-treedef",
        ),
        pytest.param(
            (flat(Traj(None, 1)),),
            (flat((None, 1)),),
            LeafDiff("[0]", "Traj", "tuple of 2", STRUCTURE),
            id="equinox-treedef-changed",
        ),
        pytest.param(
            (flat(Static(1, closure())),),
            (flat(Static(1, closure())),),
            LeafDiff("[0].act", "closure.<locals>.init_fn", "closure.<locals>.init_fn", CLOSURE),
            id="equinox-static-field",
        ),
        pytest.param(
            Node((1, 2), "m"), Node((1, 3), "m"), LeafDiff(".c1", "2", "3", VALUE), id="pytree-node"
        ),
        pytest.param(
            Node((1, 2), "m"),
            Node((1, 2), "n"),
            LeafDiff("", str(jax.tree_util.tree_structure(Node((1, 2), "m"))),
                     str(jax.tree_util.tree_structure(Node((1, 2), "n"))), STRUCTURE),
            id="pytree-node-metadata",
        ),  # fmt: skip
    ],
)
def test_first_difference(old: Any, new: Any, expected: LeafDiff) -> None:
    assert first_difference(old, new) == expected


def test_equal_values_have_no_difference() -> None:
    assert first_difference(Config(1, "a"), Config(1, "a")) is None
    assert first_difference(SAME_FN, SAME_FN) is None


def test_an_equal_unhashable_part_is_equal() -> None:
    old, new = Holder([1, {"a": 2}]), Holder([1, {"a": 2}])
    assert first_difference((old, [3]), (old, [4])) == LeafDiff("[1][0]", "3", "4", VALUE)
    assert first_difference(Traj([1], 2), Traj([1], 3)) == LeafDiff(".forward", "2", "3", VALUE)
    found = first_difference(old, new)  # equal parts, a new object: compared by identity
    assert found is not None and (found.path, found.kind) == ("", IDENTITY)


def test_a_value_whose_eq_raises_is_left_to_jax() -> None:
    class Broken:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        __hash__ = object.__hash__

    found = first_difference(Broken(), Broken())
    assert found is None or found.kind in (VALUE, IDENTITY)


def test_long_values_are_shortened() -> None:
    found = first_difference("x" * 100, "y" * 100)
    assert found is not None and len(found.old) == 40 and found.old.endswith("...")


@pytest.mark.parametrize(
    ("leaf", "line"),
    [
        (LeafDiff("", "2", "3", VALUE), "static argument n: 2 -> 3"),
        (
            LeafDiff(".init", "f", "chain.<locals>.init_fn", CLOSURE),
            "static argument n.init: new closure chain.<locals>.init_fn per call, compared by "
            "identity",
        ),
        (
            LeafDiff("[1].forward", "jax.jit(fk)", "jax.jit(fk)", JIT_WRAPPER),
            "static argument n[1].forward: a new jax.jit(fk) wrapper per call, compared by "
            "identity",
        ),
        (
            LeafDiff("", "Opaque(1)", "Opaque(1)", IDENTITY),
            "static argument n: a new Opaque(1) per call, equal repr but compared by identity",
        ),
        (
            LeafDiff(".t", "tuple of 2", "tuple of 3", STRUCTURE),
            "static argument n.t: tuple of 2 -> tuple of 3 (pytree structure changed)",
        ),
    ],
)
def test_static_line(leaf: LeafDiff, line: str) -> None:
    assert static_line("n", leaf) == line
