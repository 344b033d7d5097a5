"""Where a grown program's equations come from, and the named JAX performance pattern behind a
finding with its fix (pure: records in, lines out; the patterns of JAX's guide "Debugging
slow JAX tracing and XLA compilation"). Retrace patterns (a function re-created per call,
varying shapes, weak types) are `causes`' and stay there."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from .causes import label_name
from .model import (
    MAX_SOURCE_LINES,
    SIZE_WORDS,
    SOURCE_BUILTIN_SUM,
    SOURCE_CONST_KIB,
    SOURCE_UNROLLED,
    STATIC_METRICS,
    BenchmarkEntry,
    Counts,
    FunctionRecord,
    RecordedTest,
)

# The source lines a size breach names.
WHERE_LINES = 3
# An unrolled loop: one line made at least this many equations, at least this many per
# distinct primitive among them (copies of the same few operations, not one big library call
# such as a special function, whose equations are mostly distinct), and at least half of
# the program's growth (of the program, where the baseline has no source lines).
UNROLLED_EQNS = 50
UNROLLED_COPIES = 10
# A compile storm: at least this many compiles of JAX's own helpers outside any jit (each
# eager operation on a new shape or dtype compiles one), more than the baseline's.
STORM_COMPILES = 10

# A closed-over constant: at least this many KiB of array constants embedded in one
# function's program (a 512 x 512 float32 array is 1 MiB).
LARGE_CONSTANT_KIB = 1024

# The breaches whose size is a program's jaxpr equations (model.SIZE_WORDS' words, and a
# benchmark's metric name).
EQUATION_METRICS = frozenset({"jaxpr equations", "traced jaxpr equations", "jaxpr_eqns"})
# The breaches of a program that grew (sizes, and the compile seconds they cost): what an
# unrolled loop or an embedded constant makes grow (model.SIZE_WORDS' words, COMPILE_TIME
# and a benchmark's program metrics).
PROGRAM_METRICS = EQUATION_METRICS | frozenset(
    {"StableHLO ops", "optimized HLO ops", "compile time", *STATIC_METRICS}
)
# How each named pattern starts: a breach's reason that is a diagnosis, not a growth line.
PATTERNS = (
    "unrolled Python loop at ", "builtin sum over an array at ", "unrolled fori_loop/scan at ",
    "closed-over constant", "eager op-by-op compile storm",
)  # fmt: skip
NO_USER_FRAME = "(no frame outside JAX)"
# How a test-level diagnosis starts among a verdict's `info` lines.
DIAGNOSIS = "diagnosis: "


def gated_eqns(counts: Counts) -> int | None:
    """The equations a function's size gate counts (`compare._sizes_vs_baseline`): its
    lowerings' where it lowered a program that was read, else its top-level traces'."""
    if counts.lowerings > 0 and counts.jaxpr_eqns is not None:
        return counts.jaxpr_eqns
    return counts.trace_eqns


@dataclasses.dataclass(frozen=True)
class Sources:
    """The top source lines of some functions' equations (`FunctionRecord.eqn_sources`,
    summed) and their equations in all; `complete`: every line a function kept is here
    (fewer than MAX_SOURCE_LINES each), so a line not here made none."""

    lines: Mapping[str, Sequence[int]]
    total: int
    complete: bool


def sources(functions: Sequence[FunctionRecord]) -> Sources | None:
    """The source lines of `functions` together; None where any function with equations has
    none recorded (an older file, a program not read): unknown, never zero."""
    lines: dict[str, list[int]] = {}
    total, complete = 0, True
    for fn in functions:
        eqns = gated_eqns(fn) or 0
        if eqns and not fn.eqn_sources:
            return None
        total += eqns
        complete = complete and len(fn.eqn_sources) < MAX_SOURCE_LINES
        for site, (count, kinds, patterns) in fn.eqn_sources.items():
            mine = lines.setdefault(site, [0, 0, 0])
            mine[0] += count
            mine[1] = max(mine[1], kinds)
            mine[2] = _merged(mine[2], patterns)
    return Sources(lines, total, complete)


def _merged(a: int, b: int) -> int:
    """Two lines' patterns as one: each flag of either, the larger constant."""
    flags = (a | b) % SOURCE_CONST_KIB
    return flags + SOURCE_CONST_KIB * max(a // SOURCE_CONST_KIB, b // SOURCE_CONST_KIB)


def is_diagnosis(reason: str) -> bool:
    """Whether a breach's reason names a pattern of this module (not a growth line)."""
    return reason.startswith(PATTERNS)


def _before(site: str, before: Sources | None) -> tuple[int | None, str]:
    """The baseline's equations of a line (None: unknown) and how a where-line says it
    (nothing where the other side has no lines: a committed baseline keeps none, see
    storage/resave.py; a run file does)."""
    if before is None:
        return None, ""
    if site in before.lines:
        count = before.lines[site][0]
        return count, f"was {count:,}"
    if before.complete:
        return 0, "was 0"
    # The least of the top lines kept (past them, lines kept for a pattern they show).
    counts = sorted((v[0] for v in before.lines.values()), reverse=True)[:MAX_SOURCE_LINES]
    least = min(counts, default=0)
    return None, f"was at most {least:,}"


def _site(site: str) -> str:
    return site or NO_USER_FRAME


def where_lines(now: Sources, before: Sources | None, against_baseline: bool) -> list[str]:
    """'mylib/kalman.py:24: 33,500 of 33,999 equations (99%; was 0)': the lines that made
    most of the new program's equations, with the baseline's of each where known."""
    top = sorted(now.lines.items(), key=lambda item: (-item[1][0], item[0]))[:WHERE_LINES]
    out = []
    for site, (count, _, _) in top:
        share = f"{count / now.total:.0%}" if now.total else "-"
        said = _before(site, before)[1] if against_baseline else ""
        was = f"; {said}" if said else ""
        out.append(f"{_site(site)}: {count:,} of {now.total:,} equations ({share}{was})")
    return out


def unrolled(now: Sources, before: Sources | None) -> str | None:
    """The unrolled Python loop (or builtin sum over an array) behind a grown program: the
    line that made most of its growth out of copies of a few operations."""
    growth = now.total - (before.total if before is not None else 0)
    best: tuple[int, str, Sequence[int]] | None = None
    for site, value in now.lines.items():
        count, kinds = value[0], value[1]
        was = _before(site, before)[0] if before is not None else None
        grew = count - (was or 0) if was is not None else count
        if best is None or grew > best[0]:
            best = (grew, site, value)
    if best is None or not best[1]:
        return None
    grew, site, (count, kinds, patterns) = best
    whole = growth if before is not None and growth > 0 else now.total
    if count < UNROLLED_EQNS or count < UNROLLED_COPIES * max(kinds, 1) or 2 * grew < whole:
        return None
    made = f"{count:,} of {now.total:,} equations"
    if patterns & SOURCE_BUILTIN_SUM:
        return (
            f"builtin sum over an array at {site} ({made}: Python's sum adds element by "
            "element); fix: jnp.sum(x) (or x.sum()), one equation at any size"
        )
    return (
        f"unrolled Python loop at {site} ({made}, copies of {kinds} operation(s)); fix: "
        "lax.scan or lax.fori_loop (one loop body in the program)"
    )


def compile_storm(record: RecordedTest, base: RecordedTest | None) -> str | None:
    """Many tiny compiles outside any jit: operations run eagerly, one program each. Named
    as a change only, against a baseline entry, where they more than doubled: how many of
    JAX's own helpers a test compiles follows what earlier tests of the process compiled
    (a first save of five optax test files found 10-34 in each of 10 of its tests)."""
    if base is None:
        return None
    now, before = record.eager.compiles, base.eager.compiles
    if now < STORM_COMPILES or now <= 2 * before:
        return None
    was = f" (baseline {before})"
    return (
        f"eager op-by-op compile storm: {now} compiles of JAX's own operations outside any "
        f"jit{was}; fix: jax.jit the function that runs them, so that they compile as one "
        "program"
    )


def explain_size(
    function: FunctionRecord | None,
    record: RecordedTest,
    base: RecordedTest | None,
    matched: Mapping[str, FunctionRecord],
    against_baseline: bool,
) -> tuple[list[str], list[str]]:
    """(where-lines, diagnoses) of a breach of jaxpr equations: of `function`, or of the
    whole test (`function` None: a total, or a benchmark's program) with every function's
    lines summed; against the baseline's lines where it has them."""
    if function is not None:
        now = sources([function])
        old = matched.get(function.key) if base is not None else None
        before = sources([old]) if old is not None else None
    else:
        now = sources(list(record.functions.values()))
        before = sources(list(base.functions.values())) if base is not None else None
    if now is None or not now.lines:
        return [], []
    if function is not None and base is not None and matched.get(function.key) is None:
        before = Sources({}, 0, True)  # new to the baseline: every line's equations are new
    found = unrolled(now, before)
    return where_lines(now, before, against_baseline), [found] if found else []


def unrolled_loops(now: Sources, before: Sources | None) -> list[str]:
    """Each `lax.fori_loop` or `lax.scan` with `unroll=` above 1 in the new program that
    the baseline's lines (where known) did not have: its jaxpr keeps one loop body, the
    lowered program a copy per unrolled step (StableHLO and HLO ops, compile time grow)."""
    out = []
    for site, (_, _, patterns) in sorted(now.lines.items()):
        if not site or not patterns & SOURCE_UNROLLED:
            continue
        if before is not None and before.lines.get(site, (0, 0, 0))[2] & SOURCE_UNROLLED:
            continue  # unrolled in the baseline too: not what changed
        out.append(
            f"unrolled fori_loop/scan at {site}: unroll= copies its body into the program per "
            "step; fix: drop unroll= (or a small factor)"
        )
    return out


def _constant_kib(now: Sources) -> tuple[int, str]:
    """KiB of the array constants a program closes over, and the line that uses most."""
    kib = {site: value[2] // SOURCE_CONST_KIB for site, value in now.lines.items()}
    site = min(kib, key=lambda k: (-kib[k], k), default="")
    return sum(kib.values()), site


def closed_over_constant(name: str, now: Sources, before: Sources | None) -> str | None:
    """A big array closed over by a jitted function: embedded in its program as a constant
    (compile time and program size grow with it, JAX's guide names it a trap). Named where
    at least LARGE_CONSTANT_KIB, more than the baseline's lines (where known) had."""
    kib, site = _constant_kib(now)
    if kib < LARGE_CONSTANT_KIB or (before is not None and _constant_kib(before)[0] >= kib):
        return None
    at = f" (used at {site})" if site else ""
    return (
        f"closed-over constant: {label_name(name)} embeds {kib / 1024:,.1f} MiB of arrays in "
        f"its program{at}; fix: pass the array as an argument of the jitted function"
    )


def explain_program(
    function: FunctionRecord | None,
    record: RecordedTest,
    base: RecordedTest | None,
    matched: Mapping[str, FunctionRecord],
    against_baseline: bool = True,
) -> list[str]:
    """The patterns that make a program grow without more jaxpr equations, or besides them:
    an unrolled `fori_loop`/`scan`, a closed-over constant; of `function`, or of each of the
    test's functions (`function` None: a total, a benchmark's program, compile seconds).
    Against the baseline, those its lines (where kept) did not have; against a limit, all:
    what makes the program big, changed or not."""
    found: list[str] = []
    if not against_baseline:
        base = None
    for fn in [function] if function is not None else list(record.functions.values()):
        now = sources([fn])
        if now is None or not now.lines:
            continue
        old = matched.get(fn.key) if base is not None else None
        if base is not None and old is None:
            before: Sources | None = Sources({}, 0, True)  # new to the baseline
        else:
            before = sources([old]) if old is not None else None
        found += unrolled_loops(now, before)
        constant = closed_over_constant(fn.name, now, before)
        found += [constant] if constant else []
    return found


def constant_kib(fn: FunctionRecord) -> int:
    """KiB of the array constants `fn`'s programs close over, as its kept lines say."""
    return sum(value[2] // SOURCE_CONST_KIB for value in fn.eqn_sources.values())


def constants_grew(
    record: RecordedTest, base: RecordedTest | None, matched: Mapping[str, FunctionRecord]
) -> list[str]:
    """The closed-over constants that grew past LARGE_CONSTANT_KIB against the baseline's
    lines, of functions whose lines both sides kept (a run file; a committed baseline keeps
    none): named even where no gate breached."""
    found = []
    for fn in record.functions.values():
        old = matched.get(fn.key) if base is not None else None
        now, before = sources([fn]), sources([old]) if old is not None else None
        if now is not None and before is not None and old is not None and old.eqn_sources:
            constant = closed_over_constant(fn.name, now, before)
            found += [constant] if constant else []
    return found


def runtime_cause(bench: BenchmarkEntry, old: BenchmarkEntry) -> str | None:
    """What the recorded program metrics say of a slower benchmark: the sizes that moved
    with it, or that none did (the same program ran slower, or the time went around it);
    None where either side has none."""
    if bench.metrics is None or old.metrics is None:
        return None
    moved, same = [], []
    for metric in STATIC_METRICS:
        now, before = bench.program_metric(metric), old.program_metric(metric)
        if now is None or before is None:
            continue
        if now == before:
            same.append(metric)
        else:
            moved.append(f"{SIZE_WORDS.get(metric, metric.replace('_', ' '))} "
                         f"{before:,.0f} -> {now:,.0f}")  # fmt: skip
    if moved:
        return (
            "the program changed with it: "
            + ", ".join(moved[:3])
            + (f" (+{len(moved) - 3} more)" if len(moved) > 3 else "")
        )
    if not same:
        return None
    return (
        f"same program (its {len(same)} size metrics unchanged): the time went into running "
        "it slower or into work around the call, not into a bigger program"
    )
