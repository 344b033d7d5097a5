import jax
import numpy as np
import pytest
from jaxperf_example.layer import dense_relu, dense_relu_pieces, init_params

PARAMS = init_params(jax.random.key(0), 256, 256)
BATCHES = jax.random.normal(jax.random.key(1), (4, 128, 256))


def test_dense_relu_matches_numpy():
    w, b, x = (np.asarray(a) for a in (PARAMS["w"], PARAMS["b"], BATCHES[0]))
    expected = np.maximum(x @ w + b, 0.0)
    np.testing.assert_allclose(dense_relu(PARAMS, BATCHES[0]), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        dense_relu_pieces(PARAMS, BATCHES[0]), expected, rtol=1e-4, atol=1e-5
    )


@pytest.mark.jaxperf(max_traces=1, max_compiles=1)
def test_forward_passes_compile_once(jaxperf):
    # One jit around the whole layer: one program, compiled on the first batch only.
    dense_relu(PARAMS, BATCHES[0])
    with jaxperf.no_recompile():
        for batch in BATCHES[1:]:
            dense_relu(PARAMS, batch)


# A batch large enough for the matmul to outweigh the per-call dispatch: twice the work
# (the `double_work` trap) then takes about twice the time.
WIDE_BATCH = jax.random.normal(jax.random.key(2), (512, 256))


@pytest.mark.jaxperf(max_jaxpr_eqns=10)
def test_first_call_vs_steady_state(jaxperf):
    result = jaxperf.benchmark(dense_relu, PARAMS, WIDE_BATCH, eager=True, label="dense_relu")
    assert result.output.shape == (512, 256)
    if result.runtime is not None:  # measured with --jaxperf (and timing on)
        # The first call includes the compile; later calls run the compiled program.
        assert result.first_call_s > result.runtime.median_s
