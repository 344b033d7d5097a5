"""What "not gated" means: every reason a metric is left out of a test's verdict has a stable
code (as hypothesis names its health checks), a meaning, and a way to make it fail
(`--jaxperf-strict=CODE,...`). Pure: imports neither jax nor pytest.

A reason is a `Note`: the line the reports show, which is a `str`, carrying its code. The
gate (`compare`, `confirmation`) makes them; `apply_strict` turns the chosen codes into
failures; the reports count them per code."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Code:
    """One not-gated code: its name, what it means, and what to do about it."""

    name: str
    meaning: str
    fix: str


# The codes, in the order the docs list them. Names are public (the strict option, the run
# file, the docs' gating page): never rename one, add a new one instead.
CODES: tuple[Code, ...] = (
    Code("environment_differs",
         "the baseline entry was measured under another jax/jaxlib, backend, x64 setting, "
         "CPU model (for a clock with no cross-machine scaling) or dispatch mode, so the "
         "metrics that depend on it are not compared",
         "re-save the baseline in the environment CI gates in (--jaxperf-save)"),
    Code("not_measured",
         "this run could not measure the metric (jax_disable_jit on, a self-check that "
         "found a JAX hook missing, a program that was not read, instructions not counted)",
         "run without JAX_DISABLE_JIT / with a supported JAX; see the note's reason"),
    Code("baseline_incomplete",
         "the baseline entry has no value for the metric (saved by an older pytest-jaxperf, "
         "or without the clock that measures it)",
         "re-save the baseline (--jaxperf-save), with the clock the note names"),
    Code("cache_hits",
         "programs came from the persistent compilation cache, whose loads take "
         "milliseconds: compile seconds are not comparable",
         "gate with the persistent cache off for the recorded tests"),
    Code("machine_load",
         "the runtime median grew but its fastest round (or its CPU time per call) did not: "
         "other processes, not the program",
         "gate runtime on a quiet runner, with jaxperf ab, or with the instructions clock"),
    Code("not_significant",
         "the runtime median grew past its tolerance but a rank test does not call it clear",
         "more rounds (--jaxperf-min-rounds), or the instructions clock"),
    Code("unconfirmed",
         "a compile-time breach that no program could be compiled again to confirm (a test "
         "that only traced, programs that could not be rebuilt, a run file without the "
         "plugin's re-measurement) and within the wider band such single samples are "
         "judged by (baseline x 3 (1 + compile_rtol) and 5 floors above it)",
         "none needed for gross growth (it fails); strict makes any such breach fail"),
    Code("unstable_count",
         "the compile clock's backend compile instructions moved past instructions_rtol, "
         "but they vary by up to 5% between runs of unchanged code (which fusions XLA's CPU "
         "compiler compiles in a fresh MLIR context is a race between its threads): shown, "
         "not failed",
         "none needed: trace and lowering instructions are gated; strict makes it fail"),
    # The run's own codes: they concern no test's verdict, and fail the run (exit 1).
    Code("no_baseline",
         "the run gated nothing against a baseline: the file is missing (not committed, "
         "git-ignored, another --jaxperf-baseline) or none of its entries is one of the "
         "run's recorded tests",
         "commit the baseline the gate reads (--jaxperf-save on the base branch)"),
    Code("not_run",
         "baseline entries whose tests did not run: the test was renamed or deleted in a "
         "collected file, or its file is gone; a renamed test that got slower passes as new",
         "re-save with --jaxperf-prune to remove them"),
)  # fmt: skip
BY_NAME = {c.name: c for c in CODES}


class Note(str):
    """A reason something was not gated: the line shown, with its `code` (a `CODES` name)."""

    code: str

    def __new__(cls, text: str, code: str) -> Note:
        if code not in BY_NAME:
            raise ValueError(f"unknown not-gated code {code!r}")
        note = super().__new__(cls, text)
        note.code = code
        return note

    def __reduce__(self) -> tuple[type[Note], tuple[str, str]]:
        return (Note, (str(self), self.code))


def code_of(note: str) -> str | None:
    """The code of a note (None for a plain string: an old run file's)."""
    return getattr(note, "code", None)


def strict_lines(notes: Iterable[str], strict: frozenset[str]) -> list[str]:
    """The notes whose code is in `strict`, each as the line that fails the test."""
    return [
        f"{note} [{code}: failed by --jaxperf-strict]"
        for note in notes
        if (code := code_of(note)) is not None and code in strict
    ]


def run_findings(
    *,
    saving: bool,
    prune: bool,
    baseline_path: str,
    recorded: Collection[str],
    baseline: Mapping[str, Any] | None,
    not_run: list[str],
) -> list[tuple[str, str]]:
    """(code, line) of what concerns a run, not one test: a gate whose baseline (`baseline`,
    its entries by test id; None: no file) has none of the tests `recorded`,
    and baseline tests that did not run (`not_run`, see notrun.py), unless the save prunes
    them. A save gates nothing, so it has no `no_baseline`."""
    from . import notrun

    found = []
    if not saving and recorded:
        n = len(recorded)
        if baseline is None:
            found.append(("no_baseline", (
                f"jaxperf: no baseline at {baseline_path}: the {n} recorded "
                "test(s) gated nothing against one (commit the file --jaxperf-save writes) "
                "[no_baseline]"
            )))  # fmt: skip
        elif not any(nodeid in baseline for nodeid in recorded):
            found.append(("no_baseline", (
                f"jaxperf: the baseline {baseline_path} has none of the {n} "
                f"recorded test(s) of this run ({len(baseline)} entries of other "
                "tests: another rootdir or --jaxperf-baseline?) [no_baseline]"
            )))  # fmt: skip
    if not_run and not (saving and prune):
        found.append(("not_run", notrun.line(not_run, baseline_path, saving)))
    return found
