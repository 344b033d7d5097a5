"""Numerical integral of the product of two Gaussian densities on a fixed grid.

The right way: the reduction is one `jnp.sum`, so the program has a handful of equations
whatever the grid size. The trap (regression `builtin_sum`): Python's builtin `sum` iterates
over the array while tracing and unrolls into three jaxpr equations per grid point; at
N=1,600 the first call takes about 1 s instead of 0.05 s, and the steady state gets no faster.
The second trap (regression `int_std`): a parameter that is sometimes a Python int and
sometimes a float is traced twice (weak i32[] vs weak f32[]), compiled twice.
"""

from __future__ import annotations

from collections.abc import Iterable

import jax
import jax.numpy as jnp

from . import regression


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
