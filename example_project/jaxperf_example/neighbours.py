"""Pairwise energy of charged particles within a cutoff, with a fixed-size pair list.

`jnp.nonzero` has a data-dependent output shape, so under jit it needs `size=`: the pair
list is padded to `size` entries with `fill_value`. Here the fill index points one past the
last particle, at a padding slot whose charge is 0, so padded pairs add nothing. `size` is a
static argument: each new value is a new program.

The right way: choose the capacity once for the system (`pair_capacity`, from the density)
and keep it for the whole trajectory: one compile. The trap (regression
`data_dependent_size`): size the list by each frame's exact pair count. Every frame whose
count differs from all earlier ones is traced and compiled again.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import regression


@partial(jax.jit, static_argnames="size")
def pair_energy(
    positions: jax.Array, charges: jax.Array, cutoff: float | jax.Array, size: int
) -> tuple[jax.Array, jax.Array]:
    """Shifted Coulomb energy sum over pairs i < j closer than `cutoff`, and the pair count.

    The count says whether `size` was large enough (count <= size)."""
    n = positions.shape[0]
    dist = jnp.sqrt(jnp.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1))
    upper = jnp.arange(n)[:, None] < jnp.arange(n)[None, :]
    within = upper & (dist < cutoff)
    i, j = jnp.nonzero(within, size=size, fill_value=n)
    padded = jnp.concatenate([charges, jnp.zeros((1,), charges.dtype)])  # charge 0 at index n
    real = i < n
    r = jnp.where(real, dist[jnp.minimum(i, n - 1), jnp.minimum(j, n - 1)], 1.0)
    energy = jnp.sum(padded[i] * padded[j] * (1.0 / r - 1.0 / cutoff))
    return energy, jnp.sum(within)


@jax.jit
def count_pairs(positions: jax.Array, cutoff: float | jax.Array) -> jax.Array:
    """How many pairs i < j are closer than `cutoff`."""
    n = positions.shape[0]
    dist = jnp.sqrt(jnp.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1))
    upper = jnp.arange(n)[:, None] < jnp.arange(n)[None, :]
    return jnp.sum(upper & (dist < cutoff))


def pair_capacity(n_particles: int, box: float, cutoff: float, headroom: float = 1.5) -> int:
    """A pair-list size for `n_particles` spread over a cubic box: the expected number of pairs
    within the cutoff times `headroom`, rounded up to a multiple of 256. It depends on the
    system, not on a frame, so a whole trajectory shares one compiled program."""
    pairs = n_particles * (n_particles - 1) / 2
    fraction = min(1.0, 4 / 3 * math.pi * cutoff**3 / box**3)
    return max(256, 256 * math.ceil(pairs * fraction * headroom / 256))


def trajectory_energy(frames: jax.Array, charges: jax.Array, cutoff: float, size: int) -> jax.Array:
    """The energy of each frame (frames: (n_frames, n_particles, 3)) with one pair capacity.

    Raises ValueError when a frame has more pairs within the cutoff than `size`."""
    energies, overflow = [], []
    for frame in frames:
        frame_size = size
        if regression.active("data_dependent_size"):
            frame_size = int(count_pairs(frame, cutoff))  # the trap: a new size every frame
        energy, count = pair_energy(frame, charges, cutoff, size=frame_size)
        energies.append(energy)
        overflow.append(count - size)
    # One host sync for the whole trajectory, not one per frame.
    excess = int(jnp.max(jnp.stack(overflow)))
    if excess > 0:
        raise ValueError(
            f"{size + excess} pairs within the cutoff, more than the pair capacity {size}: "
            "pass a larger size"
        )
    return jnp.stack(energies)


def pair_energy_numpy(
    positions: np.ndarray, charges: np.ndarray, cutoff: float, size: int | None = None
) -> tuple[float, int]:
    """The same energy and count in NumPy (`size` is accepted and ignored)."""
    positions = np.asarray(positions)
    charges = np.asarray(charges)
    dist = np.sqrt(np.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1))
    i, j = np.nonzero(np.triu(dist < cutoff, k=1))
    r = dist[i, j]
    energy = float(np.sum(charges[i] * charges[j] * (1.0 / r - 1.0 / cutoff)))
    return energy, int(i.size)


def random_system(
    seed: int, n_particles: int, box: float, n_frames: int = 1, step: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Frames of a random walk of particles in a cubic box, and their +1/-1 charges."""
    rng = np.random.default_rng(seed)
    start = rng.uniform(0.0, box, size=(n_particles, 3))
    moves = rng.normal(0.0, step, size=(n_frames, n_particles, 3))
    moves[0] = 0.0
    frames = (start + np.cumsum(moves, axis=0)) % box
    charges = rng.choice([-1.0, 1.0], size=n_particles)
    return frames.astype(np.float32), charges.astype(np.float32)
