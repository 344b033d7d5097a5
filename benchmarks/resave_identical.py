"""Whether re-saving unchanged code on a busy machine leaves the baseline byte-identical (a save
keeps each stored value inside its keep band on the gate's
clock, so load moving wall seconds rewrites nothing).

Backs docs/quickstart.md: "the example project re-saved 3 times beside two CPU hogs, the
re-saves at `nice 10` ... stayed byte-identical", and the real suites' re-saves there: an
unchanged re-save rewrites nothing.

Run: ``.venv/bin/python benchmarks/resave_identical.py [--cwd example_project] [--python PY]
[--resaves 3] [--hogs 2] [--nice 19] [-- PYTEST_ARGS...]`` (a real suite: its own
virtualenv's ``--python`` and ``-- --jaxperf-all FILES...``).

A copy of ``--cwd`` (its committed baseline with it) is saved once as it is (``pytest
--jaxperf --jaxperf-save``: the first save may convert an older file; its bytes are the
reference), then re-saved ``--resaves`` times, each beside ``--hogs`` CPU-spinning processes
with the runs at ``nice --nice``. Printed per re-save: identical or not, and each changed
value as ``test id / path: before -> after``; then ``identical N of M``. Exit code 0 whatever
the figures; non-zero when a run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import clean_env, hogs  # noqa: E402

BASELINE = Path(".jaxperf") / "baseline.json"


def changed(before: Any, after: Any, path: str = "") -> list[str]:
    """Each leaf that differs between two JSON values, as 'path: before -> after'."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted({*before, *after}):
            out += changed(before.get(key), after.get(key), f"{path}/{key}")
        return out
    if before != after:
        text = f"{json.dumps(before)[:60]} -> {json.dumps(after)[:60]}"
        return [f"{path or '/'}: {text}"]
    return []


def save(python: str, cwd: Path, args: list[str], nice: int) -> float:
    start = time.perf_counter()
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxperf",
           "--jaxperf-save", *args]  # fmt: skip
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    done = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the save failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    line = next((x for x in done.stdout.splitlines() if "jaxperf: baseline" in x), "")
    print(f"  {line.strip()}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cwd", type=Path, default=Path("example_project"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--resaves", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--nice", type=int, default=19)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="resave-identical-")) / args.cwd.resolve().name
    ignore = shutil.ignore_patterns(".venv*", "__pycache__", ".pytest_cache")
    shutil.copytree(args.cwd, work, ignore=ignore)
    print(f"{args.cwd} copied to {work}; load average {os.getloadavg()[0]:.1f}")
    print("reference save (quiet):")
    save(args.python, work, args.pytest_args, 0)
    path = work / BASELINE
    reference = path.read_bytes()
    identical = 0
    for i in range(1, args.resaves + 1):
        print(f"re-save {i} beside {args.hogs} hogs at nice {args.nice}:")
        with hogs(args.hogs, limit=900):
            seconds = save(args.python, work, args.pytest_args, args.nice)
        now = path.read_bytes()
        same = now == reference
        identical += same
        print(f"  {'identical' if same else 'CHANGED'} ({seconds:.0f} s, "
              f"load average {os.getloadavg()[0]:.1f})")  # fmt: skip
        if not same:
            before, after = json.loads(reference), json.loads(now)
            for line in changed(before, after):
                print(f"    {line}")
            reference = now
    print(f"identical {identical} of {args.resaves}")
    shutil.rmtree(work.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
