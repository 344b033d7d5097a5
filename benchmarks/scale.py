"""How the report side of pytest-jaxperf scales with the size of a suite.

Backs docs/outputs.md: "The targets, measured by `benchmarks/scale.py` (a baseline as a save
writes it, a run file with every field present): `jaxperf compare` of two 10,000-test files
within 0.5 s wall", and the 50,000-test gate and save targets there.

Run: ``.venv/bin/python benchmarks/scale.py [--tests 10000] [--runs 100] [--repeat 3]
[--compare-only]``

Builds, in a temporary directory, a synthetic run report of ``--tests`` tests in the current
schema with every field present (1-4 jitted functions each with realistic counts,
wall and CPU phase seconds, program sizes and retrace causes; a fifth of the tests with a
``jaxperf.benchmark`` entry holding runtime statistics with a CPU median, 100 per-round samples,
every program metric, the eager median, device peak and instructions, written as the fixture's
are: statistics to 6 significant digits, samples to 4; the run has ~1% retrace regressions, ~2%
improvements, ~1% new tests and jittered timings), and the baseline as a ``--jaxperf-save``
writes it (what the gate reads, ``resave.baseline_form`` on the default compile clock: no wall
seconds, the eager counts alone, four runtime statistics), then measures, best of ``--repeat``:

1. what a ``--jaxperf --jaxperf-save`` run does: load the baseline at start-up, compare
   every test, and at the end merge the run into the baseline (by --jaxperf-save's rules,
   ``storage/resave.py``) and save it (the file, unchanged
   since start-up, is not read again). Target < 1 s. Then the same with both files loaded
   (the figure before that reuse), and ``jaxperf compare BASELINE REPORT`` in a fresh process,
   interpreter start included, wall and CPU seconds: on the files as the plugin saves them and
   as ``json.dumps(indent=1)`` writes them, read with msgspec (the ``fast`` extra, where
   installed: decoded straight into records), with orjson alone and with json (target for
   10,000 tests: <= 0.5 s wall), and the floor under it: parsing the two files and nothing
   else, and starting the interpreter. Then, each in a fresh
   process, what a ``--jaxperf`` run adds for the baseline: gating (read the baseline, compare
   every test) and saving (merge the run into it, write it); targets for 50,000 tests
   (``--tests 50000 --compare-only``): <= 2 s each, and the memory each adds (peak resident
   size less the size before it) <= 2x the baseline file's size; for the gate, also what
   reading the baseline takes of it (its peak, and what its records keep).
2. markdown (``--jaxperf-markdown``) and HTML (``--jaxperf-html``, needs matplotlib)
   generation without history. Target < 5 s together.
3. a history of ``--runs`` runs: making and appending one entry per run, loading the whole
   file, and the HTML report with the trends it adds.

No jax needed; matplotlib for the HTML figures (skipped with a note when missing).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

from pytest_jaxperf import model
from pytest_jaxperf.cli import evaluate_all
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.measure import timing
from pytest_jaxperf.model import FunctionRecord, RecordedTest, RunRecord
from pytest_jaxperf.report.markdown import render_markdown
from pytest_jaxperf.storage import history, resave, store

T = TypeVar("T")

TARGET_COMPARE_S = 1.0
TARGET_CLI_S = 0.5
TARGET_EXTRA_S = 2.0
TARGET_MEMORY_X = 2.0
TARGET_REPORTS_S = 5.0

ENV = {
    "backend": "cpu",
    "cpu": "AMD EPYC 7B13",
    "cpu_count": 16,
    "device_count": 1,
    "device_kind": "cpu",
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "platform": "Linux-6.8-x86_64-with-glibc2.36",
    "python": "3.11.7",
    "x64": False,
}
NAMES = ["step", "loss", "update", "predict", "integrate", "<lambda>", "solve", "kernel"]
CAUSES = [
    "x: f32[128] -> f32[256]",
    "static argument n: 3 -> 4",
    "config jax_enable_x64: False -> True",
    "function re-defined on every call (jit inside a loop?)",
]


def _function(rng: random.Random, module: int, index: int) -> FunctionRecord:
    traces = rng.choice([1, 1, 1, 1, 2, 3])
    scale = rng.lognormvariate(0, 0.8)
    return FunctionRecord(
        name=NAMES[(module + index) % len(NAMES)],
        site=f"pkg/module_{module:03}.py:{10 + 17 * index}",
        traces=traces,
        lowerings=traces,
        compiles=traces,
        trace_s=round(0.004 * scale * traces, 6),
        lower_s=round(0.006 * scale * traces, 6),
        compile_s=round(0.05 * scale * traces, 6),
        trace_cpu_s=round(0.0038 * scale * traces, 6),
        lower_cpu_s=round(0.0057 * scale * traces, 6),
        compile_cpu_s=round(0.09 * scale * traces, 6),
        jaxpr_eqns=rng.randint(3, 300) * traces,
        hlo_ops=rng.randint(5, 500) * traces,
        xla_ops=rng.randint(5, 400) * traces,
        retrace_reasons=[rng.choice(CAUSES) for _ in range(traces - 1)],
    )


def _benchmark(rng: random.Random, median: float) -> model.BenchmarkEntry:
    samples = [median * rng.lognormvariate(0, 0.04) for _ in range(100)]
    runtime = timing.summarize(samples, rng.choice([1, 10, 100])).rounded()  # as the fixture
    return model.BenchmarkEntry(
        first_call_s=round(0.1 + rng.random() * 0.3, 6),
        trace_s=0.004,
        lower_s=0.006,
        compile_s=0.05,
        compiled_on_first_call=True,
        runtime=dataclasses.replace(runtime, cpu_median_s=runtime.median_s),
        metrics=model.ProgramMetrics(
            jaxpr_eqns=rng.randint(5, 400),
            hlo_ops=rng.randint(10, 800),
            flops=float(rng.randint(1_000, 10_000_000)),
            transcendentals=float(rng.randint(0, 10_000)),
            bytes_accessed=float(rng.randint(1_000, 10_000_000)),
            argument_bytes=rng.randint(1_000, 1_000_000),
            output_bytes=rng.randint(1_000, 1_000_000),
            temp_bytes=rng.randint(0, 1_000_000),
            peak_bytes=rng.randint(1_000, 2_000_000),
        ),
        eager_median_s=round(median * 5, 9),
        break_even_calls=float(rng.randint(2, 500)),
        device_peak_bytes=rng.randint(1_000, 2_000_000),
        instructions=rng.randint(10_000, 10_000_000),
    )


def _record(rng: random.Random, i: int) -> RecordedTest:
    module = i // 25
    rec = RecordedTest(
        functions={f.key: f for f in (_function(rng, module, j) for j in range(rng.randint(1, 4)))}
    )
    rec.recompute_totals()
    rec.eager.compiles = rec.eager.lowerings = rng.randint(0, 5)
    rec.eager.compile_s = round(0.02 * rec.eager.compiles, 6)
    rec.eager.compile_cpu_s = round(0.03 * rec.eager.compiles, 6)
    rec.eager.jaxpr_eqns = rec.eager.hlo_ops = rec.eager.xla_ops = 3 * rec.eager.compiles
    if i % 5 == 0:
        rec.benchmarks = {"main": _benchmark(rng, 10 ** rng.uniform(-5, -2))}
    return rec


def _nodeid(i: int) -> str:
    return f"tests/test_module_{i // 25:03}.py::test_case_{i % 25:02}[param-{i}]"


def build(tests: int, seed: int = 0, full: bool = False) -> tuple[RunRecord, RunRecord]:
    """A baseline and a run of `tests` tests, with regressions, improvements and new tests;
    with `full`, the baseline with every field, as a run file holds it."""
    rng = random.Random(seed)
    base_tests = {_nodeid(i): _record(rng, i) for i in range(tests)}
    run_tests: dict[str, RecordedTest] = {}
    for i, (nodeid, old) in enumerate(base_tests.items()):
        if i % 100 == 99:
            continue  # deleted test; its place is taken by a new one below
        rec = RecordedTest(
            functions={
                k: FunctionRecord(**{**vars(f), "retrace_reasons": list(f.retrace_reasons)})
                for k, f in old.functions.items()
            },
            benchmarks={
                label: dataclasses.replace(
                    b,
                    runtime=dataclasses.replace(
                        timing.summarize(
                            [s * rng.lognormvariate(0, 0.03) for s in b.runtime.samples_s],
                            b.runtime.iterations,
                        ).rounded(),
                        cpu_median_s=b.runtime.cpu_median_s,
                    ),
                )
                for label, b in old.benchmark_entries()
                if b.runtime is not None
            },
        )
        first = next(iter(rec.functions.values()))
        if i % 100 == 7:  # a retrace regression
            first.traces += 1
            first.compiles += 1
            first.lowerings += 1
            first.retrace_reasons.append(rng.choice(CAUSES))
        elif i % 50 == 3 and first.traces > 1:  # an improvement
            first.traces = first.compiles = first.lowerings = 1
            first.retrace_reasons = []
        for f in rec.functions.values():
            jitter = rng.lognormvariate(0, 0.1)
            f.trace_s, f.lower_s, f.compile_s = (
                round(v * jitter, 6) for v in (f.trace_s, f.lower_s, f.compile_s)
            )
        rec.recompute_totals()
        rec.eager.add(old.eager)
        run_tests[nodeid] = rec
    for j in range(tests // 100):
        run_tests[f"tests/test_new.py::test_added_{j:04}"] = _record(rng, tests + j)
    # The baseline as a --jaxperf-save writes it (on the default compile clock): what the gate
    # reads (resave.baseline_form); the run file holds every field.
    if not full:
        clock = Tolerances().compile_clock
        base_tests = {k: resave.baseline_form(rec, clock) for k, rec in base_tests.items()}
    return RunRecord(dict(ENV), base_tests), RunRecord(dict(ENV), run_tests)


def best_of(repeat: int, call: Callable[[], T]) -> tuple[float, T]:
    """The shortest wall time of `repeat` calls (gc collected before each), and a result."""
    times, result = [], None
    for _ in range(repeat):
        result = None  # freeing the last result (a whole report, say) is not the next call's cost
        gc.collect()
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    assert result is not None
    return min(times), result


def _mb(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=10_000, help="tests in the suite (10000)")
    ap.add_argument("--runs", type=int, default=100, help="runs in the history (100)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many timings (3)")
    ap.add_argument(
        "--compare-only",
        action="store_true",
        help="stop after 1. (loading, comparing, saving): no reports, no history",
    )
    ap.add_argument(
        "--no-cli",
        action="store_true",
        help="leave out the timings of jaxperf compare in a fresh process (4 per --repeat)",
    )
    args = ap.parse_args(argv)
    repeat = max(1, args.repeat)

    print(f"pytest-jaxperf report scale: {args.tests} tests, history of {args.runs} runs")
    print(f"python {sys.version.split()[0]}, best of {repeat}\n")
    start = time.perf_counter()
    base, run = build(args.tests)
    print(f"synthetic data built in {time.perf_counter() - start:.2f} s")

    with tempfile.TemporaryDirectory(prefix="jaxperf-scale-") as tmp:
        root = Path(tmp)
        base_path, run_path, saved_path = (
            root / "baseline.json",
            root / "run.json",
            root / "new.json",
        )
        store.save(base_path, base)
        store.save(run_path, run)
        print(f"baseline {_mb(base_path)}, report {_mb(run_path)} ({len(run.tests)} tests)\n")

        # 1. load + compare + save
        # As a session reads its baseline (a big one lazily: each entry read when compared).
        t_read, known = best_of(repeat, lambda: store.read(base_path, lazy=True))
        t_load, (b, r) = best_of(repeat, lambda: (store.load(base_path), store.load(run_path)))
        assert b is not None and r is not None and known.run is not None
        lazy_base = known.run
        t_gated, _ = best_of(repeat, lambda: evaluate_all(lazy_base, r, Tolerances()))
        t_cmp, verdicts = best_of(repeat, lambda: evaluate_all(b, r, Tolerances()))
        merged = _resave(r)(b, r)

        def save_locked() -> bool:
            store.save(saved_path, merged)
            return True

        t_save, _ = best_of(repeat, save_locked)
        t_end = _save_merged(repeat, base_path, root / "plugin.json", r)
        plugin = t_read + t_gated + t_end
        total = t_load + t_cmp + t_save
        failed = sum(o.failed for o in verdicts.values())
        reader = {
            "msgspec": "msgspec (the `fast` extra: decoded straight into records)",
            "orjson": "orjson (msgspec, of the `fast` extra, is not installed)",
            "json": "json (the `fast` extra is not installed)",
        }[store.reader()]
        print(f"1. load, compare all tests, save; files read with {reader}")
        print(
            f"   a --jaxperf --jaxperf-save run: load the baseline {t_read:.3f} s + compare "
            f"{t_gated:.3f} s + save merged {t_end:.3f} s (the file unchanged since: not read "
            f"again) = {plugin:.3f} s  (target < {TARGET_COMPARE_S:g} s: "
            f"{_met(plugin, TARGET_COMPARE_S)}); {failed} regressions found"
        )
        print(
            f"   two files: load baseline + report {t_load:.3f} s + compare {t_cmp:.3f} s + "
            f"save {t_save:.3f} s = {total:.3f} s"
        )
        print(
            "   jaxperf compare BASELINE REPORT, a fresh process (interpreter start included), "
            f"wall and CPU seconds (target <= {TARGET_CLI_S:g} s wall):"
        )
        indented = (root / "baseline-indent1.json", root / "run-indent1.json")
        for record, path in zip((base, run), indented):
            path.write_text(json.dumps(model.run_to_json(record), indent=1), encoding="utf-8")
        for files, layout in (
            ((base_path, run_path), f"as saved ({_mb(base_path)})"),
            (indented, f"json.dumps(indent=1) ({_mb(indented[0])})"),
        )[: 0 if args.no_cli else 2]:
            for which in READERS:
                if READERS.index(which) < READERS.index(store.reader()):
                    print(f"     {layout}, {which}: not installed")
                    continue
                wall, cpu = _cli_compare(repeat, *files, which)
                print(
                    f"     {layout}, {which}: {wall:.3f} s wall, {cpu:.3f} s CPU  "
                    f"({_met(wall, TARGET_CLI_S, True)})"
                )
        _floor(base_path, run_path, repeat)
        _breakdown(base_path, b, repeat)
        _gate_and_save(base_path, run_path, store.reader())

        if args.compare_only:
            return 0

        # 2. markdown and HTML without history
        t_md, md = best_of(repeat, lambda: render_markdown(r, verdicts, str(base_path)))
        print("\n2. reports without history")
        print(f"   markdown {t_md:.3f} s ({len(md.encode()) / 1e3:.0f} kB)")
        html_mod = _html()
        if html_mod is None:
            print("   HTML: skipped, matplotlib is not installed (pip install matplotlib)")
        else:
            html_mod.render_html(RunRecord(), None, {})  # matplotlib's import, paid once
            t_html, page = best_of(repeat, lambda: html_mod.render_html(r, b, verdicts))
            both = t_md + t_html
            print(f"   HTML     {t_html:.3f} s ({len(page.encode()) / 1e6:.1f} MB)")
            print(
                f"   together {both:.3f} s  (target < {TARGET_REPORTS_S:g} s: "
                f"{'met' if both < TARGET_REPORTS_S else 'MISSED'})"
            )

        # 3. history
        hist_path = root / "history.jsonl"
        when = datetime(2025, 1, 1, tzinfo=timezone.utc)
        start = time.perf_counter()
        t_entry = 0.0
        for i in range(args.runs):
            t0 = time.perf_counter()
            entry = history.make_entry(r, when + timedelta(hours=i), cwd=root)
            t_entry += time.perf_counter() - t0
            history.append(hist_path, entry)
        t_append_all = time.perf_counter() - start
        t_git, _ = best_of(1, lambda: history.git_state(Path(__file__).resolve().parent))
        t_hload, entries = best_of(repeat, lambda: history.load(hist_path))
        print(
            f"\n3. history of {args.runs} runs ({_mb(hist_path)}, "
            f"{hist_path.stat().st_size / args.runs / 1e3:.0f} kB per run)"
        )
        print(
            f"   make entry + append, per run: {t_append_all / args.runs * 1e3:.1f} ms "
            f"(entry {t_entry / args.runs * 1e3:.1f} ms; git commit + dirty flag in this "
            f"repository adds {t_git * 1e3:.0f} ms)"
        )
        print(f"   load all {len(entries)} runs: {t_hload:.3f} s")
        if html_mod is not None:
            t_hhtml, _ = best_of(repeat, lambda: html_mod.render_html(r, b, verdicts, entries))
            print(
                f"   HTML with the history: {t_hhtml:.3f} s "
                f"(+{t_hhtml - t_html:.3f} s for the trends)"
            )
            per_run = t_append_all / args.runs
            print(
                f"   end of a run with --jaxperf-history and --jaxperf-html: append "
                f"{per_run:.3f} s + load {t_hload:.3f} s + HTML {t_hhtml:.3f} s "
                f"= {per_run + t_hload + t_hhtml:.3f} s"
            )
    return 0


def _met(seconds: float, target: float, at_most: bool = False) -> str:
    return "met" if seconds < target or (at_most and seconds == target) else "MISSED"


def _save_merged(repeat: int, baseline: Path, path: Path, run: RunRecord) -> float:
    """What ending a --jaxperf-save run costs, best of `repeat`: merging the run into the
    baseline as read at the start (a fresh copy each time) and saving it under its lock."""
    times = []
    for _ in range(repeat):
        shutil.copyfile(baseline, path)
        known = store.read(path, lazy=True)
        gc.collect()
        start = time.perf_counter()
        store.save_locked(path, run, _resave(run), known)
        times.append(time.perf_counter() - start)
    return min(times)


def _resave(run: RunRecord) -> resave.Resave:
    """How a --jaxperf-save session merges `run` (its default settings)."""
    tol = Tolerances()
    return resave.Resave(resave.Measured.of(run.environment, "gate", tol.runtime_clock), tol)


# What reads the files first: msgspec (the `fast` extra), orjson (as before msgspec was part of
# it), or the standard library's json (as without the extra). For the last two, what is not
# to be used is made unimportable before the command starts.
READERS = ("msgspec", "orjson", "json")
_WITHOUT = {
    "msgspec": "",
    "orjson": "sys.modules['msgspec'] = None; ",
    "json": "sys.modules['msgspec'] = sys.modules['orjson'] = None; ",
}
_COMMAND = "import sys; {}from pytest_jaxperf.cli import main; raise SystemExit(main(sys.argv[1:]))"


def _cli_compare(
    repeat: int, baseline: Path, report: Path, which: str = "msgspec"
) -> tuple[float, float]:
    """The wall and CPU seconds of `jaxperf compare BASELINE REPORT` in a fresh interpreter,
    each the least of `repeat` runs; `which` of READERS reads the files first ("json": as
    without the `fast` extra)."""
    start_with = (
        ["-m", "pytest_jaxperf"] if which == "msgspec" else ["-c", _COMMAND.format(_WITHOUT[which])]
    )
    cmd = [sys.executable, *start_with, "compare", str(baseline), str(report)]
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert done.returncode in (0, 1), done.stderr
    return min(walls), min(cpus)


# What a --jaxperf run adds for its baseline, in a fresh process: "gate" reads the baseline
# (as at the start of the run) and compares every test of the run (as each test ends); "save"
# merges the run into the baseline as read and saves it (the end of --jaxperf-save). The run's
# records, which the session holds anyway, are loaded before. Prints the seconds and the
# memory the step added (the peak resident size less the size before it), as JSON. The peak
# is the step's own where Linux lets it be reset (/proc/self/clear_refs), else the process's.
_STEP = """
import json, os, resource, shutil, sys, time
if sys.argv[1] != "msgspec":
    sys.modules["msgspec"] = None
if sys.argv[1] == "json":
    sys.modules["orjson"] = None
from pathlib import Path
from pytest_jaxperf.cli import evaluate_all
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.storage import resave, store
step, baseline, report = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
run = store.load(report)
if step == "save":
    shutil.copyfile(baseline, baseline.with_suffix(".save"))
    baseline = baseline.with_suffix(".save")
    known = store.read(baseline, lazy=True)
def peak():
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:  # the peak so far (reading the files above) is not the step's: start it afresh
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
with open("/proc/self/statm") as f:
    before = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
start = time.perf_counter()
read = {}
if step == "gate":
    known = store.read(baseline, lazy=True)
    with open("/proc/self/statm") as f:
        kept = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    read = {"read_s": time.perf_counter() - start, "read_peak": peak() - before,
            "read_kept": kept - before}
    evaluate_all(known.run, run, Tolerances())
else:
    tol = Tolerances()
    how = resave.Resave(resave.Measured.of(run.environment, "gate", tol.runtime_clock), tol)
    store.save_locked(baseline, run, how, known)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "extra": peak() - before, **read}))
"""


def _gate_and_save(baseline: Path, report: Path, which: str) -> None:
    """Prints what a --jaxperf run's gating and saving add, each in a fresh process."""
    size = baseline.stat().st_size
    print(
        f"   a --jaxperf run against this baseline ({size / 1e6:.1f} MB), files read with "
        f"{which}, in a fresh process (targets: <= {TARGET_EXTRA_S:g} s extra, memory <= "
        f"{TARGET_MEMORY_X:g}x the file):"
    )
    for step, what in (
        ("gate", "gate (read the baseline, compare every test)"),
        ("save", "save (merge the run into the baseline by --jaxperf-save's rules, write it)"),
    ):
        cmd = [sys.executable, "-c", _STEP, which, step, str(baseline), str(report)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or "/proc" in done.stderr:
            print(f"     {what}: not measured ({done.stderr.strip().splitlines()[-1:]})")
            continue
        got = json.loads(done.stdout)
        times = got["extra"] / size
        print(
            f"     {what}: {got['seconds']:.3f} s ({_met(got['seconds'], TARGET_EXTRA_S, True)}), "
            f"+{got['extra'] / 1e6:.0f} MB = {times:.2f}x the file "
            f"({_met(times, TARGET_MEMORY_X, True)})"
        )
        if "read_s" in got:
            print(
                f"       of which reading the baseline (parse, check, records): "
                f"{got['read_s']:.3f} s, peak +{got['read_peak'] / 1e6:.0f} MB, "
                f"+{got['read_kept'] / 1e6:.0f} MB kept (the records)"
            )


def _floor(baseline: Path, report: Path, repeat: int) -> None:
    """What parsing the two files alone takes, the least `jaxperf compare` can take after the
    interpreter's start: with msgspec and orjson (where installed) and with json, from their
    bytes; and msgspec's decoding of them straight into checked records (storage/typed.py)."""
    raws = [baseline.read_bytes(), report.read_bytes()]
    parsers: list[tuple[str, Callable[[bytes], Any]]] = [("json", json.loads)]
    try:
        import orjson

        parsers.insert(0, ("orjson", orjson.loads))
    except ImportError:
        pass
    try:
        import msgspec

        from pytest_jaxperf.storage import typed

        parsers[:0] = [
            ("msgspec into checked records", typed.read_run),
            ("msgspec", msgspec.json.decode),
        ]
    except ImportError:
        pass
    figures = []
    for name, loads in parsers:
        with store.collector_paused():  # as the command parses: no collection walks the objects
            seconds, _ = best_of(repeat, lambda parse=loads: [parse(raw) for raw in raws])
        figures.append(f"{name} {seconds:.3f} s")
    print(
        f"   the floor of jaxperf compare: parsing both files, nothing else: "
        f"{', '.join(figures)}; python -c pass {_interpreter_start(repeat):.3f} s"
    )


def _interpreter_start(repeat: int) -> float:
    """The wall seconds of starting and ending this interpreter with nothing to do."""
    seconds, _ = best_of(repeat, lambda: subprocess.run([sys.executable, "-c", "pass"]))
    return seconds


def _breakdown(path: Path, report: RunRecord, repeat: int) -> None:
    """Where loading and saving one file spend their time, and what the samples weigh."""
    text = path.read_text(encoding="utf-8")
    t_parse, data = best_of(repeat, lambda: json.loads(text))
    t_check, _ = best_of(repeat, lambda: model.run_from_json(json.loads(text), consume=True))
    t_dumps, _ = best_of(repeat, lambda: store.dumps(report))
    t_tojson, doc = best_of(repeat, lambda: model.run_to_json(report))
    t_indent, old = best_of(1, lambda: json.dumps(doc, indent=2, sort_keys=True))
    t_compact, _ = best_of(repeat, lambda: json.dumps(doc, sort_keys=True))
    for test in doc["tests"].values():
        for bench in test["benchmarks"].values():
            bench.get("runtime", {}).pop("samples_s", None)
    without = len(store.format_json(doc).encode())
    print(
        f"   one file ({len(text.encode()) / 1e6:.1f} MB): json.loads {t_parse:.3f} s + "
        f"validation (run_from_json) {t_check - t_parse:.3f} s; store.dumps {t_dumps:.3f} s; "
        f"{without / 1e6:.1f} MB without the per-round samples_s"
    )
    print(
        f"   for comparison: run_to_json {t_tojson:.3f} s + json.dumps(indent=2, "
        f"sort_keys=True) {t_indent:.3f} s ({len(old.encode()) / 1e6:.1f} MB, the layout "
        f"before), compact json.dumps(sort_keys=True) {t_compact:.3f} s"
    )


def _html() -> Any:
    try:
        from pytest_jaxperf.report import html
    except ImportError:  # pragma: no cover - the module itself imports no matplotlib
        return None
    try:
        html.require_matplotlib()
    except ImportError:
        return None
    return html


if __name__ == "__main__":
    raise SystemExit(main())
