"""pytest-xdist: the controller hands each worker the environment changes its plugins' hooks
made; workers send their records and verdicts to the controller, which alone writes files.
Registered only when xdist is loaded."""

from __future__ import annotations

from typing import Any, Protocol

import pytest

KEY = "jaxperf"
# The controller's `pytest_jaxperf_environment` changes, in each worker's workerinput.
ENVIRONMENT_KEY = "jaxperf_environment"


class _Session(Protocol):
    def worker_payload(self) -> dict[str, Any]: ...

    def add_worker_results(self, data: dict[str, Any]) -> None: ...

    def worker_collected(self, ids: list[str]) -> None: ...

    def environment_json(self) -> dict[str, Any]: ...


def loaded(config: Any) -> bool:
    """Whether pytest-xdist is loaded: by its entry point ("xdist"), or by `-p xdist.plugin`
    / PYTEST_PLUGINS where plugin autoloading is off (PYTEST_DISABLE_PLUGIN_AUTOLOAD)."""
    manager = config.pluginmanager
    return bool(manager.hasplugin("xdist") or manager.hasplugin("xdist.plugin"))


def is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


def controller_environment(config: Any) -> dict[str, Any] | None:
    """On a worker: the environment changes its controller made (hookcalls.py); None where
    this is no worker, or its controller sent none."""
    if not is_worker(config):
        return None
    handed = config.workerinput.get(ENVIRONMENT_KEY)
    return handed if isinstance(handed, dict) else None


def worker_count(config: Any) -> int:
    """How many pytest-xdist workers run this session's tests side by side; 0 when this is
    no worker (read from the session, not from the environment variable that xdist sets:
    a pytest run started by a test inherits that)."""
    return int(config.workerinput.get("workercount", 1)) if is_worker(config) else 0


def distribution(config: Any) -> str | None:
    """How pytest-xdist would start other pytest processes for this session, in the words of
    its options ("-n 2", "--dist load --tx 2*popen", "--looponfail"); None when it starts
    none. Read from the options xdist resolved before pytest_configure, so `-n`, `-d`,
    `--dist` with `--tx`, and all of them from ini addopts or PYTEST_ADDOPTS alike."""
    if not loaded(config) or is_worker(config):
        return None
    option = config.option
    if getattr(option, "looponfail", False):
        return "--looponfail"
    tx = list(getattr(option, "tx", None) or [])
    dist = getattr(option, "dist", "no")
    if dist == "no" or not tx:
        return None
    workers = getattr(option, "numprocesses", None)
    if workers:
        return f"-n {workers}"
    return f"--dist {dist} --tx {' '.join(tx)}"


class XdistHooks:
    """Controller side: add what each worker recorded as it goes down."""

    def __init__(self, session: _Session) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        # Before the worker starts: it gates and saves in the controller's environment.
        node.workerinput[ENVIRONMENT_KEY] = self.session.environment_json()

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get(KEY)
        if data:
            self.session.add_worker_results(data)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.session.worker_collected(ids)


def send(config: Any, session: _Session) -> None:
    """Worker side: hand everything recorded to the controller (plain JSON values)."""
    config.workeroutput[KEY] = session.worker_payload()


class StopWorker:
    """Registered in a worker that must not run tests (a reason found at its start-up): it
    runs none and stops the session with `reason`, which xdist's controller shows as one
    line. Raising at a worker's start-up instead shows a traceback per worker, and xdist
    replaces a crashed worker, without end where no -n bounds the restarts."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @pytest.hookimpl(tryfirst=True)  # before xdist's own loop, which waits for tests
    def pytest_runtestloop(self, session: Any) -> bool:
        session.shouldstop = self.reason
        return True
