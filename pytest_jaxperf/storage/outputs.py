"""The files a --jaxperf run writes: their paths checked at start-up, the lock that keeps two
runs writing one file from losing each other's work, the whole-file replace (baseline, JSON
report) and the plain text writes (markdown, HTML) with the $GITHUB_STEP_SUMMARY append.

A path that is a symbolic link is written, and locked, at its target: a baseline linked to a
shared file updates that file rather than becoming a file of its own beside it.

filelock is imported only while a lock is taken, so a run that writes nothing shared pays
nothing for it."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..config import Settings

# How a file is used, which decides what must be writable:
# "read": only read (the baseline of a run that does not save): it must not be a directory;
# "replace": a temporary file in the same directory renamed over it (the baseline, the JSON
#            report), so its directory must be writable;
# "write" / "append": opened in place (markdown, HTML, history), so the file must be writable
#            when it exists, its directory when it does not.
Mode = Literal["read", "replace", "write", "append"]

# How long a run waits for another run's lock on the same file. Writers hold it only to
# re-read, merge and write one file (seconds at most), and an OS file lock dies with its
# process, so a run waiting this long is stuck behind a hung process: better to say so.
LOCK_TIMEOUT_S = 120.0

LOCK_SUFFIX = ".lock"


class OutputError(Exception):
    """A file could not be written; the message names the file and what to do."""


@dataclass(frozen=True)
class Output:
    """One file the run will write, and the option (as the user gave it) that named it."""

    option: str  # "--jaxperf-json", or "ini option jaxperf_json"
    path: Path
    mode: Mode
    locked: bool = False  # a lock file is created beside it, so its directory must be writable


def problem(out: Output) -> str | None:
    """Why `out` cannot be written, as one line naming the option, the path and the fix; None
    when it looks writable. Nothing is created: a run that records nothing writes nothing."""
    where = f"{out.option} {out.path}"
    if looped(out.path):
        return f"{where}: is a loop of symbolic links; pass the path of a file"
    path = target(out.path)
    if path.is_dir():
        return f"{where}: is a directory, not a file; pass the path of a file"
    if out.mode == "read":
        return None
    if out.mode == "replace" and path.exists() and not path.is_file():
        # os.replace would put a regular file in place of a device or a socket.
        return f"{where}: is not a regular file; pass the path of a file"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return (
            f"{where}: cannot create directory {path.parent}: {ancestor} is a file; "
            "pass another path or move that file"
        )
    in_place = out.mode != "replace" and path.exists()
    if (out.locked or not in_place) and not os.access(ancestor, os.W_OK | os.X_OK):
        return (
            f"{where}: directory {ancestor} is not writable; "
            "pass a path in a writable directory or fix its permissions"
        )
    if in_place and not os.access(path, os.W_OK):
        return f"{where}: file is not writable; fix its permissions or pass another path"
    if out.locked:
        lock = lock_path(path)
        if lock.is_dir() or (lock.is_symlink() and not lock.exists()):
            what = "a directory" if lock.is_dir() else "a symbolic link to nothing"
            return f"{where}: its lock file {lock} is {what}; remove it (a run creates it anew)"
    return None


def looped(path: Path) -> bool:
    """Whether `path` is (or goes through) a loop of symbolic links."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def resolved(path: Path) -> Path:
    """`path` made absolute with its links followed; a loop of links (which
    `Path.resolve()` raises RuntimeError for on Python 3.11) as far as it resolves."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.realpath(path))


def planned(settings: Settings) -> list[Output]:
    """The files `settings` names, in the order the run writes them: the baseline first, so
    that nothing written after it can keep it from being saved."""
    s = settings
    files = [
        Output(
            s.origin("jaxperf_baseline"),
            s.baseline,
            "replace" if s.save else "read",
            locked=s.save,
        )
    ]
    if s.json is not None:
        files.append(Output(s.origin("jaxperf_json"), s.json, "replace"))
    if s.markdown is not None:
        mode: Mode = "append" if is_step_summary(s.markdown) else "write"
        files.append(Output(s.origin("jaxperf_markdown"), s.markdown, mode))
    if s.history is not None:
        files.append(Output(s.origin("jaxperf_history"), s.history, "append", locked=True))
    if s.html is not None:
        files.append(Output(s.origin("jaxperf_html"), s.html, "write"))
    if s.export is not None:
        files.append(Output(s.origin("jaxperf_export"), s.export[1], "write"))
    return files


def startup_problem(settings: Settings) -> str | None:
    """The first file of the run that cannot be written (or read, for a baseline not being
    saved), or two options naming one file, as one line; None when all look fine."""
    files = planned(settings)
    for out in files:
        found = problem(out)
        if found is not None:
            return found
    return same_file(files)


def same_file(files: list[Output]) -> str | None:
    """Two of `files` that are one file, as one line: the later write would replace the
    earlier one (a report written over the baseline it was gated against, say)."""
    seen: dict[Path, Output] = {}
    for out in files:
        key = resolved(out.path)
        first = seen.setdefault(key, out)
        if first is not out:
            return (
                f"{first.option} and {out.option} both name {out.path}: the run would write one "
                "over the other; give each its own path"
            )
    return None


def is_step_summary(path: Path) -> bool:
    """Whether `path` is the file in $GITHUB_STEP_SUMMARY, which all steps of a GitHub
    Actions job share: it is appended to, never overwritten."""
    shared = os.environ.get("GITHUB_STEP_SUMMARY")
    if not shared:
        return False
    return resolved(Path(shared).expanduser()) == resolved(path)


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of the file at `path` and its stat, from one open file. OSError when it
    cannot be read, or is not a regular file: a FIFO would block the read until someone
    writes to it (forever), a directory cannot be read."""
    # Non-blocking, so that opening a FIFO returns at once; no effect on a regular file.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        # One read of the whole size, so that a big file is held once: pieces joined would
        # hold it twice meanwhile, and their freed memory often stays with the process.
        chunks = [os.read(fd, st.st_size + 1)]
        while chunks[-1] and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks), st
    finally:
        os.close(fd)


def target(path: Path) -> Path:
    """Where writing `path` lands: the end of its chain of symbolic links (itself if none)."""
    return Path(os.path.realpath(path))


def replace_text(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (or its pieces, one after the other) to `path` (its link's target) whole
    or not at all: a temporary file beside it, synced, then renamed over it; readers see the
    old file or the new one. The file keeps its permissions, or gets a plain open()'s when
    new."""
    path = target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: reading files (`jaxperf compare`) needs none of what it imports

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600.
        os.chmod(tmp, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                fh.writelines(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    """The existing file's permissions, or 0666 less the umask for a new file."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text(path: Path, text: str, *, append: bool = False) -> None:
    """Write `text` to `path` (creating its directories); with `append`, after what is there,
    separated from it by a blank line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not append:
        path.write_text(text, encoding="utf-8")
        return
    with path.open("a", encoding="utf-8") as fh:
        if fh.tell() > 0:
            text = "\n" + text
        fh.write(text)


def lock_path(path: Path) -> Path:
    """The lock file beside `path`: `baseline.json` -> `baseline.json.lock`."""
    return path.with_name(path.name + LOCK_SUFFIX)


@contextmanager
def locked(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the lock of `path` (an OS file lock on lock_path(path)) for the block; waits
    for another run holding it, at most `timeout` seconds (LOCK_TIMEOUT_S by default), then
    raises OutputError.

    The lock file stays behind afterwards: on Unix, removing a lock file that another
    process may be waiting on would let a third process lock a new file of the same name
    while the second still holds the old one."""
    from filelock import FileLock, Timeout

    path = target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    where = lock_path(path)
    wait = LOCK_TIMEOUT_S if timeout is None else timeout
    lock = FileLock(where, timeout=wait)
    try:
        lock.acquire()
    except Timeout:
        raise OutputError(
            f"{path}: another run still held its lock {where.name} after {wait:g} s; "
            "let it finish (or stop it) and run again"
        ) from None
    try:
        yield
    finally:
        lock.release()
