"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import jax  # noqa: F401  (imported once here: pytester's in-process runs must not re-import it)
import jax.numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401  (same: numpy.fft cannot be loaded twice in one process)

# Same again: the recorder registers JAX listeners once per process, so its module must
# not be imported afresh by each in-process pytester run.
import pytest_jaxperf.measure.recorder  # noqa: F401
import pytest_jaxperf.session  # noqa: F401

try:  # same again: matplotlib's classes must not be imported twice in one process
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.patches  # noqa: F401
except ImportError:  # optional extra
    pass

pytest_plugins = ["pytester"]

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_module(name: str) -> Any:
    """benchmarks/NAME.py as a module (it imports benchmarks/_common.py beside it), kept in
    sys.modules under NAME: its dataclasses look their module up there."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `e2e` every test that runs a pytest session through pytester (the fixture closure
    holds it however it is reached: `jp`, `example`, ...). Tests that start processes without
    pytester carry the marker themselves."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)


# The inner sessions' ini: no cache dir, and no reference compile (a Python process and
# five compiles, 2-5 s, before each session's first test: the suite runs hundreds of
# sessions). The tests about the reference measure it (`reference_on`, `steady_reference`).
JP_INI = "[pytest]\naddopts = -p no:cacheprovider\njaxperf_no_reference_compile = true\n"
# The same, measuring the reference.
JP_INI_WITH_REFERENCE = "[pytest]\naddopts = -p no:cacheprovider\n"


@pytest.fixture
def jp(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose inner sessions see only the CPU, have no cache dir and measure no
    reference compile."""
    pytester.makeini(JP_INI)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    # Tests rewrite a module within the same second at the same size (f32[3] -> f32[4]):
    # a cached .pyc, judged by mtime and size, would run the old code.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return pytester


@pytest.fixture
def reference_on(jp: pytest.Pytester) -> pytest.Pytester:
    """`jp` whose inner sessions measure the reference compile, as they do by default."""
    jp.makeini(JP_INI_WITH_REFERENCE)
    return jp


@pytest.fixture
def steady_reference(monkeypatch: pytest.MonkeyPatch, reference_on: pytest.Pytester) -> None:
    """A reference compile of 0.2 s spread 5% on this machine (injected: on a loaded machine
    the real one may be too noisy to scale by, and then compile time is rightly left out),
    measured by `jp`'s inner sessions."""
    from pytest_jaxperf.measure import machine, reference

    env = machine.capture()
    here = tuple((k, str(env.get(k))) for k in reference._CACHE_KEYS)
    monkeypatch.setattr(reference, "_MEASURED", [])
    monkeypatch.setattr(
        reference, "MEASURE", lambda samples: reference.Reference(0.2, 0.05, samples, here)
    )


# One recorded test of one jitted function: the smallest suite an end-to-end test runs.
ONE_JITTED_TEST = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return x + 1

@pytest.mark.jaxperf
def test_f():
    f(jnp.ones(3))
"""


# A recorded test of a jitted lax.scan over 50 steps: `unroll` 1 (rolled) or True (fully
# unrolled: the same jaxpr, about 7x the StableHLO ops, about 15x the compile time), and
# the test's marker keywords (`marker`, text).
ROLLOUT_TEST = """
import jax
import jax.numpy as jnp
import pytest
from jax import lax

def step(c, x):
    return jnp.tanh(c * x + c), c.sum()

@jax.jit
def rollout(c, xs):
    return lax.scan(step, c, xs, unroll={unroll})

@pytest.mark.jaxperf({marker})
def test_rollout():
    rollout(jnp.ones(4), jnp.ones((50, 4)))
"""


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def lit(*patterns: str) -> list[str]:
    """fnmatch patterns with '[' taken literally (shapes like f32[3] are everywhere here)."""
    return [p.replace("[", "[[]") for p in patterns]


EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"
# The instructions clock's end-to-end tests need valgrind and the client requests.
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or importlib.util.find_spec("pytest_codspeed") is None,
    reason="needs valgrind on PATH and pytest-codspeed (pytest-jaxperf[instructions])",
)
REGRESSION_VARIABLE = "JAXPERF_EXAMPLE_REGRESSION"


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of example_project to run pytest in, with no regression switched on."""
    dest = pytester.path / "example_project"
    shutil.copytree(
        EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")
    )
    monkeypatch.chdir(dest)
    # The copy first; then whatever this suite was given, so that its subprocesses import the
    # same pytest_jaxperf as the suite (a checkout on PYTHONPATH, not an installed one).
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.delenv(REGRESSION_VARIABLE, raising=False)
    return dest
