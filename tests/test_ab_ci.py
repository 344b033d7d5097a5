"""examples/ci/github-actions.yml, run here: every `run:` line of the workflow, in order, on a
pull request made in a small repository (base commit with a committed baseline, head commit
with a change), with the GitHub expressions filled in as GitHub fills them in.

GitHub itself cannot be reached, so two things stand in for it: the checkout is the test's
repository (its whole history, as `fetch-depth: 0` gives), and the install step runs with
pip offline and as a dry run (PIP_NO_INDEX, PIP_DRY_RUN): pip resolves the command for real,
and PYTHONPATH gives what the editable install would (the package importable from the
checkout, this plugin from its source)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_valgrind
from test_ab import CORE, TESTS, commit_files, environment, git, new_repo, worktrees

WORKFLOW = Path(__file__).resolve().parent.parent / "examples" / "ci" / "github-actions.yml"
BIN = Path(sys.executable).parent

# A build backend kept in the repository, so that pip can prepare the package's metadata
# offline (the real project would use hatchling or setuptools from the index).
BACKEND = """\
import os

NAME, VERSION = "tinypkg", "0.1"


def _metadata(directory):
    info = os.path.join(directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as fh:
        fh.write(f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n")
    return os.path.basename(info)


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _metadata(metadata_directory)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError("this test only makes dry runs")


build_editable = build_wheel
"""
PYPROJECT = """\
[build-system]
requires = []
build-backend = "tiny_backend"
backend-path = ["_backend"]

[project]
name = "tinypkg"
version = "0.1"
"""
# Timings never fail the counts step here: it runs beside other tests.
INI = """\
[pytest]
jaxperf_min_rounds = 5
jaxperf_max_time = 0.02
jaxperf_compile_rtol = 1000
jaxperf_runtime_rtol = 1000
"""

# The pull request's repository: a package, its tests, and what pip needs offline.
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE,
    "tests/test_core.py": TESTS,
    "pytest.ini": INI,
    "pyproject.toml": PYPROJECT,
    "_backend/tiny_backend.py": BACKEND,
    ".gitignore": "*.egg-info/\n.jaxperf/*.lock\n",
}


def run_lines(text: str) -> list[str]:
    """The workflow's `run:` commands, in order (each on one line, as this workflow has them)."""
    return [m.group(1) for m in re.finditer(r"^\s*(?:-\s+)?run:\s*(\S.*)$", text, re.M)]


def job(name: str) -> str:
    """The text of one job of the workflow (from its name to the next job's)."""
    text = WORKFLOW.read_text()
    start = text.index(f"\n  {name}:\n")
    end = re.search(r"\n  \S[^\n]*:\n", text[start + 1 :])
    return text[start : start + 1 + end.start()] if end else text[start:]


def github(command: str, expressions: dict[str, str]) -> str:
    """`${{ expr }}` replaced as GitHub does before the shell sees the line."""

    def value(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        assert expr in expressions, f"unknown expression in a run line: {expr}"
        return expressions[expr]

    return re.sub(r"\$\{\{(.*?)\}\}", value, command)


def test_the_workflow_checks_out_history_and_runs_both_gates() -> None:
    text = WORKFLOW.read_text()
    assert re.search(r"^on:\n  pull_request:", text, re.M)
    assert "fetch-depth: 0" in text  # jaxperf ab needs the base commit
    commands = run_lines(job("jaxperf"))
    assert [c.split()[0] for c in commands] == ["pip", "pytest", "jaxperf"]
    assert "--base ${{ github.event.pull_request.base.sha }}" in commands[2]
    assert run_lines(text) == commands + run_lines(job("instructions"))


def test_the_documented_recipes_are_the_workflow() -> None:
    docs = WORKFLOW.parent.parent.parent / "docs"
    assert run_lines((docs / "ab.md").read_text()) == run_lines(job("jaxperf"))
    assert run_lines((docs / "instructions.md").read_text()) == run_lines(job("instructions"))


@pytest.mark.e2e
def test_every_command_of_the_workflow_runs(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "checkout")
    base = commit_files(root, FILES, "base")
    env = environment(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=f"{environment()['PYTHONPATH']}{os.pathsep}{root}",
        PIP_NO_INDEX="1",
        PIP_DRY_RUN="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary.md"),
    )
    # The committed baseline, saved on the base commit.
    saved = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxperf",
         "--jaxperf-save"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stdout + saved.stderr
    commit_files(root, {}, "baseline")
    base = git(root, "rev-parse", "HEAD").strip()
    # The pull request: a change that keeps the counts.
    commit_files(root, {"pkg/core.py": '"""Scaling and work."""\n' + CORE}, "a docstring")

    outputs = []
    for command in run_lines(job("jaxperf")):
        line = github(command, {"github.event.pull_request.base.sha": base})
        done = subprocess.run(
            ["bash", "-e", "-c", line],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        outputs.append((line, done))
    (pip_line, pip), (pytest_line, counts), (ab_line, ab) = outputs
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert "Would install tinypkg-0.1" in pip.stdout
    assert counts.returncode == 0, counts.stdout + counts.stderr
    assert "jaxperf: 0 regressions" in counts.stdout
    # Runtime is measured, so the verdict is the machine's; the counts are not.
    assert ab.returncode in (0, 1), ab.stdout + ab.stderr
    assert ab_line.startswith(f"jaxperf ab --base {base} --json jaxperf-ab.json")
    report = json.loads((root / "jaxperf-ab.json").read_text())
    assert report["base"]["commit"] == base
    assert report["rounds"] >= 1
    counted = [r for r in report["rows"] if r["metric"] in ("traces", "compiles")]
    assert counted and all(r["verdict"] == "ok" for r in counted)
    assert json.loads((root / "jaxperf-report.json").read_text())["tests"]
    # Both steps wrote to the one step summary of the job.
    summary = (tmp_path / "step_summary.md").read_text()
    assert summary.index("jaxperf") < summary.index("### jaxperf ab: head")
    assert worktrees(root) == [str(root)]


@pytest.mark.e2e
@needs_valgrind
@pytest.mark.skipif(shutil.which("apt-get") is None, reason="the job installs valgrind with apt")
def test_every_command_of_the_instructions_job_runs(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "checkout")
    commit_files(root, FILES, "base")
    # GitHub's runners have passwordless sudo; apt only simulates here (APT_CONFIG), so that
    # the line runs for real against this machine's package lists without changing them.
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (shims / "sudo").chmod(0o755)
    (tmp_path / "apt.conf").write_text('APT::Get::Simulate "true";\n')
    env = environment(
        PATH=os.pathsep.join([str(shims), str(BIN), os.environ.get("PATH", "")]),
        PYTHONPATH=f"{environment()['PYTHONPATH']}{os.pathsep}{root}",
        PIP_NO_INDEX="1",
        PIP_DRY_RUN="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        APT_CONFIG=str(tmp_path / "apt.conf"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary.md"),
    )
    saved = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxperf",
         "--jaxperf-runtime-clock=instructions", "--jaxperf-save"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stdout + saved.stderr
    commit_files(root, {}, "the instructions baseline")
    commit_files(root, {"pkg/core.py": '"""Scaling and work."""\n' + CORE}, "a docstring")
    done = []
    for line in run_lines(job("instructions")):
        done.append(subprocess.run(["bash", "-e", "-c", line], cwd=root, env=env,
                                   capture_output=True, text=True, timeout=300))  # fmt: skip
    apt, pip, counted = done
    assert apt.returncode == 0, apt.stdout + apt.stderr
    assert "valgrind" in apt.stdout
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert counted.returncode == 0, counted.stdout + counted.stderr
    assert "jaxperf: 0 regressions" in counted.stdout
    assert re.search(r"instructions per call\b.* not gated", counted.stdout) is None
    assert "instructions per call" in (tmp_path / "step_summary.md").read_text()
