"""The documentation against the code: every command in a code block of the README and
the docs pages is one the code accepts (its `--jaxperf*` flags and values, or the `jaxperf`
subcommand with its arguments), and the reference generator covers every option."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_jaxperf import cli
from pytest_jaxperf.config import CHOICES, OPTIONS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FLAGS = {opt.flag: opt for opt in OPTIONS}
PROGRAM = re.compile(r"^(?:\.\./)?(?:\.venv/bin/)?(?:python3? -m )?(pytest|jaxperf)(?=\s|$)")


def _code_lines(page: Path) -> list[str]:
    """The lines of the page's code blocks that are not Python, plain text or output."""
    lines, kind = [], None
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            kind = None if kind is not None else (line[3:].strip() or "shell")
            continue
        if kind in ("shell", "yaml", "bash", "sh", "console"):
            lines.append(line)
    return lines


def _commands(page: Path) -> list[str]:
    """pytest and jaxperf commands: a yaml step's `run:` value, a shell line, each part of
    a `&&` chain; without comments."""
    found = []
    for line in _code_lines(page):
        text = re.sub(r"^\s*(?:-\s+)?run:\s*", "", line).strip()
        for part in re.split(r"\s*&&\s*", text):
            part = re.sub(r"^(?:[A-Z_]+=\S+\s+)+", "", part.strip())  # VAR=value prefixes
            match = PROGRAM.match(part)
            if match and not re.match(r"^\S+ [\w-]+:", part):  # "jaxperf ab: ..." is output
                found.append(part)
    return found


CASES = [
    pytest.param(page, command, id=f"{page.name}:{command[:60]}")
    for page in PAGES
    for command in _commands(page)
]


def _words(command: str) -> list[str]:
    command = re.sub(r"\$\{\{[^}]*\}\}", "X", command)  # GitHub expressions
    return shlex.split(command, comments=True)


def test_the_pages_hold_commands_to_check() -> None:
    programs = {PROGRAM.match(c).group(1) for _, c in (p.values for p in CASES)}  # type: ignore[union-attr]
    assert programs == {"pytest", "jaxperf"}
    assert len(CASES) >= 20


@pytest.mark.parametrize(("page", "command"), CASES)
def test_every_documented_command_is_accepted(page: Path, command: str) -> None:
    words = _words(command)
    program = PROGRAM.match(command).group(1)  # type: ignore[union-attr]
    start = next(i for i, w in enumerate(words) if w.endswith(program)) + 1
    args = words[start:]
    if program == "jaxperf":
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                cli.build_parser().parse_args(args)
            except (SystemExit, Exception) as exc:  # the parser raises its usage error
                pytest.fail(f"{page.name}: `{command}` is refused: {err.getvalue()}{exc}")
        return
    for word in args:
        if not word.startswith("--jaxperf"):
            continue
        flag, sep, value = word.partition("=")
        assert flag in FLAGS, f"{page.name}: `{command}`: no option {flag}"
        opt = FLAGS[flag]
        if sep and opt.kind in CHOICES:
            assert value in CHOICES[opt.kind], f"{page.name}: `{command}`: {flag}={value}"
        if sep and opt.kind == "float":
            float(value)
        if opt.kind == "bool":
            assert not sep, f"{page.name}: `{command}`: {flag} takes no value"


def test_the_reference_is_generated_from_every_option_and_subcommand() -> None:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "docs/hooks/reference.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    entries = reference.options_table().splitlines()
    assert len(entries) == len(OPTIONS)
    for opt, entry in zip(OPTIONS, entries):
        assert entry.startswith(f"- **`{opt.flag}") and f"(ini `{opt.dest}" in entry, entry
        assert opt.help.split(" (default")[0] in entry
        assert entry.count("default") <= opt.help.count("default") + 1
    text = reference.on_page_markdown(f"a\n{reference.OPTIONS_MARK}\n{reference.CLI_MARK}\n")
    for name in ("show", "compare", "merge", "export", "ab"):
        assert f"### `jaxperf {name}`" in text and f"usage: jaxperf {name}" in text
    assert reference.OPTIONS_MARK not in text and reference.CLI_MARK not in text
    page = (ROOT / "docs/reference.md").read_text()
    assert reference.OPTIONS_MARK in page and reference.CLI_MARK in page


def test_the_readme_starts_with_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```\n(.*?)\n```", readme, re.S | re.M)
    example, suite = blocks[0], blocks[1]
    assert "pip install" in example and "cd example_project" in example and "--jaxperf" in example
    ci = (ROOT / ".ci/run").read_text()
    assert suite in ci, "the README's test command is what .ci/run runs"
    assert sys.version_info >= (3, 10)


def _noxfile(monkeypatch: pytest.MonkeyPatch) -> Any:
    """noxfile.py as a module, under a stand-in for nox (not installed here): its matrix is
    computed as nox would compute it."""
    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    fake.session = lambda f: f  # type: ignore[attr-defined]
    fake.parametrize = lambda names, values: lambda f: f  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", fake)
    spec = importlib.util.spec_from_file_location("noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_declared_jax_range_is_the_tested_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """One tuple, `_jaxhooks.TESTED_JAX`, is the supported JAX range: pyproject.toml admits
    jax and jaxlib from its first to below the minor release after its last, and each of
    them; the refusal's `SUPPORTED`, the nox matrix, .ci/run, the README and the
    documentation's table follow it."""
    from packaging.specifiers import SpecifierSet

    from pytest_jaxperf.measure._jaxhooks import SUPPORTED, TESTED_JAX

    oldest, newest = TESTED_JAX[0], TESTED_JAX[-1]
    major, minor = map(int, newest.split(".")[:2])
    upper = f"{major}.{minor + 1}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    (deps,) = re.findall(r"^dependencies = (.*)$", pyproject, re.M)
    for name in ("jax", "jaxlib"):
        assert f'"{name}>={oldest},<{upper}"' in deps, deps
    bounds = SpecifierSet(f">={oldest},<{upper}")
    assert all(bounds.contains(v) for v in TESTED_JAX)
    assert not bounds.contains(f"{upper}.0")
    assert f"jax {oldest} - {major}.{minor}.x" == SUPPORTED

    nox = _noxfile(monkeypatch)
    assert [jax for _, jax in nox.MATRIX] == list(TESTED_JAX)
    assert nox.REFERENCE in TESTED_JAX
    # Both ends of the Python range are tested: the oldest JAX on the oldest Python, the
    # newest on the newest; and pyproject.toml claims exactly those Pythons.
    assert (nox.MATRIX[0][0], nox.MATRIX[-1][0]) == (nox.PYTHONS[0], nox.PYTHONS[-1])
    assert re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject) == list(
        nox.PYTHONS
    )
    assert f'requires-python = ">={nox.PYTHONS[0]}"' in pyproject
    # .ci/run reads the ends from the same tuple: no JAX version is written there.
    ci = (ROOT / ".ci/run").read_text()
    assert "TESTED_JAX" in ci and not re.search(r"jax[=-]+0\.\d", ci)

    readme = (ROOT / "README.md").read_text()
    assert f"JAX {oldest} to {major}.{minor}.x" in readme
    counting = (ROOT / "docs/counting.md").read_text()
    assert f"`jax>={oldest},<{upper}`" in counting
    rows = re.findall(r"^\| ([\d., ]+) \| (yes|no|read)", counting, re.M)
    tested_rows = {v for versions, tested in rows if tested == "yes" for v in versions.split(", ")}
    assert set(TESTED_JAX) <= tested_rows, tested_rows


def test_the_gating_page_lists_every_not_gated_code() -> None:
    from pytest_jaxperf.notgated import CODES

    rows = re.findall(
        r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", (ROOT / "docs/gating.md").read_text(), re.M
    )
    table = {name: (meaning, fix) for name, meaning, fix in rows if name not in ("runtime_rtol",)}
    assert list(table) == [c.name for c in CODES]
    for code in CODES:
        meaning, fix = table[code.name]
        assert meaning == code.meaning and fix.startswith(code.fix)
        assert f"--jaxperf-strict={code.name}" in fix


def test_the_cross_machine_tolerance_reads_the_same_in_help_and_docs() -> None:
    """--help gives the rtol and the factor it allows, as the pages do ("rtol 1.5, i.e. up to
    2.5x"): one of them alone reads as a different margin from the other."""
    from pytest_jaxperf.config import DEFAULT_CROSS_MACHINE_COMPILE_RTOL as RTOL

    (option,) = [o for o in OPTIONS if o.dest == "jaxperf_cross_machine_compile_rtol"]
    assert f"rtol {RTOL:g}, allows up to {1 + RTOL:g}x" in option.help
    for page in ("README.md", "docs/ci.md"):
        text = " ".join((ROOT / page).read_text().split())
        assert f"{1 + RTOL:g}x" in text and f"rtol {RTOL:g}" in text, page


def test_every_benchmark_file_the_pages_name_is_there() -> None:
    """A script or output cited as `benchmarks/...` exists (a retired script is cited by its
    outputs in benchmarks/results/, whose README says what it showed)."""
    cited = {
        path
        for page in PAGES
        for path in re.findall(r"`(benchmarks/[\w./-]+)`", page.read_text(encoding="utf-8"))
    }
    assert len(cited) >= 10
    assert [path for path in sorted(cited) if not (ROOT / path).exists()] == []
