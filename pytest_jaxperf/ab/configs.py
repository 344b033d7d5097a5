"""The pytest configuration a run of `jaxperf ab` would find outside its own tree.

pytest looks for its configuration file from the run's directory upwards, past the top of
the repository when the tree holds none that applies. The head tree lies where the user keeps
it, the base worktree in a temporary directory: a stray `$TMPDIR/pytest.ini` (any local user
can write one into /tmp) would configure the base runs alone (rootdir /tmp, every test id
prefixed, every row "new": a silent pass). So the command compares what each tree would find
above itself and refuses to run when they differ; and every run gets `--confcutdir` at the top
of its tree, so that no `conftest.py` above it (`/tmp/conftest.py`, code another user wrote)
is imported."""

from __future__ import annotations

from pathlib import Path

from ..inifile import CONFIG_NAMES

# The section that makes a file of that name pytest's configuration; None: the name alone.
_SECTION = {
    "pyproject.toml": ("[tool.pytest.ini_options]", "[tool.pytest]"),
    "tox.ini": ("[pytest]",),
    "setup.cfg": ("[tool:pytest]",),
}


def applies(path: Path) -> bool:
    """Whether pytest would take the file at `path` as its configuration (read from its text;
    a pyproject.toml without a pytest table is only a last resort, not counted)."""
    sections = _SECTION.get(path.name)
    try:
        if sections is None:
            return path.is_file()
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(section in text for section in sections)


def first(start: Path, stop: Path | None = None) -> Path | None:
    """The first configuration file pytest would take from `start` upwards (up to `stop`
    included, when given); None when there is none."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            if applies(directory / name):
                return directory / name
        if directory == stop:
            break
    return None


def outside(project: Path, root: Path) -> Path | None:
    """The configuration file a run in `project` would read from above its tree's `root`:
    None when the tree has one of its own on the way up, or there is none above."""
    if first(project, stop=root) is not None:
        return None
    return first(root.parent)


def mismatch(base: tuple[Path, Path], head: tuple[Path, Path]) -> str | None:
    """Why the base and head runs ((project, tree root) each) would read different pytest
    configuration from outside their trees, as one line; None when they would not."""
    base_file, head_file = outside(*base), outside(*head)
    if base_file == head_file:
        return None
    if base_file is None:
        return (
            f"the head runs would be configured by {head_file}, above your repository, and "
            "the base runs (in a temporary directory) would not; move that configuration "
            "into the repository"
        )
    return (
        f"the base runs would be configured by {base_file}, above the temporary directory "
        f"they run in{'' if head_file is None else f' (the head runs by {head_file})'}; "
        "remove it, set TMPDIR to a directory without a pytest configuration above it, or "
        "give your project a pytest configuration file"
    )
