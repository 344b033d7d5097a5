"""The counts the README and the quickstart state about the example project, checked against
the project itself: how many tests it has (as pytest collects them), how many are recorded
(its committed baseline's entries, one per recorded test) and the summary line of the run
with one trap switched on (one test fails, every other passes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"


@pytest.fixture(scope="module")
def collected() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=EXAMPLE, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.M)
    assert found, done.stdout
    return int(found.group(1))


@pytest.mark.e2e
@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.md"])
def test_the_trap_runs_counts_are_the_example_projects(page: str, collected: int) -> None:
    text = (ROOT / page).read_text()
    assert f"One test out of {collected} fails" in text
    lines = re.findall(r"^=+ (\d+) failed, (\d+) passed in .* =+$", text, re.M)
    assert lines and all((int(f), int(p)) == (1, collected - 1) for f, p in lines)


@pytest.mark.e2e
def test_the_quickstarts_counts_are_the_example_projects(collected: int) -> None:
    text = (ROOT / "docs/quickstart.md").read_text()
    recorded = len(json.loads((EXAMPLE / ".jaxperf/baseline.json").read_text())["tests"])
    assert f"runs the example project's {collected} tests; the {recorded} that use" in text
    table = text[text.index("### What you see") :]
    table = table[table.index("```\n") : table.index("\njaxperf: ")]
    rows = [line for line in table.splitlines() if line.startswith("tests/")]
    assert len(rows) == recorded
