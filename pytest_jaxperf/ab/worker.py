"""The pytest plugin that `jaxperf ab` loads into each of its runs (`-p pytest_jaxperf.ab.worker`):
it checks that the code under test was imported from the run's own tree, and writes what it
found where the command reads it.

A base run that imports the head tree's package (an editable install of the checkout, a
PYTHONPATH, a package outside `--path`) measures head against head and reports "no change";
so this is checked in every run, not assumed. Two rules, checked once the tests are collected
(the run stops there at the first problem) and again at the end of the session (imports made
by the tests themselves):
- each package found directly in the tree's `--path` directories that was imported must come
  from this tree (a copy in site-packages or in the other tree is a problem), and at the end
  at least one of them must have been imported;
- no module may come from the other tree (the installed environment excepted: a virtualenv
  kept inside the checkout is not code under test).

It also switches off every output a run could write into the user's tree (`FORCED_OFF`): the
ini file's are switched off with `-o` on the command line, and flags from addopts or
PYTEST_ADDOPTS here.

Without the environment variable CHECK_ENV the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ..session import NO_REFERENCE_KEY
from .imports import CHECK_ENV, EXIT_WRONG_IMPORT, Spec, problems


def _check(final: bool) -> None:
    spec_file = os.environ.get(CHECK_ENV)
    if not spec_file:
        return
    spec = Spec.load(Path(spec_file))
    found_problems, found = problems(spec, dict(sys.modules), final)
    Path(spec.out).write_text(
        json.dumps({"problems": found_problems, "imported": found, "final": final}),
        encoding="utf-8",
    )
    if found_problems and not final:
        pytest.exit(f"jaxperf ab: {found_problems[0]}", returncode=EXIT_WRONG_IMPORT)


# Outputs a run must never write into the user's tree, whatever the ini file, addopts or
# PYTEST_ADDOPTS say: flags there come before `jaxperf ab`'s `-o` on the command line and
# would win over it (the report, baseline and timing flags are given last, and win).
FORCED_OFF = ("jaxperf_save", "jaxperf_history", "jaxperf_markdown", "jaxperf_html",
              "jaxperf_export")  # fmt: skip


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before pytest-jaxperf's own pytest_configure reads the options.
    if os.environ.get(CHECK_ENV):
        for dest in FORCED_OFF:
            setattr(config.option, dest, None)
        # Both trees run on this machine: the reference compile (~0.7 s a run) is not needed.
        config.stash[NO_REFERENCE_KEY] = True


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _check(final=False)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _check(final=True)
