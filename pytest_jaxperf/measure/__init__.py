"""Measuring: the only code that imports jax."""
