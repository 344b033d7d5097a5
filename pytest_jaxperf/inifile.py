"""The settings `pytest --jaxperf` would resolve, for `jaxperf compare`: pytest's own config
reads the ini file when one could set a jaxperf option; otherwise the defaults and the given
flags, without importing pytest (whose import and config cost a third of a second)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .config import OPTIONS, ConfigError, Settings

# Every file name pytest reads its configuration from (8.x and 9.x); a name that a given
# pytest does not read only sends the lookup down the exact path.
CONFIG_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
# Every option the ini file may set for the CLI (the gating ones) is named jaxperf_<...>.
OPTION_PREFIX = b"jaxperf_"


def resolve(
    flags: Mapping[str, Any], config_file: Path | None = None, rootdir: Path | None = None
) -> tuple[Settings, Path | None]:
    """The settings with `flags` (values by option dest) over the ini file that
    `pytest --rootdir=ROOTDIR ROOTDIR -c CONFIG_FILE` started here would read, and that file
    (None when no ini file could set an option). Path options are relative to the current
    directory: the CLI reads only the gating ones. A bad value raises ConfigError."""
    here = Path.cwd()
    if config_file is None and rootdir is None and not could_set_options(here):
        return Settings.resolve(flags, {}, here, here, here), None
    return _through_pytest(flags, config_file, rootdir)


def could_set_options(start: Path) -> bool:
    """Whether a configuration file in `start` or a directory above holds the text `jaxperf_`:
    only such a file can set an option (the CLI applies no addopts)."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            try:
                if OPTION_PREFIX in (directory / name).read_bytes():
                    return True
            except OSError:  # no such file, mostly
                continue
    return False


def _through_pytest(
    flags: Mapping[str, Any], config_file: Path | None, rootdir: Path | None
) -> tuple[Settings, Path | None]:
    # pytest's own config object (private entry point: the public ones run a whole session),
    # so that finding and reading the ini file cannot drift from what a run does.
    import pytest
    from _pytest.config import get_config

    from . import plugin

    args = []
    if rootdir is not None:
        # And DIR as the run's path: pytest finds the ini file from its paths' directories.
        args += [f"--rootdir={rootdir}", str(rootdir)]
    if config_file is not None:
        args.append(f"--config-file={config_file}")
    args += [f"{o.flag}={flags[o.dest]}" for o in OPTIONS if flags.get(o.dest) is not None]
    # No conftest.py imported and no addopts applied: a conftest's own options would not parse.
    argv = ["-s", "--assert=plain", "--noconftest", *args]
    try:
        config = get_config(argv)
        try:
            if config.pluginmanager.get_plugin("jaxperf") is None:
                config.pluginmanager.register(plugin, "jaxperf")
            config.parse(argv, addopts=False)
            return plugin.settings_of(config), config.inipath
        finally:
            config._ensure_unconfigure()  # runs the clean-ups parsing registered
    except pytest.UsageError as exc:
        raise ConfigError(str(exc)) from None
