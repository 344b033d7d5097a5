"""The machine's reference compile: the process CPU seconds XLA takes to compile one fixed
program, measured in a child process of its own before the first test (no test's code, no
thread of the user's, no setting of the suite's runs there), SAMPLES times so that its
spread is known; kept in pytest's cache and in the saved baseline, where a later session's
single fresh compile checks it (the full sample again only where they disagree); and stored
in the report's environment (`environment.REFERENCE_KEY`, `SPREAD_KEY`,
`SAMPLES_KEY`). Compile seconds measured on another CPU model are compared in units of it
(`compare`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY, references_agree

# Changed whenever the program or the way it is measured changes: a value cached for
# another is not reused (/2: a child process, the median of SAMPLES and their spread).
PROGRAM = "dense-grad-scan-while/2"
# What a value is keyed by: the machine, the backend and the versions compiling.
_CACHE_KEYS = ("backend", "device_kind", "cpu", "cpu_count", "jax", "jaxlib")
# Compiles timed in the child: their median is the reference, (max - min) / median its
# spread. One where a known value (pytest's cache, the baseline) is only being checked. The
# child is started at configure (prestart): its jax import and an untimed first compile run
# while pytest collects, so that what is left before the first test is the samples (0.7 s
# for one on 2 vCPUs of an Intel Xeon, where a cold child took 1.6 s), and a single warm
# sample compares with a median. On this project's loaded 2-core machine one compile took
# 0.39-0.57 s within one process.
SAMPLES = 5
CHECK_SAMPLES = 1
# A cached value and a fresh sample agree as environment.references_agree says (the rule a
# save follows too).
# Seconds the child may take (a jax import and the compiles) before it is given up.
TIMEOUT_S = 300
# Variables the child does not inherit: the suite's JAX and XLA settings (it compiles under
# JAX's defaults, on the backend JAX_PLATFORMS picks, as the suite's own processes do).
_NOT_INHERITED = ("XLA_FLAGS", "JAX_")
_KEEP = frozenset({"JAX_PLATFORMS", "JAX_PLATFORM_NAME"})


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


def measure(samples: int = SAMPLES) -> list[float]:
    """`samples` compiles of the reference program in this process, in process CPU seconds,
    under JAX's default settings whatever the user set; nothing of it is recorded. Called in
    the child (`_child`); in the suite's own process every thread of the user's would be
    counted too."""
    import jax

    from . import _jaxhooks
    from .recorder import RECORDER

    args = _arguments()
    times = []
    with RECORDER.paused(), _jaxhooks.own_settings():
        for _ in range(samples):
            lowered = jax.jit(_program()).lower(*args)
            start = time.process_time()
            lowered.compile()
            times.append(time.process_time() - start)
    return times


@dataclass(frozen=True)
class Reference:
    """One machine's reference compile: the median of `samples` compiles, their spread and
    what it was measured on (the `_CACHE_KEYS` of the child's environment)."""

    seconds: float
    spread: float  # (max - min) / median of the samples
    samples: int
    machine: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, times: list[float], machine: Mapping[str, Any]) -> Reference:
        median = statistics.median(times)
        return cls(
            seconds=round(median, 6),
            spread=round((max(times) - min(times)) / median, 3),
            samples=len(times),
            machine=tuple((k, str(machine.get(k))) for k in _CACHE_KEYS),
        )

    def fields(self) -> dict[str, Any]:
        """What the environment block stores of it."""
        return {REFERENCE_KEY: self.seconds, SPREAD_KEY: self.spread, SAMPLES_KEY: self.samples}

    def matches(self, env: Mapping[str, Any]) -> bool:
        """Whether it was measured on the machine, backend and versions of `env`."""
        return all(str(env.get(k)) == v for k, v in self.machine)

    def agrees(self, other: Reference) -> bool:
        return references_agree(self.seconds, self.spread, other.seconds, other.spread)

    def to_cache(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "spread": self.spread, "samples": self.samples,
                "machine": dict(self.machine)}  # fmt: skip

    @classmethod
    def from_environment(
        cls, env: Mapping[str, Any], machine: tuple[tuple[str, str], ...]
    ) -> Reference | None:
        """The reference an environment block (a baseline's) stores, where it was measured on
        `machine`, else None."""
        if not all(str(env.get(k)) == v for k, v in machine):
            return None
        value = {"seconds": env.get(REFERENCE_KEY), "spread": env.get(SPREAD_KEY),
                 "samples": env.get(SAMPLES_KEY), "machine": dict(machine)}  # fmt: skip
        return cls.from_cache(value, machine)

    @classmethod
    def from_cache(cls, value: Any, machine: tuple[tuple[str, str], ...]) -> Reference | None:
        """The cached value where it was measured on `machine`, else None (also where it is
        not one this version wrote)."""
        if not isinstance(value, dict) or value.get("machine") != dict(machine):
            return None
        seconds, spread, samples = (value.get(k) for k in ("seconds", "spread", "samples"))
        if not (
            type(seconds) is float and 0 < seconds < 1e3 and type(spread) is float
            and 0 <= spread < 1e3 and type(samples) is int and samples > 0
        ):  # fmt: skip
            return None
        return cls(seconds, spread, samples, machine)


def _child(samples: int) -> None:
    """The child's side: measure, then print the samples and the machine as one JSON line."""
    from . import machine

    times = measure(samples)
    env = machine.capture()
    line = json.dumps({"samples": times, "machine": {k: env.get(k) for k in _CACHE_KEYS}})
    print(line, flush=True)  # the parent reads it while this process waits for more


def _child_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items()
        if k in _KEEP or not k.startswith(_NOT_INHERITED)
    }  # fmt: skip
    # On a GPU the child would otherwise take 75% of its memory at its backend's start, and
    # it starts while the suite's own process collects (prestart): it needs next to none.
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    # This package importable whatever the child's working directory.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _waiting_child() -> None:
    """The child's side, started before it is needed: JAX imported and the program compiled
    once untimed (the backend's start and every first-compile cost out of the samples: a
    check's single sample is then comparable with a median), then, for each line read from
    stdin, that many samples; an empty line or the end of input ends it."""
    from . import machine

    machine.capture()
    measure(1)
    while line := sys.stdin.readline().strip():
        _child(int(line))


def _spawn() -> subprocess.Popen[str]:
    # stderr not piped: JAX's warnings, unread while the child waits, could fill the pipe.
    code = "from pytest_jaxperf.measure.reference import _waiting_child; _waiting_child()"
    return subprocess.Popen(
        [sys.executable, "-c", code], env=_child_env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip


# A child started early (prestart()), whose JAX import overlaps pytest's collection.
_WAITING: list[subprocess.Popen[str]] = []
# The child that measured, waiting for a second request of the same session; those whose
# input was closed since (they end by themselves, reaped by discard()); and how long one is
# given to end so.
_KEPT: list[subprocess.Popen[str]] = []
_ENDING: list[subprocess.Popen[str]] = []
_END_S = 10.0


def prestart() -> None:
    """Start the child that in_child() will use, where it is the measurement and none was
    taken in this process: its JAX import and an untimed compile then run while pytest
    collects, and only the samples are left when the first test is about to run. Nothing of
    the suite runs in it."""
    if _MEASURED or _WAITING or MEASURE is not in_child:
        return
    with contextlib.suppress(OSError):  # in_child tries again, and says None if it cannot
        _WAITING.append(_spawn())


def release() -> None:
    """Let the child in_child() kept end by itself (its input closed), without waiting for
    its exit before the first test: discard() reaps it."""
    while _KEPT:
        proc = _KEPT.pop()
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        _ENDING.append(proc)


def discard() -> None:
    """End the child prestart() started and nobody used (nothing was recorded, say), and
    reap the one in_child() kept."""
    while _WAITING:
        _end(_WAITING.pop())
    release()
    while _ENDING:
        proc = _ENDING.pop()
        try:
            proc.wait(timeout=_END_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def in_child(samples: int) -> Reference | None:
    """`samples` compiles in a child Python process (nothing of this one's state, threads or
    settings): None where it failed. The child is kept, warm, for the session's next call
    (a check that disagreed asks for the full sample: no second JAX import and backend start
    for it); release() lets it end."""
    try:
        proc = (_KEPT or _WAITING).pop() if _KEPT or _WAITING else _spawn()
    except OSError:
        return None
    kept = False
    try:
        data = json.loads(_ask(proc, samples))
        times = [float(t) for t in data["samples"]]
        if not times or min(times) <= 0:
            return None
        result = Reference.of(times, data["machine"])
        _KEPT.append(proc)
        kept = True
        return result
    except (OSError, ValueError, LookupError, TypeError):
        return None
    finally:
        if not kept:
            _end(proc)


def _ask(proc: subprocess.Popen[str], samples: int) -> str:
    """The child's answer to `samples` (one JSON line), or ValueError where it ended without
    one or took over TIMEOUT_S. Read in a thread: a pipe has no portable read timeout."""
    stdin, stdout = proc.stdin, proc.stdout
    if stdin is None or stdout is None:
        raise ValueError("the reference child has no pipes")
    stdin.write(f"{int(samples)}\n")
    stdin.flush()
    answer: list[str] = []
    reader = threading.Thread(target=lambda: answer.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(TIMEOUT_S)
    if not answer or not answer[0].strip():
        raise ValueError("the reference child gave no answer")
    return answer[0]


# The measurement the session calls (replaced by tests to watch when and where it runs).
MEASURE: Callable[[int], Reference | None] = in_child
# This process's reference, once measured (pytester runs in-process share it).
_MEASURED: list[Reference] = []


def for_session(
    cache: Any | None,
    known: Sequence[Mapping[str, Any]] = (),
) -> Reference | None:
    """This machine's reference compile, measured now in a child process. Where a value is
    known for the same machine and versions, from pytest's cache (`cache`, None where the
    cache provider is off) or from environment blocks of the baseline (`known`), one fresh
    compile checks it, and the known value is kept where they agree (so that re-saved
    baselines keep the same number); else the full sample is measured (and checked against
    them again), and a fresh value replaces the cached one. Agreement is the one rule a save
    keeps a stored reference by too (environment.references_agree). None where it could not
    be measured."""
    if _MEASURED:
        return _MEASURED[0]
    # One entry per interpreter (a virtualenv, a JAX version); what it was measured on is
    # stored in it and checked against the fresh sample's.
    name = (
        "jaxperf/reference/"
        + hashlib.sha256(repr((PROGRAM, sys.executable)).encode()).hexdigest()[:16]
    )
    cached = cache.get(name, None) if cache is not None else None
    # Each stored value once (a baseline's entries repeat their environment's).
    known = list({
        (*(str(env.get(k)) for k in (REFERENCE_KEY, SPREAD_KEY, SAMPLES_KEY, *_CACHE_KEYS)),):
        env for env in known if REFERENCE_KEY in env
    }.values())  # fmt: skip
    try:
        fresh = MEASURE(CHECK_SAMPLES if isinstance(cached, dict) or known else SAMPLES)
        if fresh is None:
            return None
        chosen = _agreeing(cached, known, fresh)
        if chosen is None and fresh.samples < SAMPLES:
            fresh = MEASURE(SAMPLES)  # in the same child, warm
            if fresh is None:
                return None
            chosen = _agreeing(cached, known, fresh)
    finally:
        release()
    if chosen is None:
        chosen = fresh
        if cache is not None:
            cache.set(name, chosen.to_cache())
    _MEASURED.append(chosen)
    return chosen


def _agreeing(
    cached: Any, known: Sequence[Mapping[str, Any]], fresh: Reference
) -> Reference | None:
    """The first known value measured on `fresh`'s machine that `fresh` agrees with: the
    baseline's before pytest's cache (a save then keeps the file's own value, and the file
    stays as it was where both agree)."""
    candidates = [Reference.from_environment(env, fresh.machine) for env in known]
    candidates.append(Reference.from_cache(cached, fresh.machine))
    return next((c for c in candidates if c is not None and c.agrees(fresh)), None)
