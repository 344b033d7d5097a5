import jax.numpy as jnp
import pytest
from jaxperf_example.neighbours import (
    pair_capacity,
    pair_energy,
    pair_energy_numpy,
    random_system,
    trajectory_energy,
)

N, BOX, CUTOFF = 256, 10.0, 2.0
FRAMES, CHARGES = random_system(seed=0, n_particles=N, box=BOX, n_frames=4)
SIZE = pair_capacity(N, BOX, CUTOFF)


@pytest.mark.jaxperf(max_traces={"pair_energy": 1})
def test_trajectory_compiles_once(jaxperf):
    frames, charges = jnp.asarray(FRAMES), jnp.asarray(CHARGES)
    first = trajectory_energy(frames[:1], charges, CUTOFF, SIZE)
    # Every frame has its own pair count, but the pair list keeps one capacity: the
    # compiled program is reused for the rest of the trajectory.
    with jaxperf.no_recompile():
        rest = trajectory_energy(frames[1:], charges, CUTOFF, SIZE)
    expected = [pair_energy_numpy(f, CHARGES, CUTOFF)[0] for f in FRAMES]
    assert [float(e) for e in (*first, *rest)] == pytest.approx(expected, rel=1e-4)


@pytest.mark.jaxperf(max_jaxpr_eqns=200)
def test_pair_energy_vs_numpy(jaxperf):
    result = jaxperf.benchmark(
        pair_energy, FRAMES[0], CHARGES, CUTOFF, size=SIZE, reference=pair_energy_numpy
    )
    energy, count = result.output
    expected_energy, expected_count = pair_energy_numpy(FRAMES[0], CHARGES, CUTOFF)
    assert int(count) == expected_count <= SIZE
    assert float(energy) == pytest.approx(expected_energy, rel=1e-4)


def test_larger_cutoff_needs_a_larger_capacity():
    # The cutoff is a traced argument: the same program runs, and reports the overflow.
    with pytest.raises(ValueError, match=f"more than the pair capacity {SIZE}"):
        trajectory_energy(jnp.asarray(FRAMES[:1]), jnp.asarray(CHARGES), 2 * CUTOFF, SIZE)
