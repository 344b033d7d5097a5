"""Switches a known performance trap back on, to show that the tests catch it.

Set JAXPERF_EXAMPLE_REGRESSION to one name, or several separated by commas:

    JAXPERF_EXAMPLE_REGRESSION=jit_in_loop pytest --jaxperf

Each scenario module keeps its trap next to the right way and asks `active(name)` which one
to use. Unset (the normal case), every module runs the right way.
"""

from __future__ import annotations

import os

VARIABLE = "JAXPERF_EXAMPLE_REGRESSION"

#: name -> what it switches on (the table in example_project/README.md says the same).
REGRESSIONS = {
    "builtin_sum": "integration.overlap reduces with Python's builtin sum instead of jnp.sum",
    "int_std": "integration.overlap_sweep passes a whole-number width as a Python int",
    "jit_pieces": "layer.dense_relu jits matmul, bias and relu separately instead of once",
    "double_work": "layer.dense_relu computes the layer twice (same result, twice the flops)",
    "more_work": "layer.dense_relu's steady state does about 4% more work: the same compiled "
    "program, then one row of the layer once more with NumPy (the instructions clock's catch)",
    "slow_2x": "layer.dense_relu's steady state is 2x slower: the same compiled program, "
    "followed by a busy wait as long as the call",
    "slow_1_25x": "layer.dense_relu's steady state is 1.25x slower: the same compiled program, "
    "followed by a busy wait a quarter as long as the call",
    "data_dependent_size": "neighbours.trajectory_energy sizes jnp.nonzero by each frame's "
    "exact pair count",
    "jit_in_loop": "sampler.tune_and_sample re-creates jax.jit of a closure for every block",
    "print_in_jit": "side_effects.sgd_step makes `step` static so that a print shows it",
    "unrolled": "integration.gaussian_quantile unrolls its 40-step Newton fori_loop fully "
    "(same results and jaxpr; the program XLA compiles grows with the number of steps)",
}


def requested() -> frozenset[str]:
    """The regressions switched on; an unknown name is an error, not a silent no-op."""
    wanted = {part.strip() for part in os.environ.get(VARIABLE, "").split(",") if part.strip()}
    unknown = wanted - REGRESSIONS.keys()
    if unknown:
        raise ValueError(
            f"{VARIABLE}: unknown regression(s) {', '.join(sorted(unknown))}; "
            f"expected any of {', '.join(REGRESSIONS)}"
        )
    return frozenset(wanted)


def active(name: str) -> bool:
    """True when the regression `name` is switched on in the environment."""
    if name not in REGRESSIONS:
        raise KeyError(f"unknown regression {name!r}")
    return name in requested()
