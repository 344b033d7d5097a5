"""Small JAX computations written the way that keeps them compiled.

One module per classic performance trap; each keeps the trap next to the right way, and
`regression.active(name)` (the JAXPERF_EXAMPLE_REGRESSION variable) switches it back on.
"""

from . import regression

regression.requested()  # a misspelt JAXPERF_EXAMPLE_REGRESSION fails at import
