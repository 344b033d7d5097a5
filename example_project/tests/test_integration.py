import jax.numpy as jnp
import jax.scipy.stats
import numpy as np
import pytest
from jaxperf_example.integration import gaussian_quantile, overlap, overlap_sweep

GRID = jnp.linspace(-10.0, 10.0, 1600)


def closed_form(mean1, std1, mean2, std2):
    # The product of N(m1, s1) and N(m2, s2) integrates to N(m1 - m2; 0, sqrt(s1² + s2²)).
    var = std1**2 + std2**2
    return np.exp(-0.5 * (mean1 - mean2) ** 2 / var) / np.sqrt(2 * np.pi * var)


@pytest.mark.jaxperf(max_traces=1, max_compiles=1)
def test_overlap_matches_closed_form():
    value = overlap(GRID, 0.0, 1.0, 1.0, 1.0)
    assert float(value) == pytest.approx(closed_form(0.0, 1.0, 1.0, 1.0), rel=1e-4)


@pytest.mark.jaxperf(max_traces={"overlap": 1})
def test_width_sweep_compiles_once():
    # Whole and fractional widths alike: one trace, one compile for the whole sweep.
    widths = [1, 1.5, 2, 2.5, 3]
    values = overlap_sweep(GRID, widths)
    assert values == pytest.approx([closed_form(0.0, w, 0.5, 2.0) for w in widths], rel=1e-4)


@pytest.mark.jaxperf(max_jaxpr_eqns=50)
def test_overlap_first_call_and_steady_state(jaxperf):
    # Compiled vs op-by-op: how many calls until the compile has paid for itself.
    result = jaxperf.benchmark(overlap, GRID, 0.0, 1.0, 1.0, 1.0, eager=True)
    assert float(result.output) == pytest.approx(closed_form(0.0, 1.0, 1.0, 1.0), rel=1e-4)
    if result.runtime is not None:  # measured with --jaxperf (and timing on)
        assert result.first_call_s > result.runtime.median_s


def test_equations_do_not_grow_with_the_grid(jaxperf):
    # jnp.sum is one equation at any grid size; an unrolled Python loop is 3 per point.
    result = jaxperf.scaling(
        overlap,
        lambda n: (np.linspace(-10.0, 10.0, n, dtype=np.float32), 0.0, 1.0, 1.0, 1.0),
        sizes=[200, 400, 800, 1600],
        metric="jaxpr_eqns",
        max_exponent=0.1,
    )
    assert result.values[0] == result.values[-1]


@pytest.mark.jaxperf(max_traces=1, max_compiles=1)
def test_quantile_matches_the_closed_form():
    # Newton's method in a loop of fixed length: one trace, one compile, one loop in the
    # program (its size and compile time are in the baseline, gated on any machine).
    p = jnp.array([0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999])
    q = gaussian_quantile(p, 1.0, 2.0)
    np.testing.assert_allclose(q, 1.0 + 2.0 * jax.scipy.stats.norm.ppf(p), atol=1e-4)
