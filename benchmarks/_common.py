"""What the benchmark scripts in this folder share: the one home of their common helpers.

Every script in ``benchmarks/`` imports what it shares from here, and no script imports
another. Each one runs as ``.venv/bin/python benchmarks/<script>.py`` from the repository
root, which puts this folder on ``sys.path``. This module owns:

- how the benchmarks run pytest: ``PYTEST``, the command line's start;
- paths: ``ROOT`` (this checkout), ``EXAMPLE`` (``example_project/``), ``COMMITTED`` (the
  example's committed baseline, which no benchmark may change: ``digest`` it at the start,
  ``finish`` checks it), ``REGRESSION_VARIABLE`` (the example's regression switch) and
  ``AB_TESTS`` (the tests ab_power.py runs);
- the environment of the benchmarks' subprocesses: ``clean_env``, the one builder, whose
  parameters say what each script keeps or drops; ``example_env`` (runs of the example
  project) and ``ab_env`` (``jaxperf ab`` and git in a repository made from it) built on it;
- the machine's load: ``machine_busy_s`` and ``wait_for_quiet`` (Linux ``/proc/stat``; None
  and no wait elsewhere), ``hogs`` (CPU-spinning child processes for a "load" condition);
- measuring subprocesses: ``usage`` (wall seconds, the children's CPU seconds, other
  processes' CPU seconds) and ``timed_run`` (a captured run and its wall seconds);
- a flag several scripts take: ``add_quiet_wait``;
- reading a pytest run's output: ``summary_counts`` (its summary line's counts);
- output: ``median``, ``fmt``, ``print_total`` and ``finish`` (a script's last lines).

Only the standard library is imported at the top: some scripts need nothing of the plugin,
or measure another checkout's (given on PYTHONPATH). ``hogs`` imports the plugin when called.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

# pytest as this Python runs it, quiet, without the cache provider: no run reads or writes
# .pytest_cache, so none depends on an earlier one.
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
COMMITTED = EXAMPLE / ".jaxperf" / "baseline.json"
REGRESSION_VARIABLE = "JAXPERF_EXAMPLE_REGRESSION"
# The example's tests that ab_power.py runs `jaxperf ab` on: the
# layer's (dense_relu, which the slow_* switches slow down) and the neighbours' (pair_energy,
# about 1 ms, never slowed).
AB_TESTS = (
    "tests/test_layer.py::test_first_call_vs_steady_state",
    "tests/test_neighbours.py::test_pair_energy_vs_numpy",
)


# ----------------------------------------------------------------------------------------
# The environment of a benchmark's subprocesses
# ----------------------------------------------------------------------------------------
# What clean_env drops unless told otherwise: options and plugins from the caller's shell
# would change what a pytest run does, a persistent compilation cache what it compiles.
DROPPED = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "JAX_COMPILATION_CACHE_DIR")
# Who commits in ab_power.py's repository, where the environment names nobody.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "ab_power",
    "GIT_COMMITTER_NAME": "ab_power",
    "GIT_AUTHOR_EMAIL": "ab_power@example.com",
    "GIT_COMMITTER_EMAIL": "ab_power@example.com",
}


def clean_env(
    extra: Mapping[str, str] | None = None,
    *,
    drop: Iterable[str] = DROPPED,
    drop_prefixes: tuple[str, ...] = (),
    defaults: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """This process's environment for a subprocess, with JAX on the CPU. In this order: the
    variables whose names start with one of `drop_prefixes` left out, those in `drop`
    removed, ``JAX_PLATFORMS=cpu``, `extra` set (PYTHONPATH included, when it is there), and
    `defaults` set where still unset."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop_prefixes)}
    for var in drop:
        env.pop(var, None)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra or {})
    for key, value in (defaults or {}).items():
        env.setdefault(key, value)
    return env


def example_env(regression: str | None = None) -> dict[str, str]:
    """A run of the example project (compile_under_load.py, cross_machine_compile.py): the
    regression switch off, or set to `regression`."""
    return clean_env(
        {REGRESSION_VARIABLE: regression} if regression else None,
        drop=(*DROPPED, REGRESSION_VARIABLE),
    )


def ab_env() -> dict[str, str]:
    """git, pytest and `jaxperf ab` in ab_power.py's repository of the example: none of
    pytest's or GitHub's variables, the regression switch off, this plugin from its source
    (PYTHONPATH, in the command and in every run it starts), and a git identity where the
    environment has none."""
    return clean_env(
        {"PYTHONPATH": str(ROOT)},
        drop=(*DROPPED, REGRESSION_VARIABLE),
        drop_prefixes=("PYTEST_", "GITHUB_"),
        defaults=GIT_IDENTITY,
    )


# ----------------------------------------------------------------------------------------
# The machine's load
# ----------------------------------------------------------------------------------------
def machine_busy_s() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait (at most max_wait s) until other processes use < threshold of one CPU."""
    waited = 0.0
    while waited < max_wait:
        b0 = machine_busy_s()
        time.sleep(0.5)
        b1 = machine_busy_s()
        if b0 is None or b1 is None or b1 - b0 < threshold * 0.5:
            break
        waited += 0.5
    return waited


HOG = "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def hogs(
    count: int, limit: int, cpus: frozenset[int] | None = None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` spinning child processes for the duration of the block (each at most
    `limit` seconds; confined to `cpus` when given, else where the scheduler puts them)."""
    from pytest_jaxperf.ab import cpus as ab_cpus  # here: see the module's docstring

    def preexec() -> None:
        # The kernel ends the hog after `limit` CPU seconds even if its loop did not, and
        # (Linux) as soon as this script dies.
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        if (confine := ab_cpus.confine(cpus)) is not None:
            confine()
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", HOG.format(limit=limit)],
                    preexec_fn=preexec,
                    stdin=subprocess.DEVNULL,
                )
            )
        time.sleep(0.5)  # let them get going (and the scheduler notice them)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            proc.wait()


# ----------------------------------------------------------------------------------------
# Measuring subprocesses
# ----------------------------------------------------------------------------------------
@dataclass
class Usage:
    """What the block of a `usage()` took: set when the block ends."""

    wall: float = 0.0  # seconds (perf_counter)
    cpu: float = 0.0  # user + system seconds of the child processes reaped in the block
    busy: float | None = None  # CPU seconds the whole machine was busy (None: not Linux)
    _end: resource.struct_rusage | None = field(default=None, repr=False)

    def others(self, also: float = 0.0) -> float | None:
        """CPU seconds other processes used meanwhile: the machine's less the children's and
        `also` (processes of ours that were not reaped in the block), 0 at least."""
        return None if self.busy is None else max(0.0, self.busy - self.cpu - also)

    def cpu_after(self) -> float:
        """CPU seconds of the child processes reaped since the block ended (hogs that ran
        beside it, say)."""
        assert self._end is not None, "the block has not ended"
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (now.ru_utime - self._end.ru_utime) + (now.ru_stime - self._end.ru_stime)


@contextlib.contextmanager
def usage() -> Iterator[Usage]:
    """Measures the block: its wall time, its reaped children's CPU time and the machine's."""
    used = Usage()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0 = machine_busy_s()
    t0 = time.perf_counter()
    yield used
    used.wall = time.perf_counter() - t0
    busy1 = machine_busy_s()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    used.cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    used.busy = None if busy0 is None or busy1 is None else busy1 - busy0
    used._end = ru1


def timed_run(
    cmd: list[str], cwd: Path, env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Runs `cmd` in `cwd`, its output captured as text: its wall seconds, and the process."""
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


# ----------------------------------------------------------------------------------------
# Command line and output
# ----------------------------------------------------------------------------------------
def add_quiet_wait(parser: argparse.ArgumentParser, before: str = "each run") -> None:
    """--quiet-wait SECONDS (default 5), for `wait_for_quiet` before each run."""
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=5.0,
        help=f"before {before}, wait up to this many seconds for other processes to go "
        "quiet (default 5; 0 disables)",
    )


_COUNT = re.compile(r"(\d+) ((?:subtests )?[a-z]+)")
_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+.*)? in [\d.]+s\b")


def summary_counts(text: str) -> dict[str, int] | None:
    """The counts of pytest's summary line in `text` ({"passed": 3, "subtests passed": 2,
    ...}); None where the output has no summary line (the run did not finish)."""
    summary = next((ln for ln in reversed(text.splitlines()) if _SUMMARY.match(ln)), None)
    if summary is None:
        return None
    return {what: int(n) for n, what in _COUNT.findall(summary)}


def median(values: list[float]) -> float | None:
    """The median of `values`; None when there are none."""
    return statistics.median(values) if values else None


def fmt(value: float | None, spec: str = ".2f", suffix: str = "", missing: str = "-") -> str:
    """`value` formatted by `spec` and followed by `suffix`; `missing` for None."""
    return missing if value is None else f"{value:{spec}}{suffix}"


def digest(path: Path) -> str:
    """The file's SHA-256, or "absent"."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def print_total(t_start: float) -> None:
    """A benchmark's last line: the seconds since `t_start` (perf_counter)."""
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


def finish(committed: str, work: Path, remove: bool, t_start: float) -> int:
    """The end of a benchmark script: warn if the committed baseline changed (`committed`:
    its `digest` at the start), remove the work directory unless kept, print the total
    time."""
    if digest(COMMITTED) != committed:
        print(f"WARNING: {COMMITTED} changed during the run")
    if remove:
        shutil.rmtree(work, ignore_errors=True)
    print_total(t_start)
    return 0
