"""MkDocs hook: the reference page's tables, generated from the code when the site is built.

`<!-- jaxperf:options -->` becomes the table of every `--jaxperf*` flag and its ini option
(from `pytest_jaxperf.config.OPTIONS`, the table that also makes the flags), and
`<!-- jaxperf:cli -->` the usage and options of every `jaxperf` subcommand (from the
command's own argparse parser), so that a new option cannot miss the documentation."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from pytest_jaxperf import cli
from pytest_jaxperf.config import CHOICES, OPTIONS

OPTIONS_MARK = "<!-- jaxperf:options -->"
CLI_MARK = "<!-- jaxperf:cli -->"
_VALUE = {"path": "PATH", "float": "X", "int": "N", "export": "FORMAT:PATH", "codes": "CODE,..."}


def options_table() -> str:
    """One entry per option: the flag with its values, the ini option, the default, what it
    does (a list: a five-column table is too narrow to read)."""
    entries = []
    for opt in OPTIONS:
        if opt.kind == "bool":
            usage, ini = opt.flag, f"`{opt.dest} = true`"
        else:
            value = (
                "|".join(CHOICES[opt.kind])
                if opt.kind in CHOICES
                else _VALUE.get(opt.kind, opt.kind.upper())
            )
            usage, ini = f"{opt.flag}={value}", f"`{opt.dest}`"
        unset = opt.default in (None, "", False) or opt.default == frozenset()
        default = "" if unset else f", default `{opt.default}`"
        # The default is said once, in the parentheses.
        text = re.sub(r" \(default [^()]*\)$", "", opt.help) if default else opt.help
        entries.append(f"- **`{usage}`** (ini {ini}{default}): {text}.")
    return "\n".join(entries)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    """Each subcommand's help, as `jaxperf COMMAND --help` prints it, in a code block."""
    os.environ.setdefault("COLUMNS", "100")  # argparse wraps at the terminal's width
    parser = cli.build_parser()
    parts = []
    for name, sub in _subcommands(parser).items():
        parts += [f"### `jaxperf {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if OPTIONS_MARK in markdown:
        markdown = markdown.replace(OPTIONS_MARK, options_table())
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    return markdown
