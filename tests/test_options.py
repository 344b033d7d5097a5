"""End to end: flags and their ini twins, bad input, and the cost of being off."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import ONE_JITTED_TEST, lit, read_json

TEST = (
    ONE_JITTED_TEST
    + """
def test_plain():
    f(jnp.ones(3))
"""
)


def test_off_imports_no_jax_and_writes_nothing(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        """
import sys
import pytest

@pytest.mark.jaxperf(max_traces=0)
def test_no_jax():
    assert "jax" not in sys.modules
"""
    )
    result = jp.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(passed=1)
    assert not (jp.path / ".jaxperf").exists()
    result.stdout.no_fnmatch_line("jaxperf:*")


def test_plugin_import_does_not_import_jax(jp: pytest.Pytester) -> None:
    code = "import sys, pytest_jaxperf, pytest_jaxperf.plugin; print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))"  # noqa: E501
    result = jp.run(sys.executable, "-c", code)
    assert result.ret == 0
    assert result.stdout.lines[-1] == "[]"


def test_session_does_not_import_the_fixture(jp: pytest.Pytester) -> None:
    # The session records through the recorder alone; the fixture module is loaded only for
    # a test that requests `jaxperf`.
    code = (
        "import sys, pytest_jaxperf.session; print('pytest_jaxperf.measure.fixture' in sys.modules)"
    )
    result = jp.run(sys.executable, "-c", code)
    assert result.ret == 0
    assert result.stdout.lines[-1] == "False"


def test_marker_listed_when_off(jp: pytest.Pytester) -> None:
    result = jp.runpytest("--markers")
    result.stdout.fnmatch_lines(lit("@pytest.mark.jaxperf(max_traces=None, *"))


def test_help_lists_every_flag(jp: pytest.Pytester) -> None:
    result = jp.runpytest("--help")
    result.stdout.fnmatch_lines(
        lit(
            "*--jaxperf *record JAX traces*",
            "*--jaxperf-save*",
            "*--jaxperf-baseline=PATH*",
            "*--jaxperf-json=PATH*",
            "*--jaxperf-all*",
            "*--jaxperf-compile-rtol=NUMBER*",
            "*--jaxperf-compile-floor=NUMBER*",
            "*jaxperf_save (string):*",
        )
    )


def test_ini_options_act_like_flags(jp: pytest.Pytester) -> None:
    jp.makeini(
        """
[pytest]
addopts = -p no:cacheprovider
jaxperf = true
jaxperf_save = yes
jaxperf_all = 1
jaxperf_baseline = perf/base.json
jaxperf_json = perf/run.json
"""
    )
    jp.makepyfile(TEST)
    result = jp.runpytest()
    result.assert_outcomes(passed=2)
    saved = read_json(jp.path / "perf" / "base.json")
    assert set(saved["tests"]) == {"test_ini_options_act_like_flags.py::test_f",
                                   "test_ini_options_act_like_flags.py::test_plain"}  # fmt: skip
    assert (jp.path / "perf" / "run.json").exists()
    # The command line wins over the ini file.
    result = jp.runpytest("--jaxperf-baseline=other.json")
    result.stdout.fnmatch_lines(lit("*saving; baseline */other.json (none yet)*"))


def test_ini_tolerances(jp: pytest.Pytester) -> None:
    jp.makeini("[pytest]\njaxperf = true\njaxperf_compile_rtol = 0.5\njaxperf_compile_floor = 2\n")
    jp.makepyfile(TEST)
    result = jp.runpytest()
    result.stdout.fnmatch_lines(lit("jaxperf: gating; *compile rtol 0.5, floor 2 s"))


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--jaxperf", "--jaxperf-compile-rtol=abc"], "",
         "ERROR: --jaxperf-compile-rtol: expected a number >= 0, got 'abc'"),
        (["--jaxperf", "--jaxperf-compile-floor=-1"], "",
         "ERROR: --jaxperf-compile-floor: expected a number >= 0, got '-1'"),
        ([], "jaxperf = maybe", "ERROR: ini option jaxperf: expected true or false, got 'maybe'"),
        (["--jaxperf"], "jaxperf_compile_rtol = nan",
         "ERROR: ini option jaxperf_compile_rtol: expected a number >= 0, got 'nan'"),
        (["--jaxperf", "--jaxperf-export=csv:out.json"], "",
         "ERROR: --jaxperf-export: expected FORMAT:PATH with FORMAT one of "
         "github-action-benchmark, bencher, pytest-benchmark, got 'csv:out.json'"),
        (["--jaxperf"], "jaxperf_export = pytest-benchmark",
         "ERROR: ini option jaxperf_export: expected FORMAT:PATH with FORMAT one of "
         "github-action-benchmark, bencher, pytest-benchmark, got 'pytest-benchmark'"),
    ],
)  # fmt: skip
def test_bad_option_values(jp: pytest.Pytester, args: list[str], ini: str, message: str) -> None:
    jp.makeini(f"[pytest]\n{ini}\n")
    jp.makepyfile(TEST)
    result = jp.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(lit(message))


BROKEN = {
    "not_json": "this is not json",
    "truncated": '{"schema": "pytest-jaxperf/1", "tests": {"a": {"traces": 1',
    "other_schema": json.dumps({"schema": "pytest-benchmark/4", "tests": {}}),
    "wrong_type": json.dumps({"schema": "pytest-jaxperf/1", "tests": {"t": {"traces": "1"}}}),
    "list": "[1, 2]",
    "empty": "",
}
MESSAGES = {
    "not_json": "*base.json is not valid JSON (line 1, column 1: Expecting value)*",
    "truncated": "*base.json is not valid JSON (line 1, *)*",
    "other_schema": "*base.json is not a pytest-jaxperf baseline: schema: expected one of "
    "'pytest-jaxperf/1', 'pytest-jaxperf/2', 'pytest-jaxperf/3', 'pytest-jaxperf/4', "
    "'pytest-jaxperf/5', 'pytest-jaxperf/6', 'pytest-jaxperf/7', got 'pytest-benchmark/4'*",
    "wrong_type": "*base.json is not a pytest-jaxperf baseline: tests['t'].traces: "
    "expected a count, got '1'*",
    "list": "*base.json is not a pytest-jaxperf baseline: top level: expected an object, got list*",
    "empty": "*base.json is empty*",
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("save", [False, True])
def test_broken_baseline_stops_the_run(jp: pytest.Pytester, kind: str, save: bool) -> None:
    jp.makepyfile(TEST)
    path = jp.path / "base.json"
    path.write_text(BROKEN[kind])
    args = ["--jaxperf", f"--jaxperf-baseline={path}"] + (["--jaxperf-save"] if save else [])
    result = jp.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1
    assert errors[0].startswith("ERROR: pytest-jaxperf: ")
    assert errors[0].endswith("re-create it with --jaxperf-save")
    result.stderr.fnmatch_lines(lit(MESSAGES[kind]))
    assert path.read_text() == BROKEN[kind]


SELECTION = """
import pytest

@pytest.mark.jaxperf
def test_marked():
    pass

def test_fixture_only(jaxperf):
    pass

def test_plain():
    pass
"""


@pytest.mark.parametrize("on", [False, True])
def test_dash_m_jaxperf_selects_tests_that_only_request_the_fixture(
    jp: pytest.Pytester, on: bool
) -> None:
    jp.makepyfile(SELECTION)
    result = jp.runpytest("-m", "jaxperf", "-v", *(["--jaxperf"] if on else []))
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(["*::test_marked PASSED*", "*::test_fixture_only PASSED*"])
    inverse = jp.runpytest("-m", "not jaxperf", "-v")
    inverse.assert_outcomes(passed=1, deselected=2)
    inverse.stdout.fnmatch_lines(["*::test_plain PASSED*"])
