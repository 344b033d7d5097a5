"""End to end: counts that hold on real code, and a plugin that says when it cannot count.

Wrapped jits, library wrappers, pmap and eager control flow, fixtures that warm up,
logging setups, files JAX does not take for user code, threads, and the start-up self-check.
"""

from __future__ import annotations

import pytest
from conftest import lit, read_json

from pytest_jaxperf.measure import _jaxhooks

pytestmark = pytest.mark.jax_internals

# jax 0.6 - 0.8 fire no event when an eager lax control-flow body is traced (see _jaxhooks).
EAGER_TRACES = _jaxhooks.eager_traces_counted()

HEADER = """
import functools
import jax
import jax.numpy as jnp
from jax import lax
import pytest
"""


def _run(pytester: pytest.Pytester, *args: str, ok: bool = True) -> dict:
    result = pytester.runpytest("--jaxperf", "--jaxperf-json=out.json", *args)
    if ok:
        assert result.ret == 0, result.stdout.str()
    return read_json(pytester.path / "out.json")["tests"]


def _counts(rec: dict) -> dict[str, tuple[int, int, int]]:
    return {
        fn["name"]: (fn["traces"], fn["lowerings"], fn["compiles"])
        for fn in rec["functions"].values()
    }


WRAPPED = (
    HEADER
    + """
def loss(w, x):
    return jnp.sum((w * x) ** 2)

def f(x):
    return jnp.sin(x) * 2

def norm(x, ord=2):
    return jnp.sum(jnp.abs(x) ** ord)

class Model:
    def apply(self, x):
        return x + 1

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper

@logged
def decorated(x):
    return x * 3

model = Model()
FUNCTIONS = {
    "value_and_grad": (jax.jit(jax.value_and_grad(loss)), "loss", (1.0, jnp.ones(3))),
    "grad": (jax.jit(jax.grad(loss)), "loss", (1.0, jnp.ones(3))),
    "vmap": (jax.jit(jax.vmap(f)), "f", (jnp.ones((2, 3)),)),
    "checkpoint": (jax.jit(jax.checkpoint(f)), "f", (jnp.ones(3),)),
    "partial": (jax.jit(functools.partial(norm, ord=3)), "norm", (jnp.ones(3),)),
    "jacfwd_partial": (jax.jit(jax.jacfwd(functools.partial(norm, ord=2))), "norm",
                       (jnp.ones(3),)),
    "method": (jax.jit(model.apply), "apply", (jnp.ones(3),)),
    "decorated": (jax.jit(decorated), "decorated", (jnp.ones(3),)),
}

@pytest.mark.jaxperf
@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
@pytest.mark.parametrize("round", [1, 2])
def test_call(kind, round):
    fn, name, args = FUNCTIONS[kind]
    fn(*args)
"""
)


def test_wrapped_jits_count_the_same_in_a_full_run_and_alone(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_wrapped=WRAPPED)
    full = _run(jp)
    alone = _run(jp, "-k", "2-")
    assert len(full) == 16 and len(alone) == 8
    for nodeid, rec in alone.items():
        kind = nodeid.split("-")[-1].rstrip("]")
        expected = {"value_and_grad": "loss", "grad": "loss", "vmap": "f", "checkpoint": "f",
                    "partial": "norm", "jacfwd_partial": "norm", "method": "Model.apply",
                    "decorated": "decorated"}[kind]  # fmt: skip
        # The user's function, once traced, lowered and compiled, in every test of both runs.
        assert _counts(rec) == {expected: (1, 1, 1)}, nodeid
        assert _counts(full[nodeid]) == {expected: (1, 1, 1)}, nodeid
        first = nodeid.replace("[2-", "[1-")
        assert _counts(full[first]) == {expected: (1, 1, 1)}, first
        (key,) = rec["functions"]
        assert key.startswith(f"{expected} at test_wrapped.py:"), key


LIBRARY = '''
"""A generic jit wrapper in the style of equinox's filter_jit."""
import functools
import jax

_jitted = {}

def _plain(fn):
    return fn

def _checked(fn):
    # What jaxtyping's import hook puts around every function of an instrumented package
    # (equinox's own test suite): the rename below then lands on this wrapper.
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        return fn(*args, **kwargs)
    return checked

def _cached(name):
    if name not in _jitted:
        @DECORATOR
        def fun_wrapped(dynamic, static):
            (fn,) = static
            return fn(*dynamic)
        fun_wrapped.__name__ = name
        _jitted[name] = TRANSFORM(fun_wrapped, 1)
    return _jitted[name]

class filter_jit:
    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        return _cached(name)(args, (self.fn,))
'''


@pytest.mark.parametrize(
    ("decorator", "transform"),
    [("_plain", "jax.jit"), ("_checked", "jax.jit"), ("_checked", "jax.pmap")],
)
def test_library_wrapper_is_identified_by_the_users_function(
    jp: pytest.Pytester, decorator: str, transform: str
) -> None:
    call = "jax.jit(fun_wrapped, static_argnums=1)"
    if transform == "jax.pmap":
        call = "jax.pmap(fun_wrapped, static_broadcasted_argnums=1)"
    library = LIBRARY.replace("DECORATOR", decorator).replace("TRANSFORM(fun_wrapped, 1)", call)
    jp.makepyfile(mylib=library)
    jp.makepyfile(
        test_lib=HEADER
        + """
from mylib import filter_jit

@filter_jit
def step(x):
    return x + 1

@filter_jit
def update(x):
    return x * 2

@pytest.mark.jaxperf(max_traces={"step": 1})
def test_both():
    step(jnp.ones((1, 3))); update(jnp.ones((1, 3))); update(jnp.ones((1, 4)))
"""
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
    assert result.ret == 0, result.stdout.str()
    rec = read_json(jp.path / "out.json")["tests"]["test_lib.py::test_both"]
    sites = {fn["name"]: fn["site"] for fn in rec["functions"].values()}
    assert _counts(rec) == {"step": (1, 1, 1), "update": (2, 2, 2)}
    # Defined in the test file, not in the library's fun_wrapped.
    assert sites["step"].startswith("test_lib.py:") and sites["update"].startswith("test_lib.py:")


def test_library_wrapper_of_a_module_instance_in_any_order(jp: pytest.Pytester) -> None:
    # A callable module instance (equinox `filter_jit(mlp)`) has no __name__: the wrapper
    # is renamed after its class. Its lowering must not be charged to a function of an
    # earlier test that went through the same wrapper.
    jp.makepyfile(
        mylib=LIBRARY.replace("DECORATOR", "_checked").replace(
            "TRANSFORM(fun_wrapped, 1)", "jax.jit(fun_wrapped, static_argnums=1)"
        )
    )
    jp.makepyfile(
        test_mod=HEADER
        + """
from mylib import filter_jit

class Model:
    @jax.named_scope("model")  # as equinox's modules: a JAX wrapper named after __call__
    def __call__(self, x):
        return x * 3

def test_1():
    @filter_jit
    def loss(x):
        return (x ** 2).sum()
    loss(jnp.ones(3))

def test_2():
    filter_jit(Model())(jnp.ones(3))
"""
    )
    full = jp.runpytest("--jaxperf", "--jaxperf-all", "--jaxperf-json=full.json")
    assert full.ret == 0, full.stdout.str()
    alone = jp.runpytest("--jaxperf", "--jaxperf-all", "-k", "test_2", "--jaxperf-json=k.json")
    assert alone.ret == 0, alone.stdout.str()
    for name in ("full.json", "k.json"):
        rec = read_json(jp.path / name)["tests"]["test_mod.py::test_2"]
        assert _counts(rec) == {"Model": (1, 1, 1)}, (name, rec["functions"])


def test_traces_counted_whatever_the_logging_setup(jp: pytest.Pytester) -> None:
    jp.makeconftest(
        """
import logging, logging.config
logging.config.dictConfig({"version": 1, "root": {"level": "ERROR"}})
logging.disable(logging.CRITICAL)
"""
    )
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf(max_traces=1)
def test_retraces():
    for n in range(1, 5):
        f(jnp.ones(n))
"""
    )
    # In a subprocess: the logging setup must not leak into this process.
    result = jp.runpytest_subprocess("--jaxperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*traces of all functions: 4 > limit 1*", "*x: f32[[]1] -> f32[[]2]*"]
    )


def test_library_in_a_path_jax_excludes_is_still_counted(jp: pytest.Pytester) -> None:
    # In python:3.x Docker images and conda, site-packages lies under the stdlib directory,
    # which JAX does not take for user code; register_exclusion puts a path in that set.
    pkg = jp.mkpydir("installedlib")
    (pkg / "ops.py").write_text(
        "import jax\n\n@jax.jit\ndef scale(x):\n    return x * 2\n", encoding="utf-8"
    )
    jp.makeconftest(
        f"""
from jax._src import source_info_util
source_info_util.register_exclusion({str(pkg)!r})
"""
    )
    jp.makepyfile(
        HEADER
        + """
from installedlib.ops import scale

@pytest.mark.jaxperf(max_traces=1)
def test_scale():
    scale(jnp.ones(3)); scale(jnp.ones(4))
"""
    )
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scale at installedlib/ops.py:3*", "*x: f32[[]3] -> f32[[]4]*"])


EAGER = (
    HEADER
    + """
def body(c, x):
    return c + x, c

def cond_fn(c):
    return c < 10

def body_fn(c):
    return c + 1

def loop_body(i, c):
    return c + i

def then_fn(x):
    return x + 1

def else_fn(x):
    return x - 1

def row(x):
    return x * 2

@pytest.mark.jaxperf(max_compiles=1)
def test_scan():
    for n in (3, 4):
        lax.scan(body, jnp.zeros(n), jnp.ones((2, n)))

@pytest.mark.jaxperf(max_compiles=1)
def test_while():
    for n in (3, 4):
        lax.while_loop(lambda c: c.sum() < 10, body_fn, jnp.zeros(n))

@pytest.mark.jaxperf(max_compiles=1)
def test_fori():
    for n in (3, 4):
        lax.fori_loop(0, 3, loop_body, jnp.zeros(n))

@pytest.mark.jaxperf(max_compiles=1)
def test_cond():
    for n in (3, 4):
        lax.cond(True, then_fn, else_fn, jnp.zeros(n))

@pytest.mark.jaxperf(max_compiles=1)
def test_map():
    for n in (3, 4):
        lax.map(row, jnp.ones((2, n)))
"""
)


def test_eager_control_flow_compiles_are_charged_to_the_users_body(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_eager=EAGER)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
    tests = read_json(jp.path / "out.json")["tests"]
    charged = {
        nodeid.split("::")[1]: {
            fn["name"]: fn["compiles"] for fn in rec["functions"].values() if fn["compiles"]
        }
        for nodeid, rec in tests.items()
    }
    expected = {
        "test_scan": {"body": 2},
        "test_while": {"test_while.<locals>.<lambda>": 2},
        "test_fori": {"loop_body": 2},
        "test_cond": {"else_fn": 2},
        "test_map": {"row": 2},
    }
    if not EAGER_TRACES:
        # lax.map's body is JAX's closure around `row`: only its trace names `row`.
        expected["test_map"] = {}
        # Compiles alone are charged through JAX's DebugInfo, which has no __qualname__.
        expected["test_while"] = {"<lambda>": 2}
    result.assert_outcomes(failed=5 if EAGER_TRACES else 4, passed=0 if EAGER_TRACES else 1)
    assert charged == expected
    traced = {
        nodeid.split("::")[1]: sum(fn["traces"] for fn in rec["functions"].values())
        for nodeid, rec in tests.items()
    }
    # Two shapes each: while_loop traces its cond and body, cond both branches.
    bodies = {"test_scan": 1, "test_while": 2, "test_fori": 1, "test_cond": 2, "test_map": 1}
    assert traced == {name: 2 * n if EAGER_TRACES else 0 for name, n in bodies.items()}


PMAP = (
    HEADER
    + """
def kernel(x):
    return x * 2

def block(x):
    return x + 1

@pytest.mark.jaxperf(max_compiles=1)
def test_pmap():
    p = jax.pmap(kernel)
    for n in (1, 2, 3, 4):
        p(jnp.ones((2, n)))

@pytest.mark.jaxperf(max_compiles=1)
def test_shard_map():
    mesh = jax.make_mesh((2,), ("i",), axis_types=(jax.sharding.AxisType.Explicit,))
    spec = jax.sharding.PartitionSpec("i")
    f = jax.jit(jax.shard_map(block, mesh=mesh, in_specs=spec, out_specs=spec))
    for n in (2, 4):
        f(jax.device_put(jnp.ones(n), jax.sharding.NamedSharding(mesh, spec)))
"""
)


def test_pmap_and_shard_map_compiles_are_charged_and_gated(jp: pytest.Pytester) -> None:
    jp.makeconftest('import jax\njax.config.update("jax_num_cpu_devices", 2)\n')
    jp.makepyfile(test_devices=PMAP)
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=out.json")
    result.assert_outcomes(failed=2)
    tests = read_json(jp.path / "out.json")["tests"]
    assert _counts(tests["test_devices.py::test_pmap"])["kernel"] == (4, 4, 4)
    assert _counts(tests["test_devices.py::test_shard_map"])["block"] == (2, 2, 2)
    result.stdout.fnmatch_lines(
        lit(
            "*compiles of all functions: 4 > limit 1",
            "*cause: kernel: x: shape changed on 3 of 4 traces: f32[2,1], f32[2,2], f32[2,3]*",
        )
    )


FIXTURES = (
    HEADER
    + """
@jax.jit
def step(x):
    return x * 2

@pytest.fixture
def warm():
    step(jnp.ones(3))
    return jnp.ones(3)

@pytest.fixture(scope="module")
def warm_module():
    step(jnp.ones(5))
    return jnp.ones(5)

@pytest.fixture(scope="session")
def warm_session():
    step(jnp.ones(7))
    return jnp.ones(7)

def test_a_plain_warms_nothing_for_others():
    step(jnp.ones(5)); step(jnp.ones(7))

@pytest.mark.parametrize("which", ["warm", "warm_module", "warm_session"])
def test_warm_fixture_is_not_undone(jaxperf, request, which):
    x = request.getfixturevalue(which)
    with jaxperf.no_recompile():
        step(x)

@pytest.mark.jaxperf
def test_z_cold():
    step(jnp.ones(9))
"""
)


def test_fixture_warm_up_is_kept_and_counts_do_not_depend_on_order(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_fixtures=FIXTURES)
    full = _run(jp)
    cold = _run(jp, "-k", "cold")
    parallel = _run(jp, "-n", "2")
    key = "test_fixtures.py::test_z_cold"
    # What test bodies compiled before is forgotten; the fixtures' warm-ups are kept.
    assert _counts(full[key]) == _counts(cold[key]) == _counts(parallel[key]) == {"step": (1, 1, 1)}
    for which in ("warm", "warm_module", "warm_session"):
        nodeid = f"test_fixtures.py::test_warm_fixture_is_not_undone[{which}]"
        assert _counts(full[nodeid]) == _counts(parallel[nodeid]) == {}, nodeid


def test_staging_before_the_call_is_not_a_redefinition(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@pytest.mark.jaxperf
@pytest.mark.parametrize("stage", ["make_jaxpr", "eval_shape", "lower"])
def test_stage_then_call(stage):
    f = jax.jit(lambda x: x * 2)
    x = jnp.ones(3)
    {"make_jaxpr": lambda: jax.make_jaxpr(f)(x), "eval_shape": lambda: jax.eval_shape(f, x),
     "lower": lambda: f.lower(x)}[stage]()
    f(x)
"""
    )
    tests = _run(jp)
    assert len(tests) == 3
    for nodeid, rec in tests.items():
        (fn,) = rec["functions"].values()
        assert fn["traces"] == 1 and fn["compiles"] == 1, nodeid
        assert fn["retrace_reasons"] == [], nodeid


def test_thread_left_by_an_earlier_test_does_not_charge_a_later_one(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
import threading

go = threading.Event()
done = threading.Event()

@jax.jit
def background(x):
    return x + 1

def work():
    go.wait(30)
    background(jnp.ones(9))
    done.set()

@pytest.mark.jaxperf
def test_1_starts_thread():
    threading.Thread(target=work, daemon=True).start()

@pytest.mark.jaxperf
def test_2_while_it_compiles():
    go.set()
    assert done.wait(30)

@pytest.mark.jaxperf
def test_3_own_thread_is_charged():
    t = threading.Thread(target=lambda: background(jnp.ones(11)))
    t.start(); t.join()
"""
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "-rA")
    assert result.ret == 0, result.stdout.str()
    tests = read_json(jp.path / "out.json")["tests"]
    assert _counts(tests["test_thread_left_by_an_earlier_test_does_not_charge_a_later_one.py::"
                         "test_2_while_it_compiles"]) == {}  # fmt: skip
    assert _counts(tests["test_thread_left_by_an_earlier_test_does_not_charge_a_later_one.py::"
                         "test_3_own_thread_is_charged"]) == {"background": (1, 1, 1)}  # fmt: skip
    result.stdout.fnmatch_lines(["not charged: * JAX event(s) on threads started before this test"])


def test_every_section_names_its_sources(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@pytest.mark.jaxperf
def test_f():
    jax.jit(lambda x: x + 1)(jnp.ones(2))
"""
    )
    result = jp.runpytest("--jaxperf", "-rA")
    result.assert_outcomes(passed=1)
    eager = (
        ""
        if EAGER_TRACES
        else (" (traces of eager lax control-flow bodies not counted on this jax)")
    )
    result.stdout.fnmatch_lines(
        [
            f"sources: traces and causes from JAX's trace cache{eager}; lowerings, compiles and "
            "seconds from jax.monitoring; isolation per function"
        ]  # fmt: skip
    )


SIMPLE = (
    HEADER
    + """
@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf(max_traces=1)
def test_f():
    f(jnp.ones(3)); f(jnp.ones(4))
"""
)


def test_missing_hook_refuses_to_run(jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_jaxperf.measure import recorder

    monkeypatch.setattr(recorder.hooks, "missing", lambda: ["jax._src.util.test_event_listener"])
    monkeypatch.setattr(recorder.RECORDER, "_traces", None)  # as if it had never been made
    jp.makepyfile(SIMPLE)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        [
            "*pytest-jaxperf: jax * is not supported, its internals moved (traces: missing "
            "jax._src.util.test_event_listener); supported: jax *"
        ]  # fmt: skip
    )
    result.assert_outcomes()  # no test ran, none was reported as passing


def test_hook_that_jax_does_not_call_refuses_to_run(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_jaxperf.measure import recorder

    # The hook is there, but nothing arrives through it (a JAX that traces elsewhere).
    monkeypatch.setattr(recorder.Scope, "on_trace", lambda *args, **kwargs: None)
    jp.makepyfile(SIMPLE)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        [
            "*the self-check failed on jax * (traces: a probe function's trace was not counted "
            "under its name (traces counted: 0/0/0))*"
        ]
    )


def test_allow_partial_reports_not_measured_and_does_not_gate(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_jaxperf.measure import recorder

    monkeypatch.setattr(recorder.Scope, "on_trace", lambda *args, **kwargs: None)
    jp.makepyfile(SIMPLE)
    result = jp.runpytest("--jaxperf", "--jaxperf-allow-partial", "--jaxperf-json=out.json", "-rA")
    # Traces are not measured, so max_traces cannot fail; compiles still count.
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*these metrics are reported as not measured and not gated: traces*",
            "*traces not measured (a probe function's trace was not counted*): not gated*",
            "*traces NOT measured*",
        ]  # fmt: skip
    )
    data = read_json(jp.path / "out.json")
    assert set(data["environment"]["not_measured"]) == {"traces"}
    (fn,) = data["tests"]["test_allow_partial_reports_not_measured_and_does_not_gate.py::test_f"][
        "functions"
    ].values()
    assert fn["compiles"] == 2


def test_isolation_that_does_not_work_leaves_counts_ungated(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_jaxperf.measure import recorder

    # Nothing is ever forgotten: counts would depend on what ran before.
    monkeypatch.setattr(recorder.Recorder, "isolate", lambda self: None)
    jp.makepyfile(SIMPLE)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        [
            "*(compiles: an evicted probe function was not compiled again; "
            "traces: an evicted probe function was not compiled again)*"
        ]  # fmt: skip
    )
