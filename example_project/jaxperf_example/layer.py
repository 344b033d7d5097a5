"""A dense layer with relu, and where to put `jax.jit`.

The right way: one `jax.jit` around the whole layer. XLA sees matmul, bias add and relu as
one program, fuses the elementwise work into one pass over the output, and the call is one
dispatch; the first call pays one compile.

The trap (regression `jit_pieces`): jitting the inner pieces separately and chaining them from
Python. Each piece is its own program: three compiles, three dispatches per call, and the
(batch, features) intermediate is written to memory and read back twice.

The third trap (regression `double_work`): the layer computed a second time from an input
that equals `x` but that XLA cannot prove equal, so it cannot fold the two matmuls into
one. Same result, same single trace and compile, twice the flops: a steady-state slowdown
that only the program metrics and the runtime show (2.1-2.2x on the 512-row batch of
`test_first_call_vs_steady_state`, 1.5-1.7x on 128 rows, where the call's fixed cost weighs
more; measured quiet on 2 CPU cores by `benchmarks/compile_under_load.py`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import regression

Params = dict[str, jax.Array]


def init_params(key: jax.Array, n_in: int, n_out: int) -> Params:
    """Glorot-uniform weights and zero bias."""
    limit = (6.0 / (n_in + n_out)) ** 0.5
    w = jax.random.uniform(key, (n_in, n_out), minval=-limit, maxval=limit)
    return {"w": w, "b": jnp.zeros((n_out,))}


@jax.jit
def dense_relu(params: Params, x: jax.Array) -> jax.Array:
    """relu(x @ w + b) for a batch `x` of shape (batch, n_in), compiled as one program."""
    out = jax.nn.relu(x @ params["w"] + params["b"])
    if regression.active("double_work"):
        # The trap: out >= 0, so this adds exact zeros to x, but XLA cannot know it and
        # runs the whole layer again after the first pass.
        x_again = x + jnp.minimum(out[:, :1], 0.0)
        out = jax.nn.relu(x_again @ params["w"] + params["b"])
    return out


# -- the trap: jit at the wrong granularity ---------------------------------------------------
@jax.jit
def matmul(x: jax.Array, w: jax.Array) -> jax.Array:
    return x @ w


@jax.jit
def add_bias(y: jax.Array, b: jax.Array) -> jax.Array:
    return y + b


@jax.jit
def relu(y: jax.Array) -> jax.Array:
    return jnp.maximum(y, 0.0)


def dense_relu_pieces(params: Params, x: jax.Array) -> jax.Array:
    """The same layer as three separately compiled programs chained from Python."""
    return relu(add_bias(matmul(x, params["w"]), params["b"]))


if regression.active("jit_pieces"):
    dense_relu = dense_relu_pieces  # type: ignore[assignment]  # noqa: F811
