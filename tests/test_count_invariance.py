"""Recorded counts do not depend on test order, `-k` selection, pytest-xdist or marker
selection.

One generated suite mixes the patterns real JAX projects use: transforms under jit
(value_and_grad, grad, vmap, checkpoint, jacfwd of a partial), `functools.partial`, a bound
method, a `functools.wraps` decorator, an equinox-style generic jit wrapper, pmap, eager
`lax` control flow with user bodies, module- and function-scoped fixtures that warm a
jitted function up, and retraces by shape and by static argument. Every pattern is used
by two tests on module-level functions, so the second would see a cached function if
isolation failed. The suite runs five ways and, for every test present in two runs, the
(traces, lowerings, compiles) of every function must be identical."""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest
from conftest import read_json

from pytest_jaxperf.measure import _jaxhooks

pytestmark = pytest.mark.jax_internals

REVERSE = "JAXPERF_INVARIANCE_REVERSE"

# Two CPU devices for pmap, before any JAX op; the test order reversed when REVERSE is set.
CONFTEST = f"""
import os

import jax

jax.config.update("jax_num_cpu_devices", 2)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("{REVERSE}"):
        items.reverse()
"""

# equinox 0.13.8's filter_jit, reduced: a cache of jitted `fun_wrapped`, renamed after the
# user's function, which travels in the static arguments.
EQXLIKE = """
import functools

import jax


@functools.lru_cache(maxsize=None)
def _cache(name, qualname):
    def fun_wrapped(dynamic, static):
        fn = static[0]
        return fn(*dynamic)

    fun_wrapped.__name__ = name
    fun_wrapped.__qualname__ = qualname
    return jax.jit(fun_wrapped, static_argnums=1)


class _JitWrapper:
    def __init__(self, fn):
        self.fn = fn
        self._cached = _cache(fn.__name__, fn.__qualname__)
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return self._cached(args, (self.fn,))


def filter_jit(fn):
    return _JitWrapper(fn)
"""

MODELS = """
import functools

import jax
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum((x @ w) ** 2)


loss_and_grad = jax.jit(jax.value_and_grad(loss))


def energy(x):
    return jnp.sum(jnp.sin(x) ** 2)


force = jax.jit(jax.grad(energy))


def self_dot(x):
    return jnp.dot(x, x)


batched = jax.jit(jax.vmap(self_dot))


def deep(x):
    return jnp.tanh(jnp.tanh(x) * 2.0)


remat = jax.jit(jax.checkpoint(deep))


def scaled(x, k):
    return x * k


double = jax.jit(functools.partial(scaled, k=2))


class Layer:
    def __init__(self, bias):
        self.bias = bias

    def apply(self, x):
        return jnp.maximum(x + self.bias, 0.0)


layer = Layer(0.5)
apply = jax.jit(layer.apply)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@jax.jit
@logged
def normalise(x):
    return x / jnp.linalg.norm(x)


def norm(x, ord):
    return jnp.linalg.norm(x, ord=ord)


jac_norm = jax.jit(jax.jacfwd(functools.partial(norm, ord=2)))
"""

# Tests ending in _a (and the new-shape test) are marked; the _b ones are not.
TEST_TRANSFORMS = """
import functools

import jax
import jax.numpy as jnp
import pytest
from eqxlike import filter_jit
from models import apply, batched, double, force, jac_norm, loss_and_grad, normalise, remat

W = jnp.ones((3, 2))
X = jnp.ones((4, 3))


@functools.partial(jax.jit, static_argnames="n")
def power(x, n):
    return x**n


@filter_jit
def eqx_loss(w, x):
    return jnp.mean((x @ w) ** 2)


@filter_jit
def eqx_predict(w, x):
    return jnp.tanh(x @ w)


@pytest.mark.jaxperf
def test_value_and_grad_a():
    loss_and_grad(W, X)
    loss_and_grad(W, X)


def test_value_and_grad_b():
    loss_and_grad(W, X)
    loss_and_grad(W, jnp.ones((5, 3)))


@pytest.mark.jaxperf
def test_grad_a():
    force(jnp.ones(3))


def test_grad_b():
    force(jnp.ones(3))
    force(jnp.ones(5))


@pytest.mark.jaxperf
def test_vmap_a():
    batched(X)


def test_vmap_b():
    batched(X)
    batched(X + 1)


@pytest.mark.jaxperf
def test_checkpoint_a():
    remat(jnp.ones(3))


def test_checkpoint_b():
    jax.grad(lambda x: remat(x).sum())(jnp.ones(3))
    remat(jnp.ones(3))


@pytest.mark.jaxperf
def test_partial_a():
    double(jnp.ones(3))


def test_partial_b():
    double(jnp.ones(3))
    double(jnp.ones((2, 3)))


@pytest.mark.jaxperf
def test_method_a():
    apply(jnp.ones(3))


def test_method_b():
    apply(jnp.ones(3))
    apply(jnp.ones(3, dtype=jnp.int32))


@pytest.mark.jaxperf
def test_wraps_a():
    normalise(jnp.ones(3))


def test_wraps_b():
    normalise(jnp.ones(3))
    normalise(jnp.ones(4))


@pytest.mark.jaxperf
def test_jacfwd_a():
    jac_norm(jnp.ones(3))


def test_jacfwd_b():
    jac_norm(jnp.ones(3))
    jac_norm(jnp.ones(3))


@pytest.mark.jaxperf
def test_equinox_a():
    eqx_loss(W, X)
    eqx_predict(W, X)


def test_equinox_b():
    eqx_loss(W, X)
    eqx_loss(W, jnp.ones((6, 3)))
    eqx_predict(W, X)


@pytest.mark.jaxperf
def test_static_a():
    power(jnp.ones(3), n=2)
    power(jnp.ones(3), n=3)


def test_static_b():
    power(jnp.ones(3), n=2)
    power(jnp.ones(3), n=2)
"""

TEST_LOOPS = """
import jax
import jax.numpy as jnp
import pytest
from jax import lax


def kernel(x):
    return jnp.sin(x) * 2.0 + 1.0


pkernel = jax.pmap(kernel)


def scan_body(carry, x):
    return carry + x, carry * x


def while_cond(state):
    return state[0] < 5


def while_body(state):
    return state[0] + 1, state[1] * 2.0


def positive(x):
    return x + 1.0


def negative(x):
    return x - 1.0


def fori_body(i, x):
    return x + i


@pytest.mark.jaxperf
def test_pmap_a():
    pkernel(jnp.ones((2, 3)))
    pkernel(jnp.ones((2, 5)))


def test_pmap_b():
    pkernel(jnp.ones((2, 3)))
    pkernel(jnp.ones((2, 5)))
    pkernel(jnp.ones((2, 3)))


@pytest.mark.jaxperf
def test_scan_a():
    lax.scan(scan_body, 0.0, jnp.arange(4.0))


def test_scan_b():
    lax.scan(scan_body, 0.0, jnp.arange(4.0))
    lax.scan(scan_body, 0.0, jnp.arange(6.0))


@pytest.mark.jaxperf
def test_while_a():
    lax.while_loop(while_cond, while_body, (0, 1.0))


def test_while_b():
    lax.while_loop(while_cond, while_body, (0, 1.0))


@pytest.mark.jaxperf
def test_cond_a():
    lax.cond(True, positive, negative, jnp.ones(3))


def test_cond_b():
    lax.cond(False, positive, negative, jnp.ones(3))
    lax.cond(True, positive, negative, jnp.ones(3))


@pytest.mark.jaxperf
def test_fori_a():
    lax.fori_loop(0, 3, fori_body, jnp.zeros(2))


def test_fori_b():
    lax.fori_loop(0, 3, fori_body, jnp.zeros(2))
"""

TEST_FIXTURES = """
import jax
import jax.numpy as jnp
import pytest


@jax.jit
def step(x):
    return x * 0.5 + 1.0


@pytest.fixture(scope="module")
def warm_module():
    x = jnp.ones(4)
    step(x)
    return x


@pytest.fixture
def warm_function():
    x = jnp.ones(6)
    step(x)
    return x


@pytest.mark.jaxperf
def test_module_fixture_a(warm_module):
    step(warm_module)


def test_module_fixture_b(warm_module):
    step(warm_module)
    step(warm_module)


@pytest.mark.jaxperf
def test_function_fixture_a(warm_function):
    step(warm_function)


def test_function_fixture_b(warm_function):
    step(warm_function)


@pytest.mark.jaxperf
def test_function_fixture_new_shape(warm_function):
    step(warm_function)
    step(jnp.ones(9))
"""

Counts = dict[str, dict[str, tuple[int, int, int]]]


def _counts(path: Path) -> Counts:
    """Per test, per function: (traces, lowerings, compiles). A function with all three at
    zero (a fixture's warm-up called again) counts the same as no entry at all."""
    out: Counts = {}
    for nodeid, rec in read_json(path)["tests"].items():
        funcs = {
            key: (f["traces"], f["lowerings"], f["compiles"]) for key, f in rec["functions"].items()
        }
        out[nodeid] = {key: c for key, c in funcs.items() if c != (0, 0, 0)}
    return out


def _run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[Counts, pytest.RunResult]:
    result = pytester.runpytest_subprocess("--jaxperf", f"--jaxperf-json={name}.json", *args)
    assert result.ret == 0, result.stdout.str()
    return _counts(pytester.path / f"{name}.json"), result


def _key(path: Path, name: str, owner: str = "") -> str:
    """The recorder's key of the function `name` defined in `path` (in class `owner`): its
    first line is its first decorator's."""
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if text.strip().startswith(f"def {name}("))
    while line > 0 and lines[line - 1].strip().startswith("@"):
        line -= 1
    return f"{owner}{'.' if owner else ''}{name} at {path.name}:{line + 1}"


def _mismatches(forward: Counts, other: Counts) -> list[str]:
    return [
        f"{nodeid}: forward {forward[nodeid]} vs {other[nodeid]}"
        for nodeid in sorted(other)
        if forward[nodeid] != other[nodeid]
    ]


def test_counts_independent_of_order_selection_xdist_and_markers(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(
        conftest=CONFTEST,
        eqxlike=EQXLIKE,
        models=MODELS,
        test_transforms=TEST_TRANSFORMS,
        test_loops=TEST_LOOPS,
        test_fixtures=TEST_FIXTURES,
    )
    forward, _ = _run(jp, "forward", "--jaxperf-all")
    assert len(forward) == 35
    monkeypatch.setenv(REVERSE, "1")
    backward, _ = _run(jp, "backward", "--jaxperf-all")
    # Reversed, so that the unrecorded _b tests run before the recorded _a ones.
    marked, _ = _run(jp, "marked")
    monkeypatch.delenv(REVERSE)
    subset, _ = _run(jp, "subset", "--jaxperf-all", "-k", "_b or new_shape")
    parallel, result = _run(jp, "parallel", "--jaxperf-all", "-n", "2")
    result.stdout.fnmatch_lines(["*created: 2/2 workers*"])

    assert set(backward) == set(parallel) == set(forward)
    assert set(subset) == {k for k in forward if k.endswith("_b")} | {
        "test_fixtures.py::test_function_fixture_new_shape"
    }
    assert set(marked) == {k for k in forward if k.endswith(("_a", "new_shape"))}
    assert len(subset) == len(marked) == 18
    for mode, counts in [
        ("reversed", backward),
        ("-k subset", subset),
        ("-n 2", parallel),
        ("marked only", marked),
    ]:
        assert _mismatches(forward, counts) == [], mode

    # A few exact counts (the same in every mode, as checked above).
    models, transforms = jp.path / "models.py", jp.path / "test_transforms.py"
    loops, fixtures = jp.path / "test_loops.py", jp.path / "test_fixtures.py"
    one, two = (1, 1, 1), (2, 2, 2)
    expected = {
        "test_value_and_grad_a": {_key(models, "loss"): one},
        "test_value_and_grad_b": {_key(models, "loss"): two},
        "test_grad_a": {_key(models, "energy"): one},
        "test_grad_b": {_key(models, "energy"): two},
        "test_vmap_a": {_key(models, "self_dot"): one},
        "test_vmap_b": {_key(models, "self_dot"): one},
        "test_checkpoint_a": {_key(models, "deep"): one},
        "test_partial_a": {_key(models, "scaled"): one},
        "test_partial_b": {_key(models, "scaled"): two},
        "test_method_a": {_key(models, "apply", "Layer"): one},
        "test_method_b": {_key(models, "apply", "Layer"): two},
        "test_wraps_a": {_key(models, "normalise"): one},
        "test_wraps_b": {_key(models, "normalise"): two},
        "test_jacfwd_a": {_key(models, "norm"): one},
        "test_jacfwd_b": {_key(models, "norm"): one},
        # Two keys, named after the user's functions, not after the wrapper's fun_wrapped.
        "test_equinox_a": {_key(transforms, "eqx_loss"): one, _key(transforms, "eqx_predict"): one},
        "test_equinox_b": {_key(transforms, "eqx_loss"): two, _key(transforms, "eqx_predict"): one},
        "test_static_a": {_key(transforms, "power"): two},
        "test_static_b": {_key(transforms, "power"): one},
        "test_pmap_a": {_key(loops, "kernel"): two},
        "test_pmap_b": {_key(loops, "kernel"): two},
        # The fixture's warm-up is not charged, and calling it again costs nothing ...
        "test_module_fixture_a": {},
        "test_module_fixture_b": {},
        "test_function_fixture_a": {},
        "test_function_fixture_b": {},
        # ... but a new shape does.
        "test_function_fixture_new_shape": {_key(fixtures, "step"): one},
    }
    by_name = {nodeid.split("::")[1]: funcs for nodeid, funcs in forward.items()}
    assert {name: by_name[name] for name in expected} == expected
    # Eager control flow: every user body traced afresh in each test of a pair.
    bodies = {
        "scan": ["scan_body"],
        "while": ["while_cond", "while_body"],
        "cond": ["positive", "negative"],
        "fori": ["fori_body"],
    }
    for pattern, names in bodies.items():
        for name in (f"test_{pattern}_a", f"test_{pattern}_b"):
            traces = {key: c[0] for key, c in by_name[name].items()}
            if _jaxhooks.eager_traces_counted():
                assert traces == {_key(loops, body): 1 for body in names}, name
            else:  # jax 0.6 - 0.8: such traces fire no event; only the compile is charged
                assert set(traces.values()) <= {0} and traces, name


# A module-scoped fixture keeps the functions it warmed up compiled while it lives, and with
# them whatever later tests compiled on them, and they stay compiled for tests that do not
# even use the fixture: such a test's counts depend on which tests ran before it.
LEAK = """
import jax
import jax.numpy as jnp
import pytest


@jax.jit
def step(x):
    return x * 0.5 + 1.0


@pytest.fixture(scope="module")
def warm_module():
    x = jnp.ones(4)
    step(x)
    return x


def test_a(warm_module):
    step(warm_module)
    step(jnp.ones(9))


def test_b(warm_module):
    step(warm_module)
    step(jnp.ones(9))


def test_c():
    step(jnp.ones(4))
"""


@pytest.mark.parametrize(
    "nodeid",
    [
        pytest.param(
            "test_leak.py::test_b",
            marks=pytest.mark.xfail(
                strict=True,
                reason="a shape compiled by test_a's body on a function a live module-scoped "
                "fixture warmed up stays compiled for test_b: step 0/0/0 after test_a, "
                "1/1/1 alone",
            ),
            id="new-shape-after-another-fixture-user",
        ),
        pytest.param(
            "test_leak.py::test_c",
            marks=pytest.mark.xfail(
                strict=True,
                reason="a test that does not use a live module-scoped fixture sees its "
                "warm-up: step 0/0/0 after test_a/test_b, 1/1/1 alone",
            ),
            id="no-fixture-while-fixture-alive",
        ),
    ],
)
def test_module_fixture_warm_up_does_not_leak(jp: pytest.Pytester, nodeid: str) -> None:
    jp.makepyfile(test_leak=LEAK)

    def counts(name: str, *args: str) -> Counts:
        result = jp.runpytest("--jaxperf", "--jaxperf-all", f"--jaxperf-json={name}.json", *args)
        assert result.ret == 0, result.stdout.str()
        return _counts(jp.path / f"{name}.json")

    alone = counts("alone", nodeid)
    assert alone == {nodeid: {_key(jp.path / "test_leak.py", "step"): (1, 1, 1)}}
    assert counts("all")[nodeid] == alone[nodeid]


GROWING = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def step(x):
    return jnp.tanh(x) * 2.0

@pytest.mark.parametrize("n", range(1, 41))
def test_new_shapes(n):
    # New shapes for JAX's helpers too (arange, linspace, ones): its caches grow each test.
    x = jnp.arange(n, dtype=jnp.float32)
    assert step(x).shape == (n,)
    assert (jnp.linspace(0, 1, n) + jnp.ones(n)).shape == (n,)
"""


def test_isolation_looks_only_at_what_was_traced_since_the_last_one(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = type(_jaxhooks._hooks())
    if hooks.evict_traced is _jaxhooks._HookSet.evict_traced:
        pytest.skip(f"{hooks.name}: every isolation walks JAX's caches")
    from jax._src.interpreters import partial_eval as pe

    walks: list[int] = []
    looked_at: list[int] = []
    walk, incremental = hooks.evict, hooks.evict_traced

    def spy_walk(self: object, *args: object) -> int:
        walks.append(1)
        return walk(self, *args)  # type: ignore[arg-type]

    def spy_incremental(self: object, keep: object, seen: object, traced: list[object]) -> int:
        looked_at.append(len(traced))
        return incremental(self, keep, seen, traced)  # type: ignore[arg-type]

    monkeypatch.setattr(hooks, "evict", spy_walk)
    monkeypatch.setattr(hooks, "evict_traced", spy_incremental)
    before = len(pe.trace_to_jaxpr.cache_keys())
    jp.makepyfile(GROWING)
    jp.runpytest("--jaxperf", "--jaxperf-all").assert_outcomes(passed=40)
    grown = len(pe.trace_to_jaxpr.cache_keys()) - before
    # At most the first isolation of the process walks; the others look at each test's own
    # traces (step and a few helpers), not at the hundreds of entries JAX keeps cached.
    assert len(walks) <= 1
    assert len(looked_at) >= 39
    assert grown > 100
    # Not growing with the tests run: every isolation after the first looks at 12 entries at
    # most (9-10 a test here; how many of a few tests' helpers are new varies by one or two
    # with what other tests of the process traced before, so the last ten are no tighter
    # bound than the middle ten), where one that kept what earlier tests traced would look
    # at ~10 more per test: past 12 by the third.
    assert max(looked_at[1:]) <= 12, looked_at


def test_isolation_hands_a_function_only_to_caches_keyed_on_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # JAX's listable caches include some keyed on MLIR modules. A function whose hash
    # collides with such a key is compared to it, and `ir.Module.__eq__` raises TypeError:
    # isolation then fell back to clearing everything (test order made counts differ).
    hooks = _jaxhooks._hooks()
    if type(hooks).evict_traced is _jaxhooks._HookSet.evict_traced:
        pytest.skip(f"{hooks.name}: every isolation walks JAX's caches")
    from jax._src import util

    class Module:  # as jaxlib's ir.Module compares to anything else
        def __eq__(self, other: object) -> bool:
            raise TypeError("__eq__(): incompatible function arguments")

        __hash__ = object.__hash__

    class Cache:
        def __init__(self, key: object) -> None:
            self.key, self.evicted = key, []

        def cache_keys(self) -> list[tuple[object, ...]]:
            return [(weakref.ref(self.key), None, (), {})]

        def evict_weakref(self, obj: object) -> None:
            _ = self.key == obj  # what a hash collision does
            self.evicted.append(obj)

    def user(x: object) -> object:
        return x

    module = Module()
    by_module, by_function = Cache(module), Cache(user)
    caches = weakref.WeakKeyDictionary(util._caches)
    caches.update({by_module: True, by_function: True})
    monkeypatch.setattr(util, "_caches", caches)
    monkeypatch.setattr(_jaxhooks, "_FUNCTION_KEYED", {})
    assert hooks.evict_traced(lambda fun, dbg: fun is not user, [], [(user, None)]) == 1
    assert by_function.evicted == [user]
    assert by_module.evicted == []


def test_a_new_jit_of_a_shared_function_in_each_test_traces_in_each(jp: pytest.Pytester) -> None:
    # optax's `jax.jit(scaler.init)`: every test jits the same module-level function anew in a
    # local that dies with the test, while JAX's C++ dispatch cache, keyed on the function,
    # keeps the compiled entry.
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp
import pytest

def shared(x):
    return x * 3.0

@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_new_jit_each_test(k):
    f = jax.jit(shared)
    f(jnp.ones(3))
"""
    )
    jp.runpytest("--jaxperf", "--jaxperf-all", "--jaxperf-json=out.json").assert_outcomes(passed=4)
    tests = read_json(jp.path / "out.json")["tests"]
    assert [(t["traces"], t["compiles"]) for t in tests.values()] == [(1, 1)] * 4
