"""Git for `jaxperf ab`: the repository, the two commits, and the temporary worktree of the base
commit, removed whatever happens (an error, Ctrl-C, SIGTERM from a cancelled CI job).

The user's working tree is only read (git rev-parse, git status, without optional locks); the
base commit is checked out with `git worktree add --detach` into a directory of its own outside
the repository, so no branch, index or file of the user's changes. Git runs without the
variables a git hook exports (`gitenv`): the worktree gets its own index, not the user's."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from ..storage import gitenv


class GitError(Exception):
    """A git state or ref `jaxperf ab` cannot work with; the message names it and the fix."""


def git(args: list[str], cwd: Path) -> str:
    """stdout of `git ARGS` run in `cwd`; GitError with git's own message when it fails."""
    try:
        proc = gitenv.run(args, cwd)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH); jaxperf ab needs it") from None
    except OSError as exc:
        raise GitError(f"git {' '.join(args)} could not be started: {exc}") from None
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise GitError(
            f"git {' '.join(args)} failed: {message[-1] if message else proc.returncode}"
        )
    return proc.stdout


@dataclass(frozen=True)
class Head:
    """The user's checkout: what the head runs measure."""

    root: Path  # the repository's top level
    commit: str
    changed: int  # uncommitted changes to tracked files (they are measured too)


def repository(cwd: Path) -> Path:
    """The top level of the git working tree that holds `cwd`."""
    try:
        return Path(git(["rev-parse", "--show-toplevel"], cwd).strip()).resolve()
    except GitError:
        raise GitError(
            f"{cwd} is not inside a git working tree; run jaxperf ab in a checkout of your "
            "repository"
        ) from None


def resolve(ref: str, root: Path) -> str:
    """The commit `ref` names (a branch, tag, sha, origin/main, HEAD~1, ...)."""
    if not ref or ref.startswith("-"):
        raise GitError(f"--base {ref!r}: expected a git ref such as origin/main or HEAD~1")
    try:
        # No --end-of-options (git >= 2.30): a ref starting with "-" is refused above.
        return git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).strip()
    except GitError:
        try:
            git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], root)
        except GitError:
            raise GitError(no_commits(root)) from None
        try:
            shallow = git(["rev-parse", "--is-shallow-repository"], root).strip() == "true"
        except GitError:
            shallow = False
        hint = (
            "this clone is shallow: fetch the history (actions/checkout: fetch-depth: 0)"
            if shallow
            else "fetch it first (git fetch origin), or check the spelling"
        )
        raise GitError(f"--base {ref}: no such commit in {root}; {hint}") from None


def no_commits(root: Path) -> str:
    """What to say of a repository whose HEAD names no commit (git init, nothing committed)."""
    return (
        f"{root} has no commits yet: commit your code first; jaxperf ab compares your "
        "checkout with a base commit"
    )


def head(root: Path) -> Head:
    """The checkout to measure as head: refused while a merge or rebase left unmerged paths,
    whose conflict markers would be measured as code."""
    try:
        commit = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], root).strip()
    except GitError:
        raise GitError(no_commits(root)) from None
    unmerged = git(["diff", "--name-only", "--diff-filter=U"], root).split()
    if unmerged:
        raise GitError(
            f"{root} has unmerged paths ({', '.join(unmerged[:3])}"
            f"{', ...' if len(unmerged) > 3 else ''}): resolve the conflict or abort the "
            "merge/rebase, then run jaxperf ab again"
        )
    changed = git(["status", "--porcelain", "--untracked-files=no"], root).splitlines()
    return Head(root=root, commit=commit, changed=len(changed))


@contextmanager
def base_worktree(root: Path, commit: str, parent: Path) -> Iterator[Path]:
    """`commit` checked out (detached) at `parent`/base for the duration of the block; the
    worktree is removed afterwards however the block ends. Hooks are not run: a
    post-checkout hook of the repository has no business in a measurement."""
    path = parent / "base"
    try:
        git(
            ["-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet",
             str(path), commit],
            root,
        )  # fmt: skip
        yield path.resolve()
    finally:
        remove(root, path)


def remove(root: Path, path: Path) -> None:
    """Remove the worktree at `path` and git's record of it, even when the checkout was cut
    short (Ctrl-C during `git worktree add`) or git refuses (a locked or broken worktree)."""
    if path.exists() or _registered(root, path):
        try:
            git(["worktree", "remove", "--force", "--force", str(path)], root)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
            # Drops the records of worktrees whose directory is gone: ours now.
            with suppress(GitError):
                git(["worktree", "prune"], root)
    shutil.rmtree(path, ignore_errors=True)


def _registered(root: Path, path: Path) -> bool:
    try:
        listing = git(["worktree", "list", "--porcelain"], root)
    except GitError:
        return False
    target = os.path.realpath(path)
    return any(
        line.startswith("worktree ") and os.path.realpath(line[9:]) == target
        for line in listing.splitlines()
    )


# The temporary directories of `jaxperf ab` (the base worktree and the runs' files), and the
# file in each that its command holds a lock on for as long as it runs.
SCRATCH_PREFIX = "jaxperf-ab-"
OWNER = ".owner"


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A new temporary directory for one command, locked as its own while the block runs
    (`sweep` tells a killed command's leftovers by that lock), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX)).resolve()
    fd = None
    try:
        with suppress(ImportError):  # no flock (Windows): nothing to sweep there either
            fd = _lock(path / OWNER, create=True)
        yield path
    finally:
        if fd is not None:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


def sweep(root: Path) -> list[Path]:
    """Remove what killed `jaxperf ab` commands (SIGKILL, the OOM killer, a lost machine) left
    in the temporary directory: each of this user's scratch directories whose owner lock is
    free, with its base worktree and, when it belongs to `root`'s repository, git's record of
    it. Returns the directories removed. A directory still locked belongs to a command that
    is running; one without the lock file is left alone (its command may be starting)."""
    removed = []
    for path in sorted(Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*")):
        try:
            if path.stat().st_uid != os.getuid() or not path.is_dir():
                continue
            fd = _lock(path / OWNER, create=False)
        except (OSError, AttributeError, ImportError):  # gone, locked; Windows: no getuid
            continue
        try:
            remove(root, path / "base")
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(path)
    return removed


def _lock(path: Path, create: bool) -> int:
    """A descriptor holding an exclusive lock on `path`; OSError when another holds it (or
    the platform has no flock: Windows keeps no such leftovers to sweep)."""
    from .cpus import try_lock

    fd = os.open(path, os.O_RDONLY | (os.O_CREAT if create else 0), 0o600)
    if not try_lock(fd):
        raise OSError(f"{path} is locked by a running jaxperf ab")
    return fd
