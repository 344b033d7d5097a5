"""The hooks other plugins and conftest.py files implement (hookspecs.py): the environment
block's keys (`pytest_jaxperf_environment`) and which environments gate which kind of value
(`pytest_jaxperf_compatible`); unit tests of the rules, then real sessions."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from _records import fn, rec
from conftest import ONE_JITTED_TEST, read_json

from pytest_jaxperf.compare import BY_HOOK, HOOK_KINDS, Gating, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.environment import (
    COMPILE,
    RUNTIME,
    SIZES,
    UNDER_XDIST,
    EnvironmentChanges,
    other_differences,
)

BASE = {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "x64": False, "cpu": "AMD EPYC",
        "cpu_count": 2, "python": "3.11.9", "gpu_driver": "550"}  # fmt: skip
DRIVER = {**BASE, "gpu_driver": "555"}
SAID = f"gpu_driver 550 -> 555, {BY_HOOK}"


def _rule(**answers: bool | None) -> Any:
    """A `compatible` rule answering per kind ("compile seconds" as compile_seconds=...)."""

    def rule(kind: str, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> bool | None:
        return answers.get(kind.replace(" ", "_"))

    return rule


def _gating(baseline: Mapping[str, Any], current: Mapping[str, Any], rule: Any) -> Gating:
    return Gating.between(baseline, current, Tolerances(), compatible=rule)


def test_the_changes_a_hook_made_apply_to_another_block_and_travel_as_json() -> None:
    shown = {"python": "3.11.9", "cpu": "AMD EPYC 7B13", "cpu_count": 2, "platform": "Linux"}
    after = {**shown, "cpu": "AMD EPYC", "gpu_driver": "555"}
    del after["platform"]
    changes = EnvironmentChanges.between(shown, after)
    assert changes == EnvironmentChanges({"cpu": "AMD EPYC", "gpu_driver": "555"}, ("platform",))
    assert EnvironmentChanges.from_json(json.loads(json.dumps(changes.to_json()))) == changes
    captured = {**shown, "jax": "0.10.2", "backend": "cpu"}
    changes.apply(captured)
    assert captured == {"python": "3.11.9", "cpu": "AMD EPYC", "cpu_count": 2,
                        "jax": "0.10.2", "backend": "cpu", "gpu_driver": "555"}  # fmt: skip


def test_a_key_no_built_in_rule_compares_gates_nothing_until_a_rule_says() -> None:
    assert other_differences(BASE, DRIVER) == ["gpu_driver 550 -> 555"]
    built_in = Gating.between(BASE, DRIVER, Tolerances())
    assert built_in.plain
    # A rule that has no word on any kind is the built-in gating, field for field.
    assert _gating(BASE, DRIVER, _rule()) == built_in
    said = _gating(BASE, DRIVER, _rule(compile_seconds=False, program_size=False))
    assert said.timing_differences == ("gpu_driver 550 -> 555", BY_HOOK)
    assert said.static_differences == ("gpu_driver 550 -> 555", BY_HOOK)
    assert said.runtime_reasons == ()  # the runtime was not asked about: still gated
    assert said.instruction_differences == ()


def test_the_notes_say_which_difference_a_rule_found_to_matter() -> None:
    f = fn("f", "m.py:1", compile_s=0.01)
    gating = _gating(BASE, DRIVER, _rule(compile_seconds=False, program_size=False))
    verdict = evaluate(rec(f), rec(f), MarkerLimits(), gating)
    assert sorted(verdict.notes) == [
        f"compile time not gated: environment differs ({SAID})",
        f"program metrics not gated: environment differs ({SAID})",
    ]
    assert {note.code for note in verdict.notes} == {"environment_differs"}  # type: ignore[attr-defined]
    # The built-in rules alone: nothing left out.
    assert evaluate(rec(f), rec(f), MarkerLimits(), _gating(BASE, DRIVER, None)).notes == []


def test_a_rule_can_gate_what_the_built_in_rules_leave_out() -> None:
    other_cpu = {**BASE, "cpu": "Intel(R) Xeon(R)", "x64": True}
    built_in = Gating.between(BASE, other_cpu, Tolerances())
    assert built_in.static_differences == ("x64 False -> True",)
    assert built_in.timing_differences == ("x64 False -> True", "cpu AMD EPYC -> Intel(R) Xeon(R)")
    said = _gating(BASE, other_cpu, _rule(compile_seconds=True, program_size=True))
    assert (said.static_differences, said.timing_differences) == ((), ())
    assert said.machine is None and said.upgrade == ()  # seconds compared as measured
    # The runtime was not asked about: the built-in rule still leaves it out.
    assert said.runtime_reasons == built_in.timing_differences


def test_what_the_run_itself_rules_out_stays_out_whatever_a_rule_says() -> None:
    workers = {**BASE, "xdist_workers": 2}
    said = _gating(BASE, workers, _rule(compile_seconds=True, runtime=True))
    assert said.timing_differences == (UNDER_XDIST,)
    assert said.runtime_reasons == (UNDER_XDIST,)


def test_the_rule_is_asked_per_kind_it_can_decide() -> None:
    asked: list[str] = []

    def rule(kind: str, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> None:
        asked.append(kind)

    _gating(BASE, {**BASE, "cpu_count": 3}, rule)
    assert asked == list(HOOK_KINDS) == [SIZES, COMPILE, RUNTIME, "instructions"]


# -- real sessions ------------------------------------------------------------------------

# The conftest.py of the sessions below: the driver from the environment variable
# GPU_DRIVER, each call of the hook noted (which process, which keys it was shown).
DRIVER_HOOK = """
import os

def pytest_jaxperf_environment(config, environment):
    with open(os.path.join(str(config.rootpath), "calls.txt"), "a") as fh:
        where = os.environ.get("PYTEST_XDIST_WORKER", "controller")
        fh.write(where + " " + ",".join(sorted(environment)) + "\\n")
    environment["gpu_driver"] = os.environ.get("GPU_DRIVER", "555")
"""
# Compile seconds are what they are on a loaded machine: these sessions gate none of them
# by value (a 1,000 s floor), only whether they are compared at all.
NO_TIMING_VERDICT = ("--jaxperf-compile-floor=1000", "--jaxperf-timing=off")


def _calls(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_conftest_adds_a_key_to_the_run_file_and_the_baseline(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This suite's own xdist worker id would name the inner session's process.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    jp.makeconftest(DRIVER_HOOK)
    jp.makepyfile(test_f=ONE_JITTED_TEST)
    # Declared without --jaxperf too: the conftest loads, and nothing asks the hook.
    jp.runpytest().assert_outcomes(passed=1)
    assert _calls(jp) == []
    result = jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-json=run.json")
    result.assert_outcomes(passed=1)
    # Once per session, shown what is known before JAX starts.
    assert _calls(jp) == ["controller cpu,cpu_count,platform,python"]
    run = read_json(jp.path / "run.json")
    assert run["environment"]["gpu_driver"] == "555"
    assert run["environment"]["backend"] == "cpu"  # JAX's keys, captured as before
    baseline = read_json(jp.path / ".jaxperf" / "baseline.json")
    assert baseline["environment"]["gpu_driver"] == "555"


def test_a_value_that_is_not_json_is_a_usage_error(jp: pytest.Pytester) -> None:
    jp.makeconftest(
        "def pytest_jaxperf_environment(config, environment):\n"
        "    environment['driver'] = object()\n"
    )
    jp.makepyfile(test_f=ONE_JITTED_TEST)
    result = jp.runpytest("--jaxperf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: pytest-jaxperf: a pytest_jaxperf_environment hook left keys or values that "
        "are not JSON in the environment block (Object of type object is not JSON "
        "serializable): the run file and the baseline store it as JSON"
    ])  # fmt: skip


STRICT_ABOUT_THE_DRIVER = """
def pytest_jaxperf_compatible(config, metric_kind, baseline, current):
    if metric_kind in ("compile seconds", "program size") and (
        baseline.get("gpu_driver") != current.get("gpu_driver")
    ):
        return False
    return None
"""


def test_a_compatible_hook_makes_a_custom_key_matter(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makeconftest(DRIVER_HOOK)
    jp.makepyfile(test_f=ONE_JITTED_TEST)
    monkeypatch.setenv("GPU_DRIVER", "550")
    jp.runpytest("--jaxperf", "--jaxperf-save", *NO_TIMING_VERDICT).assert_outcomes(passed=1)
    monkeypatch.setenv("GPU_DRIVER", "555")
    # The built-in rules know no gpu_driver: everything is gated.
    result = jp.runpytest("--jaxperf", *NO_TIMING_VERDICT)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])
    result.stdout.no_fnmatch_line("*not gated: environment differs*")
    # A plugin's rule: compile seconds and program sizes move with the driver.
    jp.makeconftest(DRIVER_HOOK + STRICT_ABOUT_THE_DRIVER)
    result = jp.runpytest("--jaxperf", *NO_TIMING_VERDICT)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "jaxperf: compile time of 1 test not gated: environment differs (gpu_driver 550 -> "
        "555, as a pytest_jaxperf_compatible hook decides) [environment_differs]",
        "jaxperf: program metrics of 1 test not gated: environment differs (gpu_driver 550 -> "
        "555, as a pytest_jaxperf_compatible hook decides) [environment_differs]",
        "jaxperf: 0 regressions, 0 improvements, 0 new, 1 not gated",
    ])  # fmt: skip
    # And a code like any other: --jaxperf-strict fails the test on it.
    strict = jp.runpytest("--jaxperf", "--jaxperf-strict=environment_differs", *NO_TIMING_VERDICT)
    strict.assert_outcomes(failed=1)
    # The run file names the hooks, and is never a baseline's environment; `jaxperf compare`,
    # which judges by the built-in rules, says its verdict may differ.
    jp.runpytest("--jaxperf", "--jaxperf-json=run.json", *NO_TIMING_VERDICT)
    assert read_json(jp.path / "run.json")["environment"]["compatible_hooks"] == ["conftest.py"]
    compared = jp.run(
        sys.executable, "-m", "pytest_jaxperf", "compare", ".jaxperf/baseline.json", "run.json"
    )
    compared.stdout.fnmatch_lines([
        "jaxperf: run.json was gated with pytest_jaxperf_compatible hooks (conftest.py); this "
        "command judges by the built-in rules, so where a hook decided whether two "
        "environments gate a metric, its verdict may differ from the plugin's",
    ])  # fmt: skip
    jp.runpytest("--jaxperf", "--jaxperf-save", *NO_TIMING_VERDICT).assert_outcomes(passed=1)
    assert (
        "compatible_hooks" not in read_json(jp.path / ".jaxperf" / "baseline.json")["environment"]
    )


GATE_ACROSS_CPUS = """
def pytest_jaxperf_compatible(config, metric_kind, baseline, current):
    # One CI pool of alike machines: their compile seconds are compared as they are.
    return True if metric_kind == "compile seconds" else None
"""


def test_a_compatible_hook_makes_a_cpu_difference_not_matter(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_f=ONE_JITTED_TEST)
    jp.runpytest("--jaxperf", "--jaxperf-save", *NO_TIMING_VERDICT).assert_outcomes(passed=1)
    path = jp.path / ".jaxperf" / "baseline.json"
    saved = read_json(path)
    here = saved["environment"]["cpu"]
    saved["environment"]["cpu"] = "Another CPU"
    path.write_text(json.dumps(saved))
    result = jp.runpytest("--jaxperf", *NO_TIMING_VERDICT)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"jaxperf: compile time of 1 test not gated: environment differs (cpu Another CPU -> "
        f"{here}) [environment_differs]",
    ])  # fmt: skip
    jp.makeconftest(GATE_ACROSS_CPUS)
    result = jp.runpytest("--jaxperf", *NO_TIMING_VERDICT)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*not gated: environment differs*")
    result.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])


def test_under_xdist_the_controller_asks_once_and_workers_save_its_answer(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hook whose answer differs per call (a clock, a counter): every process must gate
    # and save in the one environment the controller's call made.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this suite's own worker's
    jp.makeconftest(DRIVER_HOOK.replace('os.environ.get("GPU_DRIVER", "555")', "str(os.getpid())"))
    jp.makepyfile(test_f=ONE_JITTED_TEST, test_g=ONE_JITTED_TEST)
    result = jp.runpytest_subprocess("--jaxperf", "-n", "2", "--jaxperf-json=run.json")
    result.assert_outcomes(passed=2)
    (call,) = _calls(jp)
    assert call == "controller cpu,cpu_count,platform,python"
    run = read_json(jp.path / "run.json")
    controller = run["environment"]["gpu_driver"]
    assert controller.isdigit()
    # No entry was measured in another environment than the run's.
    assert all("environment" not in t for t in run["tests"].values())
