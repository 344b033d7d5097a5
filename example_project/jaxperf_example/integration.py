"""Numerical integral of the product of two Gaussian densities on a fixed grid.

The right way: the reduction is one `jnp.sum`, so the program has a handful of equations
whatever the grid size. The trap (regression `builtin_sum`): Python's builtin `sum` iterates
over the array while tracing and unrolls into three jaxpr equations per grid point; at
N=1,600 the first call takes about 1 s instead of 0.05 s, and the steady state gets no faster.
The second trap (regression `int_std`): a parameter that is sometimes a Python int and
sometimes a float is traced twice (weak i32[] vs weak f32[]), compiled twice.
The third (regression `unrolled`): `gaussian_quantile`'s Newton loop fully unrolled. The
results, the counts and the jaxpr (one loop equation) stay the same; the program XLA
compiles holds a copy of the step per iteration, and its compile time grows with it.
"""

from __future__ import annotations

from collections.abc import Iterable

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import ndtr

from . import regression

#: Newton steps of gaussian_quantile: enough for float32 from z = 0 for p in [1e-4, 1 - 1e-4].
NEWTON_STEPS = 40


def gaussian_pdf(x: jax.Array, mean: float | jax.Array, std: float | jax.Array) -> jax.Array:
    return jnp.exp(-0.5 * ((x - mean) / std) ** 2) / (std * jnp.sqrt(2 * jnp.pi))


@jax.jit
def overlap(
    grid: jax.Array,
    mean1: float | jax.Array,
    std1: float | jax.Array,
    mean2: float | jax.Array,
    std2: float | jax.Array,
) -> jax.Array:
    """Riemann sum of pdf1 * pdf2 over an evenly spaced grid."""
    dx = grid[1] - grid[0]
    values = gaussian_pdf(grid, mean1, std1) * gaussian_pdf(grid, mean2, std2)
    if regression.active("builtin_sum"):
        return sum(values) * dx  # the trap: 3 equations per grid point
    return jnp.sum(values) * dx


def overlap_sweep(grid: jax.Array, widths: Iterable[float], mean: float = 0.0) -> list[float]:
    """Overlap of N(mean, width) with N(0.5, 2) for each width: one compile for the sweep.

    Python floats of different values share one trace (they are weak f32[] scalars), but an
    int is a weak i32[]: a list like [1, 1.5, 2] would be traced twice. Converting each
    width to float keeps the argument type fixed."""
    out = []
    for width in widths:
        std1 = width if regression.active("int_std") else float(width)  # the trap: no float()
        out.append(float(overlap(grid, mean, std1, 0.5, 2.0)))
    return out


@jax.jit
def gaussian_quantile(p: jax.Array, mean: float | jax.Array, std: float | jax.Array) -> jax.Array:
    """The p-quantile of N(mean, std): Newton's method on the standard normal CDF, from 0,
    a fixed number of steps (a `fori_loop`, one loop in the program)."""

    def newton(_: int, z: jax.Array) -> jax.Array:
        return z - (ndtr(z) - p) / gaussian_pdf(z, 0.0, 1.0)

    unroll = True if regression.active("unrolled") else 1  # the trap: a copy per step
    z = lax.fori_loop(0, NEWTON_STEPS, newton, jnp.zeros_like(p), unroll=unroll)
    return mean + std * z
