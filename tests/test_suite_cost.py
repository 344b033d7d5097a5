"""benchmarks/suite_cost.py: the rotation of the modes, what each mode runs, and the table
of medians and ratios it prints (from written runs: no suite is run here)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def suite_cost() -> ModuleType:
    return cast(ModuleType, benchmark_module("suite_cost"))


def _row(mode: str, rep: int, wall: float, cpu: float, counts: dict[str, int]) -> str:
    return json.dumps({"suite": "s", "mode": mode, "rep": rep, "wall": wall, "cpu": cpu,
                       "others": 1.0, "counts": counts})  # fmt: skip


def test_the_table_prints_medians_and_ratios_and_flags_differing_outcomes(
    suite_cost: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = {"passed": 8, "skipped": 2, "warnings": 3, "subtests passed": 5}
    rows = [
        _row("plain", 0, 10.0, 12.0, ok), _row("save", 0, 10.5, 12.6, ok),
        _row("gate", 0, 10.2, 12.0, ok), _row("plain", 1, 11.0, 12.0, ok),
        _row("save", 1, 99.0, 99.0, ok), _row("gate", 1, 10.4, 12.6, ok),
        _row("plain", 2, 30.0, 12.0, ok), _row("save", 2, 11.5, 12.6, ok),
        _row("gate", 2, 10.6, 12.3, ok),
    ]  # fmt: skip
    (tmp_path / "runs.jsonl").write_text("\n".join(rows) + "\n")
    suite_cost.table([tmp_path])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("s "))
    # Medians: plain 11.0, save 11.5, gate 10.4 wall; CPU 12.0, 12.6, 12.3.
    assert line.split()[1:11] == ["10", "3", "11.0", "11.5", "10.4", "1.045", "0.945",
                                  "1.050", "1.025", "1.0"]  # fmt: skip
    assert line.endswith("equal")
    # Paired by round: save 1.05, 9.0, 0.38 and gate 1.02, 0.945, 0.353 of plain (CPU: save
    # 1.05, 8.25, 1.05; gate 1.0, 1.05, 1.025): their medians.
    assert "paired by round: save/plain 1.050 (CPU 1.050), gate/plain 0.945 (CPU 1.025)" in out
    (tmp_path / "runs.jsonl").write_text(
        "\n".join([*rows, _row("gate", 3, 10.0, 12.0, {"passed": 9, "failed": 1})]) + "\n"
    )
    suite_cost.table([tmp_path])
    assert "DIFFER" in capsys.readouterr().out


def test_the_modes_rotate_and_a_save_writes_a_copy_of_the_baseline(
    suite_cost: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "baseline.json").write_text("{}")
    assert suite_cost.mode_args("plain", tmp_path, 0) == ["-p", "no:jaxperf"]
    gate = suite_cost.mode_args("gate", tmp_path, 0)
    assert gate[-1] == f"--jaxperf-baseline={tmp_path / 'baseline.json'}"
    save = suite_cost.mode_args("save", tmp_path, 4)
    assert save[-2:] == [f"--jaxperf-baseline={tmp_path / 'save-4.json'}", "--jaxperf-save"]
    assert (tmp_path / "save-4.json").read_text() == "{}"
    assert [suite_cost.order(rep) for rep in range(3)] == [
        ("plain", "save", "gate"), ("save", "gate", "plain"), ("gate", "plain", "save")
    ]


def test_summary_counts_reads_pytests_last_summary_line() -> None:
    common = benchmark_module("_common")
    out = "..F\n=== 1 failed, 12 passed, 3 warnings, 40 subtests passed in 35.61s ===\n"
    assert common.summary_counts(out) == {
        "failed": 1, "passed": 12, "warnings": 3, "subtests passed": 40
    }  # fmt: skip
    assert common.summary_counts("....\nKeyboardInterrupt\n") is None
