"""How the plugin starts git, and the environment `jaxperf ab` gives git and its test runs.

Git exports variables to its hooks (a pre-commit or pre-push hook is a natural place for a
performance check) that point every git started inside at the repository's own index, git
directory or work tree: `GIT_INDEX_FILE` would make a worktree of the base commit stage its
files in the user's index. They are removed. And git is started with `--no-optional-locks`,
so that a `git status` stopped at its timeout or by Ctrl-C leaves no `index.lock` behind
(the user's next commit would fail on it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# `git rev-parse --local-env-vars` (git 2.39): the variables that make git use another
# repository, index, object store or configuration than the one it finds from its cwd.
# GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n> are read only with GIT_CONFIG_COUNT.
REPOSITORY_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) without the repository variables."""
    env = dict(os.environ if base is None else base)
    for name in REPOSITORY_VARS:
        env.pop(name, None)
    return env


def command(*args: str) -> list[str]:
    """The argv of `git ARGS` that takes no optional lock."""
    return ["git", "--no-optional-locks", *args]


def run(
    args: list[str], cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `cwd`, as `command` and `environment` say, its output captured as text
    (no stdin: git never waits for a password). OSError where git cannot be started."""
    return subprocess.run(
        command(*args),
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
