"""Python side effects inside jit run while tracing, not on every call.

`standardise` prints a line from inside a jitted function. The print is Python code, so it
runs while JAX traces the function, and compiled calls skip it: you see one line per trace,
not per call. That makes it a crude trace counter, and the plugin's trace count is the
precise one.

`sgd_step` logs every step the right way, with `jax.debug.print`, which is part of the
compiled program. The trap (regression `print_in_jit`): a Python `print(f"step {step}")`
shows a tracer rather than a number, so `step` is made a static argument to print it;
now every step is a new static value, and every step is traced and compiled again.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from . import regression

LEARNING_RATE = 0.1


@jax.jit
def standardise(x: jax.Array) -> jax.Array:
    """(x - mean) / std; announces each trace on stdout."""
    print(f"tracing standardise for {x.dtype}{list(x.shape)}")  # runs only while tracing
    return (x - jnp.mean(x)) / jnp.std(x)


def loss(w: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of a linear model."""
    return jnp.mean((x @ w - y) ** 2)


@jax.jit
def sgd_step(
    w: jax.Array, x: jax.Array, y: jax.Array, step: int | jax.Array
) -> tuple[jax.Array, jax.Array]:
    """One gradient step; logs the step number and loss at run time, on every call."""
    value, grad = jax.value_and_grad(loss)(w, x, y)
    jax.debug.print("step {step}: loss {value:.4f}", step=step, value=value)
    return w - LEARNING_RATE * grad, value


if regression.active("print_in_jit"):

    @partial(jax.jit, static_argnames="step")
    def sgd_step(  # type: ignore[no-redef]  # noqa: F811
        w: jax.Array, x: jax.Array, y: jax.Array, step: int
    ) -> tuple[jax.Array, jax.Array]:
        value, grad = jax.value_and_grad(loss)(w, x, y)
        print(f"step {step}")  # the trap: needs a static step, so every step retraces
        return w - LEARNING_RATE * grad, value


def train(w: jax.Array, x: jax.Array, y: jax.Array, n_steps: int) -> tuple[jax.Array, list[float]]:
    """`n_steps` of gradient descent; returns the weights and the loss before each step."""
    losses = []
    for step in range(n_steps):
        w, value = sgd_step(w, x, y, step=step)
        losses.append(value)
    return w, [float(v) for v in losses]
