"""benchmarks/gpu_check.py's verdicts on hand-made runs (its comparing and printing, without
a GPU), its way of running pytest (the instructions clock's refusal, a real run), and the
two plugin changes it checks: the device peak in a benchmark's line, and the refusal of
the instructions clock on cuda named before anything else is looked for."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest
from _jaxperf_data import bench
from _records import fn, rec
from conftest import benchmark_module

from pytest_jaxperf.measure import instructions
from pytest_jaxperf.model import ProgramMetrics, RunRecord
from pytest_jaxperf.report.wording import benchmark_line, byte_size


@pytest.fixture(scope="module")
def gc() -> ModuleType:
    """benchmarks/gpu_check.py as a module."""
    return cast(ModuleType, benchmark_module("gpu_check"))


def _report(**tests: Any) -> RunRecord:
    return RunRecord(environment={"jax": "0.10.2", "backend": "gpu"}, tests=tests)


def _run(gc: ModuleType, report: RunRecord | None, label: str = "cuda", output: str = "",
         rc: int = 0, name: str = "gpu_tests") -> Any:  # fmt: skip
    return gc.Run(name, label, rc, output, report, 1.0)


def _split(traces: int = 1, lower_s: float = 0.02) -> Any:
    return fn("f", "m.py:1", traces, trace_s=0.01, lower_s=lower_s, compile_s=0.3)


def test_identical_counts_pass_with_their_totals(gc: ModuleType) -> None:
    cpu = _run(gc, _report(t=rec(_split(2), fn("g", "m.py:9"))), "cpu")
    dev = _run(gc, _report(t=rec(_split(2), fn("g", "m.py:9"))))
    check = gc.check_counts(cpu, dev)
    assert check.line() == (
        "PASS  counts cpu = cuda (gpu_tests): 1 tests, 2 functions: traces 3, lowerings 3, "
        "compiles 3"
    )


def test_a_count_that_differs_fails_naming_test_function_and_backends(gc: ModuleType) -> None:
    cpu = _run(gc, _report(t=rec(_split(2)), u=rec(_split())), "cpu")
    dev = _run(gc, _report(t=rec(_split(3)), v=rec(_split())))
    check = gc.check_counts(cpu, dev)
    assert check.status == "FAIL"
    assert check.detail.split("; ") == [
        "t: traces 2 on cpu, 3 on cuda",
        "t: lowerings 2 on cpu, 3 on cuda",
        "t: compiles 2 on cpu, 3 on cuda",
        "t: f at m.py:1: traces 2 on cpu, 3 on cuda",
        "t: f at m.py:1: lowerings 2 on cpu, 3 on cuda",
        "t: f at m.py:1: compiles 2 on cpu, 3 on cuda",
        "... (8 in all)",
    ]
    assert gc.count_differences(cpu.report, dev.report, ("cpu", "cuda"))[-2:] == [
        "u: recorded on cpu only",
        "v: recorded on cuda only",
    ]


def test_an_outcome_or_a_function_on_one_side_only_is_a_difference(gc: ModuleType) -> None:
    failed = dataclasses.replace(rec(_split()), outcome="failed")
    diffs = gc.count_differences(
        _report(t=rec(_split()), u=rec(_split())),
        _report(t=failed, u=rec(_split(), fn("g", "m.py:9"))),
        ("cpu", "cuda"),
    )
    assert diffs == [
        "t: passed on cpu, failed on cuda",
        "u: g at m.py:9 on cuda only",
        "u: traces 1 on cpu, 2 on cuda",
        "u: lowerings 1 on cpu, 2 on cuda",
        "u: compiles 1 on cpu, 2 on cuda",
    ]


def test_nothing_counted_or_no_report_fails(gc: ModuleType) -> None:
    empty = _report(t=rec(_split(0)))
    check = gc.check_counts(_run(gc, empty, "cpu"), _run(gc, empty))
    assert (check.status, check.detail) == (
        "FAIL",
        "nothing counted on either backend (1 functions)",
    )
    check = gc.check_counts(_run(gc, empty, "cpu"), _run(gc, None, rc=4))
    assert (check.status, check.detail) == ("FAIL", "no report from the run on cuda (rc 4)")


def test_compile_split_needs_all_three_phases_measured(gc: ModuleType) -> None:
    check = gc.check_compile_split([_run(gc, _report(t=rec(_split(2))))])
    assert check.line() == (
        "PASS  compile split on cuda: 2 compiles, all three measured: trace 0.010 s, lower "
        "0.020 s, backend compile 0.300 s in all"
    )
    check = gc.check_compile_split([_run(gc, _report(t=rec(_split(lower_s=0.0))))])
    assert check.status == "FAIL"
    assert check.detail == "t: f at m.py:1 trace/lower/compile (0.01, 0.0, 0.3) (1 in all)"


def _matmuls(gc: ModuleType, once: float, twice: float) -> Any:
    return _run(
        gc,
        _report(
            one=rec(benchmarks={"one_matmul": bench(once)}),
            two=rec(benchmarks={"two_matmuls": bench(twice)}),
        ),
    )


def test_runtime_ratio_near_two_passes_near_one_fails(gc: ModuleType) -> None:
    check = gc.check_runtime_ratio(_matmuls(gc, 4e-4, 8e-4), 4096)
    assert check.status == "PASS"
    assert "once 0.400 ms, twice 0.800 ms per call (medians of 40 and 40 rounds): ratio 2.00" in (
        check.detail
    )
    assert check.detail.endswith("once = 343,597 GFLOP/s")
    # What timing only the dispatch would look like: the same few microseconds for both.
    check = gc.check_runtime_ratio(_matmuls(gc, 2e-5, 2.1e-5), 4096)
    assert check.status == "FAIL"
    assert "ratio 1.05" in check.detail
    check = gc.check_runtime_ratio(_run(gc, _report()), 4096)
    assert (check.status, check.detail) == (
        "FAIL",
        "one_matmul or two_matmuls has no runtime in the report",
    )


def _peaked(peak: int | None, args: int = 100, outs: int = 50) -> Any:
    metrics = ProgramMetrics(jaxpr_eqns=1, hlo_ops=3, argument_bytes=args, output_bytes=outs)
    return dataclasses.replace(bench(1e-3), device_peak_bytes=peak, metrics=metrics)


def test_device_peak_must_be_recorded_shown_and_plausible(gc: ModuleType) -> None:
    line = "benchmark 'mm': first call 0.200 s device peak 3.0 MiB jaxpr_eqns=1"
    report = _report(t=rec(benchmarks={"mm": _peaked(3 * 2**20)}))
    check = gc.check_peak_recorded([_run(gc, report, output=line)])
    assert check.line() == (
        "PASS  device peak memory on cuda: process high-water mark after each: mm 3.0 MiB "
        "(args+outputs 0.0 MiB)"
    )
    report = _report(t=rec(benchmarks={"mm": _peaked(None), "big": _peaked(120)}))
    check = gc.check_peak_recorded([_run(gc, report, output=line)])
    assert check.status == "FAIL"
    assert check.detail == (
        "big: 120 B < arguments + outputs 150 B; big: not shown in its benchmark line; "
        "mm: not recorded"
    )


def test_a_device_peak_on_the_cpu_fails(gc: ModuleType) -> None:
    clean = _report(t=rec(benchmarks={"mm": _peaked(None)}))
    check = gc.check_peak_absent([_run(gc, clean, "cpu")])
    assert check.line() == "PASS  no device peak on cpu: 1 benchmarks, none with device_peak_bytes"
    peaked = _report(t=rec(benchmarks={"mm": _peaked(4096)}))
    check = gc.check_peak_absent([_run(gc, peaked, "cpu")])
    assert (check.status, check.detail) == ("FAIL", "recorded: mm 4096 B")


REFUSED = (
    "ERROR: pytest-jaxperf: --jaxperf-runtime-clock=instructions counts the CPU backend's "
    "instructions; JAX_PLATFORMS=cuda asks for another backend: unset it"
)


@pytest.mark.parametrize(
    ("rc", "output", "status"),
    [
        (4, REFUSED + "\n", "PASS"),
        (0, "1 passed\n", "FAIL"),  # it ran instead
        (4, "ERROR: pytest-jaxperf: --jaxperf-runtime-clock=instructions needs valgrind\n", "FAIL"),
        (4, REFUSED + "\nERROR: something else\n", "FAIL"),  # not one line
    ],
)
def test_refusal_is_one_line_naming_the_backend(
    gc: ModuleType, rc: int, output: str, status: str
) -> None:
    check = gc.check_refusal(_run(gc, None, output=output, rc=rc, name="refusal"))
    assert check.status == status
    if status == "PASS":
        assert check.detail == f"refused (rc 4) in one line: {REFUSED}"


def test_self_check_fails_on_its_warning_or_what_was_not_measured(gc: ModuleType) -> None:
    good = _run(gc, _report(t=rec(_split())))
    check = gc.check_self_check([good, good])
    assert check.line() == (
        "PASS  self-check on cuda: jax 0.10.2, backend gpu: passed in 2 runs, every metric measured"
    )
    warned = _run(gc, _report(), output="pytest-jaxperf: jax 0.11.2 is not supported, its "
                  "internals moved (traces: missing x); supported: ...")  # fmt: skip
    partial = _run(gc, RunRecord(environment={"jax": "0.11.2", "not_measured": {"traces": "x"}}))
    check = gc.check_self_check([warned, partial])
    assert check.status == "FAIL"
    assert check.detail.startswith("jax 0.11.2, backend ?: pytest-jaxperf: jax 0.11.2 is not")
    assert check.detail.endswith("; gpu_tests: not measured {'traces': 'x'}")


def test_backend_must_be_the_gpu(gc: ModuleType) -> None:
    gpu = _report()
    gpu.environment.update(device_kind="NVIDIA H100 80GB HBM3", device_count=1)
    assert gc.check_backend([_run(gc, gpu)]).line() == (
        "PASS  backend: gpu (NVIDIA H100 80GB HBM3 x1)"
    )
    cpu = RunRecord(environment={"backend": "cpu", "device_kind": "cpu", "device_count": 1})
    assert gc.check_backend([_run(gc, cpu)]).status == "FAIL"


def test_a_check_that_breaks_is_a_fail_line_not_a_crash(gc: ModuleType) -> None:
    def check_runtime_ratio(run: Any, n: int) -> Any:
        raise KeyError("runtime")

    assert gc.safe(check_runtime_ratio, None, 8).line() == (
        "FAIL  runtime ratio: the check itself failed: KeyError: 'runtime'"
    )


@pytest.mark.e2e
def test_the_instructions_clock_run_is_refused_from_the_checkout(
    gc: ModuleType, tmp_path: Path
) -> None:
    """The script's own pytest command (plugin from the checkout, autoload off): refused
    before JAX starts, so this runs without a GPU."""
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    run = gc.run_pytest(
        "refusal", "cuda", "cuda", tmp_path, tmp_path, 8, 60.0,
        "--jaxperf-runtime-clock=instructions",
    )  # fmt: skip
    check = gc.check_refusal(run)
    assert check.status == "PASS", check.detail
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refusal-cuda.out", "test_x.py"]


def test_the_benchmark_line_shows_the_device_peak_where_recorded() -> None:
    assert benchmark_line("mm", _peaked(None)).count("device peak") == 0
    line = benchmark_line("mm", _peaked(256 * 2**20))
    assert "rounds x 100) device peak 256.0 MiB jaxpr_eqns=1 " in line
    assert [byte_size(v) for v in (512, 2048, 3 * 2**20 // 2, 5 * 2**30)] == [
        "512 B", "2.0 KiB", "1.5 MiB", "5.0 GiB",
    ]  # fmt: skip


def test_the_instructions_clock_names_the_backend_before_a_missing_valgrind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A GPU machine usually has no valgrind either: the backend is what no install fixes."""
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    problem = instructions.startup_problem("cuda", None)
    assert problem is not None and "JAX_PLATFORMS=cuda asks for another backend" in problem
    assert "valgrind on PATH" in (instructions.startup_problem("cpu", None) or "")


def test_the_reference_compile_must_be_measured_in_every_run(gc: ModuleType) -> None:
    from pytest_jaxperf.environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY

    measured = _report()
    measured.environment.update({REFERENCE_KEY: 0.151, SAMPLES_KEY: 5, SPREAD_KEY: 0.04})
    check = gc.check_reference([_run(gc, measured), _run(gc, measured, name="example")])
    assert check.line() == (
        "PASS  reference compile on cuda: gpu_tests 0.151 s (5 samples, spread 4%), "
        "example 0.151 s (5 samples, spread 4%)"
    )
    check = gc.check_reference([_run(gc, measured), _run(gc, _report(), name="example")])
    assert check.line() == (
        "FAIL  reference compile on cuda: example: not measured (no reference_compile_cpu_s)"
    )
    assert gc.check_reference([_run(gc, None, rc=1)]).status == "FAIL"
