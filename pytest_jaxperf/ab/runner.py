"""One pytest process per tree and round for `jaxperf ab`: its command line, its environment,
its log, its report, and the import check of `worker` (`imports`).

Each run records with the plugin (`--jaxperf`, timing measured) and writes its JSON report to
the command's temporary directory; it gates nothing against a committed baseline (the baseline
option points at a file that does not exist) and writes nothing into the tree beyond what
pytest itself writes (the cache provider is off; a history, markdown, HTML report, export or
baseline save set in the ini file, addopts or PYTEST_ADDOPTS is switched off for the run, see
`worker`)."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..model import RunRecord
from ..storage import gitenv
from ..storage.store import BaselineError, load
from . import configs, cpus, imports

# How much of a failed run's output to show.
LOG_TAIL_LINES = 40
# How long a run stopped by Ctrl-C or SIGTERM may take to end before it is killed.
STOP_GRACE_S = 10.0
# prctl(2): the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


class RunError(Exception):
    """A run failed or measured the wrong code; the message says which, why, and its output."""


@dataclass(frozen=True)
class Tree:
    """One side of the comparison, as its runs see it."""

    side: str  # "base" or "head"
    root: Path  # the repository top level (the temporary worktree for base)
    project: Path  # where pytest runs: root, or the same sub-directory of it
    paths: tuple[Path, ...]  # put first on sys.path, in this order
    packages: tuple[str, ...]  # what those paths hold, for the import check


@dataclass(frozen=True)
class Run:
    """One finished run."""

    side: str
    round: int
    seconds: float
    returncode: int
    record: RunRecord
    json_path: Path  # where the run wrote it
    log: Path


def command(
    json_path: Path, no_baseline: Path, pytest_args: Sequence[str], tree: Tree
) -> list[str]:
    """The pytest command line of a run; the user's arguments last, so they win."""
    cmd = [
        sys.executable, "-m", "pytest",
        "-p", "no:cacheprovider",
        # No conftest.py above the tree (see `configs`).
        f"--confcutdir={tree.root}",
        "-p", "pytest_jaxperf.ab.worker",
        "--jaxperf",
        f"--jaxperf-json={json_path}",
        f"--jaxperf-baseline={no_baseline}",
        # Measured whatever the ini file says; never gated (there is no baseline anyway).
        "--jaxperf-timing=report",
        "-o", "jaxperf_save=false",
        "-o", "jaxperf_history=",
        "-o", "jaxperf_markdown=",
        "-o", "jaxperf_html=",
        "-o", "jaxperf_export=",
    ]  # fmt: skip
    if importlib.util.find_spec("xdist") is not None and not _xdist_blocked(
        tree.project, pytest_args
    ):
        # One process at a time: a run beside its own xdist workers times their load.
        cmd += ["-n", "0"]
    return cmd + list(pytest_args)


def _xdist_blocked(project: Path, pytest_args: Sequence[str]) -> bool:
    """Whether the run's pytest will not load xdist (`-p no:xdist` in the arguments,
    PYTEST_ADDOPTS or the configuration file's addopts): `-n 0` would then be an unknown
    argument. Read from the text: pytest has not parsed anything yet."""
    texts = [*pytest_args, os.environ.get("PYTEST_ADDOPTS", "")]
    found = configs.first(project)
    if found is not None:
        with contextlib.suppress(OSError):
            texts.append(found.read_text(encoding="utf-8", errors="replace"))
    return any("no:xdist" in text for text in texts)


def environment(tree: Tree, check: Path) -> dict[str, str]:
    """The run's environment: the tree's paths first on PYTHONPATH, the import check, no
    persistent compilation cache (the base run would fill it and the head run of unchanged
    code would then compile nothing), none of the variables a git hook exports (a test that
    runs git would reach the user's index) and no GitHub step summary to write into."""
    env = gitenv.environment()
    env.pop("GITHUB_STEP_SUMMARY", None)
    paths = [str(p) for p in tree.paths]
    for path in paths:
        if os.pathsep in path:
            # PYTHONPATH would split it in two, and the import check would blame the code.
            where = "TMPDIR" if tree.side == "base" else "the repository"
            raise RunError(
                f"the {tree.side} tree's {path} holds {os.pathsep!r}, which PYTHONPATH cannot "
                f"hold; move {where} to a path without it"
            )
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env[imports.CHECK_ENV] = str(check)
    return env


def run(
    tree: Tree,
    other: Tree,
    round_: int,
    workdir: Path,
    pytest_args: Sequence[str],
    on_cpus: frozenset[int] | None = None,
) -> Run:
    """Run the tests of `tree` once, confined to `on_cpus` when given; RunError when pytest
    fails to run them (usage error, collection error, interrupted, nothing collected), imported
    the wrong code, or wrote no report. Failed tests are not an error: they are left out of the
    comparison."""
    name = f"{tree.side}-{round_}"
    json_path = workdir / f"{name}.json"
    log = workdir / f"{name}.log"
    check = workdir / f"{name}.check.json"
    check_out = workdir / f"{name}.imports.json"
    _save_import_check(tree, other, check, check_out)
    cmd = command(json_path, workdir / "no-baseline.json", pytest_args, tree)
    returncode, seconds = _run_pytest(cmd, tree, check, log, on_cpus)
    what = f"the {tree.side} run (round {round_}: {' '.join(cmd[1:3])} in {tree.project})"
    wrong = _import_problems(check_out)
    if wrong:
        raise RunError(f"{wrong[0]}" + "".join(f"\n  also: {p}" for p in wrong[1:3]))
    _check_exit(returncode, what, log)
    return Run(tree.side, round_, seconds, returncode, _read_run(json_path, what), json_path, log)


def _save_import_check(tree: Tree, other: Tree, check: Path, check_out: Path) -> None:
    """Write the spec the child's import check reads: which tree it must import, not the other."""
    imports.Spec(
        side=tree.side,
        tree=str(tree.root),
        other_side=other.side,
        other_tree=str(other.root),
        paths=tuple(str(p) for p in tree.paths),
        packages=tree.packages,
        out=str(check_out),
    ).save(check)


def _run_pytest(
    cmd: list[str], tree: Tree, check: Path, log: Path, on_cpus: frozenset[int] | None
) -> tuple[int, float]:
    """Run `cmd` in the tree's project with its output in `log`: its exit status and seconds."""
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=tree.project,
            env=environment(tree, check),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_child_setup(cpus.confine(on_cpus)),
        )
        try:
            returncode = proc.wait()
        finally:
            _stop(proc)
    return returncode, time.perf_counter() - start


# pytest's exit statuses past "some tests failed" (1), as the RunError names them.
_EXIT_REASONS = {
    2: "interrupted or a collection error",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}


def _check_exit(returncode: int, what: str, log: Path) -> None:
    """RunError, with the log's tail, unless pytest ran the tests (all passed or some failed)."""
    if returncode not in (0, 1):
        reason = _EXIT_REASONS.get(returncode, "failed")
        raise RunError(
            f"{what} exited with status {returncode} ({reason}); its output ends:\n" + _tail(log)
        )


def _read_run(json_path: Path, what: str) -> RunRecord:
    """The run file the child wrote; RunError when it cannot be read."""
    try:
        record = load(json_path)
    except BaselineError as exc:
        raise RunError(f"{what}: {exc}") from None
    if record is None:
        # The plugin writes no file when it recorded no test.
        record = RunRecord()
    return record


def _child_setup(confine: Callable[[], None] | None) -> Callable[[], None]:
    """What a run's process does before pytest starts: take SIGINT's default action back
    (a `jaxperf ab` started in the background, `cmd &`, ignores SIGINT, and its runs would
    inherit that: `_stop`'s SIGINT would then wait out the grace period), end when
    `jaxperf ab` dies (SIGKILL, the OOM killer: Linux only), and keep to its CPUs."""
    parent = os.getpid()

    def child() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if sys.platform == "linux":
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(1)  # the command died before the signal was set up
        if confine is not None:
            confine()

    return child


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a run still going (we were interrupted while waiting): SIGINT as a terminal's Ctrl-C
    would send, then a kill after a grace period."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=STOP_GRACE_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt, ValueError, OSError):
        # ValueError: Windows sends no SIGINT to a process.
        proc.kill()
        proc.wait()


def _import_problems(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found = data.get("problems") if isinstance(data, dict) else None
    return [str(p) for p in found] if isinstance(found, list) else []


def _tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "  (no output)"
    shown = text[-lines:] or ["(no output)"]
    return "\n".join(f"  | {line}" for line in shown)
