"""pytest-jaxperf: JAX trace, compile and runtime regressions as failing tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .measure.fixture import JaxPerf
    from .model import SCHEMA, Counts, FunctionRecord, RecordedTest, RunRecord

__all__ = ["SCHEMA", "Counts", "FunctionRecord", "JaxPerf", "RecordedTest", "RunRecord"]
__version__ = "0.1.0"
_RENAMED = ("TestRecord", "Report")  # deprecated: see model.renamed


def __getattr__(name: str) -> Any:
    # Lazy: pytest imports this package for the plugin on every run, --jaxperf or not.
    if name == "JaxPerf":
        from .measure.fixture import JaxPerf

        return JaxPerf
    if name in __all__ or name in _RENAMED:
        from . import model

        return getattr(model, name) if name in __all__ else model.renamed(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
