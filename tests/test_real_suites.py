"""benchmarks/real_suites.py through its command line: the rotation of the modes, what each
mode runs, the count modes' comparison (a stand-in interpreter plays pytest: no suite is
run), and the table of medians and ratios it prints from written runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "real_suites.py"

# Plays `python -m pytest ARGS`: writes the baseline a save names and the run file a count
# mode names, and prints pytest's summary line. Its reversed run counts one trace more.
FAKE_PYTHON = """\
import json, sys
args = sys.argv[1:]
value = lambda name: next((a.split("=", 1)[1] for a in args if a.startswith(name + "=")), None)
if "--jaxperf-save" in args:
    open(value("--jaxperf-baseline"), "w").write("{}")
if value("--jaxperf-json"):
    traces = 3 if "_suite_cost_reversed" in args else 2
    fn = {"traces": traces, "lowerings": 1, "compiles": 1}
    tests = {"t.py::a": {**fn, "functions": {"f at m.py:1": fn}}}
    json.dump({"tests": tests}, open(value("--jaxperf-json"), "w"))
print("=== 1 failed, 12 passed, 3 warnings, 40 subtests passed in 0.10s ===")
"""


def _real_suites(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.e2e  # starts processes
def test_the_modes_rotate_each_runs_its_arguments_and_the_counts_are_compared(
    tmp_path: Path,
) -> None:
    python = tmp_path / "python"
    python.write_text(f"#!{sys.executable}\n{FAKE_PYTHON}")
    python.chmod(0o755)
    work = tmp_path / "work"
    out = _real_suites("--name", "s", "--cwd", str(tmp_path), "--python", str(python),
                      "--workdir", str(work), "--reps", "3", "--counts", "--", "t.py")  # fmt: skip
    rows = [json.loads(line) for line in (work / "runs.jsonl").read_text().splitlines()]
    assert [(r["rep"], r["mode"]) for r in rows] == [
        (0, "plain"), (0, "save"), (0, "gate"), (1, "save"), (1, "gate"), (1, "plain"),
        (2, "gate"), (2, "plain"), (2, "save"),
    ]  # fmt: skip
    # The summary line read: its counts, subtests and warnings with them.
    assert rows[0]["counts"] == {"failed": 1, "passed": 12, "warnings": 3, "subtests passed": 40}

    def command(log: str) -> str:
        return (work / log).read_text().splitlines()[0]

    assert command("plain-0.log").endswith("-p no:jaxperf t.py")
    assert command("gate-0.log").endswith(f"--jaxperf-baseline={work / 'baseline.json'} t.py")
    # A save re-saves a copy of the warm-up's baseline.
    assert command("save-1.log").endswith(f"--jaxperf-baseline={work / 'save-1.json'} "
                                          "--jaxperf-save t.py")  # fmt: skip
    assert (work / "save-1.json").read_text() == "{}"
    assert "-p _suite_cost_subset" in command("subset.log")
    assert command("xdist.log").endswith("-n 2 t.py")
    assert "  counts full vs subset: 0 mismatches; outcomes equal" in out
    assert "  counts full vs reversed: 2 mismatches; outcomes equal" in out
    assert "    t.py::a | (test total) | traces: 2 != 3" in out
    assert "    t.py::a | f at m.py:1 | traces: 2 != 3" in out


def _row(mode: str, rep: int, wall: float, cpu: float, counts: dict[str, int]) -> str:
    return json.dumps({"suite": "s", "mode": mode, "rep": rep, "wall": wall, "cpu": cpu,
                       "others": 1.0, "counts": counts})  # fmt: skip


@pytest.mark.e2e  # starts a process
def test_the_table_prints_medians_and_ratios_and_flags_differing_outcomes(
    tmp_path: Path,
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
    out = _real_suites("--analyze-only", str(tmp_path))
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
    assert "DIFFER" in _real_suites("--analyze-only", str(tmp_path))
