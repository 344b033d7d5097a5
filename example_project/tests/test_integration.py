import jax.numpy as jnp
import pytest

from jaxperf_example.integration import overlap

GRID = jnp.linspace(-10.0, 10.0, 1600)


@pytest.mark.jaxperf(max_traces=1, max_compiles=1)
def test_overlap_matches_closed_form():
    # The product of N(0, 1) and N(1, 1) integrates to N(0 - 1; 0, sqrt(2)).
    value = overlap(GRID, jnp.float32(0.0), jnp.float32(1.0), jnp.float32(1.0), jnp.float32(1.0))
    expected = jnp.exp(-0.25) / jnp.sqrt(4 * jnp.pi)
    assert jnp.allclose(value, expected, rtol=1e-4)


@pytest.mark.jaxperf(max_traces={"overlap": 1})
def test_parameter_sweep_compiles_once():
    # Array-valued parameters: new values reuse the compiled program. Python floats of
    # varying value would too, but mixing ints and floats would retrace.
    for mean in jnp.linspace(-2.0, 2.0, 8):
        overlap(GRID, mean, jnp.float32(1.0), jnp.float32(0.5), jnp.float32(2.0))
