"""Unit tests for pytest_jaxperf.report.html: one self-contained file with embedded plots."""

from __future__ import annotations

import base64
import binascii
import copy
import sys
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _jaxperf_data import NEW, REGRESSED, baseline_and_run, fn, outcomes_for, rec, with_runtime

from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.report.html import INSTALL_HINT, NO_PLOTS, render_html, require_matplotlib
from pytest_jaxperf.storage import history

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


class Document(HTMLParser):
    """Collects tags, attributes and text, and checks that elements nest properly."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.errors: list[str] = []
        self.decl: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.decl.append(decl)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:]}")
        else:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(text: str) -> Document:
    doc = Document()
    doc.feed(text)
    doc.close()
    assert doc.errors == []
    assert doc.open == []
    assert doc.decl == ["DOCTYPE html"]
    return doc


def check_self_contained(doc: Document) -> list[bytes]:
    """Every image is an embedded PNG; nothing points outside the file. Returns the PNGs."""
    pngs = []
    for tag, attrs in doc.tags:
        assert tag not in {"script", "link", "iframe", "object", "embed", "base", "frame"}
        for name, value in attrs.items():
            if tag == "img" and name == "src":
                prefix = "data:image/png;base64,"
                assert value.startswith(prefix)
                try:
                    data = base64.b64decode(value[len(prefix) :], validate=True)
                except binascii.Error as exc:  # pragma: no cover - the assertion's message
                    pytest.fail(f"image is not base64: {exc}")
                assert data.startswith(PNG_SIGNATURE)
                pngs.append(data)
                continue
            for ref in ("http://", "https://", "//"):
                assert ref not in value, (tag, name, value)
            assert not name.startswith("on")  # no inline scripts either
    text = "".join(doc.text)
    for ref in ("http://", "https://", "//", "url("):
        assert ref not in text
    return pngs


def history_of(run: RunRecord, runs: int) -> list[dict[str, Any]]:
    entries = []
    for i in range(runs):
        grown = copy.deepcopy(run)
        for record in grown.tests.values():
            for f in record.functions.values():
                f.compile_s *= 1 + 0.2 * i
            record.recompute_totals()
        when = datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(days=i)
        entry = history.make_entry(grown, when, cwd=Path("/"))
        entry["commit"], entry["dirty"] = f"{i:07x}abcdef", i == runs - 1
        entries.append(entry)
    return entries


@pytest.fixture
def matplotlib_installed() -> None:
    pytest.importorskip("matplotlib")


needs_matplotlib = pytest.mark.usefixtures("matplotlib_installed")


@needs_matplotlib
def test_report_is_self_contained_html_with_the_verdicts() -> None:
    base, run = baseline_and_run()
    outcomes = outcomes_for(base, run)
    doc = parse(render_html(run, base, outcomes))
    pngs = check_self_contained(doc)
    assert len(pngs) == 2  # compile-time split and runtime distributions
    text = "".join(doc.text)
    assert "jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated" in text
    assert "Regressions (1)" in text
    assert "traces of step (defined at pkg/sim.py:12): baseline 1 -> now 2 (+1, +100%)" in text
    assert "    cause: x: f32[3] -> f32[4]" in text
    assert "Improvements (1)" in text and "New tests (1)" in text and NEW in text
    headings = [t for t in doc.text if t in {"Compile time per test", "Steady-state runtime"}]
    assert headings == ["Compile time per test", "Steady-state runtime"]
    assert "Trends" not in text
    # The table has one row per recorded test.
    rows = [attrs for tag, attrs in doc.tags if tag == "tr"]
    assert len(rows) == 1 + len(run.tests) + len(run.environment)


@needs_matplotlib
def test_names_are_escaped() -> None:
    weird = 'tests/t.py::test_x[<b>&"</b>]'
    run = RunRecord(tests={weird: rec(fn("<lambda>", "m.py:1", traces=3))})
    base = RunRecord(tests={weird: rec(fn("<lambda>", "m.py:1"))})
    text = render_html(run, base, outcomes_for(base, run))
    doc = parse(text)
    assert "<b>" not in text and "&lt;lambda&gt;" in text
    assert weird in "".join(doc.text)


@needs_matplotlib
def test_without_samples_or_baseline_there_is_no_runtime_plot() -> None:
    _, run = baseline_and_run()
    for record in run.tests.values():
        record.benchmarks = {k: with_runtime(e, samples_s=()) for k, e in record.benchmarks.items()}
    doc = parse(render_html(run, None, outcomes_for(None, run)))
    assert len(check_self_contained(doc)) == 1
    text = "".join(doc.text)
    assert "Steady-state runtime" not in text
    assert "no baseline" in text and "jaxperf: 0 regressions, 0 improvements, 4 new" in text


@needs_matplotlib
def test_history_adds_a_trend_plot_from_two_runs_on() -> None:
    base, run = baseline_and_run()
    outcomes = outcomes_for(base, run)
    one = parse(render_html(run, base, outcomes, history_of(run, 1)))
    assert len(check_self_contained(one)) == 2
    many = parse(render_html(run, base, outcomes, history_of(run, 12)))
    assert len(check_self_contained(many)) == 3
    assert "Trends" in many.text
    assert "12 runs of the history." in "".join(many.text)


@needs_matplotlib
def test_charts_are_bounded_and_say_so() -> None:
    tests = {
        f"tests/test_many.py::test_{i:02}": rec(fn("f", "m.py:1", compile_s=0.01 * i))
        for i in range(45)
    }
    run = RunRecord(tests=tests)
    doc = parse(render_html(run, None, outcomes_for(None, run), history_of(run, 3)))
    text = "".join(doc.text)
    assert "Showing 30 of 45 tests (regressed first, then the longest compile times)." in text
    assert "Showing 10 of 45 tests in the per-test trend (largest changes)." in text
    # The chart's image is no taller than 30 bars need.
    png = check_self_contained(doc)[0]
    height = int.from_bytes(png[20:24], "big")
    assert height < 1200


@needs_matplotlib
def test_an_empty_run() -> None:
    doc = parse(render_html(RunRecord(), None, {}))
    assert check_self_contained(doc) == []
    assert "No test was recorded." in doc.text


@needs_matplotlib
def test_regressed_rows_are_marked() -> None:
    base, run = baseline_and_run()
    text = render_html(run, base, outcomes_for(base, run))
    assert f"<code>{REGRESSED}</code>" in text
    assert '<td class="bad">REGRESSED</td>' in text


def test_without_matplotlib_the_report_has_its_text_and_says_where_the_plots_went(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(ImportError) as info:
        require_matplotlib()  # for the callers that want the plots (benchmarks/scale.py)
    assert str(info.value) == INSTALL_HINT
    base, run = baseline_and_run()
    doc = parse(render_html(run, base, outcomes_for(base, run)))
    assert check_self_contained(doc) == []  # no image
    text = "".join(doc.text)
    assert "jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated" in text
    assert "Regressions (1)" in text and "All recorded tests" in text
    assert NO_PLOTS == "Plots need matplotlib: pip install 'pytest-jaxperf[plot]'."
    assert text.count(NO_PLOTS) == 1
    assert "Compile time per test" not in text
    # An empty run has no plots to miss.
    assert NO_PLOTS not in render_html(RunRecord(), None, {})


@needs_matplotlib
def test_with_matplotlib_no_line_about_plots() -> None:
    base, run = baseline_and_run()
    assert NO_PLOTS not in render_html(run, base, outcomes_for(base, run))


def test_the_charts_draw_what_the_gate_read() -> None:
    from _records import fn as record_fn
    from _records import rec as record

    from pytest_jaxperf.compare import RUNTIME, Breach, Verdict
    from pytest_jaxperf.report.html import _runtime_failed

    run = RunRecord(tests={"t::a": record(record_fn("f", "m.py:1", compile_s=0.5, cpu=0.2))})
    assert "(CPU seconds, the clock the gate read)" in render_html(run, None, {})
    assert "(wall seconds, the clock the gate read)" in render_html(run, None, {}, clock="wall")
    # Red only where the gate failed the benchmark's runtime: a slowdown left ungated for
    # load (a note) is drawn as any other.
    failed = Verdict(breaches=[Breach(RUNTIME, None, 1.0, 3.0, "baseline", benchmark="b")])
    assert _runtime_failed(failed, "b") and not _runtime_failed(failed, "other")
    loaded = Verdict(notes=["runtime of b median +200% but its fastest round only +2%: ..."])
    assert not _runtime_failed(loaded, "b") and not _runtime_failed(None, "b")
