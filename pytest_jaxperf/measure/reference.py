"""The machine's reference compile: the process CPU seconds XLA takes to compile one fixed
program, measured once per machine and JAX version (kept in pytest's cache) and stored in
the report's environment (`environment.REFERENCE_KEY`). Compile seconds measured on another
CPU model are compared in units of it (`compare`)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

# Changed whenever the program changes: a value cached for another program is not reused.
PROGRAM = "dense-grad-scan-while/1"
# What a cached value is keyed by: the machine, the backend and the versions compiling.
_CACHE_KEYS = ("backend", "device_kind", "cpu", "cpu_count", "jax", "jaxlib", "valgrind")
# This process's measurements (pytester runs in-process share them).
_MEASURED: dict[tuple[str, ...], float] = {}
# Compiles timed; the fastest counts (what else ran on the machine only ever adds).
REPEATS = 3


def _program() -> Any:
    """A fresh function each call (so that no JAX cache serves it), about 0.2 s of CPU to
    compile on the machines measured: what real code hands XLA. A dense layer with tanh and
    a softmax cross-entropy, its gradient (value_and_grad) and an update in a scanned loop,
    then a while loop: dot, fusion, reduction, control-flow and layout passes all run."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def loss(params: Any, x: Any, y: Any) -> Any:
        w, b = params
        h = jnp.tanh(x @ w + b)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h) * y, axis=-1))

    def train(params: Any, x: Any, y: Any) -> Any:
        def step(p: Any, _: Any) -> Any:
            value, grads = jax.value_and_grad(loss)(p, x, y)
            return jax.tree.map(lambda a, g: a - 0.1 * g, p, grads), value

        params, values = lax.scan(step, params, None, length=4)
        norm = lax.while_loop(lambda n: n > 1.0, lambda n: n / 2.0, jnp.sum(values**2))
        return params, norm

    return train


def _arguments() -> tuple[Any, ...]:
    import jax
    import jax.numpy as jnp

    f32 = jnp.float32
    w, b = jax.ShapeDtypeStruct((32, 8), f32), jax.ShapeDtypeStruct((8,), f32)
    return (w, b), jax.ShapeDtypeStruct((16, 32), f32), jax.ShapeDtypeStruct((16, 8), f32)


def measure() -> float:
    """The fastest of REPEATS compiles of the reference program, in process CPU seconds,
    under JAX's default settings whatever the user set; nothing of it is recorded."""
    import jax

    from . import _jaxhooks
    from .recorder import RECORDER

    args = _arguments()
    times = []
    with RECORDER.paused(), _jaxhooks.own_settings():
        for _ in range(REPEATS):
            lowered = jax.jit(_program()).lower(*args)
            start = time.process_time()
            lowered.compile()
            times.append(time.process_time() - start)
    return round(min(times), 6)


def cached(env: Mapping[str, Any], cache: Any | None) -> float | None:
    """This machine's reference compile (CPU seconds): from this process's earlier
    measurement, from pytest's cache (`cache`, None where the cache provider is off), or
    measured now and stored in both. None where it could not be measured."""
    key = (*(str(env.get(name)) for name in _CACHE_KEYS), PROGRAM)
    if key in _MEASURED:
        return _MEASURED[key]
    name = "jaxperf/reference/" + hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    value = cache.get(name, None) if cache is not None else None
    if not (type(value) is float and 0 < value < 1e3):
        try:
            value = measure()
        except Exception:  # a backend that cannot compile it: no number, no normalisation
            return None
        if cache is not None:
            cache.set(name, value)
    _MEASURED[key] = value
    return value
