import jax
import numpy as np
import pytest
from jaxperf_example.sampler import MEAN, sample, sample_numpy, start, tune_and_sample

N_CHAINS = 1000
X0 = start(jax.random.key(0), N_CHAINS)


@pytest.mark.jaxperf(max_traces=1, max_compiles=1)
def test_tuning_reuses_one_compiled_sampler():
    # The step size changes after every block; it is an argument, so nothing recompiles.
    _, means, step_size = tune_and_sample(jax.random.key(1), X0, n_blocks=3, steps_per_block=50)
    assert 0.5 < step_size < 5.0
    np.testing.assert_allclose(np.mean(means, axis=0), MEAN, atol=0.1)


@pytest.mark.jaxperf(max_compiles=1)
def test_jax_vs_numpy_sampler(jaxperf):
    rng = np.random.default_rng(0)

    def numpy_sampler(key, x0, step_size, n_steps):
        return sample_numpy(rng, np.asarray(x0), step_size, n_steps)

    result = jaxperf.benchmark(
        sample, jax.random.key(2), X0, 1.0, n_steps=100, reference=numpy_sampler
    )
    _, rate, means = result.output
    assert 0.2 < float(rate) < 0.7
    np.testing.assert_allclose(np.mean(means, axis=0), MEAN, atol=0.2)
    if result.runtime is not None and result.eager is not None:
        print(
            f"JAX {N_CHAINS * 100 / result.runtime.median_s:,.0f} samples/s, "
            f"NumPy {N_CHAINS * 100 / result.eager.median_s:,.0f} samples/s"
        )
