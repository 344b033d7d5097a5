"""A suite split across CI jobs: `jaxperf merge` combines the shards' reports into a baseline
as --jaxperf-save would, and `jaxperf compare` gates several reports as one run (unit, and
end to end with two real shards of a small suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _jaxperf_data import ENV, baseline_and_run
from _records import RecordedTest, fn, rec
from conftest import read_json
from filelock import FileLock

from pytest_jaxperf.cli import main
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import outputs, store
from pytest_jaxperf.storage.resave import Measured, Resave

OTHER_CPU = {**ENV, "cpu": "Other CPU"}
OLD_JAX = {**ENV, "jax": "0.10.1", "jaxlib": "0.10.1"}


def _rec(traces: int = 1, outcome: str = "passed") -> RecordedTest:
    record = rec(fn("f", "m.py:1", traces, compile_s=0.1))
    record.outcome = outcome
    return record


def _save(path: Path, environment: dict[str, object], **tests: RecordedTest) -> Path:
    store.save(path, RunRecord(environment=dict(environment), tests=tests))
    return path


def _main(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- merge ------------------------------------------------------------------------------------


def test_merge_writes_every_shards_passed_tests_each_with_its_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _save(tmp_path / "a.json", ENV, **{"t::a": _rec(1), "t::b": _rec(2)})
    b = _save(tmp_path / "b.json", OTHER_CPU, **{"t::c": _rec(3)})  # a runner on another CPU
    out = tmp_path / ".jaxperf" / "baseline.json"
    code, stdout, err = _main(capsys, "merge", a, b, "-o", out)
    assert (code, err) == (0, "")
    assert stdout.splitlines() == [
        f"jaxperf: merged 2 shard reports into {out}: 3 passed tests "
        "(0 entries updated, 3 added, 0 as stored), 0 other entries kept, 3 in all",
        f"note: 1 test of {b} keeps the environment it was measured in "
        "(cpu AMD EPYC -> Other CPU); each is gated against its own",
    ]
    merged = store.load(out)
    assert merged is not None
    # The file's environment is the one most entries were measured in; the other shard's
    # entry carries its own, and is gated against it.
    assert merged.environment == ENV
    assert {n: r.traces for n, r in merged.tests.items()} == {"t::a": 1, "t::b": 2, "t::c": 3}
    assert merged.tests["t::a"].environment is None and merged.tests["t::b"].environment is None
    assert merged.tests["t::c"].environment == OTHER_CPU
    assert merged.environment_of("t::c") == OTHER_CPU
    assert outputs.lock_path(out).exists()  # written under the lock --jaxperf-save takes


def test_merge_into_a_baseline_updates_it_as_jaxperf_save_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The committed baseline, saved on an older jax.
    old = {
        "t::a": _rec(5),
        "t::not_in_any_shard": _rec(1),
        "t::failing": _rec(1),
    }
    out = _save(tmp_path / "baseline.json", OLD_JAX, **old)
    shard_tests = {
        "t::a": _rec(1),
        "t::failing": _rec(9, outcome="failed"),
        "t::regressed": _rec(4, outcome="regressed"),
        "t::skipped": _rec(0, outcome="skipped"),
        "t::new": _rec(2),
    }
    a = _save(tmp_path / "a.json", ENV, **{k: shard_tests[k] for k in ("t::a", "t::failing")})
    b = _save(
        tmp_path / "b.json",
        ENV,
        **{k: shard_tests[k] for k in ("t::regressed", "t::skipped", "t::new")},
    )
    code, stdout, _ = _main(capsys, "merge", a, b, "-o", out)
    assert code == 0
    assert stdout.splitlines() == [
        f"jaxperf: merged 2 shard reports into {out}: 2 passed tests "
        "(1 entry updated, 1 added, 0 as stored), 2 other entries kept, 4 in all",
        f"not merged: t::failing: failed in {a} (a baseline takes passed tests only; "
        "its entry there is kept)",
        f"not merged: t::regressed: regressed in {b} (a baseline takes passed tests only; "
        "it has no entry)",
        f"not merged: t::skipped: skipped in {b} (a baseline takes passed tests only; "
        "it has no entry)",
    ]
    merged = store.load(out)
    assert merged is not None
    assert {n: r.traces for n, r in merged.tests.items()} == {
        "t::a": 1,  # replaced by the shard's
        "t::new": 2,
        "t::not_in_any_shard": 1,  # kept, with the jax it was measured on
        "t::failing": 1,  # failed in its shard: the earlier entry stays
    }
    assert merged.environment == ENV
    assert merged.tests["t::not_in_any_shard"].environment == OLD_JAX
    assert merged.tests["t::failing"].environment == OLD_JAX
    assert merged.tests["t::a"].environment is None
    # The same file as one --jaxperf-save of the whole, unsplit run.
    serial = _save(tmp_path / "serial.json", OLD_JAX, **old)
    saving = Resave(Measured.of(ENV, "gate", "cpu"), Tolerances())
    store.save_locked(serial, RunRecord(environment=dict(ENV), tests=shard_tests), how=saving)
    assert out.read_text() == serial.read_text()


def test_merge_keeps_the_timings_a_shard_under_xdist_did_not_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The committed baseline, timed serially; the shard ran on pytest-xdist workers, whose
    # timings --jaxperf-save never stores (ten workers timed beside each other).
    serial = {**ENV, "xdist_workers": 0}
    out = _save(
        tmp_path / "baseline.json", serial, **{"t::a": rec(fn("f", "m.py:1", 1, compile_s=0.1))}
    )
    shard = _save(
        tmp_path / "a.json",
        {**ENV, "xdist_workers": 4},
        **{"t::a": rec(fn("f", "m.py:1", 2, compile_s=0.9))},
    )
    code, stdout, err = _main(capsys, "merge", shard, "-o", out)
    assert (code, err) == (0, "")
    assert stdout.splitlines()[0] == (
        f"jaxperf: merged 1 shard report into {out}: 1 passed test "
        "(1 entry updated, 0 added, 0 as stored), 0 other entries kept, 1 in all"
    )
    merged = store.load(out)
    assert merged is not None
    (f,) = merged.tests["t::a"].functions.values()
    # The counts are the shard's; the compile seconds still the serial run's, and so is the
    # environment they are gated in (a plain merge took 0.9 s measured under xdist).
    assert (f.traces, f.compile_s, f.compile_cpu_s) == (2, None, 0.1)  # no wall: not gated
    assert merged.environment_of("t::a") == serial


def test_merge_of_an_unchanged_shard_rewrites_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _save(
        tmp_path / "baseline.json", ENV, **{"t::a": rec(fn("f", "m.py:1", 1, compile_s=0.5))}
    )
    before = out.read_text()
    # The same counts; compile seconds within the tolerance (rtol 1 by default).
    shard = _save(tmp_path / "a.json", ENV, **{"t::a": rec(fn("f", "m.py:1", 1, compile_s=0.7))})
    code, stdout, _ = _main(capsys, "merge", shard, "-o", out)
    assert code == 0
    assert stdout.splitlines()[0] == (
        f"jaxperf: merged 1 shard report into {out}: 1 passed test "
        "(0 entries updated, 0 added, 1 as stored), 0 other entries kept, 1 in all"
    )
    assert out.read_text() == before
    # Past the tolerance given on the command line (as pytest takes it), the entry is updated.
    code, stdout, _ = _main(capsys, "merge", shard, "-o", out, "--compile-rtol=0.1")
    assert code == 0
    assert "(1 entry updated, 0 added, 0 as stored)" in stdout.splitlines()[0]
    merged = store.load(out)
    assert merged is not None
    assert [f.compile_cpu_s for f in merged.tests["t::a"].functions.values()] == [0.7]


def test_merge_of_a_shard_run_with_jit_off_adds_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    why = "jax_disable_jit is on: jitted functions run op by op"
    off = {**ENV, "not_measured": {"traces": why, "compiles": why}}
    shard = _save(tmp_path / "a.json", off, **{"t::a": _rec(0), "t::new": _rec(0)})
    out = tmp_path / "baseline.json"
    code, stdout, _ = _main(capsys, "merge", shard, "-o", out)
    assert code == 0 and not out.exists()
    assert f"not merged: 2 test(s): traces and compiles not measured ({why})" in stdout
    _save(out, ENV, **{"t::a": _rec(1)})
    before = out.read_bytes()
    code, stdout, _ = _main(capsys, "merge", shard, "-o", out)
    assert code == 0 and out.read_bytes() == before
    assert stdout.splitlines()[0].endswith(
        "1 passed test (0 entries updated, 0 added, 1 as stored), 0 other entries kept, 1 in all"
    )


def test_merge_that_would_lose_a_stored_value_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Stored on an older jax; the shard (a newer jax, under xdist) measured counts but no
    # timings: the entry could keep neither environment whole.
    out = _save(
        tmp_path / "baseline.json", OLD_JAX, **{"t::a": rec(fn("f", "m.py:1", 1, compile_s=0.1))}
    )
    before = out.read_text()
    shard = _save(
        tmp_path / "a.json",
        {**ENV, "xdist_workers": 2},
        **{"t::a": rec(fn("f", "m.py:1", 2, compile_s=0.3))},
    )
    code, stdout, err = _main(capsys, "merge", shard, "-o", out)
    assert (code, stdout) == (2, "")
    assert len(err.splitlines()) == 1
    assert "t::a: its compile seconds in the baseline was measured elsewhere" in err
    assert "pytest-xdist workers" in err
    assert err.rstrip().endswith("; merge into another file (-o) or delete the entry first")
    assert out.read_text() == before


def test_a_test_in_two_shards_is_an_error_naming_it_and_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _save(tmp_path / "a.json", ENV, **{"t::a": _rec(), "t::b": _rec(), "t::c": _rec()})
    b = _save(tmp_path / "b.json", ENV, **{"t::d": _rec()})
    # t::b failed in c: still a test that ran twice.
    c = _save(tmp_path / "c.json", ENV, **{"t::c": _rec(), "t::b": _rec(outcome="failed")})
    out = tmp_path / "baseline.json"
    message = (
        f"jaxperf: test t::b is in both {a} and {c} (and 1 more test in two reports); "
        "each test must run in one shard only: split the suite so that no test runs twice, "
        "and pass the reports of one run\n"
    )
    assert _main(capsys, "merge", a, b, c, "-o", out) == (2, "", message)
    assert not out.exists() and not outputs.lock_path(out).exists()
    base = _save(tmp_path / "base.json", ENV, **{"t::a": _rec()})
    assert _main(capsys, "compare", base, a, b, c) == (2, "", message)


BAD_MERGE_INPUT = [
    ("no shards", "no shard reports given (a pattern that matched no file?); pass the "
     "report each shard wrote with pytest --jaxperf --jaxperf-json=PATH, e.g. jaxperf "
     "merge shard-*.json -o .jaxperf/baseline.json"),
    ("missing shard", "{tmp}/gone.json: no such file; pass the report each shard wrote "
     "with pytest --jaxperf --jaxperf-json=PATH"),
    ("not a report", "{tmp}/junk.json is not a pytest-jaxperf baseline: schema: expected "
     "one of 'pytest-jaxperf/1', 'pytest-jaxperf/2', 'pytest-jaxperf/3', 'pytest-jaxperf/4', "
     "'pytest-jaxperf/5', 'pytest-jaxperf/6', 'pytest-jaxperf/7', got None (not a "
     "pytest-jaxperf file, or a newer version); pass the "
     "report each shard wrote with pytest --jaxperf --jaxperf-json=PATH"),
    ("not JSON", "{tmp}/junk.json is not valid JSON (line 1, column 2: Expecting property "
     "name enclosed in double quotes); pass the report each shard wrote with pytest "
     "--jaxperf --jaxperf-json=PATH"),
    ("shard is a directory", "{tmp}/out: is a directory, not a report; pass the reports "
     "in it"),
    ("same shard twice", "{tmp}/a.json is given twice; pass each shard's report once"),
    ("output is a directory", "-o {tmp}/out: is a directory, not a file; pass the path "
     "of a file"),
    ("output is broken", "{tmp}/baseline.json is not valid JSON (line 1, column 2: "
     "Expecting value); fix it, or delete it and re-create it with --jaxperf-save"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "message"), BAD_MERGE_INPUT, ids=[case for case, _ in BAD_MERGE_INPUT]
)
def test_bad_merge_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    a = _save(tmp_path / "a.json", ENV, **{"t::a": _rec()})
    (tmp_path / "out").mkdir()
    out = tmp_path / "baseline.json"
    shards = {
        "no shards": [],
        "missing shard": [a, tmp_path / "gone.json"],
        "not a report": [a, tmp_path / "junk.json"],
        "not JSON": [a, tmp_path / "junk.json"],
        "shard is a directory": [tmp_path / "out"],
        "same shard twice": [a, tmp_path / "." / "a.json"],
    }.get(case, [a])
    (tmp_path / "junk.json").write_text("{'x': 1}" if case == "not JSON" else '{"tests": {}}')
    if case == "output is a directory":
        out = tmp_path / "out"
    if case == "output is broken":
        out.write_text("[")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    code, stdout, err = _main(capsys, "merge", *shards, "-o", out)
    assert (code, stdout) == (2, "")
    assert err == "jaxperf: " + message.replace("{tmp}", str(tmp_path)) + "\n"
    assert sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


def test_merge_waits_for_a_run_saving_into_the_baseline_and_says_when_it_gave_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _save(tmp_path / "a.json", ENV, **{"t::a": _rec(2)})
    out = _save(tmp_path / "baseline.json", ENV, **{"t::a": _rec(1)})
    before = out.read_text()
    monkeypatch.setattr(outputs, "LOCK_TIMEOUT_S", 0.05)
    with FileLock(outputs.lock_path(out)):  # a pytest --jaxperf-save run writing it
        code, stdout, err = _main(capsys, "merge", a, "-o", out)
    assert (code, stdout) == (2, "")
    assert err == (
        f"jaxperf: {out}: another run still held its lock baseline.json.lock after 0.05 s; "
        "let it finish (or stop it) and run again\n"
    )
    assert out.read_text() == before
    assert _main(capsys, "merge", a, "-o", out)[0] == 0
    assert read_json(out)["tests"]["t::a"]["traces"] == 2


def test_merge_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = _main(capsys, "merge", "a.json")
    assert (code, stdout) == (2, "")
    assert err == (
        "jaxperf: the following arguments are required: -o/--output (see jaxperf merge --help)\n"
    )
    assert main(["merge", "--help"]) == 0
    assert "-o OUT, --output OUT" in capsys.readouterr().out


# -- compare ----------------------------------------------------------------------------------


def test_compare_gates_several_reports_as_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, run = baseline_and_run()
    base_path = _save(tmp_path / "base.json", base.environment, **base.tests)
    whole = _save(tmp_path / "run.json", run.environment, **run.tests)
    ids = sorted(run.tests)
    a = _save(tmp_path / "a.json", ENV, **{k: run.tests[k] for k in ids[:2]})
    b = _save(tmp_path / "b.json", ENV, **{k: run.tests[k] for k in ids[2:]})
    code, one, _ = _main(capsys, "compare", base_path, whole)
    assert code == 1
    code, split, err = _main(capsys, "compare", base_path, a, b)
    assert (code, err) == (1, "")
    assert split.splitlines()[0] == (
        f"jaxperf: comparing 2 reports ({a}, {b}: 4 tests) with {base_path} (3 tests)"
    )
    assert split.splitlines()[1:] == one.splitlines()[1:]
    assert "1 regression, 1 improvement, 1 new, 0 not gated" in split

    # A shard on another CPU: its tests' timings are not gated, the other shard's are.
    extra = _save(tmp_path / "base2.json", ENV, **{"t::x": _rec(), "t::y": _rec()})
    slow = rec(fn("f", "m.py:1", compile_s=2.0))
    c = _save(tmp_path / "c.json", ENV, **{"t::x": slow})
    d = _save(tmp_path / "d.json", OTHER_CPU, **{"t::y": slow})
    code, out, _ = _main(capsys, "compare", extra, c, d)
    assert code == 1
    assert "jaxperf: t::x: 1 metric(s) over the baseline or a limit" in out
    assert "jaxperf: t::y:" not in out
    assert (
        "jaxperf: compile time of 1 test not gated: environment differs (cpu AMD EPYC -> Other CPU)"
    ) in out
    assert out.splitlines()[-1] == "jaxperf: 1 regression, 0 improvements, 0 new, 1 not gated"
    # a holds test_new and test_ok, c neither of the baseline's other two.
    assert (
        "2 baseline tests are not in the report (not compared)"
        in (_main(capsys, "compare", base_path, a)[1])
    )
    assert (
        "2 baseline tests are not in any report (not compared)"
        in (_main(capsys, "compare", base_path, a, c)[1])
    )


# -- end to end: two real shards ---------------------------------------------------------

SUITE = """
import os

import jax
import jax.numpy as jnp
import pytest

# GROW=1: test_d traces once more.
SIZES = range(2, 4 + int(os.environ.get("GROW", "0")))

@jax.jit
def f(x):
    return jnp.sin(x) * 2

@jax.jit
def g(x):
    return jnp.cumsum(x) @ x

@pytest.mark.jaxperf
def test_a():
    f(jnp.ones(3))

@pytest.mark.jaxperf(max_traces=3)
def test_b():
    f(jnp.ones(3)), f(jnp.ones(4)), g(jnp.ones(4))

def test_c(jaxperf):
    jaxperf.benchmark(g, jnp.ones(8))

@pytest.mark.jaxperf
def test_d():
    for n in SIZES:
        g(jnp.ones(n))

@pytest.mark.jaxperf
def test_failing():  # never in a baseline
    f(jnp.ones(5))
    assert False

@pytest.mark.jaxperf
def test_skipped():  # never in a baseline
    g(jnp.ones(5))
    pytest.skip("not here")
"""

FIRST_HALF = "test_a or test_b or test_failing"


def _counts(path: Path) -> dict[str, object]:
    """Per test: the counts, per function and in total, and the program metrics."""
    tests = read_json(path)["tests"]
    counts = {}
    for nodeid, t in tests.items():
        numbers = ("traces", "lowerings", "compiles", "cache_hits")
        counts[nodeid] = (
            t["outcome"],
            [t[k] for k in numbers],
            {key: [f[k] for k in numbers] for key, f in t["functions"].items()},
            {
                label: (b.get("jaxpr_eqns"), b.get("hlo_ops"))
                for label, b in t["benchmarks"].items()
            },
        )
    return counts


def test_two_shards_merged_gate_a_later_run_as_one_serial_save_does(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counts and program metrics decide here: timings are not deterministic.
    jp.makeini(
        "[pytest]\naddopts = -p no:cacheprovider\njaxperf_timing = off\n"
        "jaxperf_compile_floor = 1000\n"
    )
    jp.makepyfile(test_split=SUITE)
    monkeypatch.delenv("GROW", raising=False)
    jp.runpytest("--jaxperf", "--jaxperf-json=shard-1.json", "-k", FIRST_HALF).assert_outcomes(
        passed=2, failed=1
    )
    jp.runpytest(
        "--jaxperf", "--jaxperf-json=shard-2.json", "-k", f"not ({FIRST_HALF})"
    ).assert_outcomes(passed=2, skipped=1)
    # The jaxperf command, as CI runs it.
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "merge", "shard-1.json", "shard-2.json"]
        + ["-o", ".jaxperf/merged.json"],
        cwd=jp.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (merged.returncode, merged.stderr) == (0, "")
    assert merged.stdout.splitlines() == [
        "jaxperf: merged 2 shard reports into .jaxperf/merged.json: 4 passed tests "
        "(0 entries updated, 4 added, 0 as stored), 0 other entries kept, 4 in all",
        "not merged: test_split.py::test_failing: failed in shard-1.json (a baseline takes "
        "passed tests only; it has no entry)",
        "not merged: test_split.py::test_skipped: skipped in shard-2.json (a baseline takes "
        "passed tests only; it has no entry)",
    ]
    jp.runpytest(
        "--jaxperf", "--jaxperf-save", "--jaxperf-baseline=.jaxperf/serial.json"
    ).assert_outcomes(passed=4, failed=1, skipped=1)
    merged_path, serial_path = (
        jp.path / ".jaxperf" / "merged.json",
        jp.path / ".jaxperf/serial.json",
    )
    assert _counts(merged_path) == _counts(serial_path)
    assert set(read_json(merged_path)["tests"]) == {
        f"test_split.py::test_{name}" for name in "abcd"
    }
    assert read_json(merged_path)["environment"] == read_json(serial_path)["environment"]

    # A later run gated by either: the same verdict, test by test.
    monkeypatch.setenv("GROW", "1")
    verdicts = []
    for base in (merged_path, serial_path):
        result = jp.runpytest("--jaxperf", f"--jaxperf-baseline={base}", "--jaxperf-json=r.json")
        result.assert_outcomes(passed=3, failed=2, skipped=1)
        tally = [line for line in result.stdout.lines if line.startswith("jaxperf: 1 regr")]
        outcomes = {k: t["outcome"] for k, t in read_json(jp.path / "r.json")["tests"].items()}
        verdicts.append((tally, outcomes))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][0] == ["jaxperf: 1 regression, 0 improvements, 0 new, 0 not gated"]
    assert verdicts[0][1]["test_split.py::test_d"] == "regressed"


ONE_JITTED = """
import jax, jax.numpy as jnp, pytest

pytestmark = pytest.mark.jaxperf

@jax.jit
def f(x):
    return jnp.sin(x) * 2

def test_a():
    f(jnp.ones(3))

def test_b():
    f(jnp.ones(4))
"""


def test_a_shard_run_with_timing_off_keeps_the_stored_timings_and_environment(
    jp: pytest.Pytester,
) -> None:
    # The baseline saved as usual (sync CPU dispatch, timed); a shard run with
    # --jaxperf-timing=off leaves dispatch asynchronous and times nothing it may store.
    jp.makeini("[pytest]\naddopts = -p no:cacheprovider\njaxperf_compile_floor = 1000\n")
    jp.makepyfile(test_one=ONE_JITTED)
    # Each run in a process of its own, as in CI jobs: in this one, JAX may have started
    # before (CPU dispatch then stays asynchronous, whatever the run asks).
    jp.runpytest_subprocess("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    before = path.read_text()
    assert read_json(path)["environment"]["cpu_dispatch"] == "sync"
    jp.runpytest_subprocess(
        "--jaxperf", "--jaxperf-timing=off", "--jaxperf-json=shard.json"
    ).assert_outcomes(passed=2)
    shard = read_json(jp.path / "shard.json")["environment"]
    assert (shard["timing"], shard["cpu_dispatch"]) == ("off", "async")
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "merge", "shard.json", "-o", str(path)],
        cwd=jp.path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (merged.returncode, merged.stderr) == (0, "")
    assert "(0 entries updated, 0 added, 2 as stored)" in merged.stdout.splitlines()[0]
    # The merge judged the shard as its own save would have: the file as it was (it once took
    # the shard's timings as measured and relabelled the file "cpu_dispatch async").
    assert path.read_text() == before
    gated = jp.runpytest_subprocess("--jaxperf")
    gated.assert_outcomes(passed=2)
    gated.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])
    # `jaxperf compare` of that run file gates no runtime of it, as the plugin did not.
    compared = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "compare", str(path), "shard.json"],
        cwd=jp.path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stdout


def test_resave_reads_a_runs_timing_mode_and_stores_none() -> None:
    env = {**ENV, "timing": "off"}
    assert not Measured.of(env, "gate", "cpu").has("compile seconds")
    assert Measured.of(ENV, "gate", "cpu").has("compile seconds")
    how = Resave(Measured.of(env, "gate", "cpu"), Tolerances())
    saved = how(None, RunRecord(environment=env, tests={"t::a": _rec()}))
    assert "timing" not in saved.environment and saved.tests["t::a"].environment is None
