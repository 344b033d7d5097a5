"""The package's layout as rules: which folders may import jax and pytest, and which way
data flows between them (measure -> record -> compare -> report)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_jaxperf"

# The pytest side: the entry point, the session, its xdist glue, the hooks other plugins
# implement and their calls, the fixture, the ini-file reader for `jaxperf compare`, and
# ab's worker plugin and terminal colours.
PYTEST_ALLOWED = {
    "plugin", "session", "_xdist", "hookspecs", "hookcalls", "inifile", "measure.fixture",
    "ab.worker", "ab.command",
}  # fmt: skip
# The pure core: gating rules and the records they read.
CORE = {
    "model", "compare", "matching", "causes", "diagnose", "environment", "config", "confirmation",
    "notgated", "notrun", "reference_plan",
}  # fmt: skip
# What each part may import from the package (itself always).
MAY_IMPORT = {
    "core": CORE,
    "measure": CORE,
    "storage": CORE,
    "report": CORE | {"storage"},
}


def _modules() -> dict[str, set[str]]:
    """Each module (dotted, without the package) -> the names it imports, resolved."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_init else parts)
        here = ["pytest_jaxperf", *(parts[:-1])]
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if not node.level:
                    names.add(node.module or "")
                    continue
                base = ".".join(here[: len(here) - node.level + 1])
                if node.module:
                    names.add(f"{base}.{node.module}")
                else:
                    names.update(f"{base}.{alias.name}" for alias in node.names)
        found[name] = names
    return found


MODULES = _modules()


def _part(module: str) -> str:
    top = module.split(".")[0]
    if module in CORE:
        return "core"
    return top


def _internal(names: set[str]) -> set[str]:
    """The package's own modules among `names`, as core module names or folder names."""
    out = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != "pytest_jaxperf" or len(parts) < 2:
            continue
        out.add(parts[1])
    return out


def test_the_layout_is_the_one_these_rules_describe() -> None:
    assert {"measure", "storage", "report", "ab"} <= {m.split(".")[0] for m in MODULES}
    assert set(MODULES) >= CORE
    assert {m for m in MODULES if "." not in m} - CORE == {
        "", "__main__", "_xdist", "cli", "hookcalls", "hookspecs", "inifile", "plugin", "session",
        "baseline_save", "measure", "storage", "report", "ab",
    }  # fmt: skip


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_measure_imports_jax(module: str) -> None:
    jax = {n for n in MODULES[module] if n.split(".")[0] in ("jax", "jaxlib")}
    if module.split(".")[0] != "measure":
        assert not jax, f"{module} imports {sorted(jax)}: JAX belongs in measure/"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_the_pytest_side_imports_pytest(module: str) -> None:
    used = {n for n in MODULES[module] if n.split(".")[0] in ("pytest", "_pytest")}
    if module not in PYTEST_ALLOWED:
        assert not used, f"{module} imports {sorted(used)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _part(m) in MAY_IMPORT))
def test_data_flows_one_way(module: str) -> None:
    part = _part(module)
    allowed = MAY_IMPORT[part] | ({part} if part != "core" else set())
    reached = _internal(MODULES[module]) - {""}
    assert reached <= allowed, f"{module} ({part}) imports {sorted(reached - allowed)}"


# Modules of an optional extra, imported only where it is installed (store.py falls back).
OPTIONAL = {"storage.typed": "msgspec"}


@pytest.mark.e2e
def test_outside_measure_and_the_pytest_side_nothing_heavy_is_imported() -> None:
    import importlib.util

    light = sorted(
        f"pytest_jaxperf.{m}" if m else "pytest_jaxperf"
        for m in MODULES
        if m.split(".")[0] != "measure"
        and m not in PYTEST_ALLOWED
        and m != "__main__"
        and (m not in OPTIONAL or importlib.util.find_spec(OPTIONAL[m]) is not None)
    )
    heavy = ("jax", "jaxlib", "numpy", "scipy", "matplotlib", "pytest", "_pytest")
    code = (
        "import importlib, sys\n"
        f"for name in {light!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert len(light) > 20
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("module", ["pytest_jaxperf", "pytest_jaxperf.model"])
@pytest.mark.parametrize(("old", "new"), [("TestRecord", "RecordedTest"), ("Report", "RunRecord")])
def test_renamed_public_names_still_import_with_a_warning(module: str, old: str, new: str) -> None:
    import importlib

    from pytest_jaxperf import model

    with pytest.warns(DeprecationWarning, match=f"{old} is renamed {new}") as caught:
        found = getattr(importlib.import_module(module), old)
    assert found is getattr(model, new)
    assert caught[0].filename == __file__  # the warning points at the importing line


def test_the_version_is_written_once() -> None:
    import importlib.metadata

    import pytest_jaxperf

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert importlib.metadata.version("pytest-jaxperf") == pytest_jaxperf.__version__


def test_the_architecture_page_describes_this_tree() -> None:
    section = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    tree = section.split("```text", 1)[1].split("```", 1)[0]
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert {line.split("/")[0].split()[-1] for line in tree.splitlines()[2:] if line} == folders
    for module in MODULES:
        leaf = module.split(".")[-1]
        if leaf and leaf not in folders and leaf not in ("__main__",):
            assert f"`{leaf}.py`" in section, f"docs/architecture.md lacks {module}"


def test_every_exported_name_is_documented() -> None:
    import pytest_jaxperf

    section = (PACKAGE.parent / "docs" / "api.md").read_text()
    for name in pytest_jaxperf.__all__:
        assert f"`{name}`" in section, name


def _storage_graph() -> dict[str, set[str]]:
    """storage module -> the storage modules it imports (at any depth of its code)."""
    storage = {m.split(".")[1] for m in MODULES if m.startswith("storage.")}
    graph: dict[str, set[str]] = {}
    for module in storage:
        names = MODULES[f"storage.{module}"]
        graph[module] = {
            n.split(".")[2]
            for n in names
            if n.startswith("pytest_jaxperf.storage.") and n.split(".")[2] in storage
        } - {module}
    return graph


def test_the_storage_modules_import_each_other_in_one_direction() -> None:
    # read (file -> entries -> records), merge (one Resave), write: a circle between two of
    # them (entries and store imported each other) is where a policy starts to bounce.
    graph = _storage_graph()
    assert graph["entries"] == {"errors"}
    seen: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(module: str, path: tuple[str, ...]) -> None:
        assert seen.get(module) != 1, f"import circle: {' -> '.join((*path, module))}"
        if seen.get(module) == 2:
            return
        seen[module] = 1
        for other in sorted(graph[module]):
            walk(other, (*path, module))
        seen[module] = 2

    for module in sorted(graph):
        walk(module, ())


def test_no_module_uses_another_modules_private_names() -> None:
    # A leading underscore says "this module's own"; the package's private modules
    # (_jaxhooks, _xdist) are whole modules, imported as such.
    modules = {p.stem for p in PACKAGE.rglob("*.py")}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        internal: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("pytest_jaxperf")
            ):
                for alias in node.names:
                    internal.add(alias.asname or alias.name)
                    if alias.name.startswith("_") and alias.name not in modules:
                        found.append(f"{path.name}: from {node.module} import {alias.name}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in internal
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found


# Test files that still import a benchmark script's internals through conftest's
# `benchmark_module`: to be tested through their command line instead (issue 51).
IMPORTS_A_SCRIPT = {"test_gpu_check.py": "gpu_check", "test_traps_caught.py": "traps_caught",
                    "test_big_files.py": "scale"}  # fmt: skip


def test_no_test_imports_a_benchmark_script() -> None:
    """Tests run benchmarks/ scripts as a user does, in a subprocess; none imports one (nor
    puts benchmarks/ on sys.path), except the files listed above, each its one script."""
    tests = PACKAGE.parent / "tests"
    scripts = {p.stem for p in (PACKAGE.parent / "benchmarks").glob("*.py")}
    found: dict[str, set[str]] = {}
    for path in sorted(tests.glob("*.py")):
        if path.name == "conftest.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "benchmark_module":
                names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            hits = {n.split(".")[0] for n in names} & (scripts | {"benchmarks"})
            found.setdefault(path.name, set()).update(hits)
    imports = {name: hits for name, hits in found.items() if hits}
    assert imports == {name: {script} for name, script in IMPORTS_A_SCRIPT.items()}


# Functions still over the limit, each to be split as its module is next worked on: the list
# only shrinks (a new long function fails the test below), argparse tables included: one
# helper per subcommand or group of options.
LONG_FUNCTIONS: set[str] = set()
MAX_FUNCTION_LINES = 60


def test_no_function_grows_past_sixty_lines() -> None:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.add(f"{path.relative_to(PACKAGE).as_posix()}:{node.name}")
    assert found <= LONG_FUNCTIONS, f"new functions over {MAX_FUNCTION_LINES} lines"
    # One split (or removed): take it off the list.
    assert found >= LONG_FUNCTIONS, f"no longer long: {sorted(LONG_FUNCTIONS - found)}"
