"""pytest-jaxperf: JAX trace, compile and runtime regressions as failing tests.

The names below are the public API (see the documentation's API page); everything else is
internal and may change between releases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .measure.fixture import BenchmarkResult, JaxPerf, ScalingResult
    from .model import (
        SCHEMA,
        Counts,
        FunctionRecord,
        ProgramMetrics,
        RecordedTest,
        RunRecord,
        RuntimeStats,
    )
    from .storage.store import load_run

__all__ = [
    "SCHEMA",
    "BenchmarkResult",
    "Counts",
    "FunctionRecord",
    "JaxPerf",
    "ProgramMetrics",
    "RecordedTest",
    "RunRecord",
    "RuntimeStats",
    "ScalingResult",
    "load_run",
]
__version__ = "0.1.0"
_RENAMED = ("TestRecord", "Report")  # deprecated: see model.renamed
# Where each public name lives; imported on first use, as pytest imports this package for
# the plugin on every run, --jaxperf or not.
_HOME = {
    "BenchmarkResult": "measure.fixture",
    "JaxPerf": "measure.fixture",
    "ScalingResult": "measure.fixture",
    "load_run": "storage.store",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in __all__:
        module = importlib.import_module(f".{_HOME.get(name, 'model')}", __name__)
        return getattr(module, name)
    if name in _RENAMED:
        from . import model

        return model.renamed(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
