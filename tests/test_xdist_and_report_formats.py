"""End to end: pytest-xdist, the markdown/HTML/history outputs and JUnit properties."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import lit, read_json

SUITE = """
import functools
import jax
import jax.numpy as jnp
import pytest

@functools.partial(jax.jit, static_argnames="n")
def g(x, n):
    return jnp.sin(x) * n

@pytest.mark.parametrize("k", range(6))
def test_many(k, jaxperf):
    g(jnp.ones(k + 2), n=2); g(jnp.ones(k + 2), n=3)
    jaxperf.benchmark(g, jnp.ones(4), n=2)
"""
FAST = ("--jaxperf-min-rounds=3", "--jaxperf-max-time=0.02")


def _counts(path: object) -> dict[str, tuple[int, int, int]]:
    tests = read_json(path)["tests"]  # type: ignore[arg-type]
    return {
        k: (v["traces"], v["compiles"], v["benchmarks"]["g"]["jaxpr_eqns"])
        for k, v in tests.items()
    }


def test_xdist_loaded_by_name_with_autoload_off_still_merges_the_workers(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest-xdist's documented way without entry points registers it as "xdist.plugin".
    jp.makepyfile(test_suite=SUITE)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins = ("-p", "xdist.plugin", "-p", "pytest_jaxperf.plugin")
    result = jp.runpytest_subprocess(*plugins, "--jaxperf", "-n", "2", "--jaxperf-json=p.json")
    result.assert_outcomes(passed=6)
    assert len(_counts(jp.path / "p.json")) == 6
    assert read_json(jp.path / "p.json")["environment"]["xdist_workers"] == 2


def test_a_shard_run_under_xdist_merges_without_touching_the_serial_timings(
    jp: pytest.Pytester,
) -> None:
    jp.makepyfile(test_suite=SUITE)
    jp.runpytest_subprocess("--jaxperf", "--jaxperf-save", *FAST).assert_outcomes(passed=6)
    baseline = jp.path / ".jaxperf" / "baseline.json"
    before = baseline.read_text()
    # A CI shard: -n 2, saving into its own throwaway file, its report merged afterwards.
    jp.runpytest_subprocess(
        "--jaxperf", "-n", "2", "--jaxperf-save", "--jaxperf-baseline=own.json",
        "--jaxperf-json=shard.json", *FAST,
    ).assert_outcomes(passed=6)  # fmt: skip
    assert read_json(jp.path / "shard.json")["environment"]["xdist_workers"] == 2
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "merge", "shard.json", "-o", str(baseline)],
        cwd=jp.path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (merged.returncode, merged.stderr) == (0, "")
    assert merged.stdout.splitlines()[0] == (
        f"jaxperf: merged 1 shard report into {baseline}: 6 passed tests "
        "(0 entries updated, 0 added, 6 as stored), 0 other entries kept, 6 in all"
    )
    # Same counts; the timings were taken beside another worker: the file is as saved,
    # its serial compile and runtime seconds still gated by a serial run.
    assert baseline.read_text() == before
    assert read_json(baseline)["environment"]["xdist_workers"] == 0


def test_xdist_matches_serial_and_controller_writes_once(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_suite=SUITE)
    serial = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=serial.json", *FAST)
    serial.assert_outcomes(passed=6)
    result = jp.runpytest_subprocess(
        "--jaxperf", "-n", "2", "--jaxperf-json=par.json", "--jaxperf-save", *FAST
    )
    result.assert_outcomes(passed=6)
    assert _counts(jp.path / "par.json") == _counts(jp.path / "serial.json")
    assert len(_counts(jp.path / "par.json")) == 6
    result.stdout.fnmatch_lines(lit("jaxperf: 0 regressions, 0 improvements, 6 new, 0 not gated"))
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")
    assert len(saved["tests"]) == 6 and saved["environment"]["backend"] == "cpu"
    # Said in the report, so that `jaxperf compare` does not gate its timings either.
    assert saved["environment"]["xdist_workers"] == 2
    assert read_json(jp.path / "serial.json")["environment"]["xdist_workers"] == 0
    # Against that baseline, under xdist: counts gated, timings reported as not gated.
    again = jp.runpytest_subprocess("--jaxperf", "-n", "2", *FAST)
    again.assert_outcomes(passed=6)
    again.stdout.fnmatch_lines(lit("*6 not gated*"))
    # Serially against timings taken beside another worker: counts gated, timings not.
    serial_again = jp.runpytest_subprocess("--jaxperf", "--jaxperf-markdown=s.md", *FAST)
    serial_again.assert_outcomes(passed=6)
    serial_again.stdout.fnmatch_lines(lit("jaxperf: 0 regressions, * 6 not gated*"))
    assert "environment differs (xdist_workers 2 -> 0)" in (jp.path / "s.md").read_text()
    jp.makepyfile(test_suite=SUITE.replace("n=3)", "n=4); g(jnp.ones(k + 2), n=5)"))
    broken = jp.runpytest_subprocess("--jaxperf", "-n", "2", *FAST)
    broken.assert_outcomes(failed=6)
    broken.stdout.fnmatch_lines(
        lit("*cause: static argument n changed on *; fix: *", "jaxperf: 6 regressions*")
    )


def test_markdown_history_html_and_junit(jp: pytest.Pytester) -> None:
    pytest.importorskip("matplotlib")
    jp.makepyfile(test_suite=SUITE)
    # Timings under this suite's own load are not this test's subject: keep them out of the verdict.
    args = (
        "--jaxperf", "--jaxperf-markdown=out/summary.md", "--jaxperf-history=out/history.jsonl",
        "--jaxperf-html=out/report.html", "--junitxml=out/junit.xml", *FAST,
        "--jaxperf-compile-floor=1000", "--jaxperf-runtime-rtol=1000",
    )  # fmt: skip
    jp.runpytest(*args, "--jaxperf-save").assert_outcomes(passed=6)
    jp.runpytest(*args).assert_outcomes(passed=6)
    lines = (jp.path / "out" / "history.jsonl").read_text().splitlines()
    assert len(lines) == 2
    entry = json.loads(lines[-1])
    assert entry["tests"]["test_suite.py::test_many[0]"]["traces"] == 3  # 2 static n, 1 shape
    markdown = (jp.path / "out" / "summary.md").read_text()
    assert "test_suite.py::test_many[5]" in markdown
    page = (jp.path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype html")
    assert "data:image/png;base64," in page and "https://" not in page
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(jp.path / "out" / "junit.xml").iter("testcase")
        if case.get("name") == "test_many[0]"
        for p in case.iter("property")
    }
    assert props["jaxperf_traces"] == "3" and props["jaxperf_compiles"] == "3"
    assert props["jaxperf_status"] in ("ok", "improved")  # timings may improve between runs
    assert props["jaxperf_jaxpr_eqns[g]"] == "2"
    assert float(props["jaxperf_runtime_median_s[g]"]) > 0


def test_html_without_matplotlib_is_written_without_plots(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain package (no `[plot]` extra) writes the report: a CI job copied from the
    docs must not stop at its HTML flag."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    jp.makepyfile(test_suite=SUITE)
    result = jp.runpytest("--jaxperf", "--jaxperf-html=r.html", "-k", "test_many and 0", *FAST)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    page = (jp.path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "Plots need matplotlib: pip install &#x27;pytest-jaxperf[plot]&#x27;." in page
    assert "data:image/png" not in page and "test_many[0]" in page
