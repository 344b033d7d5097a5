"""Installing the package beside a supported JAX leaves that JAX in place: pip, asked to
install the package's dependencies into the running environment, would change neither jax
nor jaxlib. `.ci/run` runs this file in its newest JAX's environment (with
`JAXPERF_EXPECT_JAX` naming that release), so the upper bound is checked against the newest
release the matrix tests, by pip itself; anywhere else it checks the JAX installed there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


def _declared_dependencies() -> list[str]:
    """pyproject.toml's `dependencies` (read without tomllib, which Python 3.10 lacks)."""
    (line,) = re.findall(r"^dependencies = (\[.*\])$", (ROOT / "pyproject.toml").read_text(), re.M)
    return list(json.loads(line))


def test_pip_would_leave_the_installed_jax_in_place(tmp_path: Path) -> None:
    import jax
    import jaxlib

    expected = os.environ.get("JAXPERF_EXPECT_JAX")
    if expected:  # .ci/run's newest environment: the JAX it installed is the one checked
        assert (jax.__version__, jaxlib.__version__) == (expected, expected)
    report = tmp_path / "report.json"
    # Offline: what pip would install comes only from what is installed here, so a bound
    # that excluded this JAX fails to resolve (no index to take another jax from) instead
    # of passing by downloading one.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet",
         "--report", str(report), *_declared_dependencies()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if "No module named pip" in done.stderr:
        pytest.skip(f"no pip in {sys.prefix}: nothing to ask what an install would change")
    assert done.returncode == 0, done.stdout + done.stderr
    would_install = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert "jax" not in would_install and "jaxlib" not in would_install, would_install
