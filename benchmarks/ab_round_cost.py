"""What does one round of `jaxperf ab` cost at least, and what would a fork server save?

Run: ``.venv/bin/python benchmarks/ab_round_cost.py [--repeats 7] [--cpus N]`` (about 2
minutes). A round is one pytest run of each tree; this times, on the tests of
``benchmarks/ab_power.py`` in a copy of ``example_project/``, confined to one CPU as
`jaxperf ab` confines its runs (its default CPU unless ``--cpus``), interleaved:

- ``plain``: ``pytest --jaxperf TESTS``, the run the issue's cost target divides by;
- ``ab run``: the command line `jaxperf ab` runs (``runner.command``), a fresh process, as
  now;
- ``fork, pytest preloaded``: the same arguments given to ``pytest.main`` in a child forked
  from a server process that has imported pytest, numpy and this plugin (not jax);
- ``fork, jax preloaded``: the same, the server having imported jax and jax.numpy too.

It prints each mode's median seconds per run and the least a `jaxperf ab` of k rounds would
cost over the plain run with such runs, 2k x run / plain (the worktree and the statistics
left out), then shows why jax cannot be preloaded for the user: jax reads settings such as
``JAX_ENABLE_X64`` from the environment when it is imported, so a conftest that sets one
before its ``import jax`` would be ignored in a forked run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import AB_TESTS as TESTS
from _common import EXAMPLE, PYTEST, ab_env, print_total, timed_run

from pytest_jaxperf.ab import cpus, runner

# The fork server: preloads, then per line on stdin forks a child that runs pytest.main with
# argv[2:] (its output to argv[1]) and answers with the child's exit status.
SERVER = r"""
import os, sys
import pytest, numpy
import pytest_jaxperf.plugin, pytest_jaxperf.ab.worker
if os.environ.get("PRELOAD_JAX") == "1":
    import jax, jax.numpy
log, args = sys.argv[1], sys.argv[2:]
print("ready", flush=True)
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        code = pytest.main(args)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""

HAZARD = (
    "import os, jax\n"
    "os.environ['JAX_ENABLE_X64'] = '1'  # what a conftest does before its own import jax\n"
    "import jax.numpy as jnp\n"
    "print(jnp.zeros(1, dtype='float64').dtype)\n"
)


class Server:
    """A fork server in `project`, preloading jax or not."""

    def __init__(self, project: Path, args: list[str], log: Path, jax: bool) -> None:
        env = ab_env() | {"PRELOAD_JAX": "1" if jax else "0"}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(log), *args],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if self.stdout.readline().strip() != "ready":
            sys.exit("the fork server did not start")

    def run(self) -> float:
        start = time.perf_counter()
        self.stdin.write("go\n")
        self.stdin.flush()
        code = int(self.stdout.readline())
        seconds = time.perf_counter() - start
        if code not in (0, 1):
            sys.exit(f"a forked run failed with status {code}")
        return seconds

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait()


def fresh(project: Path, cmd: list[str]) -> float:
    seconds, done = timed_run(cmd, project, ab_env())
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="runs of each mode (default 7)")
    ap.add_argument("--cpus", default=None, help="CPUs to run on (default: jaxperf ab's)")
    opts = ap.parse_args(argv)
    on = cpus.parse(opts.cpus) if opts.cpus else cpus.default(cpus.available())
    if on:
        os.sched_setaffinity(0, on)  # inherited by every run and server below
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ab-round-cost-") as tmp:
        work = Path(tmp)
        project = work / "project"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
        plain = [*PYTEST, "--jaxperf"]
        plain += list(TESTS)
        tree = runner.Tree("head", project, project, (), ())
        ab_cmd = runner.command(work / "report.json", work / "no-baseline.json", list(TESTS), tree)
        ab_args = ab_cmd[3:]  # after python -m pytest
        servers = {
            "fork, pytest preloaded": Server(project, ab_args, work / "fork.log", jax=False),
            "fork, jax preloaded": Server(project, ab_args, work / "fork-jax.log", jax=True),
        }
        modes = ["plain", "ab run", *servers]
        seconds: dict[str, list[float]] = {mode: [] for mode in modes}
        for i in range(opts.repeats):
            for mode in modes[i % len(modes) :] + modes[: i % len(modes)]:
                if mode == "plain":
                    seconds[mode].append(fresh(project, plain))
                elif mode == "ab run":
                    seconds[mode].append(fresh(project, ab_cmd))
                else:
                    seconds[mode].append(servers[mode].run())
        for server in servers.values():
            server.close()
    where = f"CPU {cpus.label(on)}" if on else "all CPUs"
    print(f"{opts.repeats} runs of each mode, interleaved, on {where}; tests: {', '.join(TESTS)}")
    base = statistics.median(seconds["plain"])
    print("\n| mode | s per run (median) | min-max | 1 round | 2 rounds | 3 rounds |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        run = statistics.median(seconds[mode])
        spread = f"{min(seconds[mode]):.2f}-{max(seconds[mode]):.2f}"
        bounds = " | ".join(f"{2 * k * run / base:.1f}x" for k in (1, 2, 3))
        print(f"| {mode} | {run:.2f} | {spread} | {bounds} |")
    print("\n(k rounds: 2k x the mode's run / the plain run; the worktree and statistics left out)")
    done = subprocess.run(
        [sys.executable, "-c", HAZARD], env=ab_env(), capture_output=True, text=True, check=False
    )
    print(
        "JAX_ENABLE_X64=1 set after `import jax`, as a conftest would in a server that preloaded "
        f"jax: a float64 array comes out as {done.stdout.strip() or done.stderr.strip()[-200:]}"
    )
    print_total(t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
