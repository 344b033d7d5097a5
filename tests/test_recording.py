"""End to end: what `pytest --jaxperf` records for a test, per function."""

from __future__ import annotations

import json

import pytest
from conftest import lit, read_json

pytestmark = pytest.mark.jax_internals

HEADER = """
import functools
import jax
import jax.numpy as jnp
import pytest
"""


def _record(pytester: pytest.Pytester, *args: str) -> dict:
    result = pytester.runpytest("--jaxperf", "--jaxperf-json=out.json", *args)
    assert result.ret == 0, result.stdout.str()
    return read_json(pytester.path / "out.json")["tests"]


def test_retrace_counted_with_changed_argument(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf
def test_shapes():
    f(jnp.ones(3)); f(jnp.ones(3)); f(jnp.ones(4))
"""
    )
    tests = _record(jp)
    rec = tests["test_retrace_counted_with_changed_argument.py::test_shapes"]
    (key,) = rec["functions"]
    assert key.startswith("f at test_retrace_counted_with_changed_argument.py:")
    fn = rec["functions"][key]
    assert (fn["traces"], fn["lowerings"], fn["compiles"]) == (2, 2, 2)
    assert fn["retrace_reasons"] == ["x: f32[3] -> f32[4]"]
    assert (rec["traces"], rec["compiles"]) == (2, 2)
    assert fn["compile_s"] > 0 and fn["lower_s"] > 0 and fn["trace_s"] > 0


def test_nested_jit_retrace_counted(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def inner(x):
    return x + 1

@jax.jit
def outer(x):
    return inner(x).sum()

@pytest.mark.jaxperf
def test_nested():
    outer(jnp.ones(3)); outer(jnp.ones(5))
"""
    )
    rec = _record(jp)["test_nested_jit_retrace_counted.py::test_nested"]
    funcs = {f["name"]: f for f in rec["functions"].values()}
    assert funcs["inner"]["traces"] == 2
    assert funcs["inner"]["compiles"] == 0  # compiled as part of outer
    assert funcs["inner"]["retrace_reasons"] == ["x: f32[3] -> f32[5]"]
    assert funcs["outer"]["traces"] == 2 and funcs["outer"]["compiles"] == 2


def test_static_argument_and_jit_in_loop_causes(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@functools.partial(jax.jit, static_argnames="cutoff")
def energy(x, cutoff):
    return jnp.sum(jnp.where(x < cutoff, x, 0.0))

@pytest.mark.jaxperf
def test_static():
    energy(jnp.ones(3), cutoff=0.2); energy(jnp.ones(3), cutoff=0.25)

@pytest.mark.jaxperf
def test_loop():
    for i in range(3):
        jax.jit(lambda v: v + i)(jnp.ones(2))
"""
    )
    tests = _record(jp)
    (static,) = tests["test_static_argument_and_jit_in_loop_causes.py::test_static"][
        "functions"
    ].values()
    assert static["traces"] == 2
    assert static["retrace_reasons"] == ["static argument cutoff: 0.2 -> 0.25"]
    (loop,) = tests["test_static_argument_and_jit_in_loop_causes.py::test_loop"][
        "functions"
    ].values()
    assert loop["name"] == "test_loop.<locals>.<lambda>" and loop["traces"] == 3
    assert len(loop["retrace_reasons"]) == 1
    assert loop["retrace_reasons"][0].startswith("function re-defined on every call")


def test_static_argument_cause_names_the_previous_value(jp: pytest.Pytester) -> None:
    # JAX's own explanation compares with its closest cached key (k=1 for k=3 too); the
    # recorder compares with the function's previous trace, on every supported JAX.
    jp.makepyfile(
        HEADER
        + """
@functools.partial(jax.jit, static_argnums=(0,))
def scale(k, x):
    return x * k

@jax.jit
def g(x):
    return x + 1

@pytest.mark.jaxperf
def test_static():
    for k in (1, 2, 3):
        scale(k, jnp.ones(3))
    scale(3, jnp.ones(4))

@pytest.mark.jaxperf
def test_config():
    g(jnp.ones(3))
    with jax.default_matmul_precision("highest"):
        g(jnp.ones(3))
"""
    )
    tests = _record(jp)
    (static,) = tests["test_static_argument_cause_names_the_previous_value.py::test_static"][
        "functions"
    ].values()
    assert static["traces"] == 4
    assert static["retrace_reasons"] == [
        "static argument k: 1 -> 2",
        "static argument k: 2 -> 3",
        "x: f32[3] -> f32[4]",
    ]
    (config,) = tests["test_static_argument_cause_names_the_previous_value.py::test_config"][
        "functions"
    ].values()
    assert config["retrace_reasons"] == ["config jax_default_matmul_precision: None -> highest"]


def test_same_named_functions_kept_apart(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        other="""
import jax

@jax.jit
def f(x):
    return x - 1
""",
    )
    jp.makepyfile(
        test_two=HEADER
        + """
import other

@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf
def test_two_fs():
    f(jnp.ones(3)); other.f(jnp.ones(3)); other.f(jnp.ones(4))
"""
    )
    rec = _record(jp)["test_two.py::test_two_fs"]
    lines = (jp.path / "test_two.py").read_text().splitlines()
    f_line = lines.index("@jax.jit") + 1
    other_line = (jp.path / "other.py").read_text().splitlines().index("@jax.jit") + 1
    assert {k: v["traces"] for k, v in rec["functions"].items()} == {
        f"f at test_two.py:{f_line}": 1,
        f"f at other.py:{other_line}": 2,
    }


SAME_NAMES = """
double = jax.jit(lambda x: x * 2.0)
halve = jax.jit(lambda x: x / 2.0)

class Scale:
    @functools.partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        return x * 3.0

class Shift:
    @functools.partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        return x + 1.0

def outer_a(x):
    @jax.jit
    def body(y):
        return y - 1.0
    return body(x)

def outer_b(x):
    @jax.jit
    def body(y):
        return y * y
    return body(x)

scale, shift = Scale(), Shift()

@pytest.mark.jaxperf
def test_all():
    x = jnp.ones(3)
    double(x); halve(x); scale(x); outer_a(x); outer_b(x)
    for n in SHAPES:
        shift(jnp.ones(n))
"""


def test_same_named_functions_of_one_file_survive_an_edit_above_them(jp: pytest.Pytester) -> None:
    def write(lines_above: int, shapes: tuple[int, ...]) -> None:
        jp.makepyfile(test_names=HEADER + "#\n" * lines_above + f"SHAPES = {shapes}\n" + SAME_NAMES)

    # Compile time is not this test's subject (the suite's own load moves it).
    args = ("--jaxperf", "--jaxperf-compile-floor=1000")
    write(0, (3,))
    jp.runpytest(*args, "--jaxperf-save").assert_outcomes(passed=1)
    path = jp.path / ".jaxperf" / "baseline.json"
    saved = read_json(path)
    functions = saved["tests"]["test_names.py::test_all"]["functions"]
    assert sorted(f["name"] for f in functions.values()) == [
        "<lambda>", "<lambda>", "Scale.__call__", "Shift.__call__",
        "outer_a.<locals>.body", "outer_b.<locals>.body",
    ]  # fmt: skip

    write(5, (3,))  # every function five lines further down
    result = jp.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])

    # A baseline saved before qualified names: "__call__" and "body", each twice in the file.
    for key in list(functions):
        fn = functions.pop(key)
        fn["name"] = fn["name"].rsplit(".", 1)[-1]
        functions[f"{fn['name']} at {fn['site']}"] = fn
    path.write_text(json.dumps(saved), encoding="utf-8")
    result = jp.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])

    write(8, (3, 4))  # and a real regression of one of them
    result = jp.runpytest(*args)
    result.assert_outcomes(failed=1)
    shift_line = (jp.path / "test_names.py").read_text().splitlines().index("class Shift:") + 2
    result.stdout.fnmatch_lines(
        lit(
            "jaxperf: test_names.py::test_all: 2 metric(s) over the baseline or a limit",
            f"  traces of Shift.__call__ (defined at test_names.py:{shift_line}): "
            "baseline 1 -> now 2 (+1, +100%)",
            "      cause: x: f32[3] -> f32[4]; fix: pad to a fixed size or a few buckets*",
        )
    )
    assert "new function" not in result.stdout.str()
    assert "no longer compiled" not in result.stdout.str()


def test_eager_helpers_in_their_own_bucket(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@pytest.mark.jaxperf
def test_eager():
    x = jnp.ones(4117)  # a shape no other test uses: JAX's helpers compile for it here
    jnp.sin(x) + 1
"""
    )
    rec = _record(jp)["test_eager_helpers_in_their_own_bucket.py::test_eager"]
    assert rec["functions"] == {}
    assert (rec["traces"], rec["compiles"]) == (0, 0)
    assert rec["eager"]["compiles"] >= 3  # broadcast_in_dim/convert_element_type, sin, add


def test_counts_independent_of_order_and_selection(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        shared="""
import jax

@jax.jit
def shared(x):
    return x * 3
"""
    )
    body = """
import jax.numpy as jnp
import pytest
from shared import shared

@pytest.mark.jaxperf
def test_{name}():
    shared(jnp.ones(3)); shared(jnp.ones(3))
"""
    jp.makepyfile(test_a=body.format(name="a"), test_b=body.format(name="b"))

    def counts(*args: str) -> dict:
        # Helper (eager) compiles are not isolated between tests, so they are left out.
        return {k: (v["traces"], v["compiles"]) for k, v in _record(jp, *args).items()}

    forward = counts("test_a.py", "test_b.py")
    backward = counts("test_b.py", "test_a.py")
    only_b = counts("-k", "test_b")
    assert forward["test_a.py::test_a"] == forward["test_b.py::test_b"] == (1, 1)
    assert backward == forward
    assert only_b == {"test_b.py::test_b": forward["test_b.py::test_b"]}


def test_setup_work_not_charged(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def g(x):
    return x * 2

@pytest.fixture
def warmed():
    g(jnp.ones(7)); g(jnp.ones(8))
    return jnp.ones(3)

@pytest.mark.jaxperf
def test_body(warmed):
    g(warmed)
"""
    )
    rec = _record(jp)["test_setup_work_not_charged.py::test_body"]
    (fn,) = rec["functions"].values()
    assert (fn["traces"], fn["compiles"]) == (1, 1)


def test_recording_selection(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def f(x):
    return x * 2

def test_plain():
    f(jnp.ones(2))

@pytest.mark.jaxperf
def test_marked():
    f(jnp.ones(2))

def test_fixture(jaxperf):
    f(jnp.ones(2))
    assert jaxperf.enabled
    assert jaxperf.snapshot().traces == 1
"""
    )
    assert set(_record(jp)) == {
        "test_recording_selection.py::test_marked",
        "test_recording_selection.py::test_fixture",
    }
    assert len(_record(jp, "--jaxperf-all")) == 3


def test_raising_test_leaves_recorder_clean(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def bad(x):
    if x.sum() > 0:
        return x
    return -x

@jax.jit
def good(x):
    return x + 1

@pytest.mark.jaxperf
def test_1_raises():
    bad(jnp.ones(3))

@pytest.mark.jaxperf
def test_2_after():
    good(jnp.ones(3))
"""
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(lit("*TracerBoolConversionError*"))
    tests = read_json(jp.path / "out.json")["tests"]
    after = tests["test_raising_test_leaves_recorder_clean.py::test_2_after"]
    assert [f["name"] for f in after["functions"].values()] == ["good"]
    assert after["traces"] == 1
    assert tests["test_raising_test_leaves_recorder_clean.py::test_1_raises"]["outcome"] == "failed"
    import jax

    assert jax.config.jax_explain_cache_misses is False


def test_listener_errors_never_reach_user_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    import jax
    import jax.numpy as jnp

    from pytest_jaxperf.measure.recorder import RECORDER, Scope

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("listener bug")

    for name in ("on_trace", "on_trace_time", "on_lowering", "on_compile"):
        monkeypatch.setattr(Scope, name, broken)
    RECORDER.isolate()
    with RECORDER.scope(tmp_path) as scope:  # type: ignore[arg-type]
        out = jax.jit(lambda x: x * 5)(jnp.ones(3))
    assert out.tolist() == [5.0, 5.0, 5.0]
    assert scope.listener_errors >= 4  # the trace, its duration, the lowering and the compile
    assert scope.functions == {}


@pytest.mark.parametrize("fallback", [False, True])
def test_isolation_forgets_user_functions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, fallback: bool
) -> None:
    import jax
    import jax.numpy as jnp

    from pytest_jaxperf.measure import recorder

    if fallback:  # private caches not as expected: everything is cleared instead

        def unexpected(keep: object, seen: object) -> int:
            raise AttributeError("no such cache")

        monkeypatch.setattr(recorder.hooks, "evict", unexpected)
    f = jax.jit(lambda x: x * 7)
    x = jnp.ones(5)
    f(x)
    recorder.RECORDER.isolate()
    with recorder.RECORDER.scope(tmp_path) as scope:  # type: ignore[arg-type]
        f(x)
        jnp.ones(5)  # a helper compiled above, for the same shape
    (fn,) = scope.functions.values()
    assert (fn.traces, fn.lowerings, fn.compiles) == (1, 1, 1)
    # JAX's helpers stay compiled, unless everything had to be cleared.
    assert (scope.eager.compiles > 0) is fallback


def test_listener_errors_are_shown_in_the_report(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_jaxperf.measure.recorder import Scope

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("listener bug")

    monkeypatch.setattr(Scope, "on_lowering", broken)
    jp.makepyfile(
        HEADER
        + """
@pytest.mark.jaxperf
def test_f():
    assert jax.jit(lambda x: x + 1)(jnp.ones(2)).tolist() == [2.0, 2.0]
"""
    )
    # The self-check sees the compiles go missing: allowed to go on, it says so.
    result = jp.runpytest("--jaxperf", "--jaxperf-allow-partial", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-jaxperf: the self-check failed on jax * (compiles: *",
            "recorder: * JAX event(s) could not be read; the counts*",
        ]
    )


def test_a_trace_that_starts_another_keeps_its_own_cpu_seconds(jp: pytest.Pytester) -> None:
    # `inner` is traced for the first time inside `outer`'s trace: two trace phases open at
    # once on one thread, each with its own start.
    jp.makepyfile(
        test_mod="""
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def inner(x):
    return jnp.sin(x) * 3

@jax.jit
def outer(x):
    return inner(x) + inner(x * 2)

@pytest.mark.jaxperf
def test_nested():
    outer(jnp.ones(5))
"""
    )
    functions = _record(jp)["test_mod.py::test_nested"]["functions"]
    by_name = {f["name"]: f for f in functions.values()}
    assert by_name["inner"]["traces"] == by_name["outer"]["traces"] == 1
    for name in ("inner", "outer"):
        assert by_name[name]["trace_cpu_s"] is not None, name
