"""Every failure says where and why: the source lines a grown program's equations come from
(`FunctionRecord.eqn_sources`), and the named pattern behind it with its fix (`diagnose`),
end to end on minimal copies of each pattern and on hand-built records."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import _jaxperf_data as data
import pytest
from _records import fn, rec
from conftest import read_json

from pytest_jaxperf import diagnose, model
from pytest_jaxperf.compare import Breach, Gating, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.model import Counts, FunctionRecord
from pytest_jaxperf.report.wording import breach_lines
from pytest_jaxperf.storage.store import dumps, load, save

# `kalman` adds N copies of the loop body (sin, mul, add: 3 equations each) at one line;
# `total` reduces an array of M elements with Python's builtin sum (3 equations each).
PATTERNS = """
import jax
import jax.numpy as jnp
import pytest

N, M = {n}, {m}

@jax.jit
def kalman(x):
    y = x * 2.0
    for i in range(N):
        y = y + jnp.sin(y) * i
    return y

@jax.jit
def total(x):
    return sum(x) * 2.0

@pytest.mark.jaxperf(compile_rtol=1000)
def test_loop():
    kalman(jnp.ones(3))

@pytest.mark.jaxperf(compile_rtol=1000)
def test_sum():
    total(jnp.ones(M))

@pytest.mark.jaxperf(compile_rtol=1000)
def test_traced_only():
    jax.eval_shape(kalman, jax.ShapeDtypeStruct((3,), jnp.float32))
"""
KALMAN = "kalman at test_mod.py:7"


def _module(jp: pytest.Pytester, n: int, m: int) -> None:
    jp.makepyfile(test_mod=PATTERNS.format(n=n, m=m))


def _before_short_summary(result: pytest.RunResult) -> str:
    return result.stdout.str().split("short test summary info")[0]


@pytest.mark.jax_internals
def test_a_grown_program_names_its_lines_and_the_pattern(jp: pytest.Pytester) -> None:
    _module(jp, 3, 4)
    assert jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-json=base.json").ret == 0
    # The committed baseline keeps no source lines (they move with every edit above them, and
    # no gate reads them); the run file keeps them.
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")["tests"]
    assert "eqn_sources" not in saved["test_mod.py::test_loop"]["functions"][KALMAN]
    base = read_json(jp.path / "base.json")["tests"]
    # Line 9 (`y = x * 2.0`): one equation; line 11, the loop body: 3 per iteration.
    assert base["test_mod.py::test_loop"]["functions"][KALMAN]["eqn_sources"] == {
        "test_mod.py:9": [1, 1, 0],
        "test_mod.py:11": [9, 3, 0],
    }
    total = base["test_mod.py::test_sum"]["functions"]["total at test_mod.py:14"]
    # Builtin sum over 4 elements: how many equations indexing takes varies with the JAX
    # release (13 on 0.10.2, 6 on 0.12); every one of them from line 16, marked builtin sum.
    ((line, (count, kinds, builtin_sum)),) = total["eqn_sources"].items()
    assert (line, builtin_sum) == ("test_mod.py:16", 1) and count == total["jaxpr_eqns"]

    _module(jp, 300, 400)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "--jaxperf-markdown=out.md")
    assert result.ret == 1
    out = _before_short_summary(result)
    loop = [
        "  jaxpr equations of kalman (defined at test_mod.py:7): baseline 10 -> now 901 "
        "(+891, x90) [static_rtol 0.1]",
        "      from test_mod.py:11: 900 of 901 equations (100%)",
        "      from test_mod.py:9: 1 of 901 equations (0%)",
        "      cause: unrolled Python loop at test_mod.py:11 (900 of 901 equations, copies of "
        "3 operation(s)); fix: lax.scan or lax.fori_loop (one loop body in the program)",
    ]
    assert "\n".join(loop) in out, out
    tests = read_json(jp.path / "out.json")["tests"]
    n = tests["test_mod.py::test_sum"]["functions"]["total at test_mod.py:14"]["jaxpr_eqns"]
    builtin_sum = [
        f"      from test_mod.py:16: {n:,} of {n:,} equations (100%)",
        f"      cause: builtin sum over an array at test_mod.py:16 ({n:,} of {n:,} equations: "
        "Python's sum adds element by element); fix: jnp.sum(x) (or x.sum()), one equation "
        "at any size",
    ]
    assert "\n".join(builtin_sum) in out, out
    # The trace-time gate of a test that only traced says it as well, once.
    traced = (
        "  traced jaxpr equations of kalman (defined at test_mod.py:7): baseline 10 -> now "
        "901 (+891, x90) [static_rtol 0.1]\n"
        "      from test_mod.py:11: 900 of 901 equations (100%)"
    )
    assert traced in out, out
    assert out.count("cause: unrolled Python loop at test_mod.py:11") == 2, out
    # The markdown report describes the failures with the same lines.
    markdown = (jp.path / "out.md").read_text()
    assert loop[1].strip() in markdown and builtin_sum[1].strip() in markdown
    # The run file keeps the lines: `jaxperf compare` gives the same verdict, the same words.
    run = read_json(jp.path / "out.json")["tests"]["test_mod.py::test_loop"]
    assert run["functions"][KALMAN]["eqn_sources"] == {
        "test_mod.py:9": [1, 1, 0],
        "test_mod.py:11": [900, 3, 0],
    }
    compared = jp.run(
        sys.executable, "-m", "pytest_jaxperf", "compare", ".jaxperf/baseline.json", "out.json"
    )
    assert compared.ret == 1
    assert loop[3].strip() in compared.stdout.str(), compared.stdout.str()
    # Against an earlier run file, which keeps its lines, each says what it was.
    against_run = jp.run(sys.executable, "-m", "pytest_jaxperf", "compare", "base.json", "out.json")
    assert "from test_mod.py:11: 900 of 901 equations (100%; was 9)" in against_run.stdout.str()
    assert f"from test_mod.py:16: {n:,} of {n:,} equations (100%; was {count})" in (
        against_run.stdout.str()
    )


@pytest.mark.jax_internals
def test_a_limit_breach_names_the_lines_too(jp: pytest.Pytester) -> None:
    _module(jp, 300, 4)
    jp.makepyfile(
        test_limit="from test_mod import kalman\nimport jax.numpy as jnp, pytest\n\n"
        "@pytest.mark.jaxperf(max_jaxpr_eqns=100, compile_rtol=1000)\n"
        "def test_limited():\n    kalman(jnp.ones(3))\n"
    )
    result = jp.runpytest("--jaxperf", "test_limit.py")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "  jaxpr equations of all functions: 901 > limit 100",
        "      from test_mod.py:11: 900 of 901 equations (100%)",
        "      from test_mod.py:9: 1 of 901 equations (0%)",
        "      cause: unrolled Python loop at test_mod.py:11 *",
    ])  # fmt: skip


# `step` jitted; with EAGER set, run op by op: each operation compiles a program of its own
# per shape (the eager compile storm), and the function is gone from the jitted ones.
STORM = """
import os
import jax
import jax.numpy as jnp
import pytest

def step(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + jnp.cos(x))

if not os.environ.get("EAGER"):
    step = jax.jit(step)

@pytest.mark.jaxperf
def test_steps():
    for n in (3, 4, 5):
        step(jnp.ones(n))
"""


@pytest.mark.jax_internals
def test_an_eager_compile_storm_is_named(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_storm=STORM)
    # Each run in a process of its own: JAX's helpers compiled by earlier tests of this one
    # would not be compiled again (and not counted).
    assert jp.runpytest_subprocess("--jaxperf", "--jaxperf-save").ret == 0
    monkeypatch.setenv("EAGER", "1")
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=out.json")
    assert result.ret == 0
    eager = read_json(jp.path / "out.json")["tests"]["test_storm.py::test_steps"]["eager"]
    # sin, mul, cos, add and tanh, one program each per shape, and jnp.ones: 16 on jax
    # 0.10.2 (how many JAX's own helpers take varies with the release).
    compiles = eager["compiles"]
    assert compiles >= diagnose.STORM_COMPILES
    result.stdout.fnmatch_lines([
        "function gone: test_storm.py::test_steps: step at test_storm.py:6 no longer traced *",
        f"diagnosis: test_storm.py::test_steps: eager op-by-op compile storm: {compiles} "
        "compiles of JAX's own operations outside any jit (baseline *); fix: jax.jit the "
        "function that runs them, so that they compile as one program",
    ])  # fmt: skip


# -- on hand-built records -----------------------------------------------------------------


def _sized(sources: dict[str, list[int]], eqns: int) -> FunctionRecord:
    f = fn("kalman", "mylib/kalman.py:17")
    f.jaxpr_eqns = f.trace_eqns = eqns
    f.eqn_sources = sources
    return f


def test_where_lines_and_the_unrolled_loop_against_the_baseline() -> None:
    before = _sized({"mylib/kalman.py:20": [60, 6, 0], "mylib/kalman.py:24": [12, 3, 0]}, 72)
    now = _sized({"mylib/kalman.py:24": [33_500, 3, 0], "mylib/kalman.py:20": [499, 6, 0]}, 33_999)
    where, found = diagnose.explain_size(now, rec(now), rec(before), {now.key: before}, True)
    assert where == [
        "mylib/kalman.py:24: 33,500 of 33,999 equations (99%; was 12)",
        "mylib/kalman.py:20: 499 of 33,999 equations (1%; was 60)",
    ]
    assert found == [
        "unrolled Python loop at mylib/kalman.py:24 (33,500 of 33,999 equations, copies of 3 "
        "operation(s)); fix: lax.scan or lax.fori_loop (one loop body in the program)"
    ]


def test_a_line_the_baseline_did_not_keep() -> None:
    kept = {f"a.py:{i}": [10, 1, 0] for i in range(model.MAX_SOURCE_LINES)}
    before = _sized(kept, 200)
    now = _sized({"a.py:99": [500, 2, 0]}, 500)
    where, _ = diagnose.explain_size(now, rec(now), rec(before), {now.key: before}, True)
    # Its baseline top lines were full: the line made at most as many as the least of them.
    assert where == ["a.py:99: 500 of 500 equations (100%; was at most 10)"]
    complete = _sized({"a.py:1": [200, 1, 0]}, 200)
    where, _ = diagnose.explain_size(now, rec(now), rec(complete), {now.key: complete}, True)
    assert where == ["a.py:99: 500 of 500 equations (100%; was 0)"]


@pytest.mark.parametrize(
    ("count", "kinds", "total"),
    [
        (49, 1, 49),  # too few equations to be a loop
        (300, 40, 300),  # one big call of many distinct operations (a special function)
        (300, 3, 700),  # less than half of the program (the rest: many distinct operations)
    ],
)
def test_not_an_unrolled_loop(count: int, kinds: int, total: int) -> None:
    now = _sized({"a.py:5": [count, kinds, 0], "a.py:6": [total - count, 100, 0]}, total)
    _, found = diagnose.explain_size(now, rec(now), None, {}, False)
    assert found == []


def test_no_lines_recorded_on_one_side_is_unknown_never_zero() -> None:
    now = _sized({}, 500)
    assert diagnose.explain_size(now, rec(now), None, {}, False) == ([], [])
    assert diagnose.sources([now]) is None


def test_compile_storm_needs_many_compiles_and_more_than_the_baseline() -> None:
    record, base = rec(), rec()
    record.eager = Counts(compiles=diagnose.STORM_COMPILES - 1)
    assert diagnose.compile_storm(record, None) is None
    record.eager = Counts(compiles=30)
    # No baseline entry (a first save): how many helpers a test compiles follows what earlier
    # tests of the process did; a storm is named as a change only.
    assert diagnose.compile_storm(record, None) is None
    base.eager = Counts(compiles=30)
    assert diagnose.compile_storm(record, base) is None
    base.eager = Counts(compiles=15)  # twice as many: not yet
    assert diagnose.compile_storm(record, base) is None
    base.eager = Counts(compiles=2)
    assert diagnose.compile_storm(record, base) == (
        "eager op-by-op compile storm: 30 compiles of JAX's own operations outside any jit "
        "(baseline 2); fix: jax.jit the function that runs them, so that they compile as one "
        "program"
    )


def test_evaluate_puts_the_lines_on_the_breach_and_they_survive_json() -> None:
    before = _sized({"m.py:3": [9, 3, 0], "m.py:2": [1, 1, 0]}, 10)
    now = _sized({"m.py:3": [900, 3, 0], "m.py:2": [1, 1, 0]}, 901)
    verdict = evaluate(rec(now), rec(before), MarkerLimits(), Gating(Tolerances()))
    (breach,) = [b for b in verdict.breaches if b.metric == "jaxpr equations"]
    assert breach.where == (
        "m.py:3: 900 of 901 equations (100%; was 9)",
        "m.py:2: 1 of 901 equations (0%; was 1)",
    )
    assert breach.reasons[-1].startswith("unrolled Python loop at m.py:3 (900 of 901 ")
    assert Breach.from_json(json.loads(json.dumps(breach.to_json()))) == breach
    assert breach_lines(breach)[1:3] == [
        "    from m.py:3: 900 of 901 equations (100%; was 9)",
        "    from m.py:2: 1 of 901 equations (0%; was 1)",
    ]
    old = {k: v for k, v in breach.to_json().items() if k != "where"}
    assert Breach.from_json(old) == dataclasses.replace(breach, where=())


def test_source_lines_round_trip_by_every_reader(tmp_path: Path) -> None:
    sourced = _sized({"m.py:3": [900, 3, 0], "": [2, 1, 0]}, 902)
    plain = fn("g", "m.py:9")
    run = model.RunRecord(tests={"t::a": rec(sourced, plain), "t::b": rec(plain)})
    path = tmp_path / "run.json"
    save(path, run)
    text = path.read_text()
    assert text == dumps(run)
    assert json.loads(text) == model.run_to_json(run)  # the template writer's text is the JSON
    for consume in (True, False):  # the fast path and the careful one
        loaded = model.run_from_json(json.loads(text), consume=consume)
        assert loaded.tests["t::a"].functions[sourced.key].eqn_sources == sourced.eqn_sources
        assert loaded.tests["t::a"].functions[plain.key].eqn_sources == {}
        assert loaded.tests["t::b"].functions[plain.key].eqn_sources == {}
    assert load(path).tests["t::a"].functions[sourced.key].eqn_sources == sourced.eqn_sources


@pytest.mark.parametrize("bad", [{"m.py:3": [1, 2]}, {"m.py:3": [1, -2, 0]}, ["m.py:3"]])
def test_a_wrong_source_line_is_named(bad: object) -> None:
    f = model.function_to_json(fn("g", "m.py:9"))
    data = {"schema": model.SCHEMA, "tests": {"t": {**model.recorded_test_to_json(rec())}}}
    data["tests"]["t"]["functions"] = {"g": {**f, "eqn_sources": bad}}
    with pytest.raises(model.FormatError, match=r"functions\['g'\]\.eqn_sources: expected"):
        model.run_from_json(data, consume=True)


# -- what grows a program besides its equations -------------------------------------------

# The example's `unrolled` trap, minimal: Newton steps in a fori_loop, fully unrolled with
# UNROLL set (the same jaxpr: one scan equation; the lowered program a copy per step).
UNROLLED = """
import os
import jax
import jax.numpy as jnp
from jax import lax
import pytest

@jax.jit
def quantile(p):
    def newton(_, z):
        return z - (jnp.tanh(z) - p) / (1.0 - jnp.tanh(z) ** 2)

    unroll = True if os.environ.get("UNROLL") else 1
    z = lax.fori_loop(0, 40, newton, jnp.zeros_like(p), unroll=unroll)
    return 2.0 * z

@pytest.mark.jaxperf(compile_rtol=1000)
def test_quantile():
    quantile(jnp.full(3, 0.3))
"""


@pytest.mark.jax_internals
def test_an_unrolled_fori_loop_is_named_with_its_line(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_unroll=UNROLLED)
    assert (
        jp.runpytest_subprocess("--jaxperf", "--jaxperf-save", "--jaxperf-json=base.json").ret == 0
    )
    monkeypatch.setenv("UNROLL", "1")
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=out.json")
    assert result.ret == 1
    line = (
        "      cause: unrolled fori_loop/scan at test_unroll.py:13: unroll= copies its body into "
        "the program per step; fix: drop unroll= (or a small factor)"
    )
    # The jaxpr keeps one loop body: its equations did not grow, its lowered program did.
    result.stdout.fnmatch_lines([
        "  StableHLO ops of quantile (defined at test_unroll.py:7): baseline * -> now *",
        line,
    ])  # fmt: skip
    out = _before_short_summary(result)
    assert out.count("unrolled fori_loop/scan at") == 1, out  # said once, however many sizes grew
    assert "jaxpr equations of quantile" not in out, out
    fns = read_json(jp.path / "out.json")["tests"]["test_unroll.py::test_quantile"]["functions"]
    sources = fns["quantile at test_unroll.py:7"]["eqn_sources"]
    assert sources["test_unroll.py:13"][2] == model.SOURCE_UNROLLED
    # Against the earlier run file, whose line was not unrolled: the same words.
    compared = jp.run(sys.executable, "-m", "pytest_jaxperf", "compare", "base.json", "out.json")
    assert line.strip() in compared.stdout.str(), compared.stdout.str()
    # Unrolled on both sides: not what changed, not named.
    again = jp.run(sys.executable, "-m", "pytest_jaxperf", "compare", "out.json", "out.json")
    assert "unrolled fori_loop/scan at" not in again.stdout.str(), again.stdout.str()


# A weight matrix closed over by a jitted function: embedded in its program as a constant,
# of 16 x 16 float32 (1 KiB), or 600 x 600 with BIG set (1,406 KiB).
CONSTANT = """
import os
import numpy as np
import jax
import jax.numpy as jnp
import pytest

N = 600 if os.environ.get("BIG") else 16
W = np.ones((N, N), np.float32)

@jax.jit
def project(x):
    return jnp.tanh(x @ W)

@pytest.mark.jaxperf
def test_project():
    project(jnp.ones((2, N)))

@pytest.mark.jaxperf(max_compile_time=1e-9)
def test_project_limited():
    project(jnp.ones((2, N)))
"""
CONSTANT_LINE = (
    "closed-over constant: project embeds 1.4 MiB of arrays in its program (used at "
    "test_const.py:12); fix: pass the array as an argument of the jitted function"
)


@pytest.mark.jax_internals
def test_a_closed_over_constant_is_named(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_const=CONSTANT)
    # 1 KiB: no diagnosis (the limit of 1 ns is breached by any compile).
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save", "--jaxperf-json=base.json")
    assert "closed-over constant" not in result.stdout.str()
    fns = read_json(jp.path / "base.json")["tests"]["test_const.py::test_project"]["functions"]
    assert fns["project at test_const.py:10"]["eqn_sources"]["test_const.py:12"][2] == (
        model.SOURCE_CONST_KIB * 1
    )
    monkeypatch.setenv("BIG", "1")
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=out.json")
    # A breach of compile seconds names it as its cause, besides the functions that grew.
    result.stdout.fnmatch_lines([
        "  compile time of all functions: * > limit 0.000 s*", f"      cause: {CONSTANT_LINE}",
    ])  # fmt: skip
    limited = _section(result.stdout.str(), "test_const.py::test_project_limited")
    assert limited.count("closed-over constant") == 1, limited
    fns = read_json(jp.path / "out.json")["tests"]["test_const.py::test_project"]["functions"]
    assert fns["project at test_const.py:10"]["eqn_sources"]["test_const.py:12"][2] == (
        model.SOURCE_CONST_KIB * 1406
    )
    # Against the run file, whose lines say how big it was: where no gate failed the test
    # (jax 0.10, 0.12: its equations and ops unchanged), a diagnosis of the test; where XLA
    # made more ops of it (jax 0.6: optimized HLO ops 5 -> 7), the cause of that breach.
    compared = jp.run(sys.executable, "-m", "pytest_jaxperf", "compare", "base.json", "out.json")
    text = compared.stdout.str()
    failure = _section(text, "test_const.py::test_project")
    diagnosis = f"diagnosis: test_const.py::test_project: {CONSTANT_LINE}"
    assert (diagnosis in text) != (f"      cause: {CONSTANT_LINE}" in failure), text


def _section(text: str, nodeid: str) -> str:
    """A test's failure as the terminal and `jaxperf compare` print it ('' where none)."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith(f"jaxperf: {nodeid}: ")), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), None)
    return "\n".join(lines[start:end])


def test_an_unrolled_loop_is_named_unless_the_baseline_had_it() -> None:
    unrolled = model.SOURCE_UNROLLED
    now = _sized({"q.py:13": [1, 1, unrolled], "q.py:11": [8, 4, 0]}, 9)
    plain = _sized({"q.py:13": [1, 1, 0], "q.py:11": [8, 4, 0]}, 9)
    line = (
        "unrolled fori_loop/scan at q.py:13: unroll= copies its body into the program per "
        "step; fix: drop unroll= (or a small factor)"
    )
    assert diagnose.explain_program(now, rec(now), None, {}) == [line]
    assert diagnose.explain_program(now, rec(now), rec(plain), {now.key: plain}) == [line]
    assert diagnose.explain_program(now, rec(now), rec(now), {now.key: now}) == []
    # Over a limit, what makes the program big is named, changed or not.
    assert diagnose.explain_program(now, rec(now), rec(now), {now.key: now}, False) == [line]
    # A baseline that keeps no lines (a committed one): unknown, named.
    bare = _sized({}, 9)
    assert diagnose.explain_program(now, rec(now), rec(bare), {now.key: bare}) == [line]
    # Of the test's total (`function` None): each function's.
    other = dataclasses.replace(plain, site="q.py:30")
    assert diagnose.explain_program(None, rec(now, other), None, {}) == [line]


def test_a_closed_over_constant_needs_a_mib_and_more_than_the_baseline() -> None:
    kib = model.SOURCE_CONST_KIB

    def project(const_kib: int) -> FunctionRecord:
        f = _sized({"m.py:12": [1, 1, kib * const_kib], "m.py:13": [1, 1, 0]}, 2)
        f.name = "test_x.<locals>.project"
        return f

    big, small = project(1406), project(diagnose.LARGE_CONSTANT_KIB - 1)
    line = (
        "closed-over constant: project embeds 1.4 MiB of arrays in its program (used at "
        "m.py:12); fix: pass the array as an argument of the jitted function"
    )
    assert diagnose.explain_program(big, rec(big), None, {}) == [line]
    assert diagnose.explain_program(small, rec(small), None, {}) == []
    assert diagnose.explain_program(big, rec(big), rec(big), {big.key: big}) == []
    assert diagnose.constants_grew(rec(big), rec(small), {big.key: small}) == [line]
    assert diagnose.constants_grew(rec(big), rec(big), {big.key: big}) == []
    # Against a baseline that keeps no lines, growth is unknown: not named without a breach.
    bare = _sized({}, 2)
    assert diagnose.constants_grew(rec(big), rec(bare), {big.key: bare}) == []


def test_two_functions_lines_keep_each_pattern() -> None:
    kib, unrolled, builtin = (
        model.SOURCE_CONST_KIB, model.SOURCE_UNROLLED, model.SOURCE_BUILTIN_SUM,
    )  # fmt: skip
    a = _sized({"m.py:3": [5, 1, builtin + kib * 10]}, 5)
    b = _sized({"m.py:3": [7, 2, unrolled + kib * 30]}, 7)
    b.site = "m.py:20"
    both = diagnose.sources([a, b])
    assert both is not None
    # Each flag of either; the larger constant (the same one, seen in two programs).
    assert both.lines["m.py:3"] == [12, 2, builtin + unrolled + kib * 30]


def _timed(median: float, **sizes: float) -> model.BenchmarkEntry:
    entry = data.bench(median)
    assert entry.metrics is not None
    return dataclasses.replace(entry, metrics=dataclasses.replace(entry.metrics, **sizes))


@pytest.mark.parametrize(
    ("sizes", "cause"),
    [
        ({}, "same program (its 2 size metrics unchanged): the time went into running it "
         "slower or into work around the call, not into a bigger program"),
        ({"jaxpr_eqns": 24, "hlo_ops": 61}, "the program changed with it: jaxpr equations "
         "12 -> 24, StableHLO ops 30 -> 61"),
    ],
)  # fmt: skip
def test_a_runtime_breach_says_what_the_program_did(sizes: dict[str, int], cause: str) -> None:
    base = rec(benchmarks={"dense": data.bench(1e-3)})
    now = rec(benchmarks={"dense": _timed(2e-3, **sizes)})
    verdict = evaluate(now, base, MarkerLimits(), Gating(Tolerances(runtime_clock="wall")))
    (breach,) = [b for b in verdict.breaches if b.metric == "runtime"]
    assert breach.reasons == (cause,)
    assert breach_lines(breach)[1] == f"    cause: {cause}"


def test_no_runtime_cause_without_program_metrics() -> None:
    base = rec(benchmarks={"dense": data.unmeasured(runtime=data.bench(1e-3).runtime)})
    now = rec(benchmarks={"dense": data.unmeasured(runtime=data.bench(2e-3).runtime)})
    verdict = evaluate(now, base, MarkerLimits(), Gating(Tolerances(runtime_clock="wall")))
    (breach,) = [b for b in verdict.breaches if b.metric == "runtime"]
    assert breach.reasons == ()


def test_jaxperf_compare_says_the_runtime_cause(tmp_path: Path) -> None:
    base = model.RunRecord(tests={"t.py::test_dense": rec(benchmarks={"dense": data.bench(1e-3)})})
    run = model.RunRecord(tests={"t.py::test_dense": rec(benchmarks={"dense": _timed(2e-3)})})
    save(tmp_path / "base.json", base)
    save(tmp_path / "run.json", run)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "compare", "base.json", "run.json",
         "--runtime-clock=wall"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "  runtime of benchmark 'dense': baseline 1.000 ms -> now 2.000 ms (+1.000 ms, +100%)"
    ) in proc.stdout, proc.stdout
    assert "    cause: same program (its 2 size metrics unchanged)" in proc.stdout, proc.stdout


# Seven lines of more equations than the loop's own line (one scan equation; its body's at
# the lambda's line): past the top lines kept, the loop's is kept for its pattern.
CROWDED = """
import jax
import jax.numpy as jnp
from jax import lax
import pytest

@jax.jit
def crowded(x):
    a = jnp.sin(x) * 2.0
    b = jnp.cos(a) * 2.0
    c = jnp.tanh(b) * 2.0
    d = jnp.exp(c) * 2.0
    e = jnp.log1p(d) * 2.0
    f = jnp.sqrt(e) * 2.0
    g = jnp.abs(f) * 2.0
    step = lambda i, z: z * 2.0 + 1.0
    return lax.fori_loop(0, 8, step, g, unroll=2)

@pytest.mark.jaxperf(max_hlo_ops=1)
def test_crowded():
    crowded(jnp.ones(3))
"""


@pytest.mark.jax_internals
def test_a_pattern_line_past_the_top_lines_is_kept(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_crowded=CROWDED)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["      cause: unrolled fori_loop/scan at test_crowded.py:16: *"])
    fns = read_json(jp.path / "out.json")["tests"]["test_crowded.py::test_crowded"]["functions"]
    sources = fns["crowded at test_crowded.py:6"]["eqn_sources"]
    # The top 6 by equations (2 each), then the loop's line (its one scan equation).
    assert len(sources) == model.MAX_SOURCE_LINES + 1, sources
    assert sources["test_crowded.py:16"] == [1, 1, model.SOURCE_UNROLLED]
    assert sum(v[2] & model.SOURCE_UNROLLED for v in sources.values()) == model.SOURCE_UNROLLED


def test_an_instructions_breach_says_what_the_program_did_too() -> None:
    base = rec(benchmarks={"dense": dataclasses.replace(data.bench(1e-3), instructions=1000)})
    grown = dataclasses.replace(_timed(1e-3, jaxpr_eqns=24), instructions=2000)
    verdict = evaluate(
        rec(benchmarks={"dense": grown}), base, MarkerLimits(),
        Gating(Tolerances(runtime_clock="instructions")),
    )  # fmt: skip
    (breach,) = [b for b in verdict.breaches if b.metric == "instructions per call"]
    assert breach.reasons == ("the program changed with it: jaxpr equations 12 -> 24",)
