"""Whether `--jaxperf --jaxperf-all` costs the 10,000th test what it costs the 10th.

Run: ``.venv/bin/python benchmarks/isolation_flat.py [--tests 5000] [--block 1000]``
(5,000 tests: about 15 s off and 3 minutes recorded on 2 CPU cores).

Generates, in a temporary directory, one test file of ``--tests`` small tests. Test ``i``
traces four of JAX's own functions (``jnp.sin``, ``jnp.cumsum``, ``jnp.sort``,
``jnp.linalg.norm``, through ``jax.eval_shape``: nothing compiles) for arrays of ``i + 1``
elements, so that JAX's caches grow with every test as they do over a long real suite (its
helpers stay cached from test to test), then calls a module-level jitted function (which
the plugin makes JAX forget before each test, so it compiles again in each). Runs it
twice in subprocesses, interleaved in this order: plugin not loaded (``-p no:jaxperf``),
then every test recorded (``--jaxperf --jaxperf-all``). A helper plugin loaded with ``-p``
writes each test's wall time from ``pytest_runtest_logstart`` to ``pytest_runtest_logfinish``.

Prints, per block of ``--block`` tests, the mean per-test time off and recorded and their
difference (the plugin's cost per test), and the ratio of the last block's cost to the
first's: flat means about 1 (before isolation looked only at each test's own traces, the
cost grew with the number of entries in JAX's caches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import PYTEST, clean_env, prepend_pythonpath, usage

TEST_FILE = """
import jax
import jax.numpy as jnp
import pytest

X = jnp.ones(8)

@jax.jit
def step(x):
    return jnp.tanh(x) * 2.0

@pytest.mark.parametrize("i", range({n}))
def test_small(i):
    # JAX's own functions traced for a new shape each test (eval_shape: nothing compiles):
    # entries that stay in JAX's caches, as its helpers do over a long suite.
    spec = jax.ShapeDtypeStruct((i + 1,), jnp.float32)
    for helper in (jnp.sin, jnp.cumsum, jnp.sort, jnp.linalg.norm):
        assert jax.eval_shape(helper, spec).dtype == jnp.float32
    assert step(X).shape == (8,)
"""

TIMER_PLUGIN = '''
"""Writes each test's wall time (benchmarks/isolation_flat.py)."""
import json
import os
import time

_start = {}
_times = []


def pytest_runtest_logstart(nodeid, location):
    _start[nodeid] = time.perf_counter()


def pytest_runtest_logfinish(nodeid, location):
    _times.append(time.perf_counter() - _start.pop(nodeid))


def pytest_sessionfinish(session):
    with open(os.environ["ISOLATION_FLAT_OUT"], "w") as f:
        json.dump(_times, f)
'''


def run(workdir: Path, name: str, args: list[str]) -> tuple[list[float], float, float | None]:
    out = workdir / f"{name}.json"
    # Only PYTEST_ADDOPTS is dropped (clean_env's default drops more).
    env = clean_env({"ISOLATION_FLAT_OUT": str(out)}, drop=("PYTEST_ADDOPTS",))
    # A PYTHONPATH given to this script comes after the timer plugin's folder: another
    # checkout's pytest_jaxperf there is the one measured (the README's before/after).
    prepend_pythonpath(env, workdir)
    cmd = [*PYTEST, "-p", "flat_timer"]
    with usage() as used:
        proc = subprocess.run(
            [*cmd, *args, "test_flat.py"], cwd=workdir, env=env, capture_output=True, text=True
        )
    if proc.returncode != 0:
        sys.exit(f"{name}: pytest rc={proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr}")
    return json.loads(out.read_text()), used.wall, used.busy


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=5000)
    ap.add_argument("--block", type=int, default=1000)
    ns = ap.parse_args()
    if ns.tests < 2 * ns.block or ns.block < 1:
        ap.error("--tests must hold at least two --block")
    workdir = Path(tempfile.mkdtemp(prefix="jaxperf-flat-"))
    (workdir / "test_flat.py").write_text(TEST_FILE.format(n=ns.tests))
    (workdir / "flat_timer.py").write_text(TIMER_PLUGIN)
    print(f"{ns.tests} tests in {workdir}; {os.cpu_count()} CPUs", flush=True)
    off, off_wall, off_busy = run(workdir, "off", ["-p", "no:jaxperf"])
    print(f"  off:      {off_wall:6.1f} s (machine busy {off_busy or 0:.0f} CPU s)", flush=True)
    rec, rec_wall, rec_busy = run(workdir, "recorded", ["--jaxperf", "--jaxperf-all"])
    print(f"  recorded: {rec_wall:6.1f} s (machine busy {rec_busy or 0:.0f} CPU s)", flush=True)
    print(f"\n{'tests':>13} {'off ms':>8} {'recorded ms':>12} {'cost ms':>8}")
    costs = []
    for start in range(0, ns.tests - ns.block + 1, ns.block):
        a = statistics.mean(off[start : start + ns.block]) * 1e3
        b = statistics.mean(rec[start : start + ns.block]) * 1e3
        costs.append(b - a)
        print(f"{start + 1:>6}-{start + ns.block:<6} {a:>8.2f} {b:>12.2f} {b - a:>8.2f}")
    print(
        f"\nwhole run: recorded / off = {rec_wall / off_wall:.3f}; cost per test, last block / "
        f"first block = {costs[-1] / costs[0]:.2f} ({costs[0]:.2f} -> {costs[-1]:.2f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
