"""The instructions clock: pytest re-executed under valgrind's callgrind, and the instructions
that one steady-state call executes on its simulated CPU, read back from callgrind's dumps.

The parent process checks what the clock needs and replaces itself with
``valgrind --tool=callgrind --instr-atstart=no python <its own command line>``, with the
settings that make a count independent of the host (one PJRT CPU thread, the ISA valgrind
simulates, a fixed hash seed; the session makes CPU dispatch synchronous, as for the CPU
clock). In that child, instrumentation is switched on around the counted calls only,
through the compiled client requests of pytest-codspeed (the ``instructions`` extra):
Python itself cannot issue them. No jax here."""

from __future__ import annotations

import gc
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Set in the child only: the valgrind version it runs under, and where callgrind dumps.
UNDER_VALGRIND = "PYTEST_JAXPERF_VALGRIND"
DUMP_DIR = "PYTEST_JAXPERF_CALLGRIND_DIR"
# The private compilation cache (see compile_natively): set to its folder in the native pass
# that fills it (the plugin only keys the cache there, no test is measured) and in the
# valgrind child that loads from it.
NATIVE_PASS = "PYTEST_JAXPERF_NATIVE_PASS"
PRIVATE_CACHE = "PYTEST_JAXPERF_PRIVATE_CACHE"
# XLA generates code for the widest ISA the CPU offers; valgrind simulates AVX2 at most (no
# AVX-512), and a host without AVX2 would get other code: pinned, and part of the environment.
ISA = "AVX2"
# Steady-state calls counted per benchmark, each on its own (after two more warm-up calls);
# the benchmark's count is the smallest. Whatever else runs in the process can only add
# instructions to a call: in 8 runs of the example beside two CPU hogs, one count of its
# 30 us `overlap` call came out 60% above the others (a background thread's work landing in
# the counted window), and the smallest of several counts does not see such a one-off.
ROUNDS = 5
# Environment settings that make the count independent of the host and its load:
# - PJRT_NPROC=1: XLA's CPU client sizes its thread pools by the cores it sees, and the
#   work it hands them (and their waiting) with them.
# - a fixed hash seed: string hashing decides dict layouts, so how much Python work a call's
#   dispatch takes.
# - one BLAS/OpenMP thread for NumPy and SciPy: their pools spin while waiting, as XLA's do.
_PINNED = {
    "PJRT_NPROC": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
}
# Self cost of these functions is a waiting worker's spinning, not the program's work: it
# follows how long the scheduler lets a worker spin, that is the machine's load
# (benchmarks/results/instructions_probe-2026-11-26.txt: 1.3% of a count moved with load;
# 0.035% without them).
SPIN = re.compile(
    r"ThreadPoolTempl<[^>]*>::(MaybeGetTask|Steal|GlobalSteal|WaitForWork)|EventCount::"
)
# Left out of a compile phase's count with everything they call: the construction of XLA's
# CPU fusion compilers, each a fresh MLIR context of 7-15 M instructions. How many of them
# the parallel fusion emitter's pool builds is a race between the compiling thread and the
# compile workers (5 or 6 for the same MLP), which no pinned setting removes (issue 50).
CONTEXT = re.compile(r"FusionCompilerPool::GetInstance\(|FusionCompiler::CreateContext\(")
# CPython's cyclic garbage collector, left out of every count with everything it calls (its
# finalizers and weakref callbacks too) by callgrind's --toggle-collect. A collection starts
# when allocations since the last one add up, so it falls into one phase or another, and
# what it costs follows the whole heap (everything the process allocated before): inside a
# counted compile phase it is not the phase's work (a full collection of a pytest process's
# heap: ~11 M instructions, four traces of a small MLP). The static function that runs one
# collection in CPython 3.10 - 3.14, its own symbol where the build keeps symbols (checked
# by `gc_counted`).
COLLECTOR = "gc_collect_main"
# Why a run with the compile clock compiles under valgrind (no native pass first).
COMPILES_COUNTED = "the compile clock counts every compile, which a cached program would skip"
INSTALL_EXTRA = "pip install 'pytest-jaxperf[instructions]'"


def under_valgrind() -> str | None:
    """The valgrind version this process was re-executed under by the plugin, else None."""
    return os.environ.get(UNDER_VALGRIND) or None


def valgrind_version(valgrind: str) -> str:
    """'valgrind-3.19.0' (what `valgrind --version` prints)."""
    proc = subprocess.run([valgrind, "--version"], capture_output=True, text=True, timeout=60)
    return proc.stdout.strip() or "unknown"


def startup_problem(
    jax_platforms: str | None, workers: object, flag: str = "--jaxperf-runtime-clock=instructions"
) -> str | None:
    """Why this process cannot count instructions, with the fix (naming `flag`, the option
    that asked for the clock); None when it can."""
    # First: no install fixes a run asked for another backend (a GPU machine often lacks
    # valgrind too, and its line would hide this one).
    if jax_platforms and jax_platforms.split(",")[0].strip().lower() != "cpu":
        return (
            f"{flag} counts the CPU backend's instructions; JAX_PLATFORMS={jax_platforms} asks "
            "for another backend: unset it (the clock sets JAX_PLATFORMS=cpu) or use the wall "
            "clock for device time"
        )
    if workers not in (None, 0, "0", "no"):
        how = f"-n {workers}" if isinstance(workers, int) else str(workers)
        return (
            f"{flag} runs the tests serially in one valgrind process; drop pytest-xdist's "
            f"{how} for this run (or add -p no:xdist)"
        )
    system, machine = platform.system(), platform.machine()
    if system != "Linux" or machine not in ("x86_64", "AMD64"):
        return (
            f"{flag} needs Linux on x86_64 (valgrind's simulated CPU); this is {system} "
            f"{machine}: use the cpu or wall clock, or jaxperf ab, here"
        )
    if shutil.which("valgrind") is None:
        return f"{flag} needs valgrind on PATH (e.g. apt-get install valgrind); it was not found"
    try:
        _hooks()
    except ImportError:
        return f"{flag} needs pytest-codspeed's compiled client requests: {INSTALL_EXTRA}"
    return None


def _hooks() -> Any:
    # pytest-codspeed's compiled callgrind client requests (its `instrument_hooks` library,
    # 5.x); its Python wrapper insists on running inside CodSpeed's runner, so its functions
    # are called directly. self_check() vouches for them before any test runs.
    import importlib

    return importlib.import_module("pytest_codspeed.instruments.hooks.dist_instrument_hooks")


def self_check() -> str | None:
    """In the valgrind child, before any test: why instructions cannot be counted here (the
    client requests moved, callgrind wrote no dump), or None when a known loop counts."""
    try:
        hooks = _hooks()
        running = hooks.instrument_hooks_is_instrumented(hooks.instrument_hooks_init())
    except (ImportError, AttributeError):
        running = True  # the count below says what is wrong
    if not running:
        # The environment says valgrind, the process is not under it: started by a process
        # that is (a test's own pytest, a pytest-xdist worker) and inherited its environment.
        return (
            f"this process is not running under valgrind, though its environment says so "
            f"({UNDER_VALGRIND}={under_valgrind()}): a pytest started from the instructions "
            f"clock's run cannot count instructions; unset {UNDER_VALGRIND} in its environment"
        )
    try:
        dump = counter().count(lambda: sum(range(10_000)))
    except (ImportError, AttributeError, OSError, ValueError) as exc:
        return (
            f"the instructions clock could not count a known loop ({type(exc).__name__}: "
            f"{exc}); pytest-codspeed 5.x provides the client requests it calls"
        )
    if dump.total < 10_000:
        return (
            f"the instructions clock counted {dump.total} instructions for a 10,000-step "
            "loop: valgrind's instrumentation did not switch on"
        )
    return None


def gc_counted(count: Callable[[Callable[[], object]], Dump] | None = None) -> str | None:
    """In the valgrind child: the line saying that garbage collections are counted (the
    collector's function was not found under its name in this Python), or None when
    callgrind leaves them out. A full collection of this process's heap visits every
    tracked object, so it counts far more instructions than there are objects; left out,
    only the call into it is counted (1,532 instructions on CPython 3.11 for a 33,654-object
    heap, 11.46 M counted)."""
    objects = len(gc.get_objects())
    counted = (count or counter().count)(gc.collect).total
    if counted < objects:
        return None
    return (
        f"jaxperf: instructions clock: garbage collections inside a compile phase are "
        f"counted ({counted:,} instructions for one of {objects:,} objects): callgrind "
        f"found no function {COLLECTOR} in this Python to leave them out"
    )


def child_environment(env: Mapping[str, str], version: str, dump_dir: Path) -> dict[str, str]:
    """The re-executed pytest's environment: the user's, with the pinned settings."""
    out = {**env, **_PINNED, UNDER_VALGRIND: version, DUMP_DIR: str(dump_dir)}
    out["JAX_PLATFORMS"] = "cpu"
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_cpu_max_isa")]
    out["XLA_FLAGS"] = " ".join([*flags, f"--xla_cpu_max_isa={ISA}"])
    return out


def child_argv(valgrind: str, dump_dir: Path, argv: Sequence[str]) -> list[str]:
    """valgrind's command line around this process's own (`sys.orig_argv`)."""
    return [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",  # only the counted calls run instrumented (and slow)
        "--compress-strings=no",  # every dump names its functions in full
        "--compress-pos=no",
        # Collection off inside the collector, on everywhere else: --toggle-collect alone
        # would turn it off at the start, so --collect-atstart=yes must come after it.
        f"--toggle-collect={COLLECTOR}",
        "--collect-atstart=yes",
        f"--callgrind-out-file={dump_dir / 'callgrind.out.%p'}",
        "--quiet",
        *argv,
    ]


# What a count leaves out, numbered: counts made under other rules are not compared (the
# gate says "environment differs" and a save writes the new counts). 1 (0.1.0): the pool
# workers' spin-waits; 2: also `GlobalSteal` and the fusion compilers' construction; 3: also
# Python's garbage collections and what a spinning worker calls.
COUNTING_RULES = 3


def environment() -> dict[str, Any]:
    """What the count depends on beyond jax, jaxlib, Python and x64 (the report's
    environment keeps it; counts compare only where all of it matches): Python's build (its
    interpreter is ~89% of a trace's instructions) and the C library (malloc is ~15% of a
    backend compile's), besides valgrind, the simulated ISA and what a count leaves out."""
    libc, version = platform.libc_ver()
    return {
        "valgrind": under_valgrind(),
        "instructions_counting": COUNTING_RULES,
        "instructions_isa": simulated_isa(),
        "python_build": " ".join((platform.python_implementation(), *platform.python_build())),
        "libc": f"{libc} {version}".strip() or "unknown",
    }


def simulated_isa(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU the program sees under valgrind. valgrind does not pass the host's CPUID
    through: on a host with AVX2 it presents one fixed CPU (CPUID inside valgrind 3.19 on an
    AMD EPYC host: "Intel(R) Core(TM) i7-4910MQ", with that CPU's cache geometry), so code
    that picks its path by CPU model or cache sizes does the same on any such host; on a host
    without AVX2 it presents an older CPU, and counts are not compared with those."""
    try:
        with open(cpuinfo, encoding="utf-8") as fh:
            flags = next((line for line in fh if line.startswith("flags")), "")
    except OSError:
        flags = ""
    return ISA if "avx2" in flags.split() else f"below {ISA}"


@dataclass(frozen=True)
class Dump:
    """One callgrind dump: every instruction executed while it counted, and those of them
    that waiting thread-pool workers spun."""

    total: int
    spin: int
    # Inclusive cost of calls into CONTEXT functions (from functions outside CONTEXT).
    contexts: int = 0

    @property
    def work(self) -> int:
        return self.total - self.spin

    @property
    def compile_work(self) -> int:
        """What a compile phase counts: the work, less building fusion compilers."""
        return self.total - self.spin - self.contexts


def parse_dump(text: str) -> Dump:
    """Totals, spinning and fusion-compiler construction of a callgrind dump (names
    compressed or not: `fn=(12) name` the first time, `fn=(12)` after). A call's inclusive
    cost, on the line after `calls=`, is not self cost."""
    total: int | None = None
    spin = contexts = 0
    names: dict[str, str] = {}
    fn = cfn = ""
    spinning = in_context = False
    after_call = False
    for line in text.splitlines():
        if after_call:
            after_call = False
            parts = line.split()
            if len(parts) < 2:
                continue
            if not in_context and CONTEXT.search(cfn):
                contexts += int(parts[1])
            elif spinning and not SPIN.search(cfn):
                # What a spinning worker calls spins too: the queues it polls for work
                # (`RunQueue::PopBack`, moving an empty `Task`), 0.15 M instructions of one
                # trace in two of three processes (benchmarks/phase_spread_probe.py).
                spin += int(parts[1])
            continue
        if line.startswith("fn="):
            fn = _name(line[3:], names)
            spinning = bool(SPIN.search(fn))
            in_context = bool(CONTEXT.search(fn))
        elif line.startswith("cfn="):
            cfn = _name(line[4:], names)
        elif line.startswith("calls="):
            after_call = True
        elif line.startswith("totals:") or (line.startswith("summary:") and total is None):
            total = int(line.split(":", 1)[1].split()[0])
        elif spinning and line[:1].isdigit():
            parts = line.split()
            if len(parts) >= 2:
                spin += int(parts[1])
    if total is None:
        raise ValueError("no totals: line in the callgrind dump")
    return Dump(total=total, spin=spin, contexts=contexts)


def _name(spec: str, names: dict[str, str]) -> str:
    # "(12) name" defines id 12, "(12)" refers to it, "name" is uncompressed.
    if not spec.startswith("("):
        return spec
    ident, _, name = spec.partition(")")
    if name:
        names[ident] = name.strip()
        return names[ident]
    return names.get(ident, "")


class Callgrind:
    """This process's callgrind (the valgrind child only): whether it instruments now, and
    its dumps, numbered as callgrind numbers them (`callgrind.out.<pid>.<n>`), whichever
    clock asked for them."""

    def __init__(self, dump_dir: Path) -> None:
        self.hooks = _hooks()
        self.instance = self.hooks.instrument_hooks_init()
        self.dir = dump_dir
        self.dumps = 0
        self.on = False
        self.pauses = 0  # times instrumentation went off: a phase spanning one is not counted
        # Dumps of work no compile phase counts (the plugin's own listeners, a counted call).
        self.own: set[int] = set()
        sweep(dump_dir)

    def dump(self) -> int:
        """Write the counts since the last dump (callgrind then zeroes them): its number."""
        self.dumps += 1
        self.hooks.instrument_hooks_set_executed_benchmark(
            self.instance, os.getpid(), f"jaxperf-{self.dumps}".encode("ascii")
        )
        return self.dumps

    def instrument(self, on: bool) -> None:
        """Switch instrumentation on or off (off: what was counted since the last dump is
        dumped first, as nobody's)."""
        if on and not self.on:
            self.hooks.callgrind_start_instrumentation()
        elif self.on and not on:
            self.own.add(self.dump())
            self.hooks.callgrind_stop_instrumentation()
            self.pauses += 1
        self.on = on

    def read(self, number: int) -> Dump:
        """Dump `number`, parsed, its file removed."""
        path = _dump_path(self.dir, os.getpid(), number)
        dump = parse_dump(path.read_text(encoding="utf-8", errors="replace"))
        path.unlink()
        return dump

    def discard(self, upto: int) -> None:
        """Remove the files of dumps up to `upto` that were not read."""
        for number in range(1, upto + 1):
            _dump_path(self.dir, os.getpid(), number).unlink(missing_ok=True)


class Counter:
    """Counts the instructions of calls in the valgrind child, one dump per measurement."""

    def __init__(self, dump_dir: Path) -> None:
        self._cg = callgrind(dump_dir)

    def count(self, call: Callable[[], object]) -> Dump:
        """Instructions of one run of `call`, with the garbage collector paused: a collection
        falls into one call or another as allocations before it happen to add up."""
        cg = self._cg
        hooks, instance = cg.hooks, cg.instance
        cg.instrument(False)  # a compile phase's instrumentation: its counts are dumped
        gc.collect()
        paused = gc.isenabled()
        gc.disable()
        try:
            hooks.instrument_hooks_start_benchmark(instance)  # zeroes the counters, starts
            call()
            hooks.instrument_hooks_stop_benchmark(instance)
        finally:
            if paused:
                gc.enable()
        number = cg.dump()  # dumps: callgrind.out.<pid>.<n>
        cg.own.add(number)
        return cg.read(number)


_CALLGRIND: list[Callgrind] = []
_COUNTER: list[Counter] = []


def callgrind(dump_dir: Path | None = None) -> Callgrind:
    """This process's Callgrind (the valgrind child only)."""
    if not _CALLGRIND:
        _CALLGRIND.append(Callgrind(dump_dir or Path(os.environ[DUMP_DIR])))
    return _CALLGRIND[0]


class _Uncounted:
    """The native pass's counter: the calls run, nothing is counted."""

    def count(self, call: Callable[[], object]) -> Dump:
        call()
        return Dump(total=0, spin=0)


def counter() -> Counter | _Uncounted:
    """This process's counter (the valgrind child only; the native pass runs the calls)."""
    if native_pass():
        return _Uncounted()
    if not _COUNTER:
        _COUNTER.append(Counter(Path(os.environ[DUMP_DIR])))
    return _COUNTER[0]


@dataclass(frozen=True)
class Span:
    """A compile phase on the instructions clock: the dumps after `start`, up to `end`."""

    start: int
    end: int


class PhaseClock:
    """The compile clock's instructions (the valgrind child only): instrumentation on from a
    phase's start, a dump at each phase's start and end and around the plugin's own
    listeners, and a phase's count the work of the dumps in its span, less the listeners'
    (`own`), spin-waits and fusion-compiler construction. Dumps are read once no phase is
    open (`count`), with instrumentation off: reading them inside a phase would count the
    reading.

    A program the test already counted is not counted again (`repeat`): its trace goes
    uninstrumented from there, and its lowering and compile with it."""

    def __init__(self, cg: Callgrind) -> None:
        self._cg = cg
        self._work: dict[int, int] = {}
        self.open = 0  # phases open now (their dumps are not read before they end)
        # A repeated program's phases under way: instrumentation stays off until its
        # compile ends (`pause`) or the next top-level trace starts.
        self.repeating = False
        # The name of a repeated program whose trace has not started yet (JAX before 0.7
        # announces a trace to the listener before the trace's phase starts).
        self._pending: str | None = None

    @property
    def on(self) -> bool:
        return self._cg.on

    def start(self, top_trace: bool = False, name: str | None = None) -> tuple[int, int]:
        """A phase starts (`top_trace`: a trace, no phase open, of function `name`): the dump
        its span starts after, and the pauses so far."""
        cg = self._cg
        if top_trace and self.open == 0:
            # A repeat announced for this trace; else a repeat's trace not lowered is over.
            self.repeating = self._pending is not None and self._pending == name
            self._pending = None
        self.open += 1
        if self.repeating:
            cg.instrument(False)
            return cg.dumps, cg.pauses  # stays off: its end finds no span
        if not cg.on:
            cg.instrument(True)  # the counters were zeroed by the last dump
            return cg.dumps, cg.pauses
        return cg.dump(), cg.pauses

    def end(self, start: tuple[int, int]) -> Span | None:
        """A phase that started at `start` ends: its span (None: instrumentation went off
        inside it, as around a counted call)."""
        cg = self._cg
        self.open = max(0, self.open - 1)
        if not cg.on or cg.pauses != start[1]:
            return None
        return Span(start[0], cg.dump())

    def own_start(self) -> bool:
        """The plugin's own work starts (inside a phase or not): whether it is dumped apart."""
        if self._cg.on:
            self._cg.dump()
            return True
        return False

    def own_stop(self, started: bool) -> None:
        if started and self._cg.on:
            self._cg.own.add(self._cg.dump())

    def repeat(self, name: str) -> None:
        """The top-level trace of function `name` under way (or, no phase open, about to
        start) repeats a program this test counted: instrumentation off for it, its lowering
        and compile (none of them counted)."""
        if self.open == 0:
            self._pending = name
            return
        self.repeating = True
        self._cg.instrument(False)

    def pause(self) -> None:
        """Instrumentation off until the next phase: nothing outside phases is counted."""
        self.repeating = False
        self._pending = None
        self._cg.instrument(False)

    def count(self, span: Span) -> int:
        """The instructions of `span` (instrumentation is switched off to read them)."""
        self.pause()
        total = 0
        for number in range(span.start + 1, span.end + 1):
            if number in self._cg.own:
                continue
            if number not in self._work:
                self._work[number] = self._cg.read(number).compile_work
            total += self._work[number]
        return total

    def clear(self) -> None:
        """Forget what was read and remove every dump so far (a test's end)."""
        self.pause()
        self._cg.discard(self._cg.dumps)
        self._work.clear()
        self._cg.own.clear()


def dump_dir() -> Path:
    """Where callgrind writes: one folder per user, so that the few hundred bytes valgrind
    writes when the process ends (after the plugin's last chance to remove them) are swept by
    the next run instead of piling up; a fresh temporary folder where that one is not safely
    ours."""
    folder = Path(tempfile.gettempdir()) / f"pytest-jaxperf-callgrind-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="pytest-jaxperf-callgrind-"))


def _dump_path(folder: Path, pid: int, number: int) -> Path:
    # The numbered dumps of callgrind's --callgrind-out-file=.../callgrind.out.%p.
    return folder / f"callgrind.out.{pid}.{number}"


def sweep(folder: Path) -> None:
    """Remove what runs that have ended left in `folder` (their end-of-process dumps)."""
    for path in folder.glob("callgrind.out.*"):
        pid = path.name.split(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            path.unlink(missing_ok=True)
    for path in folder.glob("xla-cache.*"):  # cache_dir's, of runs that ended
        pid = path.name.split(".")[1]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def native_pass() -> str | None:
    """The private cache's folder in the native pass that fills it, else None."""
    return os.environ.get(NATIVE_PASS) or None


def private_cache() -> str | None:
    """The private cache's folder in the valgrind child that loads from it, else None."""
    return os.environ.get(PRIVATE_CACHE) or None


def cache_dir(folder: Path, pid: int) -> Path:
    """The private compilation cache of the run whose valgrind child has process id `pid`
    (exec keeps it): never the user's, and swept like the dumps once that process ended."""
    return folder / f"xla-cache.{pid}"


def remove_cache() -> None:
    """Remove this process's private compilation cache (the valgrind child, at its end)."""
    folder = private_cache()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def compile_natively(
    argv: Sequence[str],
    child: Mapping[str, str],
    cache: Path,
    problem: str | None,
    run: Callable[..., Any] = subprocess.run,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[dict[str, str], str]:
    """Run this pytest natively first, with the valgrind child's pinned settings and a
    private persistent compilation cache, and return the child's environment with that cache
    and the line that says so: XLA compiles there at native speed what the child then loads
    instead of compiling it under valgrind (about 50 times slower). `problem` (why JAX's
    cache key cannot be made independent of the CPU, see _jaxhooks) or a native pass that
    failed leaves the child as it was, and the line says why."""
    if problem is not None:
        return dict(child), f"jaxperf: instructions clock: compiling under valgrind ({problem})"
    start = clock()
    with_cache = {**child, **_cache_environment(str(cache))}
    # The child's own environment but for the cache's role: the plugin takes the child's
    # path there (what runs before a compile decides the program's metadata, and with it
    # XLA's code), with the counted calls only run.
    native = {k: v for k, v in with_cache.items() if k != PRIVATE_CACHE}
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # pytest's cache (--lf, --ff) is the valgrind run's to read and write.
        proc = run([*argv, "-p", "no:cacheprovider"], env={**native, NATIVE_PASS: str(cache)},
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        code: object = proc.returncode
    except OSError as exc:
        code = f"{type(exc).__name__}: {exc}"
    programs = sum(1 for _ in cache.iterdir())
    # pytest's 0, 1, 5: the tests ran (failing ones compiled too), or none were collected.
    if code not in (0, 1, 5) or not programs:
        shutil.rmtree(cache, ignore_errors=True)
        return dict(child), (
            f"jaxperf: instructions clock: compiling under valgrind (the native pass that "
            f"compiles first ended with {code} and {programs} programs)"
        )
    return with_cache, (
        f"jaxperf: instructions clock: {programs} programs compiled natively in "
        f"{clock() - start:.1f} s; loaded under valgrind"
    )


def _cache_environment(folder: str) -> dict[str, str]:
    # The environment JAX (0.6.2 .. 0.10.2) reads at its import: every program to and from
    # `folder`, whatever its size and compile time, the user's own cache setting overridden.
    return {
        "JAX_ENABLE_COMPILATION_CACHE": "true",
        "JAX_COMPILATION_CACHE_DIR": folder,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        PRIVATE_CACHE: folder,
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def reexec(
    argv: Sequence[str], env: Mapping[str, str], dump_dir: Path, cache_problem: str | None
) -> None:
    """Replace this process by pytest under valgrind (never returns), after a native pass
    that compiles into the private cache it hands valgrind's run (see compile_natively)."""
    valgrind = shutil.which("valgrind") or "valgrind"
    child = child_environment(env, valgrind_version(valgrind), dump_dir)
    if cache_problem == COMPILES_COUNTED:
        # Nor the user's persistent cache: a program loaded from it is no compile.
        child["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    sweep(dump_dir)
    child, line = compile_natively(argv, child, cache_dir(dump_dir, os.getpid()), cache_problem)
    print(line, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(valgrind, child_argv(valgrind, dump_dir, argv), child)
