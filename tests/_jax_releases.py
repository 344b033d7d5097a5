"""What JAX builds differently from one release to the next, where the plugin's tests pin
it: each test states the numbers of the JAX it runs on (the matrix runs every supported one).
Read from JAX's version, not measured, so that the numbers the tests expect stay independent
of what the plugin measures."""

from __future__ import annotations

import jax

# jax 0.11 unstacks an array iterated over in Python in one equation (`unstack`); before, each
# element was sliced out (`slice`, `squeeze`).
UNSTACKS = tuple(map(int, jax.__version__.split(".")[:2])) >= (0, 11)


def builtin_sum_eqns(n: int, extra: int = 0) -> int:
    """jaxpr equations of builtin `sum` over n elements (plus `extra` others): an `add` each,
    after one `unstack` (jax >= 0.11) or a `slice` and a `squeeze` each (before)."""
    return (n + 1 if UNSTACKS else 3 * n) + extra
