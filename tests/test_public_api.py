"""The names `pytest_jaxperf` exports: each resolves, loading a run file works as documented,
and importing the package loads no jax."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_jaxperf
from pytest_jaxperf import RunRecord, load_run
from pytest_jaxperf.storage import store

EXAMPLE_BASELINE = Path(__file__).resolve().parents[1] / "example_project/.jaxperf/baseline.json"


@pytest.mark.parametrize("name", pytest_jaxperf.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    value = getattr(pytest_jaxperf, name)
    assert value == "pytest-jaxperf/7" if name == "SCHEMA" else value.__name__ == name


def test_load_run_reads_the_committed_baseline() -> None:
    run = load_run(str(EXAMPLE_BASELINE))
    assert isinstance(run, RunRecord)
    data = json.loads(EXAMPLE_BASELINE.read_text())
    assert sorted(run.tests) == sorted(data["tests"])
    first = sorted(run.tests)[0]
    assert run.tests[first].compiles == data["tests"][first]["compiles"]


def test_load_run_says_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.json: no such file"):
        load_run(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "pytest-jaxperf/4", "tests": {}')
    with pytest.raises(ValueError, match=r"broken\.json is not valid JSON .*pytest-jaxperf file"):
        load_run(broken)
    assert broken.read_text().endswith("{}")  # nothing written


def test_a_saved_run_loads_back_equal(tmp_path: Path) -> None:
    run = load_run(EXAMPLE_BASELINE)
    store.save(tmp_path / "copy.json", run)
    assert load_run(tmp_path / "copy.json") == run


@pytest.mark.e2e
def test_importing_the_api_loads_no_jax() -> None:
    code = (
        "import sys, pytest_jaxperf\n"
        "pytest_jaxperf.load_run, pytest_jaxperf.RunRecord, pytest_jaxperf.BenchmarkResult\n"
        "print('jax' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"
