"""What each `jaxperf ab` run must import from its own tree: the spec the command writes for
it, the packages found in its `--path` directories, and the check of the modules it loaded
(pure; the pytest plugin in worker.py runs the check inside each run).
"""

from __future__ import annotations

import contextlib
import json
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

CHECK_ENV = "JAXPERF_AB_CHECK"
# The exit status of a run stopped for a wrong import (pytest's own statuses are 0-5).
EXIT_WRONG_IMPORT = 9

# Found in a project's directories but not the code under test.
_NOT_CODE = frozenset({"conftest", "setup", "noxfile", "tasks", "docs", "doc", "__pycache__"})


@dataclass(frozen=True)
class Spec:
    """What one run must check; written by the command as JSON, read here."""

    side: str  # "base" or "head"
    tree: str  # this run's tree (repository top level)
    other_side: str
    other_tree: str
    paths: tuple[str, ...]  # the --path directories of this tree, first on sys.path
    packages: tuple[str, ...]  # the importable names found directly in them
    out: str  # where to write the result

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Spec:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        data["paths"], data["packages"] = tuple(data["paths"]), tuple(data["packages"])
        return cls(**data)


def find_packages(paths: Iterable[Path]) -> list[str]:
    """The names a test could import from `paths`: packages (directories with __init__.py)
    and modules directly in them, without test packages and project scaffolding."""
    names: set[str] = set()
    for directory in paths:
        try:
            entries = list(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and (entry / "__init__.py").is_file():
                name = entry.name
            elif entry.is_file() and entry.suffix == ".py":
                name = entry.stem
            else:
                continue
            if name.isidentifier() and name not in _NOT_CODE and not name.startswith("test"):
                names.add(name)
    return sorted(names)


def origin(module: ModuleType) -> str | None:
    """The file (or, for a namespace package, the directory) a module was loaded from."""
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return os.path.realpath(file)
    path = getattr(module, "__path__", None)
    for entry in list(path) if path is not None else []:
        return os.path.realpath(str(entry))
    return None


def _inside(path: str, root: str) -> bool:
    root = os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _installed() -> tuple[str, ...]:
    """Directories of the interpreter and its installed packages."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    dirs.update(p for key in ("stdlib", "platstdlib", "purelib", "platlib")
                if (p := sysconfig.get_paths().get(key)))  # fmt: skip
    with contextlib.suppress(AttributeError):  # missing from some virtualenvs' site module
        dirs.update(site.getsitepackages())
    return tuple(os.path.realpath(d) for d in dirs if d)


def problems(
    spec: Spec, modules: Mapping[str, ModuleType], final: bool
) -> tuple[list[str], dict[str, str]]:
    """(problems as one line each, {package: where it was imported from}) for the modules
    loaded now; `final`: the session is over, so a package never imported is a problem too."""
    found: dict[str, str] = {}
    out: list[str] = []
    paths = ", ".join(spec.paths)
    for name in spec.packages:
        module = modules.get(name)
        if module is None:
            continue
        where = origin(module) or "an unknown place"
        found[name] = where
        if not _inside(where, spec.tree):
            whose = f" (the {spec.other_side} tree)" if _inside(where, spec.other_tree) else ""
            out.append(
                f"the {spec.side} run imported {name} from {where}{whose}, not from the "
                f"{spec.side} tree {spec.tree}: its --path ({paths}) did not come first; "
                "uninstall that copy or pass --path with the directory that holds the package"
            )
    installed = _installed()
    for name, module in sorted(modules.items()):
        loaded = origin(module) if isinstance(module, ModuleType) else None
        if loaded is None or not _inside(loaded, spec.other_tree) or name in found:
            continue
        if any(_inside(loaded, d) for d in installed):
            continue
        out.append(
            f"the {spec.side} run imported {name} from {loaded}, in the {spec.other_side} tree "
            f"{spec.other_tree}: pass --path with the directory that holds {name.split('.')[0]} "
            "so that each run imports its own tree's copy"
        )
        break  # one line is enough: the rest of that package follows from it
    if final and not found and not out:
        out.append(
            f"the {spec.side} run imported none of {', '.join(spec.packages)} (found in its "
            f"--path: {paths}): pass --path with the directory that holds the package your "
            "tests import"
        )
    return out, found
