"""pytest-xdist: workers send their records and verdicts to the controller, which alone
writes files. Registered only when xdist is loaded."""

from __future__ import annotations

from typing import Any, Protocol

KEY = "jaxperf"


class _Session(Protocol):
    def worker_payload(self) -> dict[str, Any]: ...

    def merge_worker(self, data: dict[str, Any]) -> None: ...


def loaded(config: Any) -> bool:
    """Whether pytest-xdist is loaded: by its entry point ("xdist"), or by `-p xdist.plugin`
    / PYTEST_PLUGINS where plugin autoloading is off (PYTEST_DISABLE_PLUGIN_AUTOLOAD)."""
    manager = config.pluginmanager
    return bool(manager.hasplugin("xdist") or manager.hasplugin("xdist.plugin"))


def is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


def worker_count(config: Any) -> int:
    """How many pytest-xdist workers run this session's tests side by side; 0 when this is
    no worker (read from the session, not from the environment variable that xdist sets:
    a pytest run started by a test inherits that)."""
    return int(config.workerinput.get("workercount", 1)) if is_worker(config) else 0


class XdistHooks:
    """Controller side: merge what each worker recorded as it goes down."""

    def __init__(self, session: _Session) -> None:
        self.session = session

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get(KEY)
        if data:
            self.session.merge_worker(data)


def send(config: Any, session: _Session) -> None:
    """Worker side: hand everything recorded to the controller (plain JSON values)."""
    config.workeroutput[KEY] = session.worker_payload()
