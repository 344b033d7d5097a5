"""One --jaxperf run: records each recorded test, compares it when it passes, fails it when
it regressed, prints the summary and writes the files at the end."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from . import _xdist, compare, confirmation, hookcalls, reference_plan
from .config import ConfigError, MarkerLimits, Settings
from .environment import Compatible, EnvironmentChanges
from .model import (
    RecordedTest,
    Remeasured,
    RunRecord,
    recorded_test_from_json,
    recorded_test_to_json,
)
from .reference_plan import ReferencePlan
from .report import junit, terminal
from .storage import outputs, store
from .storage.entries import Entries

LIMITS_KEY = pytest.StashKey[MarkerLimits]()
# Set by a plugin whose runs are compared only with each other on one machine (`jaxperf ab`):
# no reference compile is measured for them (it is there to compare across machines).
NO_REFERENCE_KEY = pytest.StashKey[bool]()
T = TypeVar("T")
if TYPE_CHECKING:
    from .measure.reference import Reference


class JaxPerfSession:
    """State of one --jaxperf run: records and verdicts by nodeid."""

    def __init__(self, config: pytest.Config, settings: Settings, base: store.Loaded) -> None:
        self.config = config
        self.settings = settings
        # The baseline file as read at the start: a save re-reads it only if it changed since.
        self.baseline_read = base
        self.records: dict[str, RecordedTest] = {}
        self.verdicts: dict[str, compare.Verdict] = {}
        self.scopes: dict[str, Any] = {}
        self.environment: dict[str, Any] | None = None
        # Listener failures are swallowed (never raised into the user's code): shown instead.
        self.listener_errors: dict[str, int] = {}
        self.foreign_events: dict[str, int] = {}
        # Per test: the lines naming work not charged to it (a fixture's functions compiled
        # again after jax.clear_caches() in an earlier test).
        self.rewarmed: dict[str, list[str]] = {}
        # Metrics the start-up self-check found this JAX cannot be counted on for, and why.
        self.not_measured: dict[str, str] | None = None
        # Why CPU dispatch was left asynchronous for the CPU runtime clock, if it was.
        self.dispatch_left: str | None = None
        # One line per file that could not be written at the end, and notes about files
        # read (history lines skipped): shown in the summary.
        self.write_errors: list[str] = []
        self.notes: list[str] = []
        # The machine's reference compile, measured before the first test (None: not).
        self.reference: Reference | None = None
        # Whether it is left for the end of a save, and measured there only if the save
        # writes anything this run measured (reference_plan.py: "at_end").
        self.reference_deferred = False
        # What --jaxperf-save did to the baseline, one line for the summary.
        self.saved: str | None = None
        # The test ids collected (selected) and deselected, to name baseline entries that did
        # not run (notrun.py); None where not known (an xdist controller before its workers'
        # lists, or with a selection only the workers applied).
        self.collected: set[str] | None = None
        self.deselected: set[str] = set()

    @property
    def baseline(self) -> RunRecord | None:
        return self.baseline_read.run

    def configure_dispatch(self) -> None:
        """For the CPU and instructions runtime clocks: run CPU computations on the calling
        thread, so that a call's CPU seconds (or instructions) are its work, not a wait that
        grows with machine load."""
        s = self.settings
        if s.timing_mode == "off" or s.tolerances.runtime_clock == "wall":
            return
        from .measure import _jaxhooks

        self.dispatch_left = _jaxhooks.make_cpu_dispatch_sync()

    def _recorded(self, item: pytest.Item) -> bool:
        return LIMITS_KEY in item.stash

    @functools.cached_property
    def environment_changes(self) -> EnvironmentChanges:
        """What other plugins' `pytest_jaxperf_environment` hooks change of the block, asked
        once (at configure, see plugin.py) and applied wherever the block is read."""
        return hookcalls.environment_changes(self.config)

    def environment_json(self) -> dict[str, Any]:
        """The changes as handed to each pytest-xdist worker at its start."""
        return self.environment_changes.to_json()

    @functools.cached_property
    def compatible(self) -> Compatible | None:
        """Other plugins' `pytest_jaxperf_compatible` hooks as the gate's rule (one object
        per session: `Gating.between` reuses its work for equal arguments)."""
        return hookcalls.compatible_rule(self.config)

    def _this_machine(self) -> dict[str, Any]:
        """This machine (`machine.this_machine`) as the block names it, after the plugins' hooks:
        compared with the baseline's blocks, which were saved with them."""
        from .measure import machine

        keys = machine.this_machine()
        self.environment_changes.apply(keys)
        return keys

    def _env(self) -> dict[str, Any]:
        if self.environment is None:
            from .measure import machine

            env = machine.capture()
            env["xdist_workers"] = _xdist.worker_count(self.config)
            # Measured before the first test (pytest_runtestloop); kept only where the child
            # compiled on this run's machine, backend and versions (as captured: before the
            # plugins' hooks renamed any of them).
            reference = self.reference if self.reference and self.reference.matches(env) else None
            self.environment_changes.apply(env)
            self.environment = env
            if reference is not None:
                env.update(reference.fields())
            if self.not_measured:
                self.environment["not_measured"] = dict(self.not_measured)
            from .environment import HOOKED_KEY, TIMING_KEY

            if self.settings.timing_mode == "off":
                env[TIMING_KEY] = "off"
            if hooks := hookcalls.compatible_hooks(self.config):
                env[HOOKED_KEY] = hooks
        return self.environment

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first test: the reference compile, in a child process of its own, so
        that no test's code, fixture or thread runs beside it; where the plan says so
        (reference_plan.py) and a test is recorded. A save alone into a baseline of this
        machine model leaves it for its end (`_save`)."""
        from .measure import reference

        when = self.reference_plan.when
        if (
            session.config.option.collectonly
            or when == "never"
            or not any(self._recorded(item) for item in session.items)
        ):
            reference.discard()
            return
        if when == "at_end":
            self.reference_deferred = True
            return
        self._measure_reference()

    def _measure_reference(self) -> None:
        """The reference compile, checked against the values known for this machine."""
        from .measure import reference

        cache = getattr(self.config, "cache", None)
        self.reference = reference.for_session(cache, self.reference_plan.known)

    @functools.cached_property
    def reference_plan(self) -> ReferencePlan:
        """When this run measures the reference compile (reference_plan.py): not on
        pytest-xdist workers (their timings are never gated), nor under valgrind (the
        instructions clock: a compile takes ~20x as long there, and its seconds are compared
        on the baseline's CPU model only), nor for `jaxperf ab` (NO_REFERENCE_KEY: its runs
        compare on one machine), nor where the user said not to."""
        from .measure import instructions

        s = self.settings
        return reference_plan.plan(
            switched_off=(
                not s.reference_compile
                or self.config.stash.get(NO_REFERENCE_KEY, False)
                or _xdist.is_worker(self.config)
                or bool(instructions.under_valgrind())
            ),
            save=s.save,
            writes_report=s.json is not None or s.history is not None,
            baseline_environments=self._baseline_environments(),
            this_machine=self._this_machine(),
        )

    def prestart_reference(self) -> None:
        """At start-up, where this session will likely measure the reference compile: its
        child process starts now, so that its JAX import overlaps the collection."""
        from .measure import reference

        if not self.config.option.collectonly and self.reference_plan.when == "now":
            reference.prestart()

    def _baseline_environments(self) -> list[Mapping[str, Any]]:
        """The baseline's environment blocks (its own and its entries'), each once."""
        if self.baseline is None:
            return []
        tests = self.baseline.tests
        envs = [self.baseline.environment]
        # A big baseline read lazily says which entries may have one, unread.
        nodeids = tests.may_have_environment() if isinstance(tests, Entries) else tests
        try:
            envs += [env for nodeid in nodeids if (env := tests[nodeid].environment)]
        except store.BaselineError as exc:
            raise pytest.UsageError(f"pytest-jaxperf: {exc}") from None
        return list({id(env): env for env in envs}.values())

    def _self_check(self) -> None:
        """Once, before the first recorded test body: refuse (exit 4) rather than report
        counts of 0 from a JAX whose hooks are not the ones this plugin reads, and keep
        traces and compiles out of the verdicts where the user switched jit off."""
        if self.not_measured is not None:
            return
        from .measure import selfcheck

        found = selfcheck.run(self.config.rootpath)
        self.not_measured = dict(found.failed)
        if found.line is not None:
            if not self.settings.allow_partial:
                pytest.exit(found.line + "; --jaxperf-allow-partial runs anyway", returncode=4)
            self._warn(
                f"{found.line}; these metrics are reported as not measured and not gated: "
                + ", ".join(sorted(found.failed))
            )
        if found.jit_off is not None:
            for metric in ("traces", "compiles"):
                self.not_measured.setdefault(metric, found.jit_off)
            self._warn(
                f"pytest-jaxperf: {found.jit_off}; traces and compiles are not measured or gated"
            )

    def _warn(self, line: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(line, yellow=True)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        s = self.settings
        base = (
            f"{s.baseline} ({len(self.baseline.tests)} tests)"
            if self.baseline
            else f"{s.baseline} (none yet)"
        )
        mode = "saving" if s.save else "gating"
        lines = [
            f"jaxperf: {mode}; baseline {base}; compile rtol {s.tolerances.compile_rtol:g}, "
            f"floor {s.tolerances.compile_floor:g} s"
        ]
        if s.tolerances.runtime_clock == "instructions":
            from .measure import instructions

            lines.append(
                f"jaxperf: instructions clock: under {instructions.under_valgrind()}, "
                f"simulated ISA {instructions.ISA}; instructions rtol "
                f"{s.tolerances.instructions_rtol:g}"
            )
        if self.dispatch_left is not None:
            from .measure import _jaxhooks

            if _jaxhooks.cpu_dispatch() == "async":
                lines.append(
                    "jaxperf: CPU dispatch left asynchronous "
                    f"({self.dispatch_left}): on the CPU backend, runtime CPU seconds include "
                    "the caller's wait and grow with machine load"
                )
        return lines

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marked = item.get_closest_marker("jaxperf") is not None
            uses_fixture = "jaxperf" in getattr(item, "fixturenames", ())
            if marked or uses_fixture or self.settings.record_all:
                try:
                    marks = item.iter_markers("jaxperf")
                    item.stash[LIMITS_KEY] = MarkerLimits.from_marks(item.nodeid, marks)
                except ConfigError as exc:
                    raise pytest.UsageError(str(exc)) from None

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.update(item.nodeid for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = {item.nodeid for item in session.items}

    def worker_collected(self, ids: list[str]) -> None:
        """A pytest-xdist worker's collection: its selected ids (it deselects on its own, so
        with -k, -m or --deselect the controller cannot tell deselected from renamed)."""
        opt = self.config.option
        if (
            getattr(opt, "keyword", "")
            or getattr(opt, "markexpr", "")
            or getattr(opt, "deselect", None)
        ):
            return
        self.collected = (self.collected or set()) | set(ids)

    @functools.cached_property
    def not_run(self) -> list[str]:
        """The baseline's tests this run did not run, renamed or deleted (see notrun.py);
        asked once the tests have run (by the save, the exit status and the summary)."""
        if self.baseline is None or self.collected is None:
            return []
        from . import notrun

        root = self.config.rootpath
        return notrun.not_run(
            self.baseline.tests, self.collected, self.deselected, lambda p: (root / p).exists()
        )

    @functools.cached_property
    def run_findings(self) -> list[tuple[str, str]]:
        """(code, line) of what concerns the run, not a test (`notgated.run_findings`); asked
        by the exit status and the summary."""
        from . import notgated

        s = self.settings
        return notgated.run_findings(
            saving=s.save,
            prune=s.prune,
            baseline_path=str(s.baseline),
            recorded=self.records,
            baseline=self.baseline.tests if self.baseline is not None else None,
            not_run=self.not_run,
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # Before any fixture of a recorded test: forget what earlier tests compiled, so that
        # its fixtures warm up afresh whatever ran before (see pytest_fixture_setup).
        from .measure.recorder import RECORDER

        RECORDER.install()
        if self._recorded(item):
            RECORDER.isolate()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Generator[None, Any, Any]:
        from .measure.recorder import RECORDER

        with RECORDER.fixture_setup(fixturedef):
            return (yield)

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        from .measure.recorder import RECORDER

        RECORDER.release(fixturedef)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        if not self._recorded(item):
            return (yield)
        from .measure.recorder import RECORDER

        self._self_check()
        RECORDER.isolate()
        with RECORDER.scope(self.config.rootpath) as scope:
            self.scopes[item.nodeid] = scope
            try:
                return (yield)
            finally:
                del self.scopes[item.nodeid]
                self.records[item.nodeid] = scope.snapshot()
                self._counted_lines(item.nodeid, self.records[item.nodeid])
                # Saved in the report: `jaxperf compare` gates the test with them too.
                self.records[item.nodeid].marker = item.stash[LIMITS_KEY].to_json()
                if scope.listener_errors:
                    self.listener_errors[item.nodeid] = scope.listener_errors
                if scope.foreign_events:
                    self.foreign_events[item.nodeid] = scope.foreign_events
                if scope.rewarmed:
                    self.rewarmed[item.nodeid] = scope.rewarm_lines()

    def _counted_lines(self, nodeid: str, record: RecordedTest) -> None:
        """The compile clock's progress: one line per counted function, past pytest's
        capture (a compile under valgrind takes tens of seconds)."""
        lines = terminal.counted_lines(nodeid, record)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if not lines or reporter is None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            for line in lines:
                reporter.write_line(line)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        rep = yield
        record = self.records.get(item.nodeid)
        if call.when != "call" or record is None:
            return rep
        record.outcome = rep.outcome
        if not rep.passed:
            return rep
        env = self._env()
        try:
            base = self.baseline.tests.get(item.nodeid) if self.baseline else None
            measured_in = self.baseline.environment_of(item.nodeid) if self.baseline else env
        except store.BaselineError as exc:
            # An entry of a big baseline, read only now (see storage/entries.py).
            record.outcome = rep.outcome = "failed"
            rep.longrepr = f"pytest-jaxperf: {exc}"
            return rep
        gating = compare.Gating.between(
            measured_in,
            env,
            self.settings.tolerances,
            timing_mode=self.settings.timing_mode,
            gate_baseline=not self.settings.save,
            compatible=self.compatible,
        )
        verdict = confirmation.verdict_of(
            record, base, item.stash[LIMITS_KEY], gating, self._remeasurer(record),
            self.settings.strict,
        )  # fmt: skip
        self.notes += [
            f"{item.nodeid}: {line}" for line in confirmation.unconfirmed(verdict)
        ]  # fmt: skip
        self.verdicts[item.nodeid] = verdict
        from .measure.recorder import RECORDER

        section = terminal.detail_section(record, verdict) + terminal.recording_notes(
            self.listener_errors.get(item.nodeid, 0),
            self.foreign_events.get(item.nodeid, 0),
            self.rewarmed.get(item.nodeid, ()),
            RECORDER.sources(),
        )
        rep.sections.append(("jaxperf", section))
        if verdict.failed:
            # The test itself passed: "regressed" keeps it apart from a real failure.
            record.outcome, rep.outcome = "regressed", "failed"
            rep.longrepr = terminal.failure_text(item.nodeid, verdict, str(self.settings.baseline))
        # JUnit XML reads properties off the teardown report, which copies the item's.
        item.user_properties += junit.properties(record, verdict)
        return rep

    def _remeasurer(
        self, record: RecordedTest
    ) -> Callable[[Callable[[Remeasured], bool]], Remeasured]:
        """How a compile-time breach of `record`'s test is confirmed: its programs lowered
        and compiled again (see `confirmation`); what that measured is written into the run
        file with the record, so that `jaxperf compare` judges the breach with it too."""

        def remeasure(holds: Callable[[Remeasured], bool]) -> Remeasured:
            from .measure import recompile

            measured = recompile.remeasure(self.config.rootpath, confirmation.REPEATS, holds)
            record.confirmation = measured
            return measured

        return remeasure

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        if not self.records:
            # Not after a usage error (a bad marker argument): its own line says what is wrong.
            if not self.config.option.collectonly and exitstatus != pytest.ExitCode.USAGE_ERROR:
                terminalreporter.write_line(nothing_recorded(self.settings), yellow=True)
            return
        terminalreporter.write_sep("=", "jaxperf")
        end = terminal.RunEnd(
            self.saved, self.run_findings, self.settings.strict, self.notes, self.write_errors
        )
        for line, markup in terminal.session_summary(
            self.records,
            self.verdicts,
            self.baseline,
            self.settings.tolerances,
            self._env(),
            end,
        ):
            terminalreporter.write_line(line, **markup)

    # -- pytest-xdist: a worker's records and verdicts, as plain JSON values ---------------
    def worker_payload(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "tests": {k: recorded_test_to_json(r) for k, r in self.records.items()},
            "verdicts": {k: o.to_json() for k, o in self.verdicts.items()},
        }

    def add_worker_results(self, data: dict[str, Any]) -> None:
        if self.environment is None and data.get("environment"):
            self.environment = data["environment"]
        for nodeid, rec in data["tests"].items():
            self.records[nodeid] = recorded_test_from_json(rec, nodeid)
        for nodeid, out in data["verdicts"].items():
            self.verdicts[nodeid] = compare.Verdict.from_json(out)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from .measure import reference

        reference.discard()  # a child started for a session that never asked it

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if _xdist.is_worker(self.config):
            _xdist.send(self.config, self)
            return
        if not self.records:
            return
        try:
            self._finish(session)
        except KeyboardInterrupt:
            # Ctrl-C while the files are written (or the save's reference check waits for
            # its child): one line, not pytest's traceback of the plugin's frames. Each file
            # is written whole or not at all.
            self.write_errors.append(
                "interrupted while writing its files: each is as it was or as written whole "
                "(none is left half-written)"
            )
            session.exitstatus = pytest.ExitCode.INTERRUPTED

    def _finish(self, session: pytest.Session) -> None:
        """The files of the run: the baseline, then each output; the exit status of a run
        whose files could not all be written, or that --jaxperf-strict fails."""
        s = self.settings
        run = RunRecord(environment=self._env(), tests=dict(self.records))
        # The baseline first; each file on its own, so that one that cannot be written is
        # reported and the others are still written.
        if s.save and not any(r.outcome == "passed" for r in run.tests.values()):
            self.notes.append(
                f"--jaxperf-save wrote nothing to {s.baseline}: none of the "
                f"{len(run.tests)} recorded test(s) passed (only passed tests are saved)"
            )
        elif s.save:
            self._save(run)
        if (json_path := s.json) is not None:
            self._write_file("jaxperf_json", json_path, lambda: store.save(json_path, run))
        if (markdown := s.markdown) is not None:
            self._write_file("jaxperf_markdown", markdown, lambda: self._markdown(markdown, run))
        runs = None
        if (history := s.history) is not None:
            runs = self._write_file("jaxperf_history", history, lambda: self._history(history, run))
        if (html_path := s.html) is not None:
            from .report.html import render_html

            html = render_html(
                run, self.baseline, self.verdicts, runs, self.settings.tolerances.compile_clock
            )
            self._write_file("jaxperf_html", html_path, lambda: outputs.write_text(html_path, html))
        if (exported := s.export) is not None:
            fmt, path = exported
            self._write_file("jaxperf_export", path, lambda: self._export(fmt, path, run))
        if self.write_errors and session.exitstatus == pytest.ExitCode.OK:
            # Exit 4, as for a path found wrong at start-up: what was asked for is missing.
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        strict = {code for code, _ in self.run_findings} & self.settings.strict
        if strict and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _save(self, run: RunRecord) -> None:
        """--jaxperf-save: this run's passed tests into the baseline, keeping what the run did
        not measure (storage/resave.py), the reference checked first where it was deferred
        (baseline_save.py); the summary says what changed."""
        from . import baseline_save
        from .storage import resave

        s, known = self.settings, self.baseline_read
        how = resave.Resave(
            resave.Measured.of(run.environment, s.timing_mode, s.tolerances.runtime_clock),
            s.tolerances,
            prune=frozenset(self.not_run) if s.prune else frozenset(),
        )
        assumed = None
        if self.reference_deferred:
            self.reference_deferred = False
            assumed = self.reference_plan.stored
        prepared = baseline_save.with_reference(
            run, known.run, how, assumed, lambda: self._checked_reference(run.environment)
        )
        saved = self._write_file(
            "jaxperf_baseline",
            s.baseline,
            lambda: baseline_save.save(s.baseline, prepared, how, known),
        )
        if saved is not None:
            path = s.baseline
            with contextlib.suppress(ValueError):  # outside the rootdir: shown whole
                path = path.relative_to(self.config.rootpath)
            self.saved = baseline_save.summary_line(how, str(path), known.run, saved)

    def _checked_reference(self, environment: Mapping[str, Any]) -> dict[str, Any]:
        """The reference compile measured now: its fields where it holds for `environment`."""
        self._measure_reference()
        if self.reference is not None and self.reference.matches(environment):
            return self.reference.fields()
        return {}

    def _write_file(self, dest: str, path: Path, write: Callable[[], T]) -> T | None:
        """write(), or None with one line about the failure kept for the summary."""
        try:
            return write()
        except (OSError, outputs.OutputError, store.BaselineError) as exc:
            # An OSError's own text may name a temporary file; its reason is what helps.
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            option = self.settings.origin(dest)
            self.write_errors.append(f"{option} {path} not written: {reason}")
            return None

    def _markdown(self, path: Path, run: RunRecord) -> None:
        from .report.markdown import render_markdown, shown_path

        # Relative to the rootdir: in CI the absolute path is the runner's checkout
        # (/home/runner/work/...), which says nothing to the reader of a step summary.
        shown = shown_path(self.settings.baseline, self.config.rootpath)
        text = render_markdown(run, self.verdicts, shown, baseline=self.baseline)
        outputs.write_text(path, text, append=outputs.is_step_summary(path))

    def _export(self, fmt: str, path: Path, run: RunRecord) -> None:
        from .report import export
        from .storage import history

        commit = history.git_state(self.config.rootpath)
        outputs.write_text(path, export.dumps(export.document(fmt, run, commit)))

    def _history(self, path: Path, run: RunRecord) -> list[dict[str, Any]] | None:
        from .storage import history

        entry = history.make_entry(run, cwd=self.config.rootpath)
        try:
            read = history.append_and_read(path, entry, last=HISTORY_IN_HTML)
        except history.HistoryError as exc:  # only reading raises it: the line is there
            self.notes.append(f"{exc}; this run's line was added, the history not read")
            return None
        note = read.note(path)
        if note is not None:
            self.notes.append(note)
        return read.entries


def nothing_recorded(settings: Settings) -> str:
    """The one line of a --jaxperf run that recorded no test: a suite without markers is
    otherwise silently gated on nothing."""
    saved = f", so --jaxperf-save wrote nothing to {settings.baseline}" if settings.save else ""
    return (
        f"jaxperf: no test was recorded{saved}; record a test with @pytest.mark.jaxperf, by "
        "requesting the jaxperf fixture, or record every test with --jaxperf-all"
    )


# Runs of history plotted in the HTML report; loading all of a long history costs seconds.
HISTORY_IN_HTML = 50
