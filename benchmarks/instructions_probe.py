"""How deterministic is a steady-state call's instruction count on valgrind's simulated CPU,
and what makes it move with the machine's load? (groundwork for an instructions clock)

Run: ``.venv/bin/python benchmarks/instructions_probe.py [--runs N] [--calls C]``
(default 2 runs per condition, 10 calls: about 4 minutes on 2 cores). Needs valgrind
(``apt-get install valgrind``) and pytest-codspeed (``pip install pytest-codspeed``), whose
compiled hooks switch callgrind's instrumentation on and off around the timed calls (callgrind
client requests cannot be issued from Python without compiled code).

A jitted 10-step ``fori_loop`` of a 128x128 matmul and tanh is called 3 times to warm up,
then ``--calls`` times with instrumentation on, in a fresh process under
``valgrind --tool=callgrind --instr-atstart=no``, with ``PJRT_NPROC=1`` and
``JAX_CPU_ENABLE_ASYNC_DISPATCH=false``; quiet and beside two CPU hogs. For each run it
prints the total instructions and the total less the self cost of the functions where
XLA's Eigen thread pool spins while it waits for work (``callgrind_annotate``): what a worker
executes while it spins depends on how long the scheduler lets it, that is on the load.
Nothing is asserted: the figures are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import hogs

PROGRAM = """
import sys
from pytest_codspeed.instruments.hooks import dist_instrument_hooks as hooks
import jax
import jax.numpy as jnp
from jax import lax

@jax.jit
def f(x):
    return lax.fori_loop(0, 10, lambda i, x: jnp.tanh(x @ x), x)

x = jnp.ones((128, 128)) * 0.01
for _ in range(3):
    f(x).block_until_ready()
hooks.callgrind_start_instrumentation()
for _ in range(int(sys.argv[1])):
    f(x).block_until_ready()
hooks.callgrind_stop_instrumentation()
"""
# Self cost of these functions is a waiting worker's spinning, not the program's work.
SPIN = re.compile(r"ThreadPoolTempl<[^>]*>::(MaybeGetTask|Steal|WaitForWork)|EventCount::")
_COST = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$")


def run(work: Path, calls: int, condition: str) -> tuple[int, int]:
    """(total instructions, of which spinning) of one process."""
    out = work / "callgrind.out"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PJRT_NPROC": "1",
           "JAX_CPU_ENABLE_ASYNC_DISPATCH": "false"}  # fmt: skip
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, str(work / "prog.py"), str(calls)]  # fmt: skip
    ctx = hogs(2, 600) if condition == "load" else contextlib.nullcontext([])
    with ctx:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"valgrind run failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    total = spin = 0
    for line in text.splitlines():
        found = _COST.match(line)
        if not found:
            continue
        cost = int(found.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in found.group(2):
            total = cost
        elif SPIN.search(found.group(2)):
            spin += cost
    return total, spin


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--calls", type=int, default=10)
    ns = ap.parse_args(argv)
    missing = [t for t in ("valgrind", "callgrind_annotate") if shutil.which(t) is None]
    try:
        import pytest_codspeed.instruments.hooks.dist_instrument_hooks  # noqa: F401
    except ImportError:
        missing.append("pytest-codspeed (pip install pytest-codspeed)")
    if missing:
        sys.exit(f"instructions_probe: needs {', '.join(missing)}")
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout
    print(f"{version.strip()}; {ns.calls} calls per run, {ns.runs} run(s) per condition")
    print(f"{'condition':>10}{'total':>14}{'spinning':>12}{'less spinning':>15}")
    t0 = time.monotonic()
    kept: dict[str, list[tuple[int, int]]] = {"quiet": [], "load": []}
    with tempfile.TemporaryDirectory(prefix="jaxperf-instr-") as tmp:
        work = Path(tmp)
        (work / "prog.py").write_text(PROGRAM)
        for _ in range(ns.runs):
            for condition in kept:
                total, spin = run(work, ns.calls, condition)
                kept[condition].append((total, spin))
                print(f"{condition:>10}{total:>14,}{spin:>12,}{total - spin:>15,}", flush=True)
    every = [t for runs in kept.values() for t in runs]
    for label, values in (("total", [t for t, _ in every]), ("less spinning",
                          [t - s for t, s in every])):  # fmt: skip
        middle = statistics.median(values)
        print(f"{label}: max - min = {(max(values) - min(values)) / middle:.3%} of the median "
              f"({middle:,.0f}; {middle / ns.calls:,.0f} per call)")  # fmt: skip
    print(f"{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
