"""End to end: the recompilation patterns users report against real libraries, each as a
test under `max_compiles=1` (or against a baseline), fail with one cause line that names the
leaf that changed and the fix, in at most 160 characters; the test's jaxperf section and the
JSON report keep every cause in full.

optax, equinox and flax are not test dependencies: each pattern is a faithful minimal copy
of what the library does (named in each case).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from conftest import lit, read_json

from pytest_jaxperf.causes import LINE_LIMIT
from pytest_jaxperf.model import MAX_REASONS

pytestmark = pytest.mark.jax_internals

HEADER = """
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest
"""


class Pattern(NamedTuple):
    source: str  # the test module, one test `test_it`
    cause: str  # the cause line in the failure summary, after "cause: "
    detail: tuple[str, ...] = ()  # lines of the jaxperf section (fnmatch)
    baseline: str | None = None  # a first version of the module, saved as the baseline


PATTERNS = {
    # A Python int carried through a jitted step: weakly typed first, then the step's
    # strongly typed result.
    "python-int-carry": Pattern(
        """
@jax.jit
def step(x, d):
    return x + jnp.sum(d)

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    x = 0
    for _ in range(3):
        x = step(x, jnp.ones(3, jnp.int32))
""",
        "step: x: i32[]{weak_type=True} -> i32[]{weak_type=False}; "
        "fix: create it with an explicit dtype (jnp.int32(x), not a Python number)",
    ),
    # optax: `optax.chain(...)` returns a GradientTransformationExtraArgs, a NamedTuple of
    # two closures made on each call; a new one per call, passed as a static argument.
    "optax-optimizer-per-call": Pattern(
        """
class GradientTransformationExtraArgs(NamedTuple):
    init: object
    update: object

def chain():
    def init_fn(params):
        return params
    def update_fn(updates):
        return updates
    return GradientTransformationExtraArgs(init_fn, update_fn)

@functools.partial(jax.jit, static_argnums=1)
def fit(x, opt):
    return opt.update(x)

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    for _ in range(3):
        fit(jnp.ones(3), chain())
""",
        "fit: static argument opt.init: new closure chain.<locals>.init_fn per call, "
        "compared by identity; fix: pass one object, or a hashable value in a static field",
        detail=(
            "    retrace: static argument opt.init: new closure chain.<locals>.init_fn per "
            "call, compared by identity",
        ),
    ),
    # equinox: a module holding `jax.jit(fk)` as a field, rebuilt between calls of a
    # filter_jit step. filter_jit (equinox 0.13) splits each argument into its arrays and
    # the rest, and passes the rest as one static argument of `(leaves, treedef)` pairs to
    # a jitted wrapper renamed after the user's function.
    "equinox-jit-in-module": Pattern(
        """
@dataclasses.dataclass
class Traj:
    x: object
    forward: object

jax.tree_util.register_dataclass(Traj, data_fields=["x", "forward"], meta_fields=[])

def fun_wrapped(dynamic, static):
    fn, *args = [
        treedef.unflatten([d if s is None else s for d, s in zip(dyn, leaves)])
        for dyn, (leaves, treedef) in zip(dynamic, static)
    ]
    return fn(*args)

fun_wrapped.__name__ = fun_wrapped.__qualname__ = "step"
_jitted = jax.jit(fun_wrapped, static_argnums=1)

def filter_jit(fn):
    def call(*args):
        dynamic, static = [], []
        for part in (fn, *args):
            leaves, treedef = jax.tree_util.tree_flatten(part, is_leaf=lambda v: v is None)
            arrays = [isinstance(v, jax.Array) for v in leaves]
            dynamic.append([v if a else None for v, a in zip(leaves, arrays)])
            static.append((tuple(None if a else v for v, a in zip(leaves, arrays)), treedef))
        return _jitted(tuple(dynamic), tuple(static))
    return call

def fk(x):
    return x * 2

def step(traj):
    return traj.forward(traj.x)

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    run = filter_jit(step)
    for _ in range(3):
        run(Traj(jnp.ones(2), jax.jit(fk)))
""",
        "step: static argument static[1].forward: a new jax.jit(fk) wrapper per call, "
        "compared by identity; fix: jit the function once at module level",
    ),
    # flax NNX: `nnx.jit(train_step)` re-created in a loop; nnx.jit wraps the function in a
    # new `functools.wraps` closure and jits that. Against a baseline without it, the
    # function is new, and its cause says why.
    "nnx-jit-in-loop": Pattern(
        """
def nnx_jit(f):
    @functools.wraps(f)
    def jitted_fn(*args):
        return f(*args)
    return jax.jit(jitted_fn)

def train_step(x):
    return x + 1

@pytest.mark.jaxperf
def test_it():
    x = jnp.ones(3)
    for _ in range(3):
        x = {call}
""",
        "function re-defined on every call: a new train_step object was traced; "
        "fix: create and jit it once, outside the loop",
        baseline="train_step(x)",
    ),
    # A module whose static field (its pytree node's metadata) holds a closure made anew for
    # every call, passed to a plain jax.jit (equinox's `eqx.field(static=True)`).
    "static-field-closure": Pattern(
        """
@dataclasses.dataclass
class Model:
    w: object
    act: object

jax.tree_util.register_dataclass(Model, data_fields=["w"], meta_fields=["act"])

@jax.jit
def apply(model):
    return model.act(model.w)

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    for scale in (1.0, 1.0, 1.0):
        apply(Model(jnp.ones(2), lambda v: v * scale))
""",
        "apply: model: static fields of Model (test_it.<lambda>,): equal repr, "
        "compared by identity; fix: pass one object, or hashable values in its static fields",
    ),
    # Lengths from `jnp.nonzero` without `size=` fed to a jitted function: one retrace per
    # new length, folded into one line.
    "nonzero-without-size": Pattern(
        """
@jax.jit
def total(idx):
    return idx.sum()

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    for n in (33, 36, 30, 31, 40):
        total(jnp.nonzero(jnp.arange(n) >= 0)[0])
""",
        "total: idx: shape changed on 4 of 5 traces: i32[33], i32[36], i32[30], ...; "
        "fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))",
        detail=(
            "    retrace: idx: i32[33] -> i32[36]",
            "    retrace: idx: i32[36] -> i32[30]",
            "    retrace: idx: i32[30] -> i32[31]",
            "    retrace: idx: i32[31] -> i32[40]",
        ),
    ),
    # The same three as they read in real suites: the jitted function defined inside a long
    # test (its qualified name 'test_python_scalar_carry.<locals>.step' took 40 of the 160
    # characters, and the change was cut: '-> i32[]{weak_typ...'). The label is the short
    # name; each reads whole.
    "python-scalar-carry-in-a-test": Pattern(
        """
@pytest.mark.jaxperf(max_compiles=1)
def test_python_scalar_carry():
    @jax.jit
    def step(x, d):
        return x + jnp.sum(d)

    x = 0
    for _ in range(3):
        x = step(x, jnp.ones(3, jnp.int32))
""",
        "step: x: i32[]{weak_type=True} -> i32[]{weak_type=False}; "
        "fix: create it with an explicit dtype (jnp.int32(x), not a Python number)",
    ),
    "optax-optimizer-per-call-in-a-test": Pattern(
        """
class GradientTransformationExtraArgs(NamedTuple):
    init: object
    update: object

def chain():
    def init_fn(params):
        return params
    def update_fn(updates):
        return updates
    return GradientTransformationExtraArgs(init_fn, update_fn)

@pytest.mark.jaxperf(max_compiles=1)
def test_optimizer_made_on_every_step():
    @functools.partial(jax.jit, static_argnums=1)
    def fit(x, opt):
        return opt.update(x)

    for _ in range(3):
        fit(jnp.ones(3), chain())
""",
        "fit: static argument opt.init: new closure chain.<locals>.init_fn per call, "
        "compared by identity; fix: pass one object, or a hashable value in a static field",
    ),
    "neighbour-list-without-size-in-a-test": Pattern(
        """
@pytest.mark.jaxperf(max_compiles=1)
def test_neighbour_list_energy_without_size():
    @jax.jit
    def energy(idx):
        return jnp.sum(idx * 0.5)

    for n in (33, 36, 30, 31):
        energy(jnp.nonzero(jnp.arange(n) >= 0)[0])
""",
        "energy: idx: shape changed on 3 of 4 traces: i32[33], i32[36], i32[30], ...; "
        "fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))",
    ),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_cause_names_the_leaf_and_the_fix(jp: pytest.Pytester, name: str) -> None:
    pattern = PATTERNS[name]
    module = f"test_{name.replace('-', '_')}"
    if pattern.baseline is not None:
        jp.makepyfile(**{module: HEADER + pattern.source.format(call=pattern.baseline)})
        jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    source = pattern.source.format(call="nnx_jit(train_step)(x)")
    jp.makepyfile(**{module: HEADER + source})
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "-rA")
    result.assert_outcomes(failed=1)
    shown = [line.split("cause: ", 1)[1] for line in result.outlines if "cause: " in line]
    assert pattern.cause in shown, result.stdout.str()
    assert all(len(line) <= LINE_LIMIT for line in shown), shown
    assert "new function (not in the baseline)" not in shown
    result.stdout.fnmatch_lines(lit(*pattern.detail))
    (record,) = read_json(jp.path / "out.json")["tests"].values()
    reasons = [r for fn in record["functions"].values() for r in fn["retrace_reasons"]]
    assert [f"    retrace: {r}" for r in reasons if f"    retrace: {r}" in pattern.detail] == list(
        pattern.detail
    )


def test_a_fold_past_the_causes_kept_says_its_exact_count(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        test_grow=HEADER
        + """
@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf(max_compiles=1)
def test_it():
    for n in range(1, 21):
        f(jnp.ones(n))
"""
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "-rA")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit(
        "      cause: f: x: shape changed on 19 of 20 traces: f32[1], f32[2], f32[3], ...; "
        "fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))",
        "    retrace: and 9 more retraces: x: shape changed",
    ))  # fmt: skip
    assert "10+" not in result.stdout.str()
    (record,) = read_json(jp.path / "out.json")["tests"].values()
    (fn,) = record["functions"].values()
    assert fn["retrace_reasons"][-1] == "and 9 more retraces: x: shape changed"
    assert len(fn["retrace_reasons"]) == MAX_REASONS + 1
