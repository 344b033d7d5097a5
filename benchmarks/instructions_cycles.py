"""Do callgrind's estimated cycles (instructions plus cache misses, weighted) track real time
better than instructions alone, on the example project's four benchmarks?

Run: ``.venv/bin/python benchmarks/instructions_cycles.py`` (needs valgrind and
``pytest-jaxperf[instructions]``; about 5 minutes on 2 cores).

For each of the example's benchmarked calls (``overlap``, ``dense_relu``, ``pair_energy``,
``metropolis``, with the arguments of their tests): under ``valgrind --tool=callgrind
--cache-sim=yes`` with the instructions clock's settings, the smallest of five single-call
counts of every event, and callgrind's cycle estimate (``Ir + 10 * L1 misses + 100 * LL
misses``, as callgrind_annotate's CEst); natively (CPU dispatch synchronous, one PJRT
thread), the fastest of 200 calls' process CPU seconds. Then, for each measure, the spread
of seconds per unit across the four (max / min of seconds per instruction, and per estimated
cycle): the measure whose seconds-per-unit varies less tracks time better. Also the cost of
the cache simulation (wall seconds of the valgrind run with and without it).

Nothing is asserted: the figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import EXAMPLE

PROGRAM = """
import gc, json, os, sys, time
import jax
jax.config.update("jax_cpu_enable_async_dispatch", False)
import jax.numpy as jnp
import numpy as np
sys.path.insert(0, {example!r})
from jaxperf_example import integration, layer, neighbours, sampler

params = layer.init_params(jax.random.key(0), 256, 256)
wide = jax.random.normal(jax.random.key(2), (512, 256))
grid = jnp.linspace(-10.0, 10.0, 2001)
calls = {{
    "overlap": lambda: integration.overlap(grid, 0.0, 1.0, 1.0, 1.0),
    "dense_relu": lambda: layer.dense_relu(params, wide),
}}
{extra}
counting = sys.argv[1] == "count"
if counting:
    from pytest_codspeed.instruments.hooks import dist_instrument_hooks as h
    inst = h.instrument_hooks_init()
out = {{}}
for name, call in calls.items():
    for _ in range(3):
        jax.block_until_ready(call())
    if counting:
        for n in range(5):
            gc.collect(); gc.disable()
            h.instrument_hooks_start_benchmark(inst)
            jax.block_until_ready(call())
            h.instrument_hooks_stop_benchmark(inst)
            gc.enable()
            h.instrument_hooks_set_executed_benchmark(inst, os.getpid(), f"{{name}}-{{n}}".encode())
    else:
        best = float("inf")
        for _ in range(200):
            t0 = time.process_time()
            jax.block_until_ready(call())
            best = min(best, time.process_time() - t0)
        out[name] = best
print(json.dumps(out))
"""
# The other two benchmarks as their tests call them (tests/test_neighbours.py, test_sampler.py).
ARGS = """
import jax
from jaxperf_example.neighbours import pair_capacity, pair_energy, random_system
from jaxperf_example.sampler import sample, start

N, BOX, CUTOFF = 256, 10.0, 2.0
FRAMES, CHARGES = random_system(seed=0, n_particles=N, box=BOX, n_frames=4)
SIZE = pair_capacity(N, BOX, CUTOFF)
X0 = start(jax.random.key(0), 1000)


def neighbour_call():
    return pair_energy(FRAMES[0], CHARGES, CUTOFF, size=SIZE)


def sampler_call():
    return sample(jax.random.key(2), X0, 1.0, n_steps=100)
"""
EXTRA = """
from tests_args import neighbour_call, sampler_call
calls["pair_energy"] = neighbour_call
calls["metropolis"] = sampler_call
"""


def events(path: Path) -> dict[str, int]:
    names: list[str] = []
    totals: list[int] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("totals:"):
            totals = [int(v) for v in line.split()[1:]]
    return dict(zip(names, totals + [0] * (len(names) - len(totals))))


def estimate(e: dict[str, int]) -> int:
    l1 = e.get("I1mr", 0) + e.get("D1mr", 0) + e.get("D1mw", 0)
    ll = e.get("ILmr", 0) + e.get("DLmr", 0) + e.get("DLmw", 0)
    return e["Ir"] + 10 * l1 + 100 * ll


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n", 1)[0]).parse_args(argv)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PJRT_NPROC": "1", "PYTHONHASHSEED": "0",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="jaxperf-cycles-") as tmp:
        work = Path(tmp)
        (work / "tests_args.py").write_text(ARGS)
        prog = work / "prog.py"
        prog.write_text(PROGRAM.format(example=str(EXAMPLE), extra=EXTRA))
        env["PYTHONPATH"] = str(work)
        native = json.loads(subprocess.run([sys.executable, str(prog), "time"], env=env,
                                           capture_output=True, text=True, check=True,
                                           cwd=work).stdout)  # fmt: skip
        walls = {}
        counted: dict[str, dict[str, dict[str, int]]] = {}
        for sim in ("no", "yes"):
            out = work / sim
            out.mkdir()
            start = time.monotonic()
            subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                            f"--cache-sim={sim}", f"--callgrind-out-file={out}/cg.out",
                            "--quiet", sys.executable, str(prog), "count"],
                           env=env, capture_output=True, text=True, check=True,
                           cwd=work)  # fmt: skip
            walls[sim] = time.monotonic() - start
            for path in out.glob("cg.out.*"):
                first = path.read_text().split("desc: Trigger: Client Request: ", 1)[1]
                name = first.split("\n", 1)[0].rsplit("-", 1)[0]
                e = events(path)
                best = counted.setdefault(sim, {}).get(name)
                if best is None or e["Ir"] < best["Ir"]:
                    counted[sim][name] = e
    print(f"{'benchmark':>12}{'CPU s/call':>12}{'Ir':>14}{'est. cycles':>14}"
          f"{'ns/Ir':>8}{'ns/cycle':>10}")  # fmt: skip
    per_ir, per_cycle = [], []
    for name, seconds in native.items():
        e = counted["yes"][name]
        cyc = estimate(e)
        per_ir.append(seconds / e["Ir"])
        per_cycle.append(seconds / cyc)
        print(f"{name:>12}{seconds:>12.3g}{e['Ir']:>14,}{cyc:>14,}"
              f"{seconds / e['Ir'] * 1e9:>8.3f}{seconds / cyc * 1e9:>10.3f}")  # fmt: skip
    print(f"max/min of seconds per unit: instructions {max(per_ir) / min(per_ir):.2f}, "
          f"estimated cycles {max(per_cycle) / min(per_cycle):.2f} (closer to 1 tracks time "
          "better)")  # fmt: skip
    same = all(counted["no"][n]["Ir"] == counted["yes"][n]["Ir"] for n in native)
    print(f"valgrind run {walls['no']:.0f} s without the cache simulation, {walls['yes']:.0f} s "
          f"with it; instructions equal with and without: {same}")  # fmt: skip
    return 0




if __name__ == "__main__":
    raise SystemExit(main())
