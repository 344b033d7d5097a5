"""The environment block of a run as measured: JAX's versions and backend, Python, the machine."""

from __future__ import annotations

import os
import platform
from typing import Any


def capture() -> dict[str, Any]:
    """Versions, backend and machine. Initialises JAX's backend: call it after a test ran,
    never before the user's conftest had its chance to configure devices."""
    import jax
    import jaxlib

    from . import _jaxhooks, instructions

    devices = jax.devices()
    env = {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", "unknown"),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind if devices else "none",
        "device_count": len(devices),
        "x64": bool(getattr(jax.config, "jax_enable_x64", False)),
        **before_jax(),
        # pytest-xdist workers measuring side by side (0: not under xdist; the session sets
        # it); their timings are slower than a serial run's, and never gated against one.
        "xdist_workers": 0,
    }
    # What else makes the same code lower to another program: XLA flags and JAX options.
    env["program_flags"] = {**xla_flags(os.environ.get("XLA_FLAGS", "")),
                            **_jaxhooks.lowering_options()}  # fmt: skip
    if instructions.under_valgrind():
        env.update(instructions.environment())
    if env["backend"] == "cpu":
        # Async dispatch counts the caller's spin-wait as CPU time (see _jaxhooks).
        env["cpu_dispatch"] = _jaxhooks.cpu_dispatch()
    return env


def before_jax() -> dict[str, Any]:
    """The keys of the block known without JAX: Python, the OS, this machine (what a
    `pytest_jaxperf_environment` hook is shown, before any test runs)."""
    return {"python": platform.python_version(), "platform": platform.platform(terse=True),
            **this_machine()}  # fmt: skip


def this_machine() -> dict[str, Any]:
    """This machine as `environment.MACHINE_KEYS` name it (no JAX needed)."""
    return {"cpu": _cpu_model(), "cpu_count": os.cpu_count() or 0}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# XLA flags that change no program: where XLA writes dumps, and the host platform's device
# count (the environment's device_count says it).
_NOT_CODEGEN = ("--xla_dump", "--xla_force_host_platform_device_count", "--xla_gpu_cuda_data_dir")


def xla_flags(value: str) -> dict[str, str]:
    """{'--xla_flag': value} of the flags in an XLA_FLAGS string that can change what XLA
    makes of a program: all of them but those known not to (dumps, the host device count).
    A flag without a value reads 'true'."""
    out = {}
    for token in value.split():
        if not token.startswith("--"):
            continue
        name, _, flag_value = token.partition("=")
        if not name.startswith(_NOT_CODEGEN):
            out[name] = flag_value or "true"
    return out
