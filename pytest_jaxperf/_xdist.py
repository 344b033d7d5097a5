"""pytest-xdist: workers send their records and verdicts to the controller, which alone
writes files. Registered only when xdist is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .compare import Breach, Outcome
from .model import function_from_json, function_to_json, test_from_json, test_to_json

if TYPE_CHECKING:
    from .session import JaxPerfSession

KEY = "jaxperf"


def is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


def _breach_to_json(b: Breach) -> dict[str, Any]:
    out = {k: getattr(b, k) for k in ("metric", "reference", "current", "against", "gated",
                                      "detail", "benchmark")}  # fmt: skip
    out["reasons"] = list(b.reasons)
    out["function"] = function_to_json(b.function) if b.function is not None else None
    return out


def _breach_from_json(d: dict[str, Any]) -> Breach:
    fn = function_from_json(d["function"], "function") if d.get("function") else None
    return Breach(
        d["metric"], fn, d["reference"], d["current"], d["against"], tuple(d["reasons"]),
        d["gated"], d["detail"], d["benchmark"],
    )  # fmt: skip


def outcome_to_json(o: Outcome) -> dict[str, Any]:
    return {
        "status": o.status,
        "breaches": [_breach_to_json(b) for b in o.breaches],
        "improvements": list(o.improvements),
        "notes": list(o.notes),
        "info": list(o.info),
    }


def outcome_from_json(d: dict[str, Any]) -> Outcome:
    return Outcome(
        status=d["status"],
        breaches=[_breach_from_json(b) for b in d["breaches"]],
        improvements=list(d["improvements"]),
        notes=list(d["notes"]),
        info=list(d.get("info", [])),
    )


class XdistHooks:
    """Controller side: merge what each worker recorded as it goes down."""

    def __init__(self, session: JaxPerfSession) -> None:
        self.session = session

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get(KEY)
        if not data:
            return
        s = self.session
        if s.environment is None and data.get("environment"):
            s.environment = data["environment"]
        for nodeid, rec in data["tests"].items():
            s.records[nodeid] = test_from_json(rec, nodeid)
        for nodeid, out in data["outcomes"].items():
            s.outcomes[nodeid] = outcome_from_json(out)


def send(config: Any, session: JaxPerfSession) -> None:
    """Worker side: hand everything recorded to the controller (plain JSON values)."""
    config.workeroutput[KEY] = {
        "environment": session.environment,
        "tests": {k: test_to_json(r) for k, r in session.records.items()},
        "outcomes": {k: outcome_to_json(o) for k, o in session.outcomes.items()},
    }
