"""pytest-jaxperf: JAX trace, compile and runtime regressions as failing tests."""

from __future__ import annotations

from .fixture import JaxPerf
from .model import SCHEMA, Counts, FunctionRecord, Report, TestRecord

__all__ = ["SCHEMA", "Counts", "FunctionRecord", "JaxPerf", "Report", "TestRecord"]
__version__ = "0.1.0"
