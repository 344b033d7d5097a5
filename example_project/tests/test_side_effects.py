import jax.numpy as jnp
import pytest
from jaxperf_example.side_effects import standardise, train

X = jnp.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [2.0, 0.0, 1.0]])
Y = X @ jnp.array([0.5, -1.0, 2.0])


@pytest.mark.jaxperf(max_traces={"standardise": 2})
def test_print_inside_jit_runs_once_per_trace(jaxperf, capsys):
    for _ in range(3):
        standardise(jnp.arange(5.0))
    standardise(jnp.arange(6.0))
    lines = capsys.readouterr().out.splitlines()
    # Four calls, two lines: the print ran while tracing, once per new shape.
    assert lines == ["tracing standardise for float32[5]", "tracing standardise for float32[6]"]
    if jaxperf.enabled:
        assert jaxperf.snapshot().traces == len(lines)


@pytest.mark.jaxperf(max_traces={"sgd_step": 1})
def test_training_logs_every_step_and_traces_once(capsys):
    _, losses = train(jnp.zeros(3), X, Y, n_steps=5)
    assert losses == sorted(losses, reverse=True)
    # jax.debug.print is part of the compiled program: one line per step, one trace.
    assert capsys.readouterr().out.count("step ") == 5
