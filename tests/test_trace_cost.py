"""The recorder's work per trace does not grow with the number of traces (issue 35).

A test that traces one function thousands of times used to read JAX's whole trace cache on
every retrace, to explain it: the per-trace cost grew with the number of traces. Counted
here, not timed: how many cache keys the explanations read and how many explanations and
diffs are made, for a small and a large number of traces (benchmarks/trace_cost.py times
it). The causes themselves are those of before.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import read_json

from pytest_jaxperf.measure import _jaxhooks
from pytest_jaxperf.measure.recorder import CLEARED
from pytest_jaxperf.model import MAX_REASONS

pytestmark = pytest.mark.jax_internals

# A static argument whose every value is new to JAX's cache but reads the same: each
# retrace has the same cause, so the list of causes never fills and every retrace is
# explained.
REPEATED_CAUSE = """
from functools import partial

import jax
import jax.numpy as jnp

class Opaque:
    def __repr__(self):
        return "Opaque()"

@partial(jax.jit, static_argnums=1)
def f(x, k):
    return x * 2.0

def test_it():
    x = jax.ShapeDtypeStruct((3,), jnp.float32)
    for _ in range({n}):
        f.trace(x, Opaque())
"""

# Every retrace a new shape: a new cause each time.
NEW_SHAPES = """
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2.0

def test_it():
    for i in range({n}):
        f.trace(jax.ShapeDtypeStruct((i + 1,), jnp.float32))
"""


class Counts:
    """Explanations of the traces of the test's `f` (not of the self-check's probe), and the
    cache listings, keys read and diffs made for them."""

    def __init__(self) -> None:
        self.listings = 0
        self.keys_read = 0
        self.diffs = 0
        self.explanations = 0
        self.of_f = False  # inside an explanation of f


def spy(monkeypatch: pytest.MonkeyPatch) -> Counts:
    counts = Counts()
    all_keys, explain = _jaxhooks._all_keys, _jaxhooks.miss_explanation

    def counted_keys(cache: Any) -> list[Any]:
        keys = all_keys(cache)
        if counts.of_f:
            counts.listings += 1
            counts.keys_read += len(keys)
        return keys

    def counted_explanation(call: Any, previous: Any) -> Any:
        counts.of_f = getattr(call.debug_info, "func_name", None) == "f"
        counts.explanations += counts.of_f
        try:
            return explain(call, previous)
        finally:
            counts.of_f = False

    monkeypatch.setattr(_jaxhooks, "_all_keys", counted_keys)
    monkeypatch.setattr(_jaxhooks, "miss_explanation", counted_explanation)
    if isinstance(_jaxhooks._hooks(), _jaxhooks._TraceToJaxpr):
        from jax._src.interpreters import partial_eval as pe

        owner: Any = pe
        name = "diff_tracing_cache_keys"
    else:  # jax 0.6 - 0.8: the lu.cache keys, diffed by the plugin
        owner, name = _jaxhooks, "_diff_old_keys"
    diff = getattr(owner, name)

    def counted_diff(*args: Any) -> Any:
        counts.diffs += counts.of_f
        return diff(*args)

    monkeypatch.setattr(owner, name, counted_diff)
    return counts


def run(jp: pytest.Pytester, source: str) -> tuple[int, list[str]]:
    """The traces and causes of the one function of the one test in `source`."""
    jp.makepyfile(test_traces=source)
    result = jp.runpytest("--jaxperf", "--jaxperf-all", "--jaxperf-json=out.json")
    result.assert_outcomes(passed=1)
    (test,) = read_json(jp.path / "out.json")["tests"].values()
    (fn,) = test["functions"].values()
    return fn["traces"], fn["retrace_reasons"]


@pytest.mark.parametrize("n", [20, 200])
def test_each_retrace_is_explained_by_one_key_without_reading_the_cache(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    counts = spy(monkeypatch)
    traces, reasons = run(jp, REPEATED_CAUSE.format(n=n))
    assert traces == n
    assert reasons == [
        "static argument k: a new Opaque() per call, equal repr but compared by identity"
    ]
    # Every retrace explained, each by a diff with the last trace's key alone; the trace
    # cache is read at most once (the function's first retrace after a new epoch), and the
    # keys read do not grow with n. Before: n - 1 listings of the whole cache, whose size
    # grew with each trace.
    assert counts.explanations == n - 1
    assert counts.diffs == n - 1
    assert counts.listings <= 1
    assert counts.keys_read <= 10


@pytest.mark.parametrize("n", [20, 200])
def test_retraces_past_the_causes_kept_are_counted_by_one_diff_each(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    counts = spy(monkeypatch)
    traces, reasons = run(jp, NEW_SHAPES.format(n=n))
    assert traces == n
    # The first MAX_REASONS retraces fill the list; the others are counted on the line of
    # the fold they belong to, so that the failure says "19 of 20 traces", not "10+".
    assert reasons == [f"x: f32[{i}] -> f32[{i + 1}]" for i in range(1, MAX_REASONS + 1)] + [
        f"and {n - 1 - MAX_REASONS} more retraces: x: shape changed"
    ]
    # Each explained by one diff with the last trace's key: linear in n, and the cache
    # listed at most once, as for the causes kept.
    assert counts.explanations == n - 1
    assert counts.diffs == n - 1
    assert counts.listings <= 1


# A function defined anew on each call and jitted (equinox's filter_eval_shape, diffrax's
# error lambdas): each trace is of a new callable, so none has keys in JAX's cache to read.
REDEFINED = """
import jax
import jax.numpy as jnp

def test_it():
    x = jnp.ones(3)
    for _ in range({n}):
        def f(v):
            return v * 2.0
        jax.jit(f)(x)
"""


@pytest.mark.parametrize("n", [20, 200])
def test_a_new_callable_at_a_collected_ones_address_reads_no_cache(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    counts = spy(monkeypatch)
    traces, reasons = run(jp, REDEFINED.format(n=n))
    assert traces == n
    assert reasons == [
        "function re-defined on every call (jit inside a loop?): a new f object was traced; "
        "create and jit it once, outside the loop"
    ]
    # JAX wraps each in a new object, often at the address of one already collected: that
    # is no earlier trace of it. Before: a listing of the whole cache per trace.
    assert counts.listings == 0
    assert counts.explanations == 0


@pytest.mark.parametrize(
    ("clear", "shape"),
    [
        pytest.param("jax.clear_caches()", 4, id="clear_caches"),
        pytest.param("f.clear_cache()", 3, id="jitted-clear_cache"),
    ],
)
def test_a_trace_after_the_cache_was_cleared_says_so(
    jp: pytest.Pytester, clear: str, shape: int
) -> None:
    # The last trace's key is not diffed when the cache was cleared since: its miss count
    # restarted (jax.clear_caches(), even with a new shape), or the new key equals the last
    # one (only this function's entries were evicted; with a new shape, that shape would be
    # named as the cause).
    source = f"""
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2.0

def test_it():
    f.trace(jax.ShapeDtypeStruct((3,), jnp.float32))
    {clear}
    f.trace(jax.ShapeDtypeStruct(({shape},), jnp.float32))
"""
    traces, reasons = run(jp, source)
    assert (traces, reasons) == (2, [CLEARED])


def test_each_trace_resolves_its_user_function_once(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A trace's start and its end (its seconds) both need the user function it stands
    # for: the end takes what the start found (resolving is ~20 us of every trace).
    from pytest_jaxperf.measure import identity

    resolved: list[str] = []
    resolve = identity.resolve

    def counted(fun: Any, *args: Any) -> Any:
        found = resolve(fun, *args)
        if found is not None and found.name == "f":
            resolved.append(found.name)
        return found

    monkeypatch.setattr(identity, "resolve", counted)
    traces, reasons = run(jp, NEW_SHAPES.format(n=30))
    assert traces == 30 and len(reasons) == MAX_REASONS + 1
    assert len(resolved) == 30  # before: 60, twice per trace


def test_a_debug_infos_identity_is_read_once_per_source_string() -> None:
    # JAX derives a DebugInfo's name, file and line from its func_src_info string alone
    # (a regex per property): read once per string, then kept.
    from jax._src import api_util

    from pytest_jaxperf.measure import identity

    def f(x: Any) -> Any:
        return x

    first = api_util.debug_info("test", f, (1,), {})
    again = api_util.debug_info("test", f, (2,), {})
    assert first is not again and first.func_src_info == again.func_src_info
    identity._BY_SRC_INFO.clear()
    found = identity.from_debug_info(first)
    assert found == identity._from_debug_info(again)
    assert found is not None and (found.name, found.lineno) == ("f", f.__code__.co_firstlineno)
    assert identity.from_debug_info(again) is found  # kept, not read again
    assert {first.func_src_info: found} == identity._BY_SRC_INFO
