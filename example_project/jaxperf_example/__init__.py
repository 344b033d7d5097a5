"""Small JAX computations written the way that keeps them compiled."""
