"""The compile clock (`--jaxperf-compile-clock=instructions`): callgrind dumps read per
phase (spin-waits and fusion-compiler construction left out), phases counted per function
with injected dumps, the counts stored and read back, the gate and its words; and one run of
a tiny project under valgrind (skipped where valgrind or pytest-codspeed is missing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lit, needs_valgrind, read_json

from pytest_jaxperf.compare import PHASE_INSTRUCTIONS, Gating, evaluate
from pytest_jaxperf.config import NO_LIMITS, Tolerances
from pytest_jaxperf.environment import instruction_differences
from pytest_jaxperf.measure import instructions
from pytest_jaxperf.measure.instructions import Dump, PhaseClock, Span, parse_dump
from pytest_jaxperf.measure.recorder import Scope
from pytest_jaxperf.model import FunctionRecord, RecordedTest, function_from_json, function_to_json
from pytest_jaxperf.report.wording import breach_lines

# A compile's dump as callgrind writes it with compressed names: the pool builds a fusion
# compiler (GetInstance -> CreateContext, 900 + 100 inclusive; counted once, from the
# emitter), the thunk emitter builds one more context (50), an idle worker steals (7 + 3).
DUMP = """\
events: Ir
summary: 0
fn=(1) xla::cpu::ParallelFusionEmitter::AddFusion(xla::HloFusionInstruction const*)
5 20
cfn=(2) xla::cpu::ParallelFusionEmitter::FusionCompilerPool::GetInstance()
calls=1 0
5 900
fn=(2)
1 10
cfn=(3) xla::cpu::FusionCompiler::CreateContext()
calls=1 0
1 100
fn=(4) xla::cpu::ThunkEmitter::ThunkEmitter(xla::cpu::IrEmitter2&)
3 4
cfn=(3)
calls=1 0
3 50
fn=(5) Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::GlobalSteal()
2 7
fn=(6) Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::MaybeGetTask(tsl::Task*)
2 3
totals: 2000
"""


def test_a_dump_leaves_out_spinning_and_building_fusion_compilers() -> None:
    dump = parse_dump(DUMP)
    # GlobalSteal now spins too (about 1 M instructions per compile of the MLP).
    assert (dump.total, dump.spin, dump.contexts) == (2000, 10, 950)
    assert dump.work == 1990 and dump.compile_work == 1040
    # Uncompressed names read the same (the runtime clock's dumps).
    plain = (
        "fn=xla::cpu::ThunkEmitter::ThunkEmitter()\n1 4\n"
        "cfn=xla::cpu::FusionCompiler::CreateContext()\ncalls=1 0\n1 50\ntotals: 60\n"
    )
    assert parse_dump(plain) == Dump(total=60, spin=0, contexts=50)


def test_garbage_collections_are_left_out_of_every_count(tmp_path: Path) -> None:
    argv = instructions.child_argv("/usr/bin/valgrind", tmp_path, ["python", "-m", "pytest"])
    toggle = argv.index("--toggle-collect=gc_collect_main")
    # --toggle-collect switches collection off at the start; the later option turns it on.
    assert argv.index("--collect-atstart=yes") > toggle


def test_a_python_whose_collections_are_counted_says_so() -> None:
    import gc

    calls: list[object] = []

    def left_out(call: object) -> Dump:
        calls.append(call)
        return Dump(total=1_532, spin=0)

    assert instructions.gc_counted(left_out) is None
    assert calls == [gc.collect]
    line = instructions.gc_counted(lambda call: Dump(total=11_464_820, spin=0))
    assert line is not None
    assert line.startswith(
        "jaxperf: instructions clock: garbage collections inside a compile phase are counted "
        "(11,464,820 instructions for one of "
    )
    assert line.endswith("callgrind found no function gc_collect_main in this Python to leave "
                         "them out")  # fmt: skip


def test_what_a_spinning_worker_calls_spins_too() -> None:
    # An idle worker's steal polls the other queues (PopBack, 40 inclusive, which moves an
    # empty Task: 5) and looks for work (MaybeGetTask, itself spinning: counted once).
    dump = parse_dump(
        "fn=(1) Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::GlobalSteal()\n1 7\n"
        "cfn=(2) Eigen::RunQueue<tsl::thread::EigenEnvironment::Task, 1024u>::PopBack()\n"
        "calls=3 0\n1 40\n"
        "cfn=(3) Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::MaybeGetTask(Task*)\n"
        "calls=1 0\n1 9\n"
        "fn=(2)\n1 35\ncfn=(4) tsl::thread::EigenEnvironment::Task::operator=(Task&&)\n"
        "calls=1 0\n1 5\nfn=(4)\n1 5\nfn=(3)\n1 9\n"
        "fn=(5) xla::cpu::Work()\n1 1000\ntotals: 1056\n"
    )
    assert dump.spin == 7 + 40 + 9  # GlobalSteal, what it called but MaybeGetTask, that
    assert dump.work == 1000


class FakeCallgrind:
    """Callgrind as PhaseClock sees it: numbered dumps of injected counts."""

    def __init__(self) -> None:
        self.dumps = 0
        self.on = False
        self.pauses = 0
        self.own: set[int] = set()
        self.next_count = 0  # instructions of the segment that the next dump closes
        self.written: dict[int, int] = {}
        self.read_while_on: list[int] = []

    def dump(self) -> int:
        self.dumps += 1
        self.written[self.dumps] = self.next_count
        self.next_count = 0
        return self.dumps

    def instrument(self, on: bool) -> None:
        if self.on and not on:
            self.own.add(self.dump())
            self.pauses += 1
        self.on = on

    def read(self, number: int) -> Dump:
        if self.on:
            self.read_while_on.append(number)
        return Dump(total=self.written.pop(number), spin=0)

    def discard(self, upto: int) -> None:
        self.written = {k: v for k, v in self.written.items() if k > upto}


def test_a_phase_counts_its_dumps_but_the_plugins_own_work() -> None:
    cg = FakeCallgrind()
    clock = PhaseClock(cg)  # type: ignore[arg-type]
    trace = clock.start()  # instrumentation on: nothing before it counts
    assert cg.on and clock.open == 1
    cg.next_count = 100
    inner = clock.start()  # a nested jit traced inside
    cg.next_count = 40
    inner_span = clock.end(inner)
    cg.next_count = 0
    own = clock.own_start()  # the recorder's listener: not the user's trace
    cg.next_count = 7000
    clock.own_stop(own)
    cg.next_count = 5
    outer_span = clock.end(trace)
    assert clock.open == 0 and inner_span is not None and outer_span is not None
    assert clock.count(inner_span) == 40
    assert clock.count(outer_span) == 145  # 100 + 40 + 5, not the listener's 7000
    assert not cg.on and cg.read_while_on == []  # read with instrumentation off
    clock.clear()
    assert cg.written == {} and cg.own == set()


def test_a_phase_that_instrumentation_left_is_not_counted() -> None:
    cg = FakeCallgrind()
    clock = PhaseClock(cg)  # type: ignore[arg-type]
    mark = clock.start()
    cg.instrument(False)  # a counted call (the runtime clock) inside the phase
    cg.instrument(True)
    assert clock.end(mark) is None


def test_a_repeated_program_runs_uninstrumented_to_its_compile() -> None:
    cg = FakeCallgrind()
    clock = PhaseClock(cg)  # type: ignore[arg-type]
    trace = clock.start(top_trace=True)
    cg.next_count = 300
    clock.repeat("f")  # the trace listener found the program counted before in this test
    assert not cg.on and clock.repeating
    inner = clock.start()  # a jit traced inside it: not instrumented either
    assert not cg.on and clock.end(inner) is None
    assert clock.end(trace) is None
    lower = clock.start()  # its lowering and compile follow, with no phase open
    assert not cg.on and clock.end(lower) is None
    compile_ = clock.start()
    assert not cg.on and clock.end(compile_) is None
    clock.pause()  # the compile ended: the next program is counted again
    nxt = clock.start(top_trace=True)
    assert cg.on
    cg.next_count = 70
    span = clock.end(nxt)
    assert span is not None and clock.count(span) == 70


def test_a_repeat_whose_trace_is_not_lowered_leaves_the_next_trace_counted() -> None:
    cg = FakeCallgrind()
    clock = PhaseClock(cg)  # type: ignore[arg-type]
    trace = clock.start(top_trace=True, name="f")
    clock.repeat("f")  # eval_shape of a counted program: no lowering, no compile follow
    assert clock.end(trace) is None and clock.repeating
    lower = clock.start()  # a lowering with no trace before it (a trace-cache hit) is
    assert not cg.on  # taken for the repeat's until a trace starts
    clock.end(lower)
    nxt = clock.start(top_trace=True, name="g")
    assert cg.on and not clock.repeating
    assert clock.end(nxt) is not None


def test_a_repeat_announced_before_its_trace_starts_is_not_instrumented() -> None:
    # jax < 0.7: the trace listener runs before the trace's phase starts.
    cg = FakeCallgrind()
    clock = PhaseClock(cg)  # type: ignore[arg-type]
    clock.repeat("f")
    assert not clock.repeating  # nothing open yet
    trace = clock.start(top_trace=True, name="f")
    assert clock.repeating and not cg.on and clock.end(trace) is None
    clock.pause()
    clock.repeat("f")
    other = clock.start(top_trace=True, name="g")  # not the trace announced: counted
    assert cg.on and not clock.repeating and clock.end(other) is not None


def test_the_scope_counts_a_program_once_per_function(tmp_path: Path) -> None:
    from pytest_jaxperf.measure.identity import Identity

    scope = Scope(tmp_path)
    f = Identity(name="f", filename=str(tmp_path / "t.py"), lineno=3)
    g = Identity(name="g", filename=str(tmp_path / "t.py"), lineno=9)
    key = {"avals": ("f32[3]",), "static": ()}  # jax >= 0.9: a dict, not hashable
    assert not scope.repeats(f, key)
    assert scope.repeats(f, dict(key))  # the same key again: cleared caches, a new jit
    assert not scope.repeats(f, {"avals": ("f32[4]",), "static": ()})
    assert not scope.repeats(g, key)  # another function's program
    assert not Scope(tmp_path).repeats(f, key)  # the next test counts it again


class EveryDumpCounts(FakeCallgrind):
    """Each dump since the last counts one instruction: a span counts its dumps."""

    def dump(self) -> int:
        self.next_count = 1
        return super().dump()


def _counted(tmp_path: Path, calls: int) -> tuple[FunctionRecord, tuple[int, int]]:
    import jax
    import jax.numpy as jnp

    from pytest_jaxperf.measure.recorder import RECORDER

    def doubled(x: jax.Array) -> jax.Array:
        return x * 2.0

    x = jnp.ones(3)
    clock = PhaseClock(EveryDumpCounts())  # type: ignore[arg-type]
    RECORDER.install()
    RECORDER.phase_clock = clock
    try:
        with RECORDER.scope(tmp_path) as scope:
            for _ in range(calls):
                jax.clear_caches()  # each call traces, lowers and compiles again
                jax.jit(doubled)(x).block_until_ready()
    finally:
        RECORDER.phase_clock = None
    (fn,) = [f for f in scope.functions.values() if f.name.endswith("doubled")]
    cg = clock._cg  # type: ignore[attr-defined]
    return fn, (cg.pauses, cg.dumps)


@pytest.mark.jax_internals
def test_a_program_compiled_again_in_a_test_is_counted_once(tmp_path: Path) -> None:
    once, (_, dumps_once) = _counted(tmp_path, 1)
    thrice, (pauses, dumps) = _counted(tmp_path, 3)
    assert (once.traces, once.compiles) == (1, 1)
    assert (thrice.traces, thrice.compiles) == (3, 3)  # the counts see every compile
    assert set(once.instructions) == {"trace", "lower", "compile"}
    # The 2nd and 3rd programs were not counted: the same counts as one program.
    assert thrice.instructions == once.instructions
    # The repeats ran uninstrumented from the start of their traces (jax < 0.7: the trace
    # listener runs first) or from the listener in it: the two wrote fewer dumps than the
    # one counted program (2 each on jax 0.10.2, vs 16; none on 0.6.2).
    assert pauses <= 3 and dumps - dumps_once < dumps_once


class FixedClock:
    """A PhaseClock whose spans count what the test says."""

    open = 0

    def __init__(self) -> None:
        self.cleared = 0

    def count(self, span: Span) -> int:
        return span.end - span.start

    def clear(self) -> None:
        self.cleared += 1


def test_the_scope_adds_each_phase_to_its_function(tmp_path: Path) -> None:
    from pytest_jaxperf.measure.identity import Identity

    scope = Scope(tmp_path)
    clock = FixedClock()
    scope.phase_clock = clock
    ident = Identity(name="f", filename=str(tmp_path / "t.py"), lineno=3)
    scope.on_trace_time(ident, 0.1, 0.1, span=Span(0, 900))
    scope.on_lowering(ident, 0.1, 0.1, (10, 20), span=Span(0, 300))
    scope.on_compile(0.5, 0.5, 30, span=Span(0, 5000))
    scope.on_lowering(ident, 0.1, 0.1, (10, 20), span=Span(0, 200))  # a second program
    scope.on_cache_hit()
    scope.on_compile(0.001, 0.001, 30, span=Span(0, 17))  # a load: no compile counted
    rec = scope.snapshot()
    (fn,) = rec.functions.values()
    assert fn.instructions == {"trace": 900, "lower": 500, "compile": 5000}
    assert clock.cleared == 1
    clock.open = 1  # a phase still open: its dumps are read later
    scope.on_trace_time(ident, 0.1, 0.1, span=Span(0, 1))
    assert scope.snapshot().functions[fn.key].instructions["trace"] == 900


def _fn(**phases: int) -> FunctionRecord:
    fn = FunctionRecord(traces=1, lowerings=1, compiles=1, name="f", site="t.py:3")
    fn.instructions = dict(phases)
    return fn


def test_counts_are_stored_and_read_back(tmp_path: Path) -> None:
    from pytest_jaxperf.model import RunRecord
    from pytest_jaxperf.storage import store

    fn = _fn(trace=9_183_881, lower=13_243_665, compile=224_990_103)
    data = function_to_json(fn)
    assert data["instructions"] == {"compile": 224_990_103, "lower": 13_243_665,
                                    "trace": 9_183_881}  # fmt: skip
    assert function_from_json(data, "f").instructions == fn.instructions
    assert "instructions" not in function_to_json(_fn())  # written only where counted
    with pytest.raises(ValueError, match=r"f.instructions: expected an object of phase names"):
        function_from_json({**data, "instructions": {"trace": -1}}, "f")
    # A whole file, with a test that has counts and one that has none.
    counted, plain = RecordedTest(), RecordedTest()
    counted.functions = {fn.key: fn}
    plain.functions = {fn.key: _fn()}
    for rec in (counted, plain):
        rec.outcome = "passed"
        rec.recompute_totals()
    path = tmp_path / "run.json"
    store.save(path, RunRecord(environment={}, tests={"t::a": counted, "t::b": plain}))
    back = store.load(path).tests  # type: ignore[union-attr]
    assert back["t::a"].functions[fn.key].instructions == fn.instructions
    assert back["t::b"].functions[fn.key].instructions == {}


def _verdict(now: FunctionRecord, before: FunctionRecord, **env_now: str) -> list[str]:
    rec, base = RecordedTest(), RecordedTest()
    rec.functions, base.functions = {now.key: now}, {before.key: before}
    rec.recompute_totals()
    base.recompute_totals()
    env = {"jax": "0.10.2", "python": "3.11.7", "valgrind": "valgrind-3.19.0",
           "instructions_isa": "AVX2", "python_build": "CPython main", "libc": "glibc 2.36"}
    gating = Gating.between(env, {**env, **env_now}, Tolerances(compile_clock="instructions"))
    verdict = evaluate(rec, base, NO_LIMITS, gating)
    return [line for b in verdict.breaches for line in breach_lines(b)] + [
        f"note: {n}" for n in verdict.notes] + [f"improved: {i}" for i in verdict.improvements]


def test_each_phase_is_gated_against_its_baseline_count() -> None:
    before = _fn(trace=9_000_000, lower=13_000_000, compile=225_000_000)
    # Within 2% on every phase: nothing.
    assert _verdict(_fn(trace=9_170_000, lower=13_100_000, compile=226_000_000), before) == []
    # Trace-time Python work x1.6, the same program: the trace fails, in the runtime's words.
    lines = _verdict(_fn(trace=14_400_000, lower=13_000_000, compile=225_000_000), before)
    assert lines == [
        "trace instructions of f (defined at t.py:3): baseline 9 M -> now 14.4 M "
        "(+60.0%) [instructions_rtol 0.02]"
    ]
    # A phase that shrank is an improvement, not a failure.
    assert _verdict(_fn(trace=9_000_000, lower=11_000_000, compile=225_000_000), before) == [
        "improved: lowering instructions of f: 13,000,000 -> 11,000,000 (-15.4%)"
    ]
    assert set(PHASE_INSTRUCTIONS) == {"trace", "lower", "compile"}


def test_backend_compile_instructions_are_shown_not_gated() -> None:
    before = _fn(trace=9_000_000, lower=13_000_000, compile=225_000_000)
    grew = _fn(trace=9_000_000, lower=13_000_000, compile=236_250_000)
    assert _verdict(grew, before) == [
        "backend compile instructions of f (defined at t.py:3): baseline 225 M -> now 236.2 M "
        "(+5.0%) [instructions_rtol 0.02] [reported only]",
        "note: backend compile instructions not gated: they vary by up to 5% between runs of "
        "unchanged code (which fusions XLA's CPU compiler compiles in a fresh MLIR context is "
        "a race between its threads)",
    ]
    rec, base = RecordedTest(), RecordedTest()
    rec.functions, base.functions = {grew.key: grew}, {before.key: before}
    gating = Gating.between({}, {}, Tolerances(compile_clock="instructions"))
    verdict = evaluate(rec, base, NO_LIMITS, gating)
    assert verdict.status == "reported only" and verdict.notes[0].code == "unstable_count"
    # Nor is a backend compile that counted fewer an improvement (the same race).
    fewer = _fn(trace=9_000_000, lower=13_000_000, compile=214_000_000)
    assert _verdict(fewer, before) == []


def test_counts_compare_only_within_one_python_build_and_c_library() -> None:
    before = _fn(trace=9_000_000, lower=13_000_000, compile=225_000_000)
    now = _fn(trace=19_000_000, lower=13_000_000, compile=225_000_000)
    assert _verdict(now, before, libc="glibc 2.39") == [
        "note: compile instructions not gated: environment differs (libc glibc 2.36 -> glibc "
        "2.39)"
    ]
    # Not the CPU model: the simulated CPU is the same on any host with AVX2.
    assert instruction_differences({"cpu": "AMD EPYC"}, {"cpu": "Intel Xeon"}) == []
    # A file without the new keys (saved before them) still compares.
    assert instruction_differences({"python": "3.11.7"}, {"python": "3.11.7", "libc": "x"}) == []
    # A baseline without counts says how to get them.
    assert _verdict(now, _fn()) == [
        "note: compile instructions not gated: the baseline has none (save it with "
        "--jaxperf-compile-clock=instructions --jaxperf-save)"
    ]


def test_max_compile_time_is_not_applied_to_seconds_measured_under_valgrind() -> None:
    from pytest_jaxperf.config import MarkerLimits

    record = RecordedTest(functions={"f": _fn(trace=1)})
    record.functions["f"].trace_s = record.functions["f"].trace_cpu_s = 40.0  # valgrind's
    record.recompute_totals()
    limits = MarkerLimits(max_compile_time=0.5, max_traces=0)
    tol = Tolerances(compile_clock="instructions")
    here = {"jax": "0.10.2", "python": "3.11.7"}
    valgrind = Gating.between(here, {**here, "valgrind": "valgrind-3.19.0"}, tol)
    out = evaluate(record, None, limits, valgrind)
    # The count limit still fails; the seconds' limit says why it is not applied.
    assert [(b.metric, b.against) for b in out.breaches] == [("traces", "limit")]
    assert out.notes == ["max_compile_time not applied: measured under valgrind, whose "
                         "seconds follow which tests ran before"]  # fmt: skip
    assert [n.code for n in out.notes] == ["environment_differs"]
    # A native run applies it.
    native = evaluate(record, None, limits, Gating.between(here, here, tol))
    assert {b.metric for b in native.breaches} == {"traces", "compile time"}
    assert native.notes == []


def test_the_child_compiles_everything_itself(tmp_path: Path) -> None:
    calls: list[dict[str, str]] = []
    env, line = instructions.compile_natively(
        ["python", "-m", "pytest"], {"A": "1"}, tmp_path / "cache",
        instructions.COMPILES_COUNTED, run=lambda *a, **k: calls.append(k["env"]),
    )  # fmt: skip
    assert calls == [] and env == {"A": "1"}
    assert line == ("jaxperf: instructions clock: compiling under valgrind (the compile clock "
                    "counts every compile, which a cached program would skip)")  # fmt: skip


TINY = """
import jax
import jax.numpy as jnp
import pytest


@jax.jit
def double(x):
    return x * 2.0 + 1.0


# Compiled under valgrind, each compile takes seconds: the limit is not applied there.
@pytest.mark.jaxperf(max_compile_time=0.001)
def test_double():
    assert float(double(jnp.ones(3)).sum()) == 9.0


@jax.jit
def twice(x):
    return x * 2.0 + 1.0


@jax.jit
def once(x):
    return x * 2.0 + 1.0


@pytest.mark.jaxperf
def test_again():
    x = jnp.ones(3)
    twice(x)
    jax.clear_caches()
    twice(x)  # the same program again: not counted again
    once(x)
"""


# Not `jax_internals`: one run under valgrind takes 1-3 minutes, and `.ci/run`'s matrix ends
# (run on each JAX of the range) would pay it twice more than its 20 minutes allow. It
# passed on jax 0.6.2 and 0.12.0.1 when written; the runtime clock's end-to-end test and the
# recorder's phase tests run valgrind and the phase events on both ends.
@needs_valgrind
def test_compile_instructions_counted_and_gated_end_to_end(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_tiny=TINY)
    saved = jp.runpytest_subprocess(
        "--jaxperf", "--jaxperf-compile-clock=instructions", "--jaxperf-save",
        "--jaxperf-json=run.json",
    )  # fmt: skip
    assert saved.ret == 0, saved.stdout.str()
    saved.stdout.fnmatch_lines(lit("jaxperf: instructions clock: compiling under valgrind (the "
                                   "compile clock counts every compile, *)"))  # fmt: skip
    base = jp.path / ".jaxperf/baseline-instructions.json"
    fn = next(iter(read_json(base)["tests"]["test_tiny.py::test_double"]["functions"].values()))
    counts = fn["instructions"]
    saved.stdout.fnmatch_lines(lit("*max_compile_time not applied: measured under valgrind, "
                                   "whose seconds follow which tests ran before*"))  # fmt: skip
    # Collections are left out (callgrind found the collector): no line says otherwise.
    assert "garbage collections inside a compile phase are counted" not in saved.stdout.str()
    # `twice` compiled the same program twice, counted once: about `once`'s counts (its
    # lowering and compile 2x theirs if counted twice).
    again = {
        f["name"]: f for f in read_json(base)["tests"]["test_tiny.py::test_again"]["functions"]
        .values()
    }  # fmt: skip
    assert (again["twice"]["traces"], again["twice"]["compiles"]) == (2, 2)
    for phase in ("lower", "compile"):
        ratio = again["twice"]["instructions"][phase] / again["once"]["instructions"][phase]
        assert 0.8 < ratio < 1.4, (phase, again)
    assert set(counts) == {"trace", "lower", "compile"}
    # Each phase runs Python and XLA code: far more than the probe loop's 10,000 steps.
    assert min(counts.values()) > 100_000, counts
    saved.stdout.fnmatch_lines(lit(
        "jaxperf: test_tiny.py::test_double double: trace * M, lower * M, compile * M "
        "instructions counted under valgrind"
    ))  # fmt: skip
    env = read_json(base)["environment"]
    assert env["libc"] and env["python_build"] and env["valgrind"].startswith("valgrind-")
    # The gate, without another run under valgrind: the report against a baseline whose
    # trace counted 10% fewer instructions fails on the trace alone; against itself passes.
    data = read_json(base)
    for entry in data["tests"]["test_tiny.py::test_double"]["functions"].values():
        entry["instructions"]["trace"] = int(counts["trace"] / 1.1)
    smaller = jp.path / "smaller.json"
    smaller.write_text(json.dumps(data))
    cmd = [sys.executable, "-m", "pytest_jaxperf", "compare"]  # BASELINE REPORT
    clock = [str(jp.path / "run.json"), "--compile-clock", "instructions"]
    same = subprocess.run([*cmd, str(base), *clock], capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    grew = subprocess.run([*cmd, str(smaller), *clock], capture_output=True, text=True)
    assert grew.returncode == 1, grew.stdout + grew.stderr
    assert "trace instructions of double (defined at test_tiny.py:6): baseline " in grew.stdout
    assert "(+10.0%) [instructions_rtol 0.02]" in grew.stdout
    assert "lowering instructions" not in grew.stdout
