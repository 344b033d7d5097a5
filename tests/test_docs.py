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
from pathlib import Path

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


def test_the_declared_jax_range_is_the_tested_one() -> None:
    """pyproject.toml's jax and jaxlib bounds: from the oldest version the nox matrix tests
    to below the minor release after its newest (0.11 is read, not tested)."""
    import ast

    (deps,) = re.findall(r"^dependencies = (.*)$", (ROOT / "pyproject.toml").read_text(), re.M)
    nox = ast.parse((ROOT / "noxfile.py").read_text())
    names = {
        t.id: node.value for node in nox.body if isinstance(node, ast.Assign)
        for t in node.targets if isinstance(t, ast.Name)
    }  # fmt: skip
    newest = ast.literal_eval(names["NEWEST"])
    versions = [newest if isinstance(e, ast.Name) else ast.literal_eval(e)
                for e in names["JAX_VERSIONS"].elts]  # fmt: skip
    oldest = min(versions, key=lambda v: tuple(map(int, v.split("."))))
    major, minor = map(int, newest.split(".")[:2])
    for name in ("jax", "jaxlib"):
        assert f'"{name}>={oldest},<{major}.{minor + 1}"' in deps, deps


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
