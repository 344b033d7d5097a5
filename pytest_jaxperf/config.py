"""Settings resolved once (command line > ini > default) and validated marker arguments.

Pure: imports neither pytest nor jax, so that `jaxperf compare` gates without them. The values
come in from pytest's config (plugin.py) or from the CLI's own arguments (inifile.py); a bad
one raises ConfigError, which pytest's side turns into a usage error."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

DEFAULT_BASELINE = ".jaxperf/baseline.json"
DEFAULT_COMPILE_RTOL = 1.0
DEFAULT_COMPILE_FLOOR = 0.1
# Compile seconds against a baseline from another CPU model, scaled by the two reference
# compiles: the wider of this and compile_rtol. Two models' data (benchmarks/
# cross_machine_compile.py, AMD EPYC and Intel Xeon) spread 1.48-2.40x per test normalised
# (median 1.85x), most of it the runs' noise; 2.5x holds it, the traps compile ~10x more.
DEFAULT_CROSS_MACHINE_COMPILE_RTOL = 1.5
DEFAULT_RUNTIME_RTOL = 0.75
DEFAULT_STATIC_RTOL = 0.1
# Instructions per call varied by 0.014-0.072% between runs, quiet or loaded, for calls of
# millions of instructions, and by 1.9% for a 150 k one (benchmarks/instructions_clock.py,
# one CPU model): 2% passes them all and catches 1.05x more work.
DEFAULT_INSTRUCTIONS_RTOL = 0.02
DEFAULT_MIN_ROUNDS = 20
DEFAULT_MAX_TIME = 0.5
# Gate timings, show them without failing, or leave them out.
TimingMode = Literal["gate", "report", "off"]
TIMING_MODES: tuple[TimingMode, ...] = get_args(TimingMode)
# The formats of --jaxperf-export (report/export.py writes them; this module loads with
# pytest, export only with --jaxperf on).
EXPORT_FORMATS = ("github-action-benchmark", "bencher", "pytest-benchmark")
# Which seconds a timing gate reads: process CPU time (not inflated by other processes
# sharing the machine) or wall time; or, for compile time, instructions of each phase on
# valgrind's simulated CPU (instructions.py's PhaseClock): its seconds are then not gated.
Clock = Literal["cpu", "wall", "instructions"]
CLOCKS: tuple[Clock, ...] = get_args(Clock)
# The runtime gate may also count instructions per call on valgrind's simulated CPU
# (instructions.py): deterministic, so gated on any machine with a small tolerance.
RuntimeClock = Literal["cpu", "wall", "instructions"]
RUNTIME_CLOCKS: tuple[RuntimeClock, ...] = get_args(RuntimeClock)

# The values of each option kind that is a choice.
CHOICES = {"mode": TIMING_MODES, "clock": CLOCKS, "runtime_clock": RUNTIME_CLOCKS}


@dataclass(frozen=True)
class Option:
    """A command-line flag; its ini twin is named like `dest`."""

    dest: str
    flag: str
    kind: str  # bool | path | float
    default: Any
    help: str


OPTIONS: tuple[Option, ...] = (
    Option("jaxperf", "--jaxperf", "bool", False,
           "record JAX traces and compiles of marked tests, compare them with the baseline "
           "and fail regressions"),
    Option("jaxperf_save", "--jaxperf-save", "bool", False,
           "write the results of passed recorded tests into the baseline (others are kept)"),
    Option("jaxperf_baseline", "--jaxperf-baseline", "path", DEFAULT_BASELINE,
           f"baseline file (default: {DEFAULT_BASELINE} under rootdir)"),
    Option("jaxperf_json", "--jaxperf-json", "path", None,
           "write this run's full report to PATH (same format as the baseline)"),
    Option("jaxperf_all", "--jaxperf-all", "bool", False,
           "record every test, not only those marked jaxperf or using the jaxperf fixture"),
    Option("jaxperf_compile_rtol", "--jaxperf-compile-rtol", "float", DEFAULT_COMPILE_RTOL,
           "relative compile-time increase tolerated against the baseline "
           f"(default {DEFAULT_COMPILE_RTOL})"),
    Option("jaxperf_compile_floor", "--jaxperf-compile-floor", "float", DEFAULT_COMPILE_FLOOR,
           "compile-time increases below this many seconds never fail "
           f"(default {DEFAULT_COMPILE_FLOOR})"),
    Option("jaxperf_cross_machine_compile_rtol", "--jaxperf-cross-machine-compile-rtol",
           "float", DEFAULT_CROSS_MACHINE_COMPILE_RTOL,
           "against a baseline from another CPU model (scaled by the reference compiles), "
           "the wider of this and the compile rtol is tolerated, as a relative increase: "
           f"the default, rtol {DEFAULT_CROSS_MACHINE_COMPILE_RTOL:g}, allows up to "
           f"{1 + DEFAULT_CROSS_MACHINE_COMPILE_RTOL:g}x the scaled baseline"),
    Option("jaxperf_timing", "--jaxperf-timing", "mode", "gate",
           "steady-state runtime of jaxperf.benchmark: gate (measure, fail clear slowdowns), "
           "report (measure, never fail) or off (do not measure)"),
    Option("jaxperf_runtime_rtol", "--jaxperf-runtime-rtol", "float", DEFAULT_RUNTIME_RTOL,
           "relative runtime slowdown tolerated when it is also statistically clear "
           f"(default {DEFAULT_RUNTIME_RTOL})"),
    Option("jaxperf_static_rtol", "--jaxperf-static-rtol", "float", DEFAULT_STATIC_RTOL,
           "relative growth tolerated for program metrics: jaxpr equations, HLO ops, flops, "
           f"bytes (default {DEFAULT_STATIC_RTOL})"),
    Option("jaxperf_min_rounds", "--jaxperf-min-rounds", "int", DEFAULT_MIN_ROUNDS,
           f"timed rounds per benchmark at least (default {DEFAULT_MIN_ROUNDS})"),
    Option("jaxperf_markdown", "--jaxperf-markdown", "path", None,
           "write a markdown summary to PATH (e.g. $GITHUB_STEP_SUMMARY)"),
    Option("jaxperf_html", "--jaxperf-html", "path", None,
           "write a self-contained HTML report to PATH (its plots need pytest-jaxperf[plot])"),
    Option("jaxperf_history", "--jaxperf-history", "path", None,
           "append one line per run to this JSON Lines file; the HTML report plots it"),
    Option("jaxperf_max_time", "--jaxperf-max-time", "float", DEFAULT_MAX_TIME,
           "seconds of timed rounds per benchmark, once the minimum rounds are done "
           f"(default {DEFAULT_MAX_TIME})"),
    Option("jaxperf_compile_clock", "--jaxperf-compile-clock", "clock", "cpu",
           "compile time is gated on process CPU seconds (cpu, default: load on a shared "
           "machine barely moves them), on wall seconds (wall: a baseline keeps them only "
           "where saved with it), or (instructions) on the "
           "instructions of each trace, lowering and backend compile, counted under valgrind "
           "on any machine against the baseline's '-instructions' twin"),
    Option("jaxperf_runtime_clock", "--jaxperf-runtime-clock", "runtime_clock", "cpu",
           "on the CPU backend a runtime slowdown fails only when the CPU seconds per call "
           "grew too (cpu, default); wall gates on wall time alone; instructions re-runs "
           "pytest under valgrind and gates instructions per call on any machine, against "
           "the baseline's '-instructions' twin (.jaxperf/baseline-instructions.json)"),
    Option("jaxperf_instructions_rtol", "--jaxperf-instructions-rtol", "float",
           DEFAULT_INSTRUCTIONS_RTOL,
           "relative growth of instructions per call tolerated under the instructions clock "
           f"(default {DEFAULT_INSTRUCTIONS_RTOL})"),
    Option("jaxperf_export", "--jaxperf-export", "export", None,
           "also write this run's metrics for a benchmark service: FORMAT:PATH, FORMAT one of "
           f"{', '.join(EXPORT_FORMATS)} (as jaxperf export --format FORMAT)"),
    Option("jaxperf_no_reference_compile", "--jaxperf-no-reference-compile", "bool", False,
           "do not measure the machine's reference compile before the first test (a Python "
           "process of its own and 3-5 compiles, 2-5 s a session); compile time is then not "
           "compared with baseline entries from another CPU model"),
    Option("jaxperf_strict", "--jaxperf-strict", "codes", frozenset(),
           "fail a test where a metric was not gated for one of these reasons: a "
           "comma-separated list of not-gated codes (the summary names each note's code; "
           "docs: gating), or all"),
    Option("jaxperf_prune", "--jaxperf-prune", "bool", False,
           "with --jaxperf-save: remove the baseline entries of tests that did not run because "
           "they were renamed or deleted (their file was collected, or is gone)"),
    Option("jaxperf_allow_partial", "--jaxperf-allow-partial", "bool", False,
           "when the start-up self-check finds a JAX hook missing, warn and mark the affected "
           "metrics 'not measured' (never gated) instead of refusing to run"),
)  # fmt: skip


class ConfigError(ValueError):
    """A bad option, ini or marker value; the message names it and what it expects."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Tolerances:
    """How much each kind of metric may grow against the baseline before a test fails."""

    compile_rtol: float = DEFAULT_COMPILE_RTOL
    compile_floor: float = DEFAULT_COMPILE_FLOOR
    runtime_rtol: float = DEFAULT_RUNTIME_RTOL
    static_rtol: float = DEFAULT_STATIC_RTOL
    compile_clock: Clock = "cpu"
    runtime_clock: RuntimeClock = "cpu"
    instructions_rtol: float = DEFAULT_INSTRUCTIONS_RTOL
    cross_machine_compile_rtol: float = DEFAULT_CROSS_MACHINE_COMPILE_RTOL

    @property
    def under_valgrind(self) -> bool:
        """Whether either clock counts instructions (the run re-executes under valgrind)."""
        return "instructions" in (self.compile_clock, self.runtime_clock)


@dataclass(frozen=True)
class Settings:
    enabled: bool
    save: bool
    baseline: Path
    json: Path | None
    record_all: bool
    tolerances: Tolerances
    timing_mode: TimingMode
    min_rounds: int
    max_time: float
    markdown: Path | None
    html: Path | None
    history: Path | None
    allow_partial: bool = False
    # Measure the machine's reference compile before the first test (measure/reference.py).
    reference_compile: bool = True
    export: tuple[str, Path] | None = None  # (format, path)
    # Not-gated codes that fail a test (notgated.CODES).
    strict: frozenset[str] = frozenset()
    # A save removes the entries of tests that did not run (notrun.py).
    prune: bool = False
    # How the user named each option that was set: "--jaxperf-json" or "ini option
    # jaxperf_json", so that an error about its value names what to change.
    origins: Mapping[str, str] = field(default_factory=dict)

    def origin(self, dest: str) -> str:
        """The option `dest` as the user gave it (its flag when it was left at the default)."""
        return self.origins.get(dest) or next(o.flag for o in OPTIONS if o.dest == dest)

    @classmethod
    def resolve(
        cls,
        given: Mapping[str, Any],
        ini: Mapping[str, Any],
        invocation_dir: Path,
        ini_base: Path,
        rootdir: Path,
    ) -> Settings:
        """The settings from the command line's values (`given`, by dest; None when not set)
        over the ini file's (`ini`, by dest; "" when not set) over the defaults. Paths are
        relative to where pytest was started (command line), to the ini file's directory
        (ini) or to rootdir (defaults)."""
        values, origins = _option_values(given, ini, invocation_dir, ini_base, rootdir)
        baseline: Path = values["jaxperf_baseline"]
        if "instructions" in (values["jaxperf_runtime_clock"], values["jaxperf_compile_clock"]):
            baseline = instructions_baseline(baseline)
        return cls(
            enabled=values["jaxperf"],
            save=values["jaxperf_save"],
            baseline=baseline,
            json=values["jaxperf_json"],
            record_all=values["jaxperf_all"],
            tolerances=_tolerances(values),
            timing_mode=values["jaxperf_timing"],
            min_rounds=values["jaxperf_min_rounds"],
            max_time=values["jaxperf_max_time"],
            markdown=values["jaxperf_markdown"],
            html=values["jaxperf_html"],
            history=values["jaxperf_history"],
            allow_partial=values["jaxperf_allow_partial"],
            reference_compile=not values["jaxperf_no_reference_compile"],
            export=values["jaxperf_export"],
            strict=values["jaxperf_strict"],
            prune=values["jaxperf_prune"],
            origins=origins,
        )


def _option_values(
    given: Mapping[str, Any],
    ini: Mapping[str, Any],
    invocation_dir: Path,
    ini_base: Path,
    rootdir: Path,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each option's value by dest (command line over ini over default) and, for those set,
    how the user named it (`Settings.origins`)."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for opt in OPTIONS:
        dest, flag, kind, default = opt.dest, opt.flag, opt.kind, opt.default
        cli = given.get(dest)
        if cli is not None:
            values[dest] = convert(flag, kind, cli, invocation_dir)
            origins[dest] = flag
            continue
        value = ini.get(dest)
        if value not in (None, ""):
            origins[dest] = f"ini option {dest}"
            values[dest] = convert(origins[dest], kind, value, ini_base)
        elif kind == "path" and default is not None:
            values[dest] = rootdir / default
        else:
            values[dest] = default
    return values, origins


def _tolerances(values: Mapping[str, Any]) -> Tolerances:
    """The tolerances and clocks among the resolved option values."""
    return Tolerances(
        compile_rtol=values["jaxperf_compile_rtol"],
        compile_floor=values["jaxperf_compile_floor"],
        runtime_rtol=values["jaxperf_runtime_rtol"],
        static_rtol=values["jaxperf_static_rtol"],
        compile_clock=values["jaxperf_compile_clock"],
        runtime_clock=values["jaxperf_runtime_clock"],
        instructions_rtol=values["jaxperf_instructions_rtol"],
        cross_machine_compile_rtol=values["jaxperf_cross_machine_compile_rtol"],
    )


def instructions_baseline(baseline: Path) -> Path:
    """Where the instructions clock keeps its baseline: beside `baseline`, as its
    '-instructions' twin. Its runs measure under valgrind, so their seconds (compile time,
    the reference compile) are never mixed with those of native runs."""
    return baseline.with_name(f"{baseline.stem}-instructions{baseline.suffix}")


def convert(name: str, kind: str, value: Any, base: Path) -> Any:
    """An option's value (`name` as the user gave it) as its `kind` says; a relative path is
    taken from `base`."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    if kind in CHOICES:
        choices = CHOICES[kind]
        text = str(value).strip().lower()
        if text not in choices:
            raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
        return text
    if kind == "int":
        try:
            whole = int(str(value))
        except ValueError:
            whole = 0
        if whole < 1:
            raise ConfigError(f"{name}: expected a whole number >= 1, got {value!r}")
        return whole
    if kind == "float":
        number = parse_number(value, 0)
        if number is None:
            raise ConfigError(f"{name}: expected a number >= 0, got {value!r}")
        return number
    if kind == "codes":
        if isinstance(value, frozenset):
            return value
        from .notgated import BY_NAME

        codes = {part.strip() for part in str(value).split(",") if part.strip()}
        if "all" in codes:
            return frozenset(BY_NAME)
        for code in sorted(codes - set(BY_NAME)):
            raise ConfigError(
                f"{name}: unknown not-gated code {code!r}{did_you_mean(code, BY_NAME)}; "
                f"expected a comma-separated list of {', '.join(BY_NAME)}, or all"
            )
        return frozenset(codes)
    if kind == "export":
        fmt, colon, where = str(value).partition(":")
        if fmt not in EXPORT_FORMATS or not colon or not where.strip():
            raise ConfigError(
                f"{name}: expected FORMAT:PATH with FORMAT one of {', '.join(EXPORT_FORMATS)}, "
                f"got {value!r}"
            )
        return fmt, convert(name, "path", where.strip(), base)
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else base / path


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `known` to a misspelt `word`, else ""."""
    import difflib  # here: only a misspelt word needs it (jaxperf compare's import cost)

    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# -- marker ---------------------------------------------------------------------------------

Limit = float | Mapping[str, float]

MARKER_DOC = (
    "jaxperf(max_traces=None, max_compiles=None, max_compile_time=None, max_jaxpr_eqns=None, "
    "max_hlo_ops=None, max_xla_ops=None, max_flops=None, max_transcendentals=None, "
    "max_bytes_accessed=None, max_argument_bytes=None, max_output_bytes=None, "
    "max_temp_bytes=None, max_peak_bytes=None, compile_rtol=None, compile_floor=None, "
    "runtime_rtol=None, "
    "static_rtol=None, rounds=None, max_time=None, compile_clock=None, runtime_clock=None, "
    "instructions_rtol=None, cross_machine_compile_rtol=None): "
    "record this test's JAX traces and compiles; max_* limits are a number for the test "
    "total (max_jaxpr_eqns and max_hlo_ops: also for each benchmark; max_flops to "
    "max_peak_bytes: for each benchmark) or a dict {function_name or benchmark label: limit}"
)


@dataclass(frozen=True)
class MarkerLimits:
    """Keyword arguments of `@pytest.mark.jaxperf`; None means not set."""

    max_traces: Limit | None = None
    max_compiles: Limit | None = None
    max_compile_time: Limit | None = None
    compile_rtol: float | None = None
    compile_floor: float | None = None
    max_jaxpr_eqns: Limit | None = None
    max_hlo_ops: Limit | None = None
    # The other gated program sizes: optimized HLO ops of the functions' executables, and a
    # benchmark's program metrics (XLA's cost and memory analyses).
    max_xla_ops: Limit | None = None
    max_flops: Limit | None = None
    max_transcendentals: Limit | None = None
    max_bytes_accessed: Limit | None = None
    max_argument_bytes: Limit | None = None
    max_output_bytes: Limit | None = None
    max_temp_bytes: Limit | None = None
    max_peak_bytes: Limit | None = None
    runtime_rtol: float | None = None
    static_rtol: float | None = None
    rounds: int | None = None
    max_time: float | None = None
    compile_clock: Clock | None = None
    runtime_clock: RuntimeClock | None = None
    instructions_rtol: float | None = None
    cross_machine_compile_rtol: float | None = None

    @classmethod
    def from_marks(cls, nodeid: str, marks: Iterable[Mark]) -> MarkerLimits:
        """The merged arguments of a test's `jaxperf` marks, closest first (as pytest's
        `item.iter_markers` gives them: the closest wins); bad ones raise ConfigError."""
        kwargs: dict[str, Any] = {}
        for mark in reversed(list(marks)):
            if mark.args:
                raise ConfigError(
                    f"{nodeid}: @pytest.mark.jaxperf takes keyword arguments only, "
                    f"got positional {mark.args!r}"
                )
            for key, value in mark.kwargs.items():
                if key not in _MARKER_KEYS:
                    raise ConfigError(
                        f"{nodeid}: @pytest.mark.jaxperf got unknown argument {key!r}"
                        f"{did_you_mean(key, _MARKER_KEYS)}; expected one of "
                        f"{', '.join(_MARKER_KEYS)}"
                    )
                kwargs[key] = _check_marker_value(nodeid, key, value)
        return cls(**kwargs)

    def to_json(self) -> dict[str, Any]:
        """The keywords the marker set, as JSON values: saved with the test's record, so that
        `jaxperf compare` gates the test as the plugin did."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = dict(value) if isinstance(value, Mapping) else value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> MarkerLimits:
        """Keywords saved by `to_json`, checked as the marker's are (ConfigError naming
        `where` and the keyword)."""
        if not data:
            return NO_LIMITS
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in _MARKER_KEYS:
                raise ConfigError(
                    f"{where}: unknown @pytest.mark.jaxperf argument {key!r} (saved by a newer "
                    f"pytest-jaxperf?); expected one of {', '.join(_MARKER_KEYS)}"
                )
            kwargs[key] = _check_marker_value(where, key, value)
        return cls(**kwargs)

    def tolerances(self, defaults: Tolerances) -> Tolerances:
        """The defaults, overridden by this marker's tolerances where it sets them."""
        changed = {
            name: value for name in _TOLERANCE_KEYS if (value := getattr(self, name)) is not None
        }
        return dataclasses.replace(defaults, **changed) if changed else defaults


class Mark(Protocol):
    """What MarkerLimits reads of a pytest mark."""

    @property
    def args(self) -> tuple[Any, ...]: ...

    @property
    def kwargs(self) -> Mapping[str, Any]: ...


_MARKER_KEYS = tuple(f.name for f in dataclasses.fields(MarkerLimits))
_TOLERANCE_KEYS = tuple(f.name for f in dataclasses.fields(Tolerances))
NO_LIMITS = MarkerLimits()


def parse_number(text: Any, minimum: float) -> float | None:
    """`text` (an option's or ini value) as a finite number >= `minimum`; None when it is not
    one (nan, inf, a word)."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None
    return number if number >= minimum and math.isfinite(number) else None


def _number_ok(value: Any, integer: bool, minimum: float = 0) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if integer and not isinstance(value, int):
        return False
    return bool(value >= minimum) and value != float("inf")


# The marker's limits: a number for the test total or a dict {function or benchmark: limit}.
# The other keywords are one number each (rounds and max_time set how a benchmark is timed).
# A benchmark's program metrics take any number >= 0 (XLA counts flops and bytes as floats;
# `max_flops=1e6` reads well); counts of equations and ops are whole.
BENCHMARK_SIZE_LIMITS = (
    "max_flops", "max_transcendentals", "max_bytes_accessed", "max_argument_bytes",
    "max_output_bytes", "max_temp_bytes", "max_peak_bytes",
)  # fmt: skip
_LIMIT_KEYS = (
    "max_traces", "max_compiles", "max_compile_time", "max_jaxpr_eqns", "max_hlo_ops",
    "max_xla_ops", *BENCHMARK_SIZE_LIMITS,
)  # fmt: skip
_WHOLE_KEYS = ("max_traces", "max_compiles", "max_jaxpr_eqns", "max_hlo_ops", "max_xla_ops",
               "rounds")  # fmt: skip
# What each number-only keyword is, for its one-line error.
_NUMBER_MEANING = {
    "rounds": "timed rounds per benchmark at least",
    "max_time": "seconds of timed rounds per benchmark",
}


def _check_marker_value(nodeid: str, key: str, value: Any) -> Any:
    """`value` of the marker's keyword `key`, checked key by key where it is a dict; a bad
    one raises ConfigError in one line naming the test, the keyword and what it expects."""
    where = f"{nodeid}: @pytest.mark.jaxperf({key}=...)"
    if key in ("compile_clock", "runtime_clock"):
        choices = CLOCKS if key == "compile_clock" else RUNTIME_CLOCKS
        if value not in choices:
            raise ConfigError(
                f"{where} expects one of {', '.join(map(repr, choices))}, got {value!r}"
            )
        return value
    integer = key in _WHOLE_KEYS
    minimum = 1 if key == "rounds" else 0
    what = f"a whole number >= {minimum}" if integer else "a number >= 0"
    if key in _LIMIT_KEYS and isinstance(value, Mapping):
        if not value:
            raise ConfigError(
                f"{where}: the dict is empty, so it limits nothing; map function names to "
                f"{what} ({{'step': 1}}), give {what} for the test total, or leave it out"
            )
        for name, limit in value.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(
                    f"{where}: key {name!r} is not a function name or benchmark label; "
                    f"use a string such as 'step' or 'step at pkg/mod.py:12'"
                )
            if not _number_ok(limit, integer):
                raise ConfigError(f"{where}: the limit for {name!r} must be {what}, got {limit!r}")
        return dict(value)
    if not _number_ok(value, integer, minimum):
        if key in BENCHMARK_SIZE_LIMITS:
            form = f"{what} for each benchmark or a dict {{benchmark_label: limit}}"
        elif key in _LIMIT_KEYS:
            form = f"{what} for the test total or a dict {{function_name: limit}}"
        elif key in _NUMBER_MEANING:
            form = f"{what} ({_NUMBER_MEANING[key]}; one number for every benchmark of the test)"
        else:
            form = what
        raise ConfigError(f"{where} expects {form}, got {value!r}")
    return value
