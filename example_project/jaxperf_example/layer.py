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

The fourth (regression `more_work`) keeps the program too, and after each compiled call
computes one row of the layer once more with NumPy (copying the weights to do it): real
work, 4% more instructions per call on the 512-row batch (9.148 M -> 9.515 M), the same
result. It is the small slowdown the instructions clock (`--jaxperf-runtime-clock=
instructions`) is for; the busy waits below are not work (their instruction count follows
the clock), and only seconds can see them.

Two runtime-only slowdowns (regressions `slow_2x`, `slow_1_25x`) keep the program, its
metrics and its one trace and compile exactly as they are, and make each call of `dense_relu`
2x or 1.25x as long: after the compiled call, a busy wait for (factor - 1) times the call's
own duration. Only a steady-state measurement can see them; `jaxperf ab` is made for that,
and `benchmarks/ab_power.py` measures how often it does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

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


# -- the runtime-only slowdowns ---------------------------------------------------------------
class SlowedSteadyState:
    """`jitted` whose every call takes `factor` times as long: the compiled call (waited
    for), then a busy wait of (factor - 1) times its duration, so the ratio holds under any
    load. Everything else (`lower`, `trace`, the traced function, its definition site) is
    `jitted`'s own, so the program, its metrics and the counts do not change."""

    def __init__(
        self, jitted: Any, factor: float, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        functools.update_wrapper(self, jitted)
        self._jitted = jitted
        self._factor = factor
        self._clock = clock

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = self._clock()
        out = jax.block_until_ready(self._jitted(*args, **kwargs))
        end = start + (self._clock() - start) * self._factor
        while self._clock() < end:
            pass
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)


class MoreWork:
    """`jitted`, and after each call the layer's first `rows` rows computed once more with
    NumPy (discarded): more work per call, the program and its counts unchanged."""

    def __init__(self, jitted: Any, rows: int) -> None:
        functools.update_wrapper(self, jitted)
        self._jitted = jitted
        self._rows = rows

    def __call__(self, params: Params, x: jax.Array) -> Any:
        out = jax.block_until_ready(self._jitted(params, x))
        rows = self._rows
        again = np.asarray(x[:rows]) @ np.asarray(params["w"]) + np.asarray(params["b"])
        np.maximum(again, 0.0, out=again)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)


_SLOWDOWNS = {"slow_2x": 2.0, "slow_1_25x": 1.25}
_factor = 1.0
for _name, _times in _SLOWDOWNS.items():
    if regression.active(_name):
        _factor *= _times
if _factor != 1.0:
    dense_relu = SlowedSteadyState(dense_relu, _factor)  # type: ignore[assignment]
if regression.active("more_work"):
    dense_relu = MoreWork(dense_relu, rows=1)  # type: ignore[assignment]
