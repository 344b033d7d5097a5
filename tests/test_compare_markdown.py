"""`jaxperf compare --markdown PATH`: the verdicts as the markdown `pytest --jaxperf-markdown`
writes for the same records, so that a suite split across jobs gets the same step summary as
a serial run; appended to `$GITHUB_STEP_SUMMARY`, refused before anything is read when the
path cannot be written or is one of the files compared."""

from __future__ import annotations

from pathlib import Path

import pytest
from _jaxperf_data import ENV, baseline_and_run, outcomes_for

from pytest_jaxperf.cli import main
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.report.markdown import render_markdown
from pytest_jaxperf.storage import store


def _files(tmp_path: Path) -> tuple[Path, Path, RunRecord, RunRecord]:
    base, run = baseline_and_run()
    base_path, run_path = tmp_path / "baseline.json", tmp_path / "run.json"
    store.save(base_path, base)
    store.save(run_path, run)
    loaded_base, loaded_run = store.load(base_path), store.load(run_path)
    assert loaded_base is not None and loaded_run is not None
    return base_path, run_path, loaded_base, loaded_run


def test_compare_writes_the_markdown_a_run_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, run_path, base, run = _files(tmp_path)
    out = tmp_path / "summary" / "jaxperf.md"
    assert main(["compare", str(base_path), str(run_path), "--markdown", str(out)]) == 1
    printed = capsys.readouterr().out
    text = out.read_text()
    assert text == render_markdown(run, outcomes_for(base, run), str(base_path), baseline=base)
    assert "**jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated**" in text
    assert "### Regressions (1)" in text and "### Improvements (1)" in text
    # The terminal output is the same with or without it.
    assert main(["compare", str(base_path), str(run_path)]) == 1
    assert capsys.readouterr().out == printed


def test_shards_compared_give_the_whole_runs_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, run_path, _, run = _files(tmp_path)
    ids = sorted(run.tests)
    halves = []
    for name, part in (("a", ids[:2]), ("b", ids[2:])):
        halves.append(tmp_path / f"{name}.json")
        store.save(halves[-1], RunRecord(dict(ENV), {k: run.tests[k] for k in part}))
    whole, split = tmp_path / "whole.md", tmp_path / "split.md"
    assert main(["compare", str(base_path), str(run_path), "--markdown", str(whole)]) == 1
    assert main(["compare", str(base_path), *map(str, halves), "--markdown", str(split)]) == 1
    capsys.readouterr()
    assert split.read_text() == whole.read_text()


def test_the_step_summary_is_appended_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_path, run_path, _, _ = _files(tmp_path)
    summary = tmp_path / "step_summary.md"
    summary.write_text("### an earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["compare", str(base_path), str(base_path), "--markdown", str(summary)]) == 0
    capsys.readouterr()
    text = summary.read_text()
    assert text.startswith("### an earlier step\n\n## pytest-jaxperf\n")
    assert "**jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated**" in text


def test_a_markdown_path_that_cannot_be_written_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, run_path, _, _ = _files(tmp_path)
    before = run_path.read_bytes()
    assert main(["compare", str(base_path), str(run_path), "--markdown", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"jaxperf: --markdown {tmp_path}: is a directory, not a file; pass the path of a file\n"
    )
    assert main(["compare", str(base_path), str(run_path), "--markdown", str(run_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"jaxperf: --markdown {run_path}: is the REPORT compared, which it would overwrite; "
        "pass another path\n"
    )
    assert run_path.read_bytes() == before


SUITE = """
import jax
import jax.numpy as jnp
import os
import pytest

@jax.jit
def f(x):
    return x + 1

@pytest.mark.jaxperf
def test_same():
    f(jnp.ones(3))

@pytest.mark.jaxperf
def test_grows():  # GROW=1: traced once more
    for n in range(3, 4 + int(os.environ.get("GROW", "0"))):
        f(jnp.ones(n))
"""


def test_compare_of_a_runs_json_writes_that_runs_markdown(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    jp.makepyfile(test_suite=SUITE)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    monkeypatch.setenv("GROW", "1")
    run = jp.runpytest(
        "--jaxperf", "--jaxperf-json=run.json", "--jaxperf-markdown=run.md",
        "--jaxperf-timing=report",
    )  # fmt: skip
    assert run.ret == 1
    baseline = jp.path / ".jaxperf" / "baseline.json"
    capsys.readouterr()
    code = main(
        ["compare", str(baseline), "run.json", "--markdown", "compare.md", "--timing", "report"]
    )
    assert code == 1
    written = (jp.path / "run.md").read_text()
    assert "### Regressions (1)" in written and "test_grows" in written
    assert (jp.path / "compare.md").read_text() == written
