"""`jaxperf ab` end to end: a small git repository with a tiny JAX package and two commits,
measured with the command as a user runs it (fresh processes, one round unless a test needs
more, tiny benchmark budgets), and its verdicts, outputs, exit statuses and cleanup.

Timings are never asserted beyond wide margins: a runtime regression here is 40x the work, and
unchanged code runs with thresholds no noise reaches."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_valgrind

import pytest_jaxperf
from pytest_jaxperf.ab import command, cpus, render, stats, table
from pytest_jaxperf.cli import main
from pytest_jaxperf.model import BenchmarkEntry, RunRecord

PLUGIN_SOURCE = Path(pytest_jaxperf.__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
INI = "[pytest]\njaxperf_min_rounds = 5\njaxperf_max_time = 0.02\n"
CORE = """\
import jax
import jax.numpy as jnp


@jax.jit
def scale(x):
    return x * 2.0


@jax.jit
def work(x):
    return jnp.tanh(x @ x)
"""
# The head commit's traps: `scale` jitted anew on every call (a retrace per call), `work`
# 40 chained matmuls where there was one.
CORE_HEAD = """\
import jax
import jax.numpy as jnp


def scale(x):
    return jax.jit(lambda y: y * 2.0)(x)


@jax.jit
def work(x):
    return jax.lax.fori_loop(0, 40, lambda i, y: jnp.tanh(y @ x), x)
"""
TESTS = """\
import jax.numpy as jnp
import pytest
from pkg.core import scale, work


@pytest.mark.jaxperf
def test_scale():
    scale(jnp.ones(3))
    scale(jnp.ones(3))


def test_work(jaxperf):
    jaxperf.benchmark(work, jnp.ones((32, 32)) / 32, label="work")


def test_not_recorded():
    pass
"""
AFFINITY_CONFTEST = """\
import os


def pytest_sessionstart(session):
    with open(os.environ["AFFINITY_FILE"], "a") as out:
        out.write(str(sorted(os.sched_getaffinity(0))) + "\\n")
"""
NODE_SCALE, NODE_WORK = "tests/test_core.py::test_scale", "tests/test_core.py::test_work"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def commit_files(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def project(prefix: str = "") -> dict[str, str]:
    return {
        f"{prefix}pkg/__init__.py": "",
        f"{prefix}pkg/core.py": CORE,
        "tests/test_core.py": TESTS,
        "pytest.ini": INI,
    }


def new_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    return root


def environment(**extra: str) -> dict[str, str]:
    """The command's environment: this plugin's source first on sys.path (also in the runs it
    starts), CPU only, nothing from the outer pytest or CI."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "JAXPERF_", "GITHUB_"))}  # fmt: skip
    env.update(GIT_ENV)
    env["PYTHONPATH"] = str(PLUGIN_SOURCE)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    if "TMPDIR" in extra:  # a directory of the test's own: its CPU locks there too
        env.setdefault("JAXPERF_AB_LOCK_DIR", extra["TMPDIR"])
    return env


def ab(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "ab", *args],
        cwd=cwd,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def worktrees(root: Path) -> list[str]:
    listing = git(root, "worktree", "list", "--porcelain").splitlines()
    return [line.split(" ", 1)[1] for line in listing if line.startswith("worktree ")]


def leftovers(text: str) -> list[Path]:
    """The temporary directories the command said it used, if they still exist."""
    found = re.findall(r"checked out in (\S+)/base;", text)
    return [Path(p) for p in found if Path(p).exists()]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose head commit retraces `scale` and does 40x the work in `work`;
    returns (its top level, the base commit)."""
    root = new_repo(tmp_path / "repo")
    base = commit_files(root, project(), "base")
    commit_files(root, {"pkg/core.py": CORE_HEAD}, "head: two traps")
    return root, base


def table_rows(out: str) -> dict[tuple[str, str], list[str]]:
    """{(test, metric): [base, head, ratio, interval..., verdict]} from the terminal table."""
    rows: dict[tuple[str, str], list[str]] = {}
    test = ""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("test  "))
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith("-- "):  # "-- 12 rows ok --"
            continue
        if not line.startswith(" "):
            test, line = line.split(None, 1)[0], line[len(line.split(None, 1)[0]) :]
        cells = re.split(r"\s{2,}", line.strip())
        rows[(test, cells[0])] = cells[1:]
    return rows


def fold_head(lines: list[str]) -> str:
    """The terminal table's column titles."""
    return next(line for line in lines if line.startswith("test  "))


@pytest.mark.e2e
def test_a_retrace_and_a_slower_benchmark_regress_and_nothing_is_left_behind(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    root, base = repo
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    status_before = git(root, "status", "--porcelain", "--ignored")
    # A temporary directory of its own: no other jaxperf ab's CPU lock in it.
    (tmp_path / "tmp").mkdir()
    done = ab(
        root,
        "--base", base,
        "--rounds", "1",
        "--json", str(tmp_path / "ab.json"),
        "--markdown", str(summary),
        "--reports-dir", str(tmp_path / "reports"),
        GITHUB_STEP_SUMMARY=str(summary),
        TMPDIR=str(tmp_path / "tmp"),
        # Run from a git hook (pre-push), which exports the repository's own index ...
        GIT_INDEX_FILE=str(root / ".git" / "index"),
        # ... with the user's flags for their own runs, which must not reach ours.
        PYTEST_ADDOPTS="--jaxperf-save --jaxperf-history=h.jsonl --jaxperf-markdown=m.md "
        "--jaxperf-export=bencher:e.json",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    out = done.stdout
    rows = table_rows(out)
    assert rows[(NODE_SCALE, "traces")] == ["1", "2", "REGRESSED"]
    assert rows[(NODE_SCALE, "compiles")] == ["1", "2", "REGRESSED"]
    # One round: the runtime (40x the work) is shown, not judged.
    runtime = rows[(NODE_WORK, "runtime work")]
    assert runtime[-1] == "1 round"
    assert rows[(NODE_WORK, "traces")] == ["1", "1", "ok"]
    assert ("tests/test_core.py::test_not_recorded", "traces") not in rows  # not recorded
    # The cause of the retrace, from the plugin's own rules.
    assert re.search(r"cause: .*function re-defined on every call", out)
    # The head's fori_loop is a bigger program too: its program metrics regress as well, and
    # so do the function's sizes.
    assert rows[(NODE_WORK, "StableHLO ops")][-1] == "REGRESSED"
    # Regressions count tests, as the gate counts them, each with the metrics that regressed.
    data = json.loads((tmp_path / "ab.json").read_text())
    assert data["schema"] == render.SCHEMA and data["regressions"] == 2
    assert data["regressed"][NODE_SCALE] == ["traces", "compiles"]
    grown = data["regressed"][NODE_WORK]
    assert "StableHLO ops" in grown and len(grown) == 7
    assert out.splitlines()[-1].startswith(
        "jaxperf ab: 2 regressions (test_scale: traces, compiles; test_work: "
        + ", ".join(grown)
        + "), 0 improvements; 2 tests in 1 round (2 runs, "
    )
    # The rows not ok (changed, or not judged in one round) first; then the ok ones.
    lines = out.splitlines()
    ok_rows = [r for r in data["rows"] if r["verdict"] == "ok"]
    fold = lines.index(f"-- {len(ok_rows)} rows ok --")
    assert [line.split()[-1] for line in lines[fold + 1 : fold + 1 + len(ok_rows)]] == ["ok"] * len(
        ok_rows
    )
    assert {line.split()[-1] for line in lines[lines.index(fold_head(lines)) + 1 : fold]} == {
        "REGRESSED",
        "round",
    }
    # Outputs: the step summary appended to, the JSON, the kept reports.
    text = summary.read_text()
    assert text.startswith("earlier step\n\n### jaxperf ab: head ")
    assert "\n**2 regressions** (`test_scale`: traces, compiles; `test_work`: " in text
    assert f"| `{NODE_SCALE}` | traces | 1 | 2 |  |  | **REGRESSED** |" in text
    # The ok rows folded away in the markdown; no runtime judged in one round.
    folded = text[text.index(f"<details><summary>{len(ok_rows)} rows ok</summary>") :]
    assert f"| `{NODE_WORK}` | traces | 1 | 1 |  |  | ok |" in folded
    assert "| ok |" not in text[: text.index("<details>")]
    assert "Runtime:" not in text
    assert data["base"]["commit"] == base and data["rounds"] == 1
    # By default every run is confined to one CPU, the highest the command may use.
    cpu = max(os.sched_getaffinity(0))
    assert data["cpus"] == [cpu]
    assert f"\n1 round on CPU {cpu}, 95% intervals;" in out
    assert f"; 1 round on CPU {cpu}, 95% intervals," in text
    assert [(r["side"], r["round"]) for r in data["runs"]] == [("base", 1), ("head", 1)]
    verdict = {(r["test"], r["metric"], r["benchmark"]): r for r in data["rows"]}
    work_row = verdict[(NODE_WORK, "runtime", "work")]
    assert work_row["verdict"] == "1 round" and work_row["ratio"] is None
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "base-1.json",
        "head-1.json",
    ]
    # The base run measured the base tree, the head run the head tree.
    kept = json.loads((tmp_path / "reports" / "base-1.json").read_text())
    assert kept["tests"][NODE_SCALE]["traces"] == 1
    # Both trees ran here: no reference compile was measured for a comparison across machines.
    assert "reference_compile_cpu_s" not in kept["environment"]
    # Nothing left behind: no worktree, no temporary directory, the user's tree as it was.
    assert worktrees(root) == [str(root)]
    assert leftovers(out) == []
    assert git(root, "status", "--porcelain", "--ignored") == status_before


@pytest.mark.e2e
def test_unchanged_code_in_a_src_layout_sub_project_passes(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "repo")
    sub = {f"sub/{k}": v for k, v in project("src/").items()}
    # Each run says which CPUs it may use.
    sub["sub/tests/conftest.py"] = AFFINITY_CONFTEST
    base = commit_files(root, sub, "base")
    commit_files(root, {"README.md": "a change that is no code\n"}, "docs")
    every = sorted(os.sched_getaffinity(0))
    seen = tmp_path / "affinity.txt"
    # Default --path: sub/ and sub/src; the package is only in src/ (not installed).
    done = ab(
        root / "sub",
        "--base", base,
        "--rounds", "1",
        "--runtime-threshold", "50",
        "--cpus", "all",
        "--json", str(tmp_path / "ab.json"),
        "--markdown", str(tmp_path / "ab.md"),
        "--", "-k", "scale or work",
        AFFINITY_FILE=str(seen),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # --cpus all: the runs (base and head) may use every CPU the command may.
    assert seen.read_text().splitlines() == [str(every), str(every)]
    assert "\n1 round, 95% intervals;" in done.stdout
    assert json.loads((tmp_path / "ab.json").read_text())["cpus"] is None
    assert "; 1 round, 95% intervals," in (tmp_path / "ab.md").read_text()
    rows = table_rows(done.stdout)
    assert rows[(NODE_SCALE, "traces")] == ["1", "1", "ok"]
    assert rows[(NODE_WORK, "runtime work")][-1] == "1 round"
    assert rows[(NODE_WORK, "compile time")][-1] == "1 round"
    assert f"jaxperf ab: base {base[:10]} ({base}) vs head " in done.stdout
    assert " in sub; pytest -k scale or work" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("jaxperf ab: 0 regressions, 0 improvements;")
    assert worktrees(root) == [str(root)]


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="confining needs Linux")
def test_a_second_jaxperf_ab_on_the_machine_takes_another_cpu(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "repo")
    files = project()
    files["tests/conftest.py"] = AFFINITY_CONFTEST
    base = commit_files(root, files, "base")
    seen = tmp_path / "affinity.txt"
    (tmp_path / "tmp").mkdir()
    allowed = sorted(os.sched_getaffinity(0))
    # Another jaxperf ab holds the highest CPU for as long as this one runs.
    with lock_held_elsewhere(tmp_path / "tmp" / cpus.LOCK_NAME.format(allowed[-1])):
        done = ab(
            root,
            "--base", base,
            "--rounds", "2",
            "--runtime-threshold", "50",
            "--compile-threshold", "50",  # this test is about CPUs: no timing verdict fails it
            "--json", str(tmp_path / "ab.json"),
            "--", "-k", "work",
            AFFINITY_FILE=str(seen),
            TMPDIR=str(tmp_path / "tmp"),
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    if len(allowed) >= 2:
        cpu = allowed[-2]  # the next highest
        assert "in use by another jaxperf ab" not in done.stdout
    else:
        cpu = allowed[-1]
        assert (
            f"jaxperf ab: every CPU this may use ({cpu}) is in use by another jaxperf ab; the "
            f"runs share CPU {cpu} with one (pass --cpus to choose)"
        ) in done.stdout
    assert seen.read_text().splitlines() == [str([cpu])] * 4
    data = json.loads((tmp_path / "ab.json").read_text())
    assert data["cpus"] == [cpu]
    assert f"\n2 rounds on CPU {cpu}, 95% intervals;" in done.stdout
    # One CPU, two rounds: runtime read on each run's CPU seconds per call.
    assert data["runtime_clock"] == "cpu"
    assert "50x (runtime, CPU seconds per call)" in done.stdout
    runtime = [r for r in data["rows"] if r["metric"] == "runtime"]
    assert [(r["benchmark"], r["clock"], r["ratio"]["rounds"]) for r in runtime] == [
        ("work", "cpu", 2)
    ]


@pytest.mark.e2e
def test_a_run_that_imports_the_other_trees_code_stops_with_its_origin(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    commit_files(
        root,
        {
            "tools/helpers.py": "VALUE = 1\n",
            "tests/test_helpers.py": "from helpers import VALUE\n\n\n"
            "def test_value(jaxperf):\n    assert VALUE == 1\n",
        },
        "helpers outside --path",
    )
    # A PYTHONPATH that names the checkout: the base run would test the head's helpers.
    done = ab(root, "--base", "HEAD", "--rounds", "1", PYTHONPATH=f"{PLUGIN_SOURCE}:{root}/tools")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(
        f"jaxperf ab: the base run imported helpers from {root}/tools/helpers.py, in the head "
        f"tree {root}: pass --path with the directory that holds helpers"
    )
    assert worktrees(root) == [str(root)]
    assert leftovers(done.stdout) == []


@pytest.mark.e2e
def test_a_run_that_fails_is_shown_with_its_output(repo: tuple[Path, str]) -> None:
    root, base = repo
    done = ab(root, "--base", base, "--", "--no-such-option")
    assert done.returncode == 2
    assert re.match(
        r"jaxperf ab: the base run \(round 1: -m pytest in .*/base\) exited with status 4 "
        r"\(usage error\); its output ends:\n",
        done.stderr,
    )
    assert "  | ERROR: usage: " in done.stderr
    assert "unrecognized arguments: --no-such-option" in done.stderr
    assert worktrees(root) == [str(root)]


@pytest.mark.e2e
def test_no_recorded_test_is_a_usage_error(repo: tuple[Path, str]) -> None:
    root, base = repo
    done = ab(root, "--base", base, "--", "-k", "not_recorded")
    assert done.returncode == 2
    assert done.stderr == (
        "jaxperf ab: no test was recorded in either tree: mark tests with @pytest.mark.jaxperf "
        "or use the jaxperf fixture, or record all with -- --jaxperf-all\n"
    )
    assert f"round 1/{command.DEFAULT_ROUNDS}" in done.stdout  # stopped after the first round


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_removes_the_worktree(repo: tuple[Path, str], signum: int) -> None:
    root, base = repo
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_jaxperf", "ab", "--base", base],
        cwd=root,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a suite started in the background (`pytest &`, nohup) ignores
        # SIGINT, the command would inherit that, never see the Ctrl-C, and end with 1.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # printed once the worktree exists and the runs start
    assert "checked out in" in first
    assert len(worktrees(root)) == 2
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.endswith("jaxperf ab: interrupted; the base worktree was removed\n")
    assert worktrees(root) == [str(root)]
    assert leftovers(first + out) == []


def children(pid: int, running: str) -> list[int]:
    """The processes whose parent is `pid` and whose command line holds `running` (Linux
    /proc): exec'd, not forked only."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid and running in (stat.parent / "cmdline").read_text():
                found.append(int(stat.parent.name))
    return found


def running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie (which whoever adopted it has yet to reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_killed_command_leaves_no_run_and_the_next_sweeps_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = new_repo(tmp_path / "repo")
    slow = "import time\n\n\ndef pytest_sessionstart(session):\n    time.sleep(120)\n"
    base = commit_files(root, {**project(), "conftest.py": slow}, "base: a slow session")
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_jaxperf", "ab", "--base", base],
        cwd=root,
        env=environment(TMPDIR=str(own_tmp)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert "checked out in" in first
    deadline = time.monotonic() + 30
    while not (runs := children(proc.pid, "pytest_jaxperf.ab.worker")):
        assert time.monotonic() < deadline, "no pytest run started"
        time.sleep(0.05)
    proc.kill()  # SIGKILL: no clean-up of its own can run
    proc.communicate()
    deadline = time.monotonic() + 15
    while any(map(running, runs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(running, runs))
    # What SIGKILL left behind: the temporary directory and the worktree git knows of.
    (left,) = leftovers(first)
    assert len(worktrees(root)) == 2
    # The next jaxperf ab removes them, and says so (this one stops at its slow base run).
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TMPDIR", str(own_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    monkeypatch.chdir(root)
    commit_files(root, {"conftest.py": ""}, "head: a quick session")
    assert main(["ab", "--base", "HEAD", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"jaxperf ab: removed what 1 killed jaxperf ab command(s) left behind: {left}\n"
    )
    assert not left.exists()
    assert worktrees(root) == [str(root)]
    assert [p.name for p in own_tmp.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.e2e
def test_a_pytest_config_above_the_temporary_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A project without a pytest configuration file of its own ...
    root = new_repo(tmp_path / "repo")
    files = {k: v for k, v in project().items() if k != "pytest.ini"}
    base = commit_files(root, files, "base")
    # ... and another user's files in the temporary directory.
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    (shared_tmp / "pytest.ini").write_text("[pytest]\naddopts = -p no:jaxperf\n")
    ran = tmp_path / "their-conftest-ran"
    (shared_tmp / "conftest.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    assert in_process(root, monkeypatch, "--base", base) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"jaxperf ab: the base runs would be configured by {shared_tmp / 'pytest.ini'}, above "
        "the temporary directory they run in; remove it, set TMPDIR"
    ), err
    assert not ran.exists()
    assert worktrees(root) == [str(root)]
    # With a configuration of its own, the project's runs never read the stray one.
    commit_files(root, {"pytest.ini": INI}, "a pytest.ini")
    assert in_process(root, monkeypatch, "--base", "HEAD", "--rounds", "1") == 0
    assert not ran.exists()


@pytest.mark.e2e
def test_submodules_missing_from_the_base_worktree_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = new_repo(tmp_path / "repo")
    gitmodules = '[submodule "vendor"]\n\tpath = vendor\n\turl = ../vendor\n'
    commit_files(root, {**project(), ".gitmodules": gitmodules}, "base")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(cpus.LOCK_DIR_ENV, str(tmp_path))
    assert in_process(root, monkeypatch, "--base", "HEAD", "--rounds", "1") == 0
    assert (
        "jaxperf ab: note: git submodules are not checked out in the base worktree (their "
        "directories are empty there): an import of a submodule's code fails in the base "
        "runs, or is stopped by the import check\n"
    ) in capsys.readouterr().out


def in_process(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.chdir(cwd)
    return main(["ab", *args])


@pytest.mark.e2e
def test_usage_errors_are_one_line_and_exit_2(
    repo: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, base = repo
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    cases = {
        ("--base", "nope"): f"jaxperf ab: --base nope: no such commit in {root}; fetch it first "
        "(git fetch origin), or check the spelling",
        ("--base", base, "--rounds", "0"): "jaxperf: argument --rounds: expected a whole number "
        ">= 1, got '0' (see jaxperf ab --help)",
        ("--base", base, "--runtime-threshold", "0.9"): "jaxperf: argument --runtime-threshold: "
        "expected a ratio >= 1 such as 1.1, got '0.9' (see jaxperf ab --help)",
        ("--base", base, "--path", "/abs"): "jaxperf ab: --path /abs: must be relative to where "
        "you run jaxperf ab, so that it names a directory in each tree",
        ("--base", base, "--path", "lib"): f"jaxperf ab: --path lib: no such directory in the "
        f"head tree ({root / 'lib'})",
        ("--base", base, "--path", "tests"): "jaxperf ab: no Python package (a directory with "
        f"__init__.py, or a module) in the head tree's --path ({root / 'tests'}); pass --path "
        "with the directory that holds the package your tests import (src-layout: --path src)",
        ("--base", base, "--json", str(tmp_path)): f"jaxperf ab: --json {tmp_path}: is a "
        "directory, not a file; pass the path of a file",
        ("--base", base, "--json", "o.txt", "--markdown", "o.txt"): "jaxperf ab: --json and "
        f"--markdown both name {root / 'o.txt'}: the run would write one over the other; give "
        "each its own path",
        ("--base", base, "-k", "x"): "jaxperf: unrecognized arguments: -k (see jaxperf --help)",
        ("--base", base, "--cpus", "1-"): "jaxperf: argument --cpus: expected all, or CPU "
        "numbers as taskset -c takes them, such as 1, 0-3 or 0,2, got '1-' (see jaxperf ab "
        "--help)",
        ("--base", base, "--cpus", "0-999999999"): "jaxperf: argument --cpus: expected all, or "
        "CPU numbers as taskset -c takes them, such as 1, 0-3 or 0,2, CPU numbers up to 65535, "
        "got '0-999999999' (see jaxperf ab --help)",
        ("--base", base, "--cpus", "4096"): "jaxperf ab: --cpus 4096: CPU 4096 is not among "
        f"those this process may use ({cpus.label(os.sched_getaffinity(0))}); pick from those",
    }
    for args, message in cases.items():
        assert in_process(root, monkeypatch, *args) == 2, args
        assert capsys.readouterr().err == message + "\n", args
    # A full disk where the worktree would go: one line, not a traceback.
    import errno

    def full(*args: object, **kwargs: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device", "/tmp/jaxperf-ab-x")

    with monkeypatch.context() as m:
        m.setattr(tempfile, "mkdtemp", full)
        assert in_process(root, monkeypatch, "--base", base) == 2
    assert capsys.readouterr().err == (
        "jaxperf ab: [Errno 28] No space left on device: '/tmp/jaxperf-ab-x'; nothing was "
        "compared\n"
    )
    assert in_process(tmp_path, monkeypatch, "--base", "HEAD") == 2
    assert "is not inside a git working tree" in capsys.readouterr().err
    # A sub-project the base commit does not have.
    commit_files(root, {"new/pkg/__init__.py": "", "new/pytest.ini": INI}, "a new project")
    assert in_process(root / "new", monkeypatch, "--base", base) == 2
    assert capsys.readouterr().err == (
        f"jaxperf ab: new does not exist in the base commit {base[:10]} ({base}); run jaxperf "
        "ab from a directory both commits have\n"
    )
    assert worktrees(root) == [str(root)]


# -- verdicts and rendering, from hand-built reports ----------------------------------------


def report_pair(base_factor: float, head_factor: float, seed: int) -> tuple[RunRecord, RunRecord]:
    from _jaxperf_data import bench, fn
    from _records import rec

    def one(factor: float, s: int) -> RunRecord:
        b = bench(1e-3 * factor, spread=0.02, n=30)
        assert b.runtime is not None
        samples = tuple(v * (1 + 0.001 * ((s * 31 + i) % 7)) for i, v in
                        enumerate(b.runtime.samples_s))  # fmt: skip
        import dataclasses

        b = dataclasses.replace(b, runtime=dataclasses.replace(b.runtime, samples_s=samples))
        return RunRecord(
            tests={"t.py::test_a": rec(fn("f", "m.py:1", compile_s=0.3), benchmarks={"f": b})}
        )

    return one(base_factor, seed), one(head_factor, seed + 1)


def ab_context(thresholds: table.Thresholds, **changes: Any) -> render.Context:
    """A Context of 3 rounds between two made-up commits, with `changes`."""
    fields: dict[str, Any] = {
        "base_ref": "main",
        "base_commit": "a" * 40,
        "head_commit": "b" * 40,
        "head_changed": 0,
        "project": ".",
        "rounds": 3,
        "thresholds": thresholds,
        "confidence": stats.CONFIDENCE,
    }
    return render.Context(**(fields | changes))


def test_a_count_a_run_could_not_measure_is_no_ok_row() -> None:
    rounds = [report_pair(1.0, 1.0, s) for s in range(2)]
    for _, head in rounds:
        head.environment["not_measured"] = {"traces": "hook missing"}
    comparison = table.compare_rounds(rounds, table.Thresholds(runtime=1.1, compile=1.5))
    by_metric = {r.metric: r.status for r in comparison.rows if r.benchmark is None}
    assert (by_metric["traces"], by_metric["compiles"]) == ("not measured", "ok")
    assert "t.py::test_a: traces not measured (hook missing): not gated" in comparison.notes
    assert not any("timed by jaxperf ab" in n for n in comparison.notes)


def test_one_round_shows_runtime_without_judging_it() -> None:
    # HEAD against HEAD beside other work (issue 34): one round read 1.56x [1.49, 3.44], its
    # interval from calls within each of the two processes, blind to the load between them.
    one_round = [report_pair(1.0, 1.56, 0)]
    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    comparison = table.compare_rounds(one_round, thresholds)
    row = next(r for r in comparison.rows if r.metric == "runtime")
    assert (row.status, row.ratio, row.clock) == ("1 round", None, "wall")
    assert row.base == pytest.approx(1.0e-3, rel=0.05)
    assert row.head == pytest.approx(1.56e-3, rel=0.05)
    assert comparison.regressions == []
    assert comparison.notes == [
        "timings measured in one round are shown, not judged: one round cannot see how much "
        "its two processes differ for reasons other than the code (load); --rounds 2 or more "
        "judges them"
    ]
    text = render.terminal(comparison, ab_context(thresholds, rounds=1))
    shown = next(line for line in text.splitlines() if "runtime f" in line)
    assert re.fullmatch(r"\s+runtime f\s+1\.0\d\d ms\s+1\.5\d\d ms\s+1 round", shown), shown
    assert text.splitlines()[-1].startswith("jaxperf ab: 0 regressions, 0 improvements;")
    # From two rounds the same slowdown is judged.
    two = table.compare_rounds([report_pair(1.0, 1.56, s) for s in range(2)], thresholds)
    assert [r.metric for r in two.regressions] == ["runtime"] and two.notes == []


def test_rows_from_reports_and_their_table(monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = [report_pair(1.0, 1.5, s) for s in range(3)]
    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    comparison = table.compare_rounds(rounds, thresholds)
    by_metric = {(r.metric, r.benchmark): r for r in comparison.rows}
    assert by_metric[("runtime", "f")].status == "REGRESSED"
    assert by_metric[("traces", None)].status == "ok"
    # Equal compile seconds in every round: a ratio of 1 with no spread at all.
    assert by_metric[("compile time", None)].status == "ok"
    assert [r.metric for r in comparison.regressions] == ["runtime"]
    context = ab_context(
        thresholds,
        head_changed=2,
        runs=tuple(render.RunTime(side, n, 1.0) for n in (1, 2, 3) for side in ("base", "head")),
        seconds=6.4,
    )
    text = render.terminal(comparison, context)
    assert text.splitlines()[0] == (
        "jaxperf ab: base aaaaaaaaaa (main) vs head bbbbbbbbbb + 2 uncommitted changes"
    )
    # The row that changed first, with the test's name; the ok rows after it.
    row = next(line for line in text.splitlines() if "runtime f" in line)
    assert re.fullmatch(
        r"t\.py::test_a\s+runtime f\s+1\.00\d ms\s+1\.50\d ms\s+1\.5\dx\s+\[1\.\d\d, 1\.\d\d\]"
        r"\s+REGRESSED",
        row,
    )
    assert text.splitlines()[text.splitlines().index(row) + 1] == "-- 3 rows ok --"
    assert text.splitlines()[-1] == (
        "jaxperf ab: 1 regression (test_a: runtime f), 0 improvements; 1 test in 3 rounds "
        "(6 runs, 6 s)"
    )
    md = render.markdown(comparison, context)
    assert "| `t.py::test_a` | traces | 1 | 1 |  |  | ok |" in md
    assert "**REGRESSED**" in md
    # In colour where pytest colours (PY_COLORS=1 here): the regressed row and the tally red.
    lines = render.terminal_lines(comparison, context)
    assert "".join(f"{t}\n" for t, _ in lines) == text
    for colours, expected in (("1", True), ("0", False)):
        monkeypatch.setenv("PY_COLORS", colours)
        out = io.StringIO()
        command.show(out, lines)
        shown = out.getvalue().splitlines()
        regressed = next(x for x in shown if "runtime f" in x)
        traces = next(x for x in shown if " traces " in x)
        assert ("\x1b[31m" in regressed, "\x1b[31m" in shown[-1]) == (expected, expected)
        assert "\x1b[" not in traces


def test_markdown_rows_stay_whole_whatever_a_label_or_test_id_holds() -> None:
    import dataclasses

    rounds = [report_pair(1.0, 1.5, s) for s in range(3)]
    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    found = table.compare_rounds(rounds, thresholds)
    nodeid = "t.py::test_`a`[x|y]"
    label = "f\n<!-- hides the rest"
    rows = [
        dataclasses.replace(
            r,
            test=nodeid,
            benchmark=label if r.benchmark else None,
            causes=("cause *with* <b>\nbreak",) if r.regressed else (),
        )
        for r in found.rows
    ]
    comparison = table.Comparison(rows=rows, notes=["a note\n| with a pipe"])
    md = render.markdown(comparison, ab_context(thresholds))
    lines = md.splitlines()
    shown = [line for line in lines if line.startswith("|")]
    # One table line per row, plus the header and its rule of each table (not ok, ok).
    assert len(shown) == len(rows) + 4
    assert re.search(r"(?<!\\)<!--", md) is None and "\\<!-- hides the rest" in md
    assert shown[2].startswith("| ``t.py::test_`a`[x\\|y]`` | ")
    assert "- ``t.py::test_`a`[x|y]``: cause \\*with\\* \\<b> break" in lines
    assert "- note: a note \\| with a pipe" in lines


def story_rows() -> list[table.Row]:
    """A table of three tests: test_a's counts regressed, test_b's runtime regressed and its
    compile time improved, test_c's program shrank; every other row ok."""
    slower = stats.Ratio(2.23, 1.9, 2.5, 3, base=1e-3, head=2.23e-3)
    faster = stats.Ratio(0.5, 0.4, 0.6, 3, base=0.4, head=0.2)
    same = stats.Ratio(1.0, 0.95, 1.05, 3, base=1e-3, head=1e-3)
    a, b, c = "t.py::test_a", "t.py::test_b", "u.py::test_c"
    return [
        table.Row(a, "traces", "REGRESSED", 1, 3),
        table.Row(a, "compiles", "REGRESSED", 1, 3),
        table.Row(a, "runtime", "ok", 1e-3, 1e-3, same, benchmark="f", clock="cpu"),
        table.Row(b, "traces", "ok", 1, 1),
        table.Row(b, "compiles", "ok", 1, 1),
        table.Row(b, "compile time", "improved", 0.4, 0.2, faster),
        table.Row(b, "runtime", "REGRESSED", 1e-3, 2.23e-3, slower, benchmark="g", clock="cpu"),
        table.Row(c, "traces", "ok", 1, 1),
        table.Row(c, "StableHLO ops", "improved", 40, 10),
    ]


def test_regressions_count_tests_as_the_gate_does_and_name_their_metrics() -> None:
    comparison = table.Comparison(rows=story_rows())
    assert len(comparison.regressions) == 3  # rows
    context = ab_context(
        table.Thresholds(runtime=1.1, compile=1.5),
        runs=tuple(render.RunTime(side, n, 1.0) for n in (1, 2, 3) for side in ("base", "head")),
        seconds=21.2,
    )
    text = render.terminal(comparison, context)
    # test_b has an improved metric too, but a regressed test is no improvement (the gate's
    # statuses): one improvement, test_c.
    assert text.splitlines()[-1] == (
        "jaxperf ab: 2 regressions (test_a: traces, compiles; test_b: runtime g), "
        "1 improvement (test_c: StableHLO ops); 3 tests in 3 rounds (6 runs, 21 s)"
    )
    md = render.markdown(comparison, context)
    assert md.splitlines()[2].startswith(
        "**2 regressions** (`test_a`: traces, compiles; `test_b`: runtime g), 1 improvement "
        "(`test_c`: StableHLO ops); 3 rounds, 95% intervals,"
    )
    data = render.to_json(comparison, context)
    assert (data["regressions"], data["improvements"]) == (2, 1)
    assert data["regressed"] == {"t.py::test_a": ["traces", "compiles"],
                                 "t.py::test_b": ["runtime g"]}  # fmt: skip
    assert data["improved"] == {"u.py::test_c": ["StableHLO ops"]}
    assert len(data["rows"]) == 9  # every row, changed or not


def test_the_tally_names_a_shared_short_name_in_full_and_at_most_five_tests() -> None:
    names = ("a.py::test_x", "b.py::test_x", *(f"c.py::test_{n}" for n in range(1, 5)))
    rows = [table.Row(name, "traces", "REGRESSED", 1, 2) for name in names]
    line = render.tally(table.Comparison(rows=rows), ab_context(table.Thresholds(1.1, 1.5)))
    assert line.startswith(
        "jaxperf ab: 6 regressions (a.py::test_x: traces; b.py::test_x: traces; test_1: traces; "
        "test_2: traces; test_3: traces; 1 more), 0 improvements; 6 tests in 3 rounds"
    )


def test_markdown_shows_the_rows_that_changed_and_folds_the_ok_ones() -> None:
    comparison = table.Comparison(rows=story_rows(), notes=["a note"])
    md = render.markdown(comparison, ab_context(table.Thresholds(runtime=1.1, compile=1.5)))
    lines = md.splitlines()
    fold = lines.index("<details><summary>4 rows ok</summary>")
    changed = [line for line in lines[:fold] if line.startswith("| ")][1:]
    assert changed == [
        "| `t.py::test_a` | traces | 1 | 3 |  |  | **REGRESSED** |",
        "|  | compiles | 1 | 3 |  |  | **REGRESSED** |",
        "| `t.py::test_b` | compile time | 0.400 s | 0.200 s | 0.50x | [0.40, 0.60] | improved |",
        "|  | runtime g | 1.000 ms | 2.230 ms | 2.23x | [1.90, 2.50] | **REGRESSED** |",
        "| `u.py::test_c` | StableHLO ops | 40 | 10 |  |  | improved |",
    ]
    end = lines.index("</details>")
    folded = [line for line in lines[fold:end] if line.startswith("| ")][1:]
    assert (
        folded[0]
        == "| `t.py::test_a` | runtime f | 1.000 ms | 1.000 ms | 1.00x | [0.95, 1.05] | ok |"
    )
    assert len(folded) == 4 and lines[fold + 1] == ""  # GitHub renders a table after a blank
    # Between the gate's runtime verdict and ab's, one sentence, after the table.
    assert lines[end + 2] == (
        "Runtime: 3 alternated rounds of both commits on this machine judge runtime of g "
        "(`test_b`) REGRESSED 2.23x [1.90, 2.50]; where the gate's report (`pytest --jaxperf`) "
        "leaves a runtime out (`machine_load`, `not_significant`, `environment_differs`: it "
        "times one run against a baseline timed elsewhere), this is the verdict on it."
    )
    assert lines[-1] == "- note: a note"
    # The terminal: the same grouping, in one aligned table.
    text = render.terminal(comparison, ab_context(table.Thresholds(runtime=1.1, compile=1.5)))
    shown = text.splitlines()
    start = next(i for i, line in enumerate(shown) if line.startswith("test  "))
    assert [line.split()[-1] for line in shown[start + 1 : start + 6]] == [
        "REGRESSED", "REGRESSED", "improved", "REGRESSED", "improved"
    ]  # fmt: skip
    assert shown[start + 6] == "-- 4 rows ok --"
    assert shown[start + 7].startswith("t.py::test_a  runtime f")


def test_markdown_with_no_row_changed_and_no_runtime_judged() -> None:
    same = [r for r in story_rows() if r.status == "ok"]
    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    md = render.markdown(table.Comparison(rows=same), ab_context(thresholds))
    assert "0 regressions, 0 improvements; 3 rounds" in md
    assert "Every row ok.\n\n<details><summary>4 rows ok</summary>" in md
    assert "judge every runtime ok; where the gate's report" in md
    # One round judges no runtime: no sentence about the gate's runtime verdict.
    one = [dataclasses.replace(r, status="1 round", ratio=None) if r.metric == "runtime" else r
           for r in same]  # fmt: skip
    md = render.markdown(table.Comparison(rows=one), ab_context(thresholds, rounds=1))
    assert "Runtime:" not in md and "| runtime f | 1.000 ms | 1.000 ms |  |  | 1 round |" in md


def with_cpu(report: RunRecord, cpu_s: float | None) -> RunRecord:
    """`report` whose benchmark recorded `cpu_s` CPU seconds per call (its median)."""
    import dataclasses

    rec = report.tests["t.py::test_a"]
    entry = rec.benchmarks["f"]
    assert isinstance(entry, BenchmarkEntry) and entry.runtime is not None
    runtime = dataclasses.replace(entry.runtime, cpu_median_s=cpu_s)
    benchmarks = {"f": dataclasses.replace(entry, runtime=runtime)}
    return RunRecord(tests={"t.py::test_a": dataclasses.replace(rec, benchmarks=benchmarks)})


def test_runtime_on_one_cpu_is_read_on_the_cpu_clock_from_two_rounds() -> None:
    assert table.runtime_clock(frozenset({1}), 2) == "cpu"
    assert table.runtime_clock(frozenset({1}), 1) == "wall"  # one value per run: no interval
    assert table.runtime_clock(frozenset({0, 1}), 3) == "wall"  # threads at once
    assert table.runtime_clock(None, 3) == "wall"  # not confined
    thresholds = table.Thresholds(runtime=1.1, compile=1.5)

    def rounds(head_wall: float, head_cpu: list[float | None]) -> list[tuple[RunRecord, RunRecord]]:
        # Each head run waited for its CPU (a load bound to it): wall seconds head_wall x base.
        made = []
        for seed, cpu in enumerate(head_cpu):
            base, head = report_pair(1.0, head_wall, seed)
            made.append((with_cpu(base, 1e-3), with_cpu(head, cpu)))
        return made

    def runtime_row(comparison: table.Comparison) -> table.Row:
        return next(r for r in comparison.rows if r.metric == table.RUNTIME)

    waited = rounds(2.0, [1.01e-3, 0.99e-3])
    on_wall = runtime_row(table.compare_rounds(waited, thresholds, clock="wall"))
    on_cpu = runtime_row(table.compare_rounds(waited, thresholds, clock="cpu"))
    assert (on_wall.status, on_wall.clock) == ("REGRESSED", "wall")
    assert (on_cpu.status, on_cpu.clock) == ("ok", "cpu")
    assert on_cpu.base == pytest.approx(1e-3) and on_cpu.head == pytest.approx(1e-3, rel=0.01)
    # A slowdown of the code shows on the CPU clock.
    slower = runtime_row(table.compare_rounds(rounds(2.0, [1.5e-3, 1.6e-3]), thresholds,
                                                 clock="cpu"))  # fmt: skip
    assert (slower.status, slower.clock) == ("REGRESSED", "cpu")
    # A run without CPU seconds (not the CPU backend): wall seconds, and a note says so.
    partly = table.compare_rounds(rounds(1.0, [1e-3, None]), thresholds, clock="cpu")
    assert runtime_row(partly).clock == "wall"
    assert partly.notes == [
        "t.py::test_a runtime f: wall seconds per call, not CPU seconds: fewer than two rounds "
        "have its CPU seconds from both trees (they are read on the CPU backend)"
    ]
    context = ab_context(thresholds, rounds=2, cpus=frozenset({1}), runtime_clock="cpu")
    comparison = table.compare_rounds(waited, thresholds, clock="cpu")
    assert "above 1.1x (runtime, CPU seconds per call) or 1.5x" in render.terminal(
        comparison, context
    )
    assert "runtime threshold 1.1x (CPU seconds per call)" in render.markdown(comparison, context)
    data = render.to_json(comparison, context)
    assert data["runtime_clock"] == "cpu"
    assert [r["clock"] for r in data["rows"] if r["metric"] == "runtime"] == ["cpu"]


def test_counts_and_program_metrics_are_shown_in_full() -> None:
    row = table.Row("t.py::test_a", "hlo_ops", "REGRESSED", 1_234_567, 1_234_568)
    assert (render.value(row, row.base), render.value(row, row.head)) == ("1234567", "1234568")
    assert render.value(row, 2.5e-7) == "2.5e-07"


def test_tests_in_one_tree_only_and_failed_tests_are_listed_not_compared() -> None:
    base, head = report_pair(1.0, 1.0, 0)
    base.tests["t.py::test_gone"] = base.tests["t.py::test_a"]
    head.tests["t.py::test_new"] = head.tests["t.py::test_a"]
    failed = head.tests["t.py::test_a"]
    head.tests["t.py::test_failed"] = type(failed)(outcome="failed")
    base.tests["t.py::test_failed"] = base.tests["t.py::test_a"]
    comparison = table.compare_rounds([(base, head)], table.Thresholds(1.1, 1.5))
    by_test = {r.test: r.status for r in comparison.rows if r.metric == "test"}
    assert by_test == {
        "t.py::test_gone": "not in head",
        "t.py::test_new": "new",
        "t.py::test_failed": "failed in head",
    }
    assert comparison.regressions == []


def test_a_test_that_fails_in_a_later_round_is_not_compared() -> None:
    # A 1.3x slower round 1, then the test fails in head's rounds 2 and 3: judged on round 1
    # alone it would read REGRESSED from one process's noise.
    rounds = [report_pair(1.0, 1.3, s) for s in range(3)]
    for _, head in rounds[1:]:
        head.tests["t.py::test_a"] = type(head.tests["t.py::test_a"])(outcome="failed")
    rounds[2][0].tests.pop("t.py::test_a")  # and base did not record it in round 3
    comparison = table.compare_rounds(rounds, table.Thresholds(1.1, 1.5))
    assert [(r.metric, r.status) for r in comparison.rows] == [
        ("test", "failed in base and head (rounds 2, 3 of 3)")
    ]
    assert comparison.regressions == []


def test_cpu_lists_read_and_written_as_taskset_does() -> None:
    assert cpus.parse("0-2,5, 7-8") == frozenset({0, 1, 2, 5, 7, 8})
    assert cpus.label(cpus.parse("0-2,5, 7-8")) == "0-2,5,7-8"
    assert cpus.label({3}) == "3"
    for bad in ("", "x", "2-1", "-1", "1,,2", "0-"):
        with pytest.raises(ValueError, match="such as 1, 0-3 or 0,2"):
            cpus.parse(bad)
    assert cpus.problem(frozenset({1}), frozenset({0, 1})) is None
    assert cpus.problem(frozenset({1, 2, 3}), frozenset({0, 1})) == (
        "--cpus 1-3: CPU 2-3 is not among those this process may use (0-1); pick from those"
    )
    assert cpus.problem(frozenset({0}), None) == (
        "--cpus needs a platform that confines a process to CPUs (Linux); leave it out"
    )
    assert cpus.confine(None) is None
    assert cpus.parse("all") == cpus.ALL
    assert cpus.default(frozenset({0, 1, 5})) == frozenset({5})  # one CPU, the highest
    assert cpus.default(None) is None  # a platform that cannot confine: not confined


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def lock_held_elsewhere(path: Path) -> Iterator[None]:
    """`path` flocked by another process (as another jaxperf ab holds its CPU) for the block."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield
    finally:
        proc.communicate("")


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="confining needs Linux")
def test_the_default_cpu_is_the_highest_no_other_jaxperf_ab_holds(tmp_path: Path) -> None:
    allowed = frozenset({0, 1, 5})
    with cpus.claimed(allowed, tmp_path) as first:
        assert first == cpus.Claim(frozenset({5}), shared=False)
        with cpus.claimed(allowed, tmp_path) as second, cpus.claimed(allowed, tmp_path) as third:
            assert (second.cpus, third.cpus) == ({1}, {0})
            # Every CPU taken: the highest, shared, and said so.
            with cpus.claimed(allowed, tmp_path) as fourth:
                assert fourth == cpus.Claim(frozenset({5}), shared=True)
        with cpus.claimed(allowed, tmp_path) as again:
            assert again.cpus == {1}  # released at the end of its block
    # Held by another process, as a second jaxperf ab on the machine would hold it.
    held = tmp_path / cpus.LOCK_NAME.format(5)
    with lock_held_elsewhere(held), cpus.claimed(allowed, tmp_path) as beside:
        assert beside.cpus == {1}
    with cpus.claimed(allowed, tmp_path) as alone:
        assert alone.cpus == {5}  # that process ended: its lock went with it


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="confining needs Linux")
def test_a_cpu_lock_of_another_user_is_used_and_one_that_cannot_be_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowed = frozenset({0, 3})
    lock = tmp_path / cpus.LOCK_NAME.format(3)
    lock.touch()
    real_open = os.open

    def protected(path: Any, flags: int, *args: Any) -> int:
        # fs.protected_regular: O_CREAT on another user's file in a sticky directory fails.
        if Path(path) == lock and flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", protected)
    with lock_held_elsewhere(lock), cpus.claimed(allowed, tmp_path) as beside:
        assert beside == cpus.Claim(frozenset({0}), shared=False)  # the held one was seen
    # A directory that is not there: no lock can be made.
    with cpus.claimed(allowed, tmp_path / "missing") as blind:
        assert blind.cpus == {3} and blind.uncoordinated is not None
        assert blind.uncoordinated.startswith(
            f"cannot open the CPU lock {tmp_path / 'missing' / cpus.LOCK_NAME.format(3)}: "
        )
    monkeypatch.setenv(cpus.LOCK_DIR_ENV, str(tmp_path))
    assert cpus.lock_dir() == tmp_path
    monkeypatch.delenv(cpus.LOCK_DIR_ENV)
    assert str(cpus.lock_dir()) in (*cpus.SHARED_LOCK_DIRS, tempfile.gettempdir())


def test_a_round_with_an_outlier_process_is_left_out_and_noted() -> None:
    # 2x slower head; the base process of round 2 ran 4x as long as the other base processes.
    rounds = [report_pair(b, 2.0, seed) for seed, b in enumerate((1.0, 4.0, 1.0))]
    comparison = table.compare_rounds(rounds, table.Thresholds(1.1, 1.5))
    row = next(r for r in comparison.rows if r.metric == table.RUNTIME)
    assert row.status == "REGRESSED"
    assert row.ratio is not None and row.ratio.rounds == 2 and row.ratio.left_out == 1
    context = render.Context("base", "b" * 40, "h" * 40, 0, ".", 3, table.Thresholds(1.1, 1.5),
                             0.95)  # fmt: skip
    data = render.to_json(comparison, context)
    runtime = next(r for r in data["rows"] if r["metric"] == table.RUNTIME)
    assert runtime["ratio"]["rounds"] == 2 and runtime["ratio"]["left_out"] == 1
    assert data["notes"] == comparison.notes
    assert comparison.notes == [
        "t.py::test_a runtime f: 1 of 3 rounds left out: a process in it ran more than 2x "
        "away from the median of its tree's processes (what ran beside it, not the code)"
    ]


def test_program_size_rows_where_a_function_grew() -> None:
    from _records import fn, rec

    def one(ops: int) -> RunRecord:
        f = fn("rollout", "m.py:1", compile_s=0.3)
        f.jaxpr_eqns, f.hlo_ops = 5, ops
        return RunRecord(tests={"t.py::test_a": rec(f)})

    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    grown = table.compare_rounds([(one(33), one(221))] * 2, thresholds)
    rows = {r.metric: r for r in grown.rows}
    assert "jaxpr equations" not in rows  # equal: not shown
    size = rows["StableHLO ops"]
    assert (size.status, size.base, size.head) == ("REGRESSED", 33, 221)
    tally = render.tally(grown, ab_context(thresholds, rounds=2))
    assert tally.startswith("jaxperf ab: 1 regression (test_a: StableHLO ops), 0 improvements;")
    assert size.causes == (
        "StableHLO ops of rollout at m.py:1: base 33 -> head 221 [static_rtol 0.1]",
    )
    assert [r.metric for r in grown.regressions] == ["StableHLO ops"]
    shrunk = {r.metric: r for r in table.compare_rounds([(one(221), one(33))], thresholds).rows}
    assert shrunk["StableHLO ops"].status == "improved"
    same = table.compare_rounds([(one(33), one(33))], thresholds).rows
    assert [r.metric for r in same] == ["traces", "compiles", "compile time"]


@pytest.mark.e2e
@needs_valgrind
def test_the_instructions_clock_compares_one_exact_round(repo: tuple[Path, str]) -> None:
    root, base = repo
    done = ab(root, "--base", base, "--runtime-clock", "instructions")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 round(s) of base and head runs" in done.stdout
    assert "runtime, instructions per call under valgrind, exact" in done.stdout
    base_count, head_count, ratio, interval, verdict = table_rows(done.stdout)[
        (NODE_WORK, "instructions per call work")
    ]
    # 40 chained matmuls where there was one: the exact ratio of the two counts.
    assert float(ratio.rstrip("x")) == pytest.approx(int(head_count) / int(base_count), abs=1e-4)
    assert float(ratio.rstrip("x")) > 10
    assert (interval, verdict) == ("exact", "REGRESSED")
    assert "1 round (2 runs" in done.stdout


@pytest.mark.e2e
def test_the_instructions_clock_without_valgrind_is_a_usage_error(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    root, base = repo
    done = ab(root, "--base", base, "--runtime-clock", "instructions", PATH=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "jaxperf ab: --runtime-clock instructions needs valgrind on PATH (e.g. apt-get install "
        "valgrind); it was not found"
    ]
    assert worktrees(root) == [str(root)]


def test_program_size_totals_count_a_new_function() -> None:
    # A jit inside a loop adds a function the base never had: per function nothing grew,
    # the test's total did (52 -> 889 jaxpr equations; per lowering 26 -> 42.3).
    from _records import fn, rec

    from pytest_jaxperf.causes import REDEFINED

    def one(with_loop: bool) -> RunRecord:
        step = fn("step", "m.py:1", traces=2)
        step.jaxpr_eqns, step.hlo_ops, step.xla_ops = 52, 93, 120
        functions = [step]
        if with_loop:
            loop = fn("tune.<locals>.block", "m.py:9", traces=19,
                      reasons=(REDEFINED.format(name="block"),))  # fmt: skip
            loop.jaxpr_eqns, loop.hlo_ops, loop.xla_ops = 837, 1543, 2000
            functions.append(loop)
        return RunRecord(tests={"t.py::test_a": rec(*functions)})

    thresholds = table.Thresholds(runtime=1.1, compile=1.5)
    rows = {r.metric: r for r in table.compare_rounds([(one(False), one(True))], thresholds).rows}
    # Labelled with the short name (causes.label_name).
    redefined = (
        "  cause: block: function re-defined on every call: a new block object "
        "was traced; fix: create and jit it once, outside the loop"
    )
    assert rows["compiles"].status == "REGRESSED"
    assert "  cause: " + redefined.split(": ", 2)[2] in rows["compiles"].causes
    size = rows["jaxpr equations"]
    assert (size.status, size.base, size.head) == ("REGRESSED", 52, 889)
    assert size.causes == (
        "jaxpr equations of all functions: base 26 -> head 42.3333 [static_rtol 0.1, per "
        "lowering: 2 -> 21 lowerings]",
        "  cause: new function: tune.<locals>.block at m.py:9",
        redefined,
    )
    assert rows["StableHLO ops"].status == "REGRESSED"
    assert rows["optimized HLO ops"].status == "REGRESSED"
