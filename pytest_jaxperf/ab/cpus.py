"""`jaxperf ab --cpus`: the CPUs every run is confined to (Linux): the list it takes (the
syntax of `taskset -c`, or `all`), checked against the CPUs this process may use, the default
(one CPU, claimed so that two `jaxperf ab` on one machine take different ones), written back
for the header, and applied to each run."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SYNTAX = "all, or CPU numbers as taskset -c takes them, such as 1, 0-3 or 0,2"
# In the temporary directory, one per CPU: a `jaxperf ab` whose runs use that CPU by default
# holds an flock on it (the kernel drops it when the process ends, however it ends).
LOCK_NAME = "pytest-jaxperf-ab-cpu{}.lock"


# Beyond any machine's CPU numbers (Linux's CONFIG_NR_CPUS is at most 8192).
MAX_CPU = 65535
# What `--cpus all` parses to: no confining.
ALL: frozenset[int] = frozenset()


def parse(text: str) -> frozenset[int]:
    """The CPUs `text` names, ALL for "all"; ValueError (its message says what is expected)
    otherwise."""
    if text.strip() == "all":
        return ALL
    cpus: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"expected {SYNTAX}, got {text!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"expected {SYNTAX}, got {text!r}")
        if last > MAX_CPU:
            # Refused before a range of a billion CPUs is built as a set.
            raise ValueError(f"expected {SYNTAX}, CPU numbers up to {MAX_CPU}, got {text!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def available() -> frozenset[int] | None:
    """The CPUs this process may run on; None where the platform cannot confine a process."""
    if not hasattr(os, "sched_getaffinity") or not hasattr(os, "sched_setaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def default(allowed: frozenset[int] | None) -> frozenset[int] | None:
    """One CPU, the highest this process may use (what `claimed` prefers); None (not confined)
    where the platform cannot confine a process."""
    return frozenset({max(allowed)}) if allowed else None


@dataclass(frozen=True)
class Claim:
    """The default CPU this command took."""

    cpus: frozenset[int]
    shared: bool  # every allowed CPU was in use by another jaxperf ab: this one shares one
    # Why the claim could not be coordinated with other jaxperf ab commands (a lock file that
    # cannot be opened); None when it was.
    uncoordinated: str | None = None


# Where lock files are shared by every process of the machine, even those whose TMPDIR is
# their own (a CI job's): the first of these that is a writable directory, else the
# temporary directory. Another container sees none of them.
SHARED_LOCK_DIRS = ("/run/lock", "/var/lock", "/dev/shm")


# Names the directory of the CPU locks instead (several commands that must coordinate
# inside one container, say, or tests that must not see the machine's).
LOCK_DIR_ENV = "JAXPERF_AB_LOCK_DIR"


def lock_dir() -> Path:
    """Where the CPU locks are kept: $JAXPERF_AB_LOCK_DIR, else see SHARED_LOCK_DIRS."""
    if os.environ.get(LOCK_DIR_ENV):
        return Path(os.environ[LOCK_DIR_ENV])
    for name in SHARED_LOCK_DIRS:
        if os.path.isdir(name) and os.access(name, os.W_OK | os.X_OK):
            return Path(name)
    return Path(tempfile.gettempdir())


def _open_lock(path: Path) -> int:
    """A descriptor of the lock file at `path`, made when missing. An existing file is
    opened without O_CREAT: with fs.protected_regular (systemd's default) O_CREAT on
    another user's file in a sticky directory (/tmp) fails even though it may be read."""
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        # Others must be able to lock it too whatever our umask.
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o644)
        return fd


def try_lock(fd: int) -> bool:
    """Take an exclusive flock on `fd` without waiting; False (and `fd` closed) when another
    process holds it. ImportError where there is no flock (Windows)."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return True


@contextlib.contextmanager
def claimed(allowed: frozenset[int], directory: Path | None = None) -> Iterator[Claim]:
    """The default CPU, held for the block: the highest of `allowed` that no other `jaxperf ab`
    on this machine holds (two jobs on one CPU would each time the other), else the highest,
    shared. `directory` holds the lock files (default: the temporary directory)."""
    where = Path(directory) if directory is not None else lock_dir()
    for cpu in sorted(allowed, reverse=True):
        path = where / LOCK_NAME.format(cpu)
        try:
            fd = _open_lock(path)
        except OSError as exc:
            # Nowhere to coordinate (an unreadable file, a read-only directory): take it,
            # and say so.
            why = f"cannot open the CPU lock {path}: {exc.strerror or exc}"
            yield Claim(frozenset({cpu}), shared=False, uncoordinated=why)
            return
        if not try_lock(fd):  # held by another jaxperf ab
            continue
        try:
            yield Claim(frozenset({cpu}), shared=False)
        finally:
            os.close(fd)
        return
    yield Claim(frozenset({max(allowed)}), shared=True)


def problem(cpus: frozenset[int], allowed: frozenset[int] | None) -> str | None:
    """Why the runs cannot be confined to `cpus`, as one line; None when they can."""
    if allowed is None:
        return "--cpus needs a platform that confines a process to CPUs (Linux); leave it out"
    missing = cpus - allowed
    if missing:
        return (
            f"--cpus {label(cpus)}: CPU {label(missing)} is not among those this process may "
            f"use ({label(allowed)}); pick from those"
        )
    return None


def label(cpus: Iterable[int]) -> str:
    """`cpus` as taskset -c writes a list: runs of consecutive numbers as ranges."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def confine(cpus: frozenset[int] | None) -> Callable[[], None] | None:
    """What a run's child process calls before it starts (subprocess's preexec_fn): confine
    itself to `cpus`; None when every CPU is allowed."""
    if cpus is None:
        return None

    def child() -> None:
        os.sched_setaffinity(0, cpus)

    return child
