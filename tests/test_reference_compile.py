"""The reference compile: measured in a child process before the first test, its spread
stored with it, a cached value checked against a fresh sample, a noisy one not scaled by, and
the wider tolerance across CPU models (injected measurements and numbers, then end to end)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _records import fn, rec
from conftest import ONE_JITTED_TEST, read_json

from pytest_jaxperf.compare import COMPILE_TIME, Gating, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.environment import (
    REFERENCE_KEY,
    SAMPLES_KEY,
    SPREAD_KEY,
    machine_scale,
    other_machine,
    too_noisy,
)
from pytest_jaxperf.measure import reference
from pytest_jaxperf.measure.reference import Reference
from pytest_jaxperf.storage import resave

AMD = {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "x64": False, "cpu": "AMD EPYC",
       "cpu_count": 2, REFERENCE_KEY: 0.2, SPREAD_KEY: 0.1, SAMPLES_KEY: 5}  # fmt: skip
INTEL = {**AMD, "cpu": "Intel(R) Xeon(R) Processor", REFERENCE_KEY: 0.1}
MACHINE = (("backend", "cpu"), ("device_kind", "cpu"), ("cpu", "A test CPU nobody has"),
           ("cpu_count", "2"), ("jax", "0.0.0"), ("jaxlib", "0.0.0"))  # fmt: skip


class Cache(dict):  # pytest's config.cache: get(key, default), set(key, value)
    def set(self, key: str, value: Any) -> None:
        self[key] = value


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    """A child one test prestarted or kept (in_child keeps it for a second request) is
    ended with it, not handed to the next test."""
    yield
    reference.discard()


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The reference's measurement replaced by `fake` numbers; the samples asked for, in
    order. This process's memo starts empty."""
    monkeypatch.setattr(reference, "_MEASURED", [])
    return []


def _fake(monkeypatch: pytest.MonkeyPatch, asked: list[int], seconds: float,
          machine: tuple[tuple[str, str], ...] = MACHINE) -> None:  # fmt: skip
    def measure(samples: int) -> Reference:
        asked.append(samples)
        return Reference(seconds, 0.05, samples, machine)

    monkeypatch.setattr(reference, "MEASURE", measure)
    reference._MEASURED.clear()


def test_a_cached_reference_is_checked_by_a_fresh_sample_and_replaced_when_they_disagree(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    cache = Cache()
    _fake(monkeypatch, measured, 0.2)
    first = reference.for_session(cache)
    assert first is not None and (first.seconds, first.samples) == (0.2, reference.SAMPLES)
    (name,) = cache
    assert cache[name]["seconds"] == 0.2 and cache[name]["machine"] == dict(MACHINE)
    # Within this process: the same value, not measured again.
    assert reference.for_session(cache) is first and measured == [reference.SAMPLES]
    # A later session: a shorter fresh sample; within 10% it agrees, the cached value stays
    # (so that a re-saved baseline keeps the same number).
    _fake(monkeypatch, measured, 0.21)
    kept = reference.for_session(cache)
    assert kept is not None and kept.seconds == 0.2 and measured[-1] == reference.CHECK_SAMPLES
    # Disagreeing (a value cached while something skewed it): replaced, in the cache too.
    _fake(monkeypatch, measured, 0.3)
    replaced = reference.for_session(cache)
    assert replaced is not None and replaced.seconds == 0.3 and cache[name]["seconds"] == 0.3
    # Cached for another machine or JAX (a shared cache directory), or by an older version
    # (a bare float): never reused.
    other = (*MACHINE[:-1], ("jaxlib", "9.9.9"))
    _fake(monkeypatch, measured, 0.31, other)
    moved = reference.for_session(cache)
    assert moved is not None and moved.machine == other and cache[name]["seconds"] == 0.31
    cache[name] = 0.25
    _fake(monkeypatch, measured, 0.5)
    again = reference.for_session(cache)
    assert again is not None and again.seconds == 0.5 and measured[-1] == reference.SAMPLES


def test_a_reference_the_baseline_stores_is_checked_by_one_compile(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    stored = {**dict(MACHINE), REFERENCE_KEY: 0.2, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
    # One compile within 10%: the baseline's value is kept, nothing more measured.
    _fake(monkeypatch, measured, 0.21)
    kept = reference.for_session(None, [stored, dict(stored)])
    assert kept == Reference(0.2, 0.05, 5, MACHINE) and measured == [reference.CHECK_SAMPLES]
    assert reference.CHECK_SAMPLES < reference.SAMPLES
    # Disagreeing: the full sample, which replaces it where it disagrees too.
    measured.clear()
    _fake(monkeypatch, measured, 0.3)
    fresh = reference.for_session(None, [stored])
    assert fresh == Reference(0.3, 0.05, reference.SAMPLES, MACHINE)
    assert measured == [reference.CHECK_SAMPLES, reference.SAMPLES]
    # Measured for another jaxlib, or with no reference stored: not a value of this machine.
    for env in (
        {**stored, "jaxlib": "9.9.9"},
        {k: v for k, v in stored.items() if k != REFERENCE_KEY},
    ):
        measured.clear()
        _fake(monkeypatch, measured, 0.2)
        got = reference.for_session(None, [env])
        assert got is not None and got.samples == reference.SAMPLES


def test_a_check_past_the_agreement_takes_the_full_sample_even_for_a_save(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    # One rule (environment.references_agree): 30% off is past the 10% agreement, so the
    # full sample is measured and the save writes it (it once kept the stored value while
    # within the compile tolerance).
    stored = {**dict(MACHINE), REFERENCE_KEY: 0.4, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
    _fake(monkeypatch, measured, 0.52)
    fresh = reference.for_session(None, [stored])
    assert fresh == Reference(0.52, 0.05, reference.SAMPLES, MACHINE)
    assert measured == [reference.CHECK_SAMPLES, reference.SAMPLES]


def test_without_a_cache_every_session_measures_the_full_sample(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    _fake(monkeypatch, measured, 0.2)
    assert reference.for_session(None) == Reference(0.2, 0.05, reference.SAMPLES, MACHINE)
    reference._MEASURED.clear()
    monkeypatch.setattr(reference, "MEASURE", lambda samples: None)
    assert reference.for_session(Cache()) is None  # could not be measured: no number


def test_the_median_and_spread_of_the_samples_are_what_is_stored() -> None:
    ref = Reference.of([0.30, 0.20, 0.22, 0.21, 0.25], dict(MACHINE))
    assert (ref.seconds, ref.spread, ref.samples) == (0.22, pytest.approx(0.455, abs=1e-3), 5)
    assert ref.fields() == {REFERENCE_KEY: 0.22, SPREAD_KEY: ref.spread, SAMPLES_KEY: 5}
    assert ref.matches({"backend": "cpu", "device_kind": "cpu", "cpu": "A test CPU nobody has",
                        "cpu_count": 2, "jax": "0.0.0", "jaxlib": "0.0.0"})  # fmt: skip
    assert not ref.matches({"backend": "gpu"})


def test_the_child_inherits_none_of_the_suites_jax_or_xla_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    env = reference._child_env()
    assert "XLA_FLAGS" not in env and "JAX_ENABLE_X64" not in env
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # no GPU memory taken from the suite


@pytest.mark.e2e
def test_the_reference_is_measured_in_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    ref = reference.in_child(2)
    assert ref is not None and ref.samples == 2 and ref.seconds > 0 and ref.spread >= 0
    assert dict(ref.machine)["backend"] == "cpu"


def test_a_noisy_reference_is_not_scaled_by_and_the_line_says_why() -> None:
    noisy = {**AMD, SPREAD_KEY: 0.62}
    assert machine_scale(noisy, INTEL) is None
    assert too_noisy(noisy, INTEL) == (
        "the reference compile is too noisy to scale by (its samples spread there 62%; at "
        "most 50% is used)"
    )
    assert too_noisy(noisy, noisy) is None  # same machine: nothing is scaled anyway
    assert machine_scale({**AMD, SPREAD_KEY: 0.5}, INTEL) is not None
    # A baseline saved before the spread was stored: its reference is taken as it is.
    older = {k: v for k, v in AMD.items() if k not in (SPREAD_KEY, SAMPLES_KEY)}
    assert machine_scale(older, INTEL) is not None
    out = evaluate(_compiled(5.0), _compiled(1.0), MarkerLimits(), Gating.between(
        noisy, INTEL, Tolerances()))  # fmt: skip
    assert not out.breaches
    assert out.notes == [
        "compile time not gated: environment differs (cpu AMD EPYC -> Intel(R) Xeon(R) "
        "Processor); the reference compile is too noisy to scale by (its samples spread "
        "there 62%; at most 50% is used)"
    ]


def _compiled(cpu_s: float) -> Any:
    return rec(fn("f", "m.py:1", compile_s=cpu_s, cpu=1.0))


def test_across_cpu_models_compile_time_has_the_wider_cross_machine_margin() -> None:
    # The baseline's 1.0 s is 0.5 s here; 1.2 s is 2.4x: within the cross-model 2.5x.
    across = Gating.between(AMD, INTEL, Tolerances())
    assert not evaluate(_compiled(1.2), _compiled(1.0), MarkerLimits(), across).breaches
    # The same growth on the baseline's own machine fails (compile_rtol 1: 2x).
    same = Gating.between(AMD, AMD, Tolerances())
    (breach,) = evaluate(_compiled(2.4), _compiled(1.0), MarkerLimits(), same).breaches
    assert breach.metric == COMPILE_TIME and breach.detail.startswith("cpu seconds, rtol 1,")
    # Set narrower, it gates at 2x again; the wider of the two always applies.
    narrow = Gating.between(AMD, INTEL, Tolerances(cross_machine_compile_rtol=1.0))
    (breach,) = evaluate(_compiled(1.2), _compiled(1.0), MarkerLimits(), narrow).breaches
    assert breach.detail.startswith("cpu seconds, rtol 1,")
    wide = Gating.between(AMD, INTEL, Tolerances(compile_rtol=3.0))
    assert not evaluate(_compiled(1.9), _compiled(1.0), MarkerLimits(), wide).breaches


# A recorded test whose fixture leaves two threads busy until its teardown (as an
# asynchronous checkpoint writer does): NumPy matrix products and a Python loop.
BUSY_FIXTURE_TEST = """
import json
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

@pytest.fixture
def busy_writer():
    stop = threading.Event()

    def numpy_work():
        a = np.random.default_rng(0).random((128, 128))
        while not stop.is_set():
            a = np.tanh(a @ a)

    def python_work():
        n = 0
        while not stop.is_set():
            n = (n * 31 + 7) % 1000003

    threads = [threading.Thread(target=numpy_work, name="busy-numpy"),
               threading.Thread(target=python_work, name="busy-python")]
    for t in threads:
        t.start()
    yield
    stop.set()
    for t in threads:
        t.join()

@jax.jit
def f(x):
    return x + 1

@pytest.mark.jaxperf
def test_with_busy_threads(busy_writer):
    f(jnp.ones(3))
    assert {t.name for t in threading.enumerate()} >= {"busy-numpy", "busy-python"}
"""


def test_busy_threads_of_a_tests_fixture_cannot_skew_the_stored_reference(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp = reference_on
    # The real measurement (a child process), watched: which threads of this process ran
    # and whether any test had started when it was taken.
    monkeypatch.setattr(reference, "_MEASURED", [])
    monkeypatch.setattr(reference, "SAMPLES", 2)
    seen: list[dict[str, Any]] = []
    real = reference.in_child

    def watched(samples: int) -> Reference | None:
        result = real(samples)
        threads = {t.name for t in threading.enumerate()}
        seen.append({"threads": threads, "result": result})
        return result

    monkeypatch.setattr(reference, "MEASURE", watched)
    jp.makepyfile(test_busy=BUSY_FIXTURE_TEST)
    result = jp.runpytest("--jaxperf", "--jaxperf-save")
    assert result.ret == 0, result.stdout.str()
    (measurement,) = seen  # once, before the test: not again in its report or at the save
    assert not measurement["threads"] & {"busy-numpy", "busy-python"}
    ref = measurement["result"]
    assert ref is not None and ref.samples == 2
    env = read_json(jp.path / ".jaxperf" / "baseline.json")["environment"]
    assert (env[REFERENCE_KEY], env[SPREAD_KEY], env[SAMPLES_KEY]) == (ref.seconds, ref.spread, 2)


def test_a_run_that_records_nothing_measures_no_reference(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp = reference_on
    monkeypatch.setattr(reference, "_MEASURED", [])
    calls: list[int] = []
    monkeypatch.setattr(reference, "MEASURE", lambda samples: calls.append(samples))
    jp.makepyfile(test_plain="def test_plain():\n    assert True\n")
    assert jp.runpytest("--jaxperf").ret == 0
    assert calls == []


def test_no_reference_compile_measures_none_and_says_what_it_leaves_out(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    jp = reference_on
    _fake(monkeypatch, measured, 0.2, _here())
    jp.makepyfile(test_one=ONE_JITTED_TEST)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    assert measured == [reference.SAMPLES]
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    assert data["environment"][REFERENCE_KEY] == 0.2
    # As saved on another CPU model; this run measures no reference (flag, then ini).
    data["environment"]["cpu"] = "Another CPU"
    path.write_text(json.dumps(data), encoding="utf-8")
    for how in (("--jaxperf-no-reference-compile",), ("-o", "jaxperf_no_reference_compile=1")):
        reference._MEASURED.clear()
        result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json", *how)
        result.assert_outcomes(passed=1)
        assert measured == [reference.SAMPLES]
        assert REFERENCE_KEY not in read_json(jp.path / "run.json")["environment"]
        result.stdout.fnmatch_lines([
            "jaxperf: compile time of 1 test not gated: environment differs (cpu Another CPU "
            "-> *); this run measured no reference compile (--jaxperf-no-reference-compile, or "
            "it failed) to scale by [[]environment_differs]"
        ])  # fmt: skip
    # Measured again without it.
    reference._MEASURED.clear()
    assert jp.runpytest("--jaxperf").ret == 0
    assert measured == [reference.SAMPLES] * 2


def _here() -> tuple[tuple[str, str], ...]:
    """This machine as the reference's cache keys name it (so that its value is stored)."""
    from pytest_jaxperf.measure import machine

    env = machine.capture()
    return tuple((k, str(env.get(k))) for k in reference._CACHE_KEYS)


def test_other_machine_is_a_difference_in_cpu_model_or_core_count_only() -> None:
    here = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 2}
    assert not other_machine([INTEL, {**INTEL, "jax": "0.9.0"}], here)
    assert other_machine([INTEL, AMD], here)
    assert other_machine([{**INTEL, "cpu_count": 16}], here)
    assert not other_machine([], here)


def test_a_gate_measures_the_reference_only_where_something_can_use_it(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    jp = reference_on
    _fake(monkeypatch, measured, 0.2, _here())
    jp.makepyfile(test_one=ONE_JITTED_TEST)

    def runs(*args: str) -> int:
        """How many times a session with `args` measured the reference."""
        reference._MEASURED.clear()
        before = len(measured)
        jp.runpytest("--jaxperf", *args).assert_outcomes(passed=1)
        return len(measured) - before

    assert runs() == 0  # no baseline, no file: nothing would read it
    assert runs("--jaxperf-json=run.json") == 1
    assert runs("--jaxperf-history=history.jsonl") == 1
    assert runs("--jaxperf-save") == 1  # the baseline stores it
    path = jp.path / ".jaxperf" / "baseline.json"
    assert read_json(path)["environment"][REFERENCE_KEY] == 0.2
    # A re-save that keeps every entry as stored writes nothing this run measured: it
    # checks nothing, and the file is as it was.
    before = path.read_bytes()
    assert runs("--jaxperf-save") == 0 and path.read_bytes() == before
    # One that writes what it measured (the entry gone, so added again) checks the stored
    # value with one compile (pytest's cache is off here).
    _forget_entries(path)
    assert runs("--jaxperf-save") == 1 and measured[-1] == reference.CHECK_SAMPLES
    assert read_json(path)["environment"][SAMPLES_KEY] == reference.SAMPLES
    # A check 50% off, past the agreement (10%, or the samples' spread; the one rule): the
    # full sample is measured and the save writes it with the entries it measured.
    _fake(monkeypatch, measured, 0.3, _here())
    _forget_entries(path)
    assert runs("--jaxperf-save") == 2
    assert measured[-2:] == [reference.CHECK_SAMPLES, reference.SAMPLES]
    assert read_json(path)["environment"][REFERENCE_KEY] == 0.3
    assert runs("--jaxperf-save", "--jaxperf-json=run.json") == 1  # agrees now: one check
    assert read_json(jp.path / "run.json")["environment"][REFERENCE_KEY] == 0.3
    _fake(monkeypatch, measured, 0.2, _here())
    assert runs() == 0  # every entry from this machine: compile seconds compare directly
    data = read_json(path)
    data["environment"]["cpu"] = "Another CPU"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert runs() == 1  # an entry from another CPU model: scaled by the two references


def _forget_entries(path: Path) -> None:
    """The baseline at `path` without its test entries (its environment kept)."""
    data = read_json(path)
    data["tests"] = {}
    path.write_text(json.dumps(data), encoding="utf-8")


TEST_THAT_SAYS_IT_RAN = ONE_JITTED_TEST + """
def test_ran():
    import os
    os.environ["JAXPERF_TEST_RAN"] = "1"
"""


def test_a_save_checks_the_stored_reference_at_its_end_and_only_if_it_writes_a_measurement(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp = reference_on
    monkeypatch.setattr(reference, "_MEASURED", [])
    monkeypatch.delenv("JAXPERF_TEST_RAN", raising=False)
    # Each measurement: its samples, and whether a test had run when it was taken.
    taken: list[tuple[int, str | None]] = []
    spread = 0.05

    def measure(samples: int) -> Reference:
        taken.append((samples, os.environ.get("JAXPERF_TEST_RAN")))
        return Reference(seconds, spread, samples, _here())

    monkeypatch.setattr(reference, "MEASURE", measure)
    spawned = _spawns(monkeypatch)
    jp.makepyfile(test_two=TEST_THAT_SAYS_IT_RAN)

    def save() -> None:
        reference._MEASURED.clear()
        monkeypatch.delenv("JAXPERF_TEST_RAN", raising=False)
        jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)

    seconds = 0.2
    save()  # the first save: no stored value, the full sample before the first test
    assert taken == [(reference.SAMPLES, None)]
    path = jp.path / ".jaxperf" / "baseline.json"
    # A re-save of the same code: nothing measured, no child started (none prestarted).
    started = len(spawned)
    save()
    assert len(taken) == 1 and len(spawned) == started
    # Entries to write: the check comes after the tests, and a value off by more than the
    # compile tolerance is measured in full there and stored with the entries it measured.
    # The merge is made first as if the check kept the stored value; again where it did not.
    merges: list[int] = []
    merge = resave.Resave.__call__

    def counted(self: Any, old: Any, run: Any) -> Any:
        merges.append(1)
        return merge(self, old, run)

    monkeypatch.setattr(resave.Resave, "__call__", counted)
    seconds = 0.5
    _forget_entries(path)
    save()
    assert taken[1:] == [(reference.CHECK_SAMPLES, "1"), (reference.SAMPLES, "1")]
    assert len(merges) == 2
    data = read_json(path)
    assert data["environment"][REFERENCE_KEY] == 0.5
    assert {t.get("environment", {}).get(REFERENCE_KEY, 0.5) for t in data["tests"].values()} == {
        0.5
    }
    # A check that agrees keeps the stored value: one merge, the entries written as before.
    merges.clear()
    _forget_entries(path)
    save()
    assert taken[3:] == [(reference.CHECK_SAMPLES, "1")] and len(merges) == 1
    again = read_json(path)
    assert again["environment"] == data["environment"]
    assert {k: t.get("environment") for k, t in again["tests"].items()} == {
        k: t.get("environment") for k, t in data["tests"].items()
    }


def _spawns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The reference's child processes, real, as they are started."""
    spawned: list[Any] = []
    real = reference._spawn

    def spawn() -> Any:
        spawned.append(real())
        return spawned[-1]

    monkeypatch.setattr(reference, "_spawn", spawn)
    return spawned


def test_the_child_starts_before_the_collection_and_none_is_left_running(
    reference_on: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp = reference_on
    monkeypatch.setattr(reference, "_MEASURED", [])
    monkeypatch.setattr(reference, "SAMPLES", 2)
    spawned = _spawns(monkeypatch)
    jp.makeconftest(
        "from pytest_jaxperf.measure import reference\n"
        "def pytest_collection_modifyitems(items):\n"
        "    with open('waiting.txt', 'w') as f:\n"
        "        f.write(str(len(reference._WAITING)))\n"
    )
    jp.makepyfile(test_one=ONE_JITTED_TEST)
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    # Started at configure, waiting while pytest collected; used for the measurement.
    assert (jp.path / "waiting.txt").read_text() == "1"
    assert len(spawned) == 1 and spawned[0].returncode == 0
    env = read_json(jp.path / ".jaxperf" / "baseline.json")["environment"]
    assert env[SAMPLES_KEY] == 2 and env[REFERENCE_KEY] > 0
    # A session that records nothing ends the child it started, unused (one writing a
    # report: a save alone into this baseline would leave the reference for its end).
    reference._MEASURED.clear()
    jp.makepyfile(test_one="def test_plain():\n    pass\n")
    jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-json=run.json").assert_outcomes(
        passed=1
    )
    assert (jp.path / "waiting.txt").read_text() == "1"
    assert len(spawned) == 2 and spawned[1].returncode is not None
    assert reference._WAITING == [] and reference._MEASURED == []


def test_a_check_that_disagrees_measures_the_full_sample_in_the_same_warm_child(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    monkeypatch.setattr(reference, "SAMPLES", 2)
    spawned = _spawns(monkeypatch)
    # A value stored for this machine that no compile of the program matches (50 s).
    stored = {**dict(_here()), REFERENCE_KEY: 50.0, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
    reference.prestart()
    fresh = reference.for_session(None, [stored])
    assert fresh is not None and fresh.samples == 2 and fresh.seconds < 50.0
    # One child answered the check and then the full sample; let go (its input closed), it
    # ends by itself, reaped at the session's end.
    assert len(spawned) == 1 and reference._KEPT == [] and spawned == reference._ENDING
    reference.discard()
    assert spawned[0].returncode == 0 and reference._ENDING == []


def test_the_baselines_value_is_kept_before_the_caches_where_both_agree(
    monkeypatch: pytest.MonkeyPatch, measured: list[int]
) -> None:
    # Both within the agreement of a fresh check: the file's own value is kept, so that a
    # save leaves the file as it was (pytest's cache once came first and rewrote it).
    stored = {**dict(MACHINE), REFERENCE_KEY: 0.40, SPREAD_KEY: 0.05, SAMPLES_KEY: 5}
    cache = Cache()
    _fake(monkeypatch, measured, 0.42)
    assert reference.for_session(cache) is not None  # cached: 0.42
    measured.clear()
    _fake(monkeypatch, measured, 0.41)
    got = reference.for_session(cache, [stored])
    assert got == Reference(0.40, 0.05, 5, MACHINE) and measured == [reference.CHECK_SAMPLES]
