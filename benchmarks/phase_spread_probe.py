"""Where the compile clock's run-to-run spread comes from: the trace and the lowering of one
3-layer MLP (the example of `compile_instructions.py`), counted under callgrind with the
compile clock's settings (pinned environment, garbage collections left out), three times in
each of two processes started alike, outside pytest. Printed: each counted phase's totals in
both processes and their difference, and the functions whose self cost differs most.

Backs docs/instructions.md's sentence on what still moves trace and lowering counts.

Run: ``.venv/bin/python benchmarks/phase_spread_probe.py [--processes 2]`` (needs valgrind
and ``pytest-jaxperf[instructions]``; about 2 minutes on 2 shared cores). Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOWN = 4  # functions shown per side of each difference


def child() -> None:
    """Under valgrind: trace and lower the MLP three times, one callgrind dump each."""
    sys.path.insert(0, str(ROOT))
    from pytest_jaxperf.measure import instructions

    hooks = instructions._hooks()  # noqa: SLF001 - the probe drives callgrind itself
    instance = hooks.instrument_hooks_init()
    import jax
    import jax.numpy as jnp

    ws = [jnp.full((8, 8), 0.1)] * 3
    x = jnp.ones((2, 8))

    def mlp(x: jax.Array, ws: list[jax.Array]) -> jax.Array:
        for w in ws:
            x = jnp.tanh(x @ w + 1.0)
        return x.sum()

    def count(name: str, call: object) -> object:
        hooks.instrument_hooks_start_benchmark(instance)
        out = call()  # type: ignore[operator]
        hooks.instrument_hooks_stop_benchmark(instance)
        hooks.instrument_hooks_set_executed_benchmark(instance, os.getpid(), name.encode())
        return out

    for i in range(3):
        jitted = jax.jit(mlp)
        traced = count(f"trace{i}", lambda: jitted.trace(x, ws))  # noqa: B023
        count(f"lower{i}", lambda: traced.lower())  # type: ignore[attr-defined]  # noqa: B023
        jax.clear_caches()


def self_costs(path: Path) -> tuple[int, collections.Counter[str]]:
    """A dump's total and each function's self cost (names uncompressed)."""
    fn, total, after_call = "", 0, False
    costs: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        if after_call:  # a call's inclusive cost: not self cost
            after_call = False
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line.startswith("calls="):
            after_call = True
        elif line.startswith("totals:"):
            total = int(line.split()[1])
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if len(parts) >= 2 and fn:
                costs[fn] += int(parts[1])
    return total, costs


def spread(values: list[int]) -> float:
    return (max(values) - min(values)) / min(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    sys.path.insert(0, str(ROOT))
    from pytest_jaxperf.measure import instructions

    work = Path(tempfile.mkdtemp(prefix="phase-spread-"))
    env = instructions.child_environment(os.environ, "probe", work)
    procs = []
    for n in range(args.processes):
        folder = work / f"p{n}"
        folder.mkdir()
        argv = instructions.child_argv("valgrind", folder, [sys.executable, __file__, "--child"])
        procs.append(subprocess.Popen(argv, env=env, cwd=folder))
    codes = [p.wait() for p in procs]
    print(f"command: {' '.join(sys.argv)}; valgrind options: {' '.join(argv[1:-3])}")
    print(f"{args.processes} processes, exit codes {codes}; dumps in {work}")
    dumps = [sorted((work / f"p{n}").glob("callgrind.out.*.*"),
                    key=lambda p: int(p.name.rsplit(".", 1)[1]))
             for n in range(args.processes)]  # fmt: skip
    names = ["trace0", "lower0", "trace1", "lower1", "trace2", "lower2"]
    for i, name in enumerate(names):
        read = [self_costs(d[i]) for d in dumps if i < len(d)]
        totals = [t for t, _ in read]
        # What the compile clock counts of it: spinning (and what it calls) left out.
        work = [instructions.parse_dump(d[i].read_text()).compile_work for d in dumps]
        print(f"\n{name}: totals {', '.join(f'{t:,}' for t in totals)}  spread "
              f"{spread(totals):.3%}; counted {', '.join(f'{t:,}' for t in work)}  spread "
              f"{spread(work):.3%}")  # fmt: skip
        # The lowest count against the highest, function by function.
        low, high = read[totals.index(min(totals))][1], read[totals.index(max(totals))][1]
        diffs = sorted((high[k] - low[k], k) for k in set(low) | set(high))
        for delta, fn in diffs[:SHOWN] + diffs[-SHOWN:]:
            if abs(delta) >= 100:
                print(f"  {delta:+12,}  {fn[:140]}")


if __name__ == "__main__":
    main()
