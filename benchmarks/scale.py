"""How the report side of pytest-jaxperf scales with the size of a suite.

Run: ``.venv/bin/python benchmarks/scale.py [--tests 10000] [--runs 100] [--repeat 3]``

Builds, in a temporary directory, a synthetic baseline and run report of ``--tests`` tests
(1-4 jitted functions each with realistic counts, phase seconds and retrace causes; a fifth of
the tests with a ``jaxperf.benchmark`` entry holding runtime statistics and 100 per-round
samples, written as the fixture's are: statistics to 6 significant digits, samples to 4; the run
has ~1% retrace regressions, ~2% improvements, ~1% new tests and jittered timings), then
measures, best of ``--repeat``:

1. what a ``--jaxperf --jaxperf-save`` run does: load the baseline at start-up, compare
   every test, and at the end merge the run into the baseline and save it (the file, unchanged
   since start-up, is not read again). Target < 1 s. Then the same with both files loaded
   (the figure before that reuse), and ``jaxperf compare BASELINE REPORT`` in a fresh process,
   interpreter start included (target < 1 s wall). Files are read with orjson where the
   ``fast`` extra is installed, else with json; the script says which.
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
from pytest_jaxperf.storage import history, store

T = TypeVar("T")

TARGET_COMPARE_S = 1.0
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
        retrace_reasons=[rng.choice(CAUSES) for _ in range(traces - 1)],
    )


def _benchmark(rng: random.Random, median: float) -> model.BenchmarkEntry:
    samples = [median * rng.lognormvariate(0, 0.04) for _ in range(100)]
    return model.BenchmarkEntry(
        first_call_s=round(0.1 + rng.random() * 0.3, 6),
        trace_s=0.004,
        lower_s=0.006,
        compile_s=0.05,
        compiled_on_first_call=True,
        runtime=timing.summarize(samples, rng.choice([1, 10, 100])).rounded(),  # as the fixture
        metrics=model.ProgramMetrics(
            jaxpr_eqns=rng.randint(5, 400),
            hlo_ops=rng.randint(10, 800),
            flops=float(rng.randint(1_000, 10_000_000)),
            bytes_accessed=float(rng.randint(1_000, 10_000_000)),
            temp_bytes=rng.randint(0, 1_000_000),
        ),
    )


def _record(rng: random.Random, i: int) -> RecordedTest:
    module = i // 25
    rec = RecordedTest(
        functions={f.key: f for f in (_function(rng, module, j) for j in range(rng.randint(1, 4)))}
    )
    rec.recompute_totals()
    rec.eager.compiles = rec.eager.lowerings = rng.randint(0, 5)
    rec.eager.compile_s = round(0.02 * rec.eager.compiles, 6)
    if i % 5 == 0:
        rec.benchmarks = {"main": _benchmark(rng, 10 ** rng.uniform(-5, -2))}
    return rec


def _nodeid(i: int) -> str:
    return f"tests/test_module_{i // 25:03}.py::test_case_{i % 25:02}[param-{i}]"


def build(tests: int, seed: int = 0) -> tuple[RunRecord, RunRecord]:
    """A baseline and a run of `tests` tests, with regressions, improvements and new tests."""
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
                    runtime=timing.summarize(
                        [s * rng.lognormvariate(0, 0.03) for s in b.runtime.samples_s],
                        b.runtime.iterations,
                    ).rounded(),
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
        t_read, known = best_of(repeat, lambda: store.read(base_path))
        t_load, (b, r) = best_of(
            repeat, lambda: (store.load(base_path), store.load(run_path))
        )
        assert b is not None and r is not None
        t_cmp, verdicts = best_of(repeat, lambda: evaluate_all(b, r, Tolerances()))
        merged = store.merge(b, r)

        def save_merged() -> bool:
            store.save(saved_path, merged)
            return True

        t_save, _ = best_of(repeat, save_merged)
        t_end = _save_merged(repeat, base_path, root / "plugin.json", r)
        plugin = t_read + t_cmp + t_end
        total = t_load + t_cmp + t_save
        t_cli = _cli_compare(repeat, base_path, run_path)
        failed = sum(o.failed for o in verdicts.values())
        reader = (
            "orjson (the `fast` extra)"
            if store.parser() == "orjson"
            else "json (orjson, the `fast` extra, is not installed)"
        )
        print(f"1. load, compare all tests, save; files read with {reader}")
        print(
            f"   a --jaxperf --jaxperf-save run: load the baseline {t_read:.3f} s + compare "
            f"{t_cmp:.3f} s + save merged {t_end:.3f} s (the file unchanged since: not read "
            f"again) = {plugin:.3f} s  (target < {TARGET_COMPARE_S:g} s: "
            f"{_met(plugin, TARGET_COMPARE_S)}); {failed} regressions found"
        )
        print(
            f"   two files: load baseline + report {t_load:.3f} s + compare {t_cmp:.3f} s + "
            f"save {t_save:.3f} s = {total:.3f} s"
        )
        print(
            f"   jaxperf compare BASELINE REPORT, a fresh process: {t_cli:.3f} s wall  "
            f"(target < {TARGET_COMPARE_S:g} s: {_met(t_cli, TARGET_COMPARE_S)})"
        )
        _breakdown(base_path, b, repeat)

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


def _met(seconds: float, target: float) -> str:
    return "met" if seconds < target else "MISSED"


def _save_merged(repeat: int, baseline: Path, path: Path, run: RunRecord) -> float:
    """What ending a --jaxperf-save run costs, best of `repeat`: merging the run into the
    baseline as read at the start (a fresh copy each time) and saving it under its lock."""
    times = []
    for _ in range(repeat):
        shutil.copyfile(baseline, path)
        known = store.read(path)
        gc.collect()
        start = time.perf_counter()
        store.save_merged(path, run, known)
        times.append(time.perf_counter() - start)
    return min(times)


def _cli_compare(repeat: int, baseline: Path, report: Path) -> float:
    """The wall time of `jaxperf compare BASELINE REPORT` in a fresh interpreter, best of
    `repeat`."""
    cmd = [sys.executable, "-m", "pytest_jaxperf", "compare", str(baseline), str(report)]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        assert done.returncode in (0, 1), done.stderr
    return min(times)


def _breakdown(path: Path, report: RunRecord, repeat: int) -> None:
    """Where loading and saving one file spend their time, and what the samples weigh."""
    text = path.read_text(encoding="utf-8")
    t_parse, data = best_of(repeat, lambda: json.loads(text))
    t_check, _ = best_of(repeat, lambda: model.run_from_json(data))
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
        f"validation (run_from_json) {t_check:.3f} s; store.dumps {t_dumps:.3f} s; "
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
