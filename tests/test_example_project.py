"""End to end: the example project passes against its committed baseline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import lit, read_json

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    dest = pytester.path / "example_project"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    monkeypatch.chdir(dest)
    monkeypatch.setenv("PYTHONPATH", str(dest))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    return dest


def test_clean_example_passes_against_committed_baseline(
    pytester: pytest.Pytester, example: Path
) -> None:
    committed = (example / ".jaxperf" / "baseline.json").read_text()
    # Counts are gated exactly; the compile-time margin is widened because this suite
    # itself runs under xdist, which slows the inner run's compiles.
    result = pytester.runpytest_subprocess(
        "--jaxperf",
        "--jaxperf-compile-rtol=10",
        "--jaxperf-json=run.json",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(lit("jaxperf: 0 regressions, *, 0 new, *"))
    run = read_json(example / "run.json")
    base = read_json(example / ".jaxperf" / "baseline.json")
    assert set(run["tests"]) == set(base["tests"])
    for nodeid, rec in run["tests"].items():
        assert (rec["traces"], rec["compiles"]) == (
            base["tests"][nodeid]["traces"],
            base["tests"][nodeid]["compiles"],
        )
    assert (example / ".jaxperf" / "baseline.json").read_text() == committed
