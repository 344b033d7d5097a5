"""What tallying a program's equations by source line costs per equation, with the patterns
`diagnose` names (an unrolled `fori_loop`/`scan`, closed-over constants) read in the same
pass: the recorder runs `program_metrics.eqn_lines` on every lowering it counts, breach or
not, so its cost is paid by every test.

Backs docs/counting.md ("the same pass ... costs ... per equation"). Run it once with each
checkout on the path and compare the figures::

    PYTHONPATH=<checkout> .venv/bin/python benchmarks/diagnose_cost.py [--repeats 7]

Programs (jitted, traced once; the pass timed on the traced ClosedJaxpr, the best of
``--repeats``):

  loop        a Python loop of 10,000 steps, 3 equations each (no constants, no scan)
  constants   the same loop, each step also multiplying by one of 64 closed-over NumPy
              arrays of 64 KiB (4 MiB of constants in the program)
  scans       200 `lax.fori_loop`s with `unroll=4`, 3 body equations each

Also printed: `program_metrics.count_eqns` on the same program (the size pass the recorder
makes anyway), for scale.
"""

from __future__ import annotations

import argparse
import functools
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pytest_jaxperf.measure import program_metrics


def loop(x: jax.Array) -> jax.Array:
    for i in range(10_000):
        x = x + jnp.sin(x) * i
    return x


CONSTANTS = [np.full((128, 128), i, np.float32) for i in range(64)]


def constants(x: jax.Array) -> jax.Array:
    for i in range(10_000):
        x = x + jnp.sin(x) * i
        if i % 157 == 0:
            x = x * CONSTANTS[i // 157]
    return x


def scans(x: jax.Array) -> jax.Array:
    for _ in range(200):
        x = lax.fori_loop(0, 8, lambda i, z: z + jnp.sin(z) * i, x, unroll=4)
    return x


def _tally(jaxpr: Any) -> None:
    program_metrics.eqn_lines(jaxpr, {})  # a fresh tally each time, as each lowering's


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    ns = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(program_metrics.__file__).rsplit("/pytest_jaxperf/", 1)[0],
         "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    print(f"# {' '.join(sys.argv)}")
    machine = platform.processor() or platform.machine()
    where = f"pytest_jaxperf from {program_metrics.__file__} ({commit})"
    print(f"# {machine}, python {platform.python_version()}, jax {jax.__version__}, {where}")
    print(f"{'program':<10} {'equations':>9} {'eqn_lines ms':>12} {'us/eqn':>7} "
          f"{'count_eqns ms':>13} {'const KiB':>9} {'unrolled lines':>14}")  # fmt: skip
    for fn in (loop, constants, scans):
        jaxpr = jax.jit(fn).trace(jnp.ones((128, 128))).jaxpr
        eqns = program_metrics.count_eqns(jaxpr)
        tally: program_metrics.LineTally = {}
        program_metrics.eqn_lines(jaxpr, tally)
        seconds = best(functools.partial(_tally, jaxpr), ns.repeats)
        counting = best(functools.partial(program_metrics.count_eqns, jaxpr), ns.repeats)
        counts = [value[0] for value in tally.values()]
        # Older checkouts tally [equations] only: no patterns read.
        const_kib = sum(c[2] for c in counts) // 1024 if len(counts[0]) > 2 else "-"
        unrolled = sum(c[1] > 1 for c in counts) if len(counts[0]) > 2 else "-"
        print(f"{fn.__name__:<10} {eqns:>9,} {seconds * 1e3:>12.1f} {seconds / eqns * 1e6:>7.2f} "
              f"{counting * 1e3:>13.1f} {const_kib!s:>9} {unrolled!s:>14}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
