"""What pytest-jaxperf costs per trace, and whether that cost grows with the number of traces.

Backs docs/limitations.md, "Per trace": "`benchmarks/trace_cost.py` generates such tests"
(0.60, 0.48 and 0.65 ms per trace at 500, 2,000 and 5,000 traces, no growth along a test),
and docs/counting.md: "`benchmarks/trace_cost.py` measures the cost per trace along a test
of up to thousands of traces".

Run: ``.venv/bin/python benchmarks/trace_cost.py [--variants static,shape] [--sizes 500,5000]
[--rounds 1] [--x64] [--profile]`` (defaults: the ``static`` variant at 500, 2,000 and 5,000
traces, 1 round: about 2-3 minutes on 2 loaded CPU cores; more variants or rounds take
proportionally longer).

1. Generates, in a temporary directory with its own ``pytest.ini``, one test per variant and
   size N; each traces one jitted function N times with ``jitted.trace(...)`` (a real trace
   through jit, without lowering or compiling: the suites this measures trace far more
   often than they compile) and every trace is a cache miss, for the reason its variant
   names:

   static   a static argument that takes N values (``static_argnums``)
   shape    N input shapes
   weak     the input alternates between a weakly and a strongly typed float32 (its
            shape changes every second call)
   dtype    the input alternates between float32 and int32 (shape every second call)
   grad     ``jax.jit(jax.value_and_grad(loss))`` at N input shapes
   vmap     ``jax.jit(jax.vmap(g))`` at N batch sizes

   ``--x64`` adds a ``conftest.py`` that turns on ``jax_enable_x64``, as some suites do.
   Each test times its loop itself (wall and CPU seconds after every ``--chunk`` traces),
   so that interpreter and plugin start-up are left out of the per-trace figures.
2. Runs ``python -m pytest -q -p no:cacheprovider`` on the file, alternating ``-p
   no:jaxperf`` (plain) and ``--jaxperf --jaxperf-all`` (recorded) over ``--rounds``
   rounds, and prints per variant and size: plain and recorded milliseconds per trace
   (wall and CPU, medians), the extra milliseconds per trace and the ratio; then, for the
   largest size, the same per chunk: the cost per trace of the first and of the last
   traces of one test. Flat is the goal: the extra per trace must not grow with N nor
   along a test. The traces the plugin counted (from ``--jaxperf-json``) are checked
   against N.
3. ``--profile``: one more recorded run under cProfile (the largest size), and the
   plugin's functions by cumulative time with their calls per trace.

Runs start only once other processes leave the machine quiet (up to ``--quiet-wait`` s);
the CPU seconds other processes used meanwhile are printed with each run.
"""

from __future__ import annotations

import argparse
import cProfile  # noqa: F401  (run as `python -m cProfile`; imported to fail early if absent)
import json
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PYTEST, add_quiet_wait, clean_env, fmt, median, usage, wait_for_quiet

VARIANTS = ("static", "shape", "weak", "dtype", "grad", "vmap")

HEADER = """\
import json
import os
import time
from functools import partial

import jax
import jax.numpy as jnp
import pytest

OUT = os.environ["TRACE_COST_OUT"]
CHUNK = int(os.environ["TRACE_COST_CHUNK"])
SIZES = [int(n) for n in os.environ["TRACE_COST_SIZES"].split(",")]
F32 = jnp.float32


def timed(name, n, step):
    marks = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        step(i)
        if (i + 1) % CHUNK == 0 or i + 1 == n:
            marks.append((i + 1, time.perf_counter() - wall0, time.process_time() - cpu0))
    with open(OUT, "a") as fh:
        fh.write(json.dumps({"test": name, "n": n, "marks": marks}) + "\\n")
"""

BODIES = {
    "static": """
@pytest.mark.parametrize("n", SIZES)
def test_static(n):
    @partial(jax.jit, static_argnums=1)
    def scaled(x, k):
        return x * k

    x = jax.ShapeDtypeStruct((8,), F32)
    timed("static", n, lambda i: scaled.trace(x, i))
""",
    "shape": """
@pytest.mark.parametrize("n", SIZES)
def test_shape(n):
    @jax.jit
    def scaled(x):
        return x * 2.0

    timed("shape", n, lambda i: scaled.trace(jax.ShapeDtypeStruct((i + 1,), F32)))
""",
    "weak": """
@pytest.mark.parametrize("n", SIZES)
def test_weak(n):
    @jax.jit
    def scaled(x):
        return x * 2.0

    def step(i):
        scaled.trace(jax.ShapeDtypeStruct((i // 2 + 1,), F32, weak_type=i % 2 == 1))

    timed("weak", n, step)
""",
    "dtype": """
@pytest.mark.parametrize("n", SIZES)
def test_dtype(n):
    @jax.jit
    def scaled(x):
        return x * 2

    def step(i):
        scaled.trace(jax.ShapeDtypeStruct((i // 2 + 1,), jnp.int32 if i % 2 else F32))

    timed("dtype", n, step)
""",
    "grad": """
@pytest.mark.parametrize("n", SIZES)
def test_grad(n):
    def loss(w, x):
        return jnp.sum((x * w) ** 2)

    step = jax.jit(jax.value_and_grad(loss))

    def one(i):
        s = jax.ShapeDtypeStruct((i + 1,), F32)
        step.trace(s, s)

    timed("grad", n, one)
""",
    "vmap": """
@pytest.mark.parametrize("n", SIZES)
def test_vmap(n):
    def row(x):
        return jnp.dot(x, x)

    batched = jax.jit(jax.vmap(row))
    timed("vmap", n, lambda i: batched.trace(jax.ShapeDtypeStruct((i + 1, 4), F32)))
""",
}

X64_CONFTEST = 'import jax\n\njax.config.update("jax_enable_x64", True)\n'


def write_suite(work: Path, variants: list[str], x64: bool) -> None:
    (work / "pytest.ini").write_text("[pytest]\n")
    (work / "test_traces.py").write_text(HEADER + "".join(BODIES[v] for v in variants))
    if x64:
        (work / "conftest.py").write_text(X64_CONFTEST)


def run(
    work: Path, mode: str, env: dict[str, str], out: Path, quiet_wait: float
) -> tuple[list[dict[str, Any]], float, float, float | None, dict[str, tuple[int, list[str]]]]:
    """One pytest run: per-test marks, wall s, CPU s, others' CPU s, traces counted."""
    out.unlink(missing_ok=True)
    report = work / "report.json"
    report.unlink(missing_ok=True)
    flags = ["-p", "no:jaxperf"] if mode == "plain" else ["--jaxperf", "--jaxperf-all"]
    if mode != "plain":
        flags += ["--jaxperf-json", str(report)]
    wait_for_quiet(quiet_wait)
    with usage() as used:
        done = subprocess.run(
            [*PYTEST, *flags, "test_traces.py"], cwd=work, env=env, capture_output=True, text=True
        )
    if done.returncode != 0:
        sys.exit(f"{mode} run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    tests = [json.loads(line) for line in out.read_text().splitlines()]
    return tests, used.wall, used.cpu, used.others(), counted_traces(report)


def counted_traces(report: Path) -> dict[str, tuple[int, list[str]]]:
    """Traces the plugin recorded per test id and their first causes (its JSON report);
    empty for plain runs."""
    if not report.exists():
        return {}
    data = json.loads(report.read_text())
    found: dict[str, tuple[int, list[str]]] = {}
    for test, entry in data.get("tests", {}).items():
        functions = entry.get("functions", {}).values()
        reasons = [r for fn in functions for r in fn.get("retrace_reasons", [])]
        found[test] = (sum(int(fn.get("traces", 0)) for fn in functions), reasons)
    return found


def per_trace(marks: list[list[float]], start: int, end: int) -> tuple[float, float]:
    """ms per trace (wall, CPU) between the marks after `start` and `end` traces."""
    at = {int(m[0]): (m[1], m[2]) for m in marks}
    w0, c0 = at.get(start, (0.0, 0.0))
    w1, c1 = at[end]
    return (w1 - w0) / (end - start) * 1e3, (c1 - c0) / (end - start) * 1e3


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="static", help=f"of {','.join(VARIANTS)}")
    parser.add_argument("--sizes", default="500,2000,5000", help="traces per test")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=500, help="traces per timed chunk")
    parser.add_argument("--x64", action="store_true", help="turn on jax_enable_x64")
    parser.add_argument("--profile", action="store_true", help="one cProfile'd recorded run")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    add_quiet_wait(parser)
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        parser.error(f"unknown variant(s) {', '.join(bad)}: choose from {', '.join(VARIANTS)}")
    sizes = sorted(int(n) for n in args.sizes.split(","))
    t_start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="jaxperf-trace-cost-"))
    write_suite(work, variants, args.x64)
    out = work / "marks.jsonl"
    env = clean_env(
        {
            "TRACE_COST_OUT": str(out),
            "TRACE_COST_CHUNK": str(args.chunk),
            "TRACE_COST_SIZES": ",".join(map(str, sizes)),
            "JAX_PLATFORMS": "cpu",
        }
    )
    print(f"variants {','.join(variants)}; sizes {sizes}; rounds {args.rounds}; x64 {args.x64}")
    where = subprocess.run(
        [sys.executable, "-c", "import pytest_jaxperf.plugin as p; print(p.__file__)"],
        env=env,
        capture_output=True,
        text=True,
    )
    print(f"plugin {where.stdout.strip() or where.stderr.strip()[-200:]}")
    print(f"work directory {work}\n")
    # (variant, n, mode) -> list of marks per round
    marks: dict[tuple[str, int, str], list[list[list[float]]]] = {}
    totals: dict[str, list[tuple[float, float]]] = {"plain": [], "recorded": []}
    for r in range(args.rounds):
        order = ("plain", "recorded") if r % 2 == 0 else ("recorded", "plain")
        for mode in order:
            tests, wall, cpu, others, counted = run(work, mode, env, out, args.quiet_wait)
            totals[mode].append((wall, cpu))
            print(
                f"round {r + 1} {mode:8s} wall {wall:7.1f} s  cpu {cpu:7.1f} s  "
                f"others' cpu {fmt(others, '.1f', ' s')}"
            )
            for t in tests:
                marks.setdefault((t["test"], t["n"], mode), []).append(t["marks"])
            for test, (traces, reasons) in sorted(counted.items()):
                n = int(test.rsplit("[", 1)[-1].rstrip("]"))
                if traces != n:
                    print(f"  WARNING: {test}: the plugin counted {traces} traces, not {n}")
                if r == 0 and n == sizes[0]:
                    print(f"  {test}: {traces} traces; causes: {'; '.join(reasons[:2])}; ...")
    print("\nwhole runs (medians): ", end="")
    pw = median([w for w, _ in totals["plain"]])
    rw = median([w for w, _ in totals["recorded"]])
    pc = median([c for _, c in totals["plain"]])
    rc = median([c for _, c in totals["recorded"]])
    print(
        f"plain {fmt(pw, '.1f')} s wall / {fmt(pc, '.1f')} s cpu; recorded {fmt(rw, '.1f')} s"
        f" / {fmt(rc, '.1f')} s: {fmt(ratio(rw, pw), '.3f')}x wall, "
        f"{fmt(ratio(rc, pc), '.3f')}x cpu"
    )
    print("\nper trace, the whole loop (ms, medians over rounds)")
    print(
        f"{'variant':8s} {'N':>6s} {'plain wall':>10s} {'rec wall':>9s} {'extra':>7s} "
        f"{'ratio':>6s}   {'plain cpu':>9s} {'rec cpu':>8s} {'extra':>7s} {'ratio':>6s}"
    )
    for v in variants:
        for n in sizes:
            row = []
            for mode in ("plain", "recorded"):
                runs = [per_trace(m, 0, n) for m in marks.get((v, n, mode), [])]
                row.append((median([w for w, _ in runs]), median([c for _, c in runs])))
            (pw1, pc1), (rw1, rc1) = row
            ew = None if pw1 is None or rw1 is None else rw1 - pw1
            ec = None if pc1 is None or rc1 is None else rc1 - pc1
            print(
                f"{v:8s} {n:6d} {fmt(pw1, '10.3f')} {fmt(rw1, '9.3f')} {fmt(ew, '7.3f')} "
                f"{fmt(ratio(rw1, pw1), '6.3f')}   {fmt(pc1, '9.3f')} {fmt(rc1, '8.3f')} "
                f"{fmt(ec, '7.3f')} {fmt(ratio(rc1, pc1), '6.3f')}"
            )
    big = sizes[-1]
    print(f"\nper trace along the {big}-trace test, by chunk of {args.chunk} (ms, medians)")
    print(f"{'variant':8s} {'traces':>11s} {'plain wall':>10s} {'rec wall':>9s} {'extra':>7s}")
    for v in variants:
        bounds = [0, *range(args.chunk, big, args.chunk), big]
        for a, b in zip(bounds, bounds[1:]):
            row = []
            for mode in ("plain", "recorded"):
                row.append(median([per_trace(m, a, b)[0] for m in marks.get((v, big, mode), [])]))
            extra = None if None in row else row[1] - row[0]  # type: ignore[operator]
            print(
                f"{v:8s} {f'{a + 1}-{b}':>11s} {fmt(row[0], '10.3f')} {fmt(row[1], '9.3f')} "
                f"{fmt(extra, '7.3f')}"
            )
    if args.profile:
        profile(work, env, out, big, variants, args.quiet_wait)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def profile(
    work: Path, env: dict[str, str], out: Path, n: int, variants: list[str], quiet_wait: float
) -> None:
    """One recorded run of the largest size under cProfile: the plugin's functions."""
    prof = work / "recorded.prof"
    out.unlink(missing_ok=True)
    wait_for_quiet(quiet_wait)
    cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), *PYTEST[1:]]
    cmd += ["--jaxperf", "--jaxperf-all", "test_traces.py", "-k", f"[{n}]"]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"profiled run failed:\n{done.stdout[-2000:]}")
        return
    traces = n * len(variants)
    stats = pstats.Stats(str(prof))
    rows = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "pytest_jaxperf" in filename:
            rows.append((cumtime, tottime, calls, f"{Path(filename).name}:{line}({name})"))
    rows.sort(reverse=True)
    print(f"\ncProfile of one recorded run at N={n} ({traces} traces): the plugin's functions")
    print(f"{'cum s':>7s} {'own s':>7s} {'calls/trace':>11s} {'cum ms/trace':>12s}  function")
    for cum, own, calls, where in rows[:25]:
        print(f"{cum:7.2f} {own:7.2f} {calls / traces:11.2f} {cum / traces * 1e3:12.3f}  {where}")


if __name__ == "__main__":
    sys.exit(main())
