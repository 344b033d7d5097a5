"""End to end: with --jaxperf on, other people's suites behave exactly as without it."""

from __future__ import annotations

import pytest
from conftest import lit, read_json

pytestmark = pytest.mark.jax_internals

ON = ("--jaxperf", "--jaxperf-all")


def test_suite_counting_its_own_traces(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp

traces = []

@jax.jit
def f(x):
    traces.append(x.shape)
    return x * 2

def test_counts():
    before = len(traces)
    f(jnp.ones(3)); f(jnp.ones(3)); f(jnp.ones(4))
    assert len(traces) - before == 2
"""
    )
    jp.runpytest(*ON).assert_outcomes(passed=1)
    jp.runpytest().assert_outcomes(passed=1)


def test_jax_helpers_stay_traced_across_tests(jp: pytest.Pytester) -> None:
    # Isolation forgets the user's functions only: JAX's own jitted helpers (jnp.allclose,
    # random.uniform) used by an earlier test are not traced again, which on equinox's suite
    # was most of the plugin's overhead.
    jp.makepyfile(
        """
import collections
import jax
import jax.numpy as jnp

events = collections.Counter()
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: events.update([event.rsplit("/", 1)[-1]])
)

def work():
    x = jnp.ones(3)
    assert jnp.allclose(x, x)
    jax.random.uniform(jax.random.key(0), (3,))
    jax.jit(lambda y: y + 1)(x)  # a user function: traced in every test

def test_1():
    work()

def test_2():
    before = events["jaxpr_trace_duration"]
    work()
    assert events["jaxpr_trace_duration"] - before == 1
"""
    )
    jp.runpytest(*ON).assert_outcomes(passed=2)
    jp.runpytest().assert_outcomes(passed=2)


def test_jax_helpers_stay_dispatched_across_tests(jp: pytest.Pytester) -> None:
    # Isolation empties the C++ dispatch cache of the user's jitted functions only: JAX's
    # helpers keep theirs (emptied, each took JAX's Python path once more in every test),
    # while the user's module-level, local and attribute-held functions still trace anew.
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp

traces = []

@jax.jit
def f(x):
    traces.append("f")
    return x * 2

class Model:
    def __init__(self):
        self._step = jax.jit(self.step)
    def step(self, x):
        traces.append("step")
        return x + 1

def work():
    x = jnp.ones(3)
    jnp.sin(x)
    f(x)
    g = jax.jit(lambda y: y - 1)
    g(x)
    model = MODEL
    model._step(x)

MODEL = Model()

def test_1():
    work()

def test_2():
    assert jnp.sin._cache_size() >= 1
    before = len(traces)
    work()
    assert traces[before:] == ["f", "step"]
"""
    )
    jp.runpytest(*ON).assert_outcomes(passed=2)


def test_no_recompile_check_with_log_compiles(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        """
import logging
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2

class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []
    def emit(self, record):
        self.messages.append(record.getMessage())

def test_no_recompile():
    x = jnp.ones(3)
    f(x)
    handler = Collect()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            f(x); f(x)
        assert handler.messages == []
        with jax.log_compiles():
            f(jnp.ones(5))
        assert any("Compiling" in m or "Finished tracing" in m for m in handler.messages)
        assert not any("TRACING CACHE MISS" in m for m in handler.messages)
    finally:
        logger.removeHandler(handler)
"""
    )
    jp.runpytest(*ON).assert_outcomes(passed=1)


def test_user_enabled_explanations_still_reach_the_user(jp: pytest.Pytester) -> None:
    jp.makeconftest(
        """
import jax

jax.config.update("jax_explain_cache_misses", True)
"""
    )
    jp.makepyfile(
        """
import logging
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2

def test_explain(caplog):
    with caplog.at_level(logging.WARNING):
        f(jnp.ones(3)); f(jnp.ones(6))
    assert any("TRACING CACHE MISS" in r.getMessage() for r in caplog.records)

def test_still_on():
    assert jax.config.jax_explain_cache_misses is True
"""
    )
    try:
        jp.runpytest(*ON).assert_outcomes(passed=2)
    finally:
        import jax

        jax.config.update("jax_explain_cache_misses", False)


def test_config_and_logging_restored_after_each_test(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        """
import logging
import jax
import jax.numpy as jnp
import pytest

LOGGER = logging.getLogger("jax._src.interpreters.partial_eval")
STATE = (jax.config.jax_explain_cache_misses, LOGGER.level, list(LOGGER.filters))

@pytest.mark.jaxperf
def test_1_recorded():
    jax.jit(lambda x: x + 1)(jnp.ones(3))

def test_2_unrecorded():
    assert (jax.config.jax_explain_cache_misses, LOGGER.level, list(LOGGER.filters)) == STATE
"""
    )
    jp.runpytest("--jaxperf").assert_outcomes(passed=2)


def test_filterwarnings_error(jp: pytest.Pytester) -> None:
    jp.makeini("[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings = error\n")
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return jnp.sin(x).sum()

def test_a():
    f(jnp.ones(3)); f(jnp.ones(4))

def test_b():
    f(jnp.ones(3))
"""
    )
    result = jp.runpytest(*ON, "--jaxperf-json=out.json")
    result.assert_outcomes(passed=2)
    assert len(read_json(jp.path / "out.json")["tests"]) == 2


def test_conftest_sets_device_count(jp: pytest.Pytester) -> None:
    jp.makeconftest(
        """
import jax

jax.config.update("jax_num_cpu_devices", 2)
"""
    )
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp

def test_devices():
    assert len(jax.devices()) == 2
    jax.jit(lambda x: x * 2)(jnp.ones(4))
"""
    )
    result = jp.runpytest_subprocess(*ON, "--jaxperf-json=out.json")
    result.assert_outcomes(passed=1)
    assert read_json(jp.path / "out.json")["environment"]["device_count"] == 2


def test_persistent_cache_hits_are_marked(jp: pytest.Pytester) -> None:
    jp.makeconftest(
        f"""
import jax

jax.config.update("jax_compilation_cache_dir", {str(jp.path / "xla-cache")!r})
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
"""
    )
    jp.makepyfile(
        """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return jnp.cos(x) * 3

@pytest.mark.jaxperf
def test_f():
    f(jnp.ones(3)); f(jnp.ones(4))
"""
    )
    cold = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save")
    cold.assert_outcomes(passed=1)
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")["tests"][
        "test_persistent_cache_hits_are_marked.py::test_f"
    ]  # noqa: E501
    assert (saved["compiles"], saved["cache_hits"]) == (2, 0)
    warm = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=warm.json", "-rA")
    warm.assert_outcomes(passed=1)
    warm.stdout.fnmatch_lines(
        lit("*compile time not gated: persistent compilation cache hits (baseline 0, now 2)*")
    )
    rec = read_json(jp.path / "warm.json")["tests"][
        "test_persistent_cache_hits_are_marked.py::test_f"
    ]  # noqa: E501
    assert (rec["compiles"], rec["cache_hits"]) == (2, 2)
    assert rec["compile_s"] == 0.0  # a hit never passes for a fast compile
