"""The recorder's own CPU per trace, hook by hook, for one or more plugin source trees.

Run: ``.venv/bin/python benchmarks/trace_hooks.py [--traces 2000] [--rounds 3]
[SOURCE ...]`` (default SOURCE: this checkout; pass an older worktree too, e.g. one made
with ``git worktree add /tmp/old <commit>``, to compare; about 15 s per run on 2 cores).

A generated test traces one jitted function ``--traces`` times through ``jitted.trace`` with
a new static argument each time (every trace a cache miss), under ``--jaxperf
--jaxperf-all``. Its conftest wraps the recorder's JAX listeners (the start of a trace,
lowering or compile; its end with its seconds; the trace itself) and the helpers they call,
and adds up the thread CPU seconds spent in each: thread CPU, not wall seconds, so that a
busy machine's preemption at a system call is not charged to the hook that made it (a
profile in wall seconds blamed ``time.process_time`` for 0.23 ms per call on a loaded
machine; it takes 0.5 us). The runs of the sources alternate, ``--rounds`` times; printed
per source: the listeners' microseconds per trace (the sum of the three), with the test
loop's milliseconds per trace (JAX's own tracing included, for scale), then each wrapped
function's calls per trace and microseconds per call, medians over the rounds. The
wrappers' own cost (two clock reads each) is in every figure alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import PYTEST, clean_env

LISTENERS = ("_on_trace", "_on_phase_start", "_on_duration")

TEST = """
import time
from functools import partial

import jax
import jax.numpy as jnp

@partial(jax.jit, static_argnums=1)
def f(x, k):
    return x * k + 1

def test_static():
    x = jax.ShapeDtypeStruct((3,), jnp.float32)
    start = time.perf_counter()
    for k in range({n}):
        f.trace(x, k)
    with open("loop.txt", "w") as fh:
        fh.write(str((time.perf_counter() - start) / {n}))
"""

CONFTEST = """
import atexit, collections, functools, json, time

from pytest_jaxperf.measure import _jaxhooks, identity, recorder

SECONDS, CALLS = collections.Counter(), collections.Counter()

def wrap(owner, name, label):
    original = getattr(owner, name, None)
    if original is None:  # not in this version of the plugin
        return
    @functools.wraps(original)
    def timed(*args, **kwargs):
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            SECONDS[label] += time.thread_time() - start
            CALLS[label] += 1
    setattr(owner, name, timed)

LISTENERS = ("_on_trace", "_on_phase_start", "_on_duration")
for name in (*LISTENERS, "_identify", "_remember", "_remember_jitted", "_changed_statics"):
    wrap(recorder.Recorder, name, f"Recorder.{name}")
for name in ("on_trace", "on_trace_time", "wants_cause"):
    wrap(recorder.Scope, name, f"Scope.{name}")
for name in ("cache_key", "miss_explanation", "traced_for_jit", "find_frame"):
    wrap(_jaxhooks, name, f"_jaxhooks.{name}")
for name in ("resolve", "user_callable", "of_callable", "from_debug_info"):
    wrap(identity, name, f"identity.{name}")

@atexit.register
def _write():
    with open("hooks.json", "w") as fh:
        json.dump({"seconds": SECONDS, "calls": CALLS}, fh)
"""


def run(source: Path, work: Path, traces: int) -> dict[str, Any]:
    """One recorded run with the plugin of `source`: the hooks' seconds and calls, and the
    test loop's seconds per trace."""
    for name in ("hooks.json", "loop.txt"):
        (work / name).unlink(missing_ok=True)
    env = clean_env({"PYTHONPATH": str(source)})
    cmd = [sys.executable, *PYTEST[1:], "--jaxperf", "--jaxperf-all"]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not (work / "hooks.json").exists():
        raise SystemExit(f"{source}: pytest rc={done.returncode}\n{done.stdout[-2000:]}")
    data = json.loads((work / "hooks.json").read_text())
    data["loop_s"] = float((work / "loop.txt").read_text())
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path, default=[Path(__file__).parents[1]])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    runs: dict[Path, list[dict[str, Any]]] = {s: [] for s in args.sources}
    with tempfile.TemporaryDirectory(prefix="jaxperf-trace-hooks-") as tmp:
        work = Path(tmp)
        (work / "test_traces.py").write_text(TEST.format(n=args.traces))
        (work / "conftest.py").write_text(CONFTEST)
        for round_ in range(args.rounds):
            for source in args.sources:
                runs[source].append(run(source, work, args.traces))
                print(f"round {round_ + 1} {source}: done", flush=True)
    n = args.traces
    for source, got in runs.items():
        listeners = [sum(r["seconds"].get(f"Recorder.{k}", 0.0) for k in LISTENERS) for r in got]
        loops = [float(r["loop_s"]) for r in got]
        print(
            f"\n{source}: listeners {statistics.median(listeners) / n * 1e6:.1f} us per trace "
            f"(rounds: {', '.join(f'{s / n * 1e6:.0f}' for s in listeners)}); the test's loop "
            f"{statistics.median(loops) * 1e3:.2f} ms per trace"
        )
        for label in sorted({k for r in got for k in r["calls"]}):
            calls = [r["calls"].get(label, 0) for r in got]
            secs = [r["seconds"].get(label, 0.0) for r in got]
            per_call = statistics.median([s / c for s, c in zip(secs, calls) if c] or [0.0])
            per_trace = statistics.median(calls) / n
            print(f"  {label:32} {per_trace:5.2f} calls/trace  {per_call * 1e6:7.1f} us per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
