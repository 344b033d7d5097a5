"""The pytest11 entry point: options, marker and fixture. Everything else loads only with
--jaxperf on (see session.py), so that a run without it pays for this module alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from .config import MARKER_DOC, OPTIONS, ConfigError, MarkerLimits, Settings, convert

if TYPE_CHECKING:
    from .measure.fixture import JaxPerf
    from .session import JaxPerfSession  # noqa: F401  (named in a string below)

SESSION_KEY = pytest.StashKey["JaxPerfSession"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    # Declared with or without --jaxperf: a conftest.py that implements them must load.
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jaxperf", "JAX performance regressions (pytest-jaxperf)")
    for opt in OPTIONS:
        if opt.kind == "bool":
            group.addoption(
                opt.flag, action="store_true", dest=opt.dest, default=None, help=opt.help
            )
        else:
            metavars = {
                "path": "PATH",
                "int": "N",
                "mode": "gate|report|off",
                "clock": "cpu|wall|instructions",
                "runtime_clock": "cpu|wall|instructions",
                "export": "FORMAT:PATH",
                "codes": "CODE,...",
            }
            metavar = metavars.get(opt.kind, "NUMBER")
            group.addoption(opt.flag, dest=opt.dest, default=None, metavar=metavar, help=opt.help)
        parser.addini(opt.dest, help=f"{opt.help} (same as {opt.flag})", default="")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The marker's keywords, checked with or without --jaxperf (MarkerLimits is pure: no jax
    # imported), so that a typo fails the plain run too instead of passing silently.
    for item in items:
        if item.get_closest_marker("jaxperf") is not None:
            try:
                MarkerLimits.from_marks(item.nodeid, item.iter_markers("jaxperf"))
            except ConfigError as exc:
                raise pytest.UsageError(str(exc)) from None
    # Before `-m` deselects (pytest's own hook): a test that requests the jaxperf fixture is
    # recorded as a marked one is, so `-m jaxperf` selects it too.
    for item in items:
        if "jaxperf" in getattr(item, "fixturenames", ()) and not item.get_closest_marker(
            "jaxperf"
        ):
            item.add_marker("jaxperf")


def _enabled(config: pytest.Config) -> bool:
    cli = config.getoption("jaxperf", None)
    if cli is not None:
        return bool(cli)
    ini = config.getini("jaxperf")
    try:
        return bool(ini) and bool(convert("ini option jaxperf", "bool", ini, config.rootpath))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def settings_of(config: pytest.Config) -> Settings:
    """The plugin's settings as this pytest run resolves them (command line > ini > default);
    a bad value is a usage error naming it."""
    try:
        return Settings.resolve(
            {opt.dest: config.getoption(opt.dest, None) for opt in OPTIONS},
            {opt.dest: config.getini(opt.dest) for opt in OPTIONS},
            invocation_dir=config.invocation_params.dir,
            ini_base=config.inipath.parent if config.inipath else config.rootpath,
            rootdir=config.rootpath,
        )
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    # Declared even when off, so that suites run with --strict-markers pass.
    config.addinivalue_line("markers", MARKER_DOC)
    if not _enabled(config):
        return
    from . import _xdist
    from .session import JaxPerfSession
    from .storage import outputs, store

    moved = _rootdir_moved_by(config)
    if moved is not None:
        raise pytest.UsageError(moved)
    settings = settings_of(config)
    # Before any test runs: a path that cannot be written would otherwise fail only at the
    # end, after the whole run.
    problem = outputs.startup_problem(settings)
    if problem is not None:
        raise pytest.UsageError(f"pytest-jaxperf: {problem}")
    try:
        base = store.read(settings.baseline, lazy=True)
    except store.BaselineError as exc:
        raise pytest.UsageError(f"pytest-jaxperf: {exc}") from None
    if settings.tolerances.under_valgrind:
        _under_valgrind(config, settings.tolerances.compile_clock == "instructions")
        from .measure import instructions

        if instructions.native_pass():  # writes nothing: the valgrind run does
            import dataclasses

            settings = dataclasses.replace(
                settings, save=False, json=None, markdown=None, html=None, history=None,
                export=None,
            )  # fmt: skip
    session = JaxPerfSession(config, settings, base)
    # Asked once, before anything reads the environment: the reference compile's choices
    # below compare this machine with the baseline's, as the hooks name it.
    session.environment_changes  # noqa: B018
    session.configure_dispatch()
    session.prestart_reference()
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "jaxperf-session")
    if _xdist.loaded(config) and not _xdist.is_worker(config):
        config.pluginmanager.register(_xdist.XdistHooks(session), "jaxperf-xdist")


# The files pytest reads its ini options from.
_INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _rootdir_moved_by(config: pytest.Config) -> str | None:
    """One line where a path option given as two arguments (`--jaxperf-baseline PATH`) moved
    pytest's rootdir: pytest finds the rootdir before it knows plugins' options, takes PATH
    for a test path, and a PATH outside the tests moves the rootdir above them (their ini
    file is then ignored and every test id changes: the whole run is "new"). None when it
    did not."""
    import os
    from pathlib import Path

    flags = {opt.flag for opt in OPTIONS if opt.kind == "path"}
    args = list(config.invocation_params.args)
    started_in = config.invocation_params.dir
    tests = [started_in / str(a).split("::", 1)[0] for a in config.args] or [started_in]
    base = Path(os.path.commonpath([os.path.abspath(p) for p in tests]))
    root = config.rootpath
    if config.inipath is not None or root == base or not base.is_relative_to(root):
        return None  # an ini file was found, or the rootdir is where the tests are
    # The ini file pytest would have found from the tests, had PATH not moved the rootdir.
    below = [d for d in (base, *base.parents) if d != root and d.is_relative_to(root)]
    if not any((d / name).is_file() for d in below for name in _INI_FILES):
        return None
    for flag, value in zip(args, args[1:]):
        if flag not in flags:
            continue
        path = Path(os.path.abspath(started_in / value))
        if Path(os.path.commonpath([base, path])) == root:
            return (
                f"pytest-jaxperf: {flag} {value}: pytest took {value} for a test path and "
                f"moved its rootdir to {root} (it reads the rootdir before plugins' options); "
                f"write {flag}={value}"
            )
    return None


def _in_valgrind_child(compiles: bool) -> None:
    """The valgrind child's start: the clocks' self-check (a usage error when it fails), the
    compile clock's phase clock where `compiles`, the private compilation cache's hook."""
    from .measure import instructions

    problem = instructions.self_check()
    if problem is not None:
        raise pytest.UsageError(f"pytest-jaxperf: {problem}")
    if compiles:
        from .measure.recorder import RECORDER

        RECORDER.phase_clock = instructions.PhaseClock(instructions.callgrind())
        counted = instructions.gc_counted()
        if counted is not None:
            print(counted, flush=True)
    folder = instructions.private_cache()
    if folder is not None:
        import atexit

        from .measure import _jaxhooks

        atexit.register(instructions.remove_cache)
        problem = _jaxhooks.cache_key_without_topology(folder)
        if problem is not None:  # the parent found the hook: not expected
            print(f"jaxperf: instructions clock: compiling under valgrind ({problem})")


def _under_valgrind(config: pytest.Config, compiles: bool = False) -> None:
    """For the instructions clocks: in the parent, check what they need (exit 4 with the
    reason) and re-execute this pytest under valgrind; in that child, the recorder counts
    compile phases where `compiles` (the compile clock's)."""
    import os
    import sys

    from . import _xdist
    from .measure import instructions

    if _xdist.is_worker(config):
        # Only a controller that refused none of xdist's ways of starting workers gets here
        # (see below); the workers run outside valgrind, whatever environment they inherit.
        reason = (
            "pytest-jaxperf: the instructions clock counts in one valgrind process; pytest-xdist "
            "workers run outside it: run without -n, --dist or --tx (or add -p no:xdist)"
        )
        config.pluginmanager.register(_xdist.StopWorker(reason), "jaxperf-stop-worker")
        return
    if instructions.native_pass():
        # The native pass before valgrind's run: the child's own path, so that XLA gets the
        # same programs (with the same metadata) to compile; nothing counted or written.
        from .measure import _jaxhooks

        _jaxhooks.cache_key_without_topology(instructions.native_pass() or "")
        return
    if instructions.under_valgrind():
        _in_valgrind_child(compiles)
        return
    # However xdist was asked to start workers: they would run outside valgrind.
    workers = _xdist.distribution(config)
    flag = f"--jaxperf-{'compile' if compiles else 'runtime'}-clock=instructions"
    problem = instructions.startup_problem(os.environ.get("JAX_PLATFORMS"), workers, flag)
    if problem is not None:
        raise pytest.UsageError(f"pytest-jaxperf: {problem}")
    # The child writes to the terminal itself: give it the real stdout and stderr back.
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    from .measure import _jaxhooks

    # The compile clock counts each compile: the native pass would make them cache loads.
    no_cache = instructions.COMPILES_COUNTED if compiles else _jaxhooks.cache_key_problem()
    instructions.reexec(sys.orig_argv, os.environ, instructions.dump_dir(), no_cache)


@pytest.fixture
def jaxperf(request: pytest.FixtureRequest) -> JaxPerf:
    """Benchmarks, no_recompile and scaling checks; requesting it marks the test for recording."""
    from .config import MarkerLimits
    from .measure.fixture import JaxPerf
    from .measure.timing import TimingConfig
    from .session import LIMITS_KEY

    session = request.config.stash.get(SESSION_KEY, None)
    nodeid = request.node.nodeid
    if session is None:
        return JaxPerf(nodeid, rootdir=request.config.rootpath)
    limits = request.node.stash.get(LIMITS_KEY, MarkerLimits())
    s = session.settings
    timing = TimingConfig(
        min_rounds=limits.rounds or s.min_rounds,
        max_time=s.max_time if limits.max_time is None else limits.max_time,
    )
    return JaxPerf(
        nodeid,
        lambda: session.scopes.get(nodeid),
        timing=timing,
        timing_mode=s.timing_mode,
        rootdir=request.config.rootpath,
        count_instructions=s.tolerances.runtime_clock == "instructions",
        progress=_terminal_line(request.config),
    )


def _terminal_line(config: pytest.Config) -> Callable[[str], None]:
    """Writes a line to the terminal while a test runs, past pytest's capture of its output
    (as pytest's live logging does)."""
    import contextlib

    def write(line: str) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capman = config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            reporter.write_line(line)

    return write
