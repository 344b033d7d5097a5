"""The `jaxperf` fixture object: a test's handle on its own recording."""

from __future__ import annotations

from .model import FunctionRecord, TestRecord
from .recorder import Scope


class JaxPerf:
    """Requesting the `jaxperf` fixture marks a test for recording."""

    def __init__(self, nodeid: str, scope_getter: object = None) -> None:
        self.nodeid = nodeid
        self._scope_getter = scope_getter

    @property
    def enabled(self) -> bool:
        """True when pytest runs with --jaxperf, so this test is being recorded."""
        return self._scope_getter is not None

    def snapshot(self) -> TestRecord:
        """What has been recorded in this test so far (empty when --jaxperf is off)."""
        scope: Scope | None = self._scope_getter() if callable(self._scope_getter) else None
        if scope is None:
            return TestRecord()
        return snapshot(scope)


def snapshot(scope: Scope) -> TestRecord:
    """A TestRecord holding copies of what `scope` recorded so far."""
    rec = TestRecord(
        functions={
            k: FunctionRecord(**{**vars(f), "retrace_reasons": list(f.retrace_reasons)})
            for k, f in scope.functions.items()
        },
    )
    rec.eager.add(scope.eager)
    rec.recompute_totals()
    return rec
