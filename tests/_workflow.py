"""The steps of a GitHub Actions workflow or composite action, read as GitHub reads the subset
of YAML they use (a step's scalars, its `run: |` block, its `env:` and `with:` mappings), and
run here: `${{ ... }}` filled in as GitHub fills it in, each `run` in bash as GitHub's default
shell starts it, and `gh` replaced by a shim that records its arguments."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Step:
    name: str = ""
    uses: str = ""
    condition: str = ""  # its `if:`
    run: str = ""
    shell: str = ""
    env: dict[str, str] = field(default_factory=dict)
    with_: dict[str, str] = field(default_factory=dict)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _mapping(block: list[str]) -> dict[str, str]:
    """`key: value` lines at the block's own indentation; a `|` value is the deeper lines."""
    depth = min(len(b) - len(b.lstrip()) for b in block if b.strip())
    mapping: dict[str, str] = {}
    key = ""
    for b in block:
        if not b.strip() or b.strip().startswith("#"):
            continue
        if len(b) - len(b.lstrip()) > depth:
            mapping[key] += ("\n" if mapping[key] else "") + b.strip()
            continue
        key, _, value = b.strip().partition(":")
        value = re.sub(r"\s+#.*$", "", value)  # a comment after the value
        mapping[key] = "" if value.strip() == "|" else _unquote(value)
    return mapping


def steps(text: str) -> list[Step]:
    """The steps listed under the first `steps:` of `text` (a job's text or an action.yml)."""
    lines = text[text.index("steps:\n") + len("steps:\n") :].splitlines()
    first = next(line for line in lines if line.strip())
    dash = len(first) - len(first.lstrip())  # the indentation of each step's "- "
    found: list[Step] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent < dash:
            break  # the end of the list
        if line.strip() and indent == dash and line.lstrip().startswith("- "):
            found.append(Step())
            line = " " * (dash + 2) + line.lstrip()[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        key, _, value = line.strip().partition(":")
        value = value.strip()
        i += 1
        block: list[str] = []
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > dash + 2
        ):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            block.pop()
        step = found[-1]
        if key == "run" and value in ("|", "|-", ">-", ">"):
            depth = min(len(b) - len(b.lstrip()) for b in block if b.strip())
            joined = "\n" if value.startswith("|") else " "
            step.run = joined.join(b[depth:] for b in block) + ("\n" if value == "|" else "")
        elif key in ("env", "with"):
            setattr(step, "with_" if key == "with" else key, _mapping(block))
        elif key in ("name", "uses", "run", "shell"):
            setattr(step, key, _unquote(value))
        elif key == "if":
            step.condition = value
    return found


def fill(text: str, expressions: dict[str, str]) -> str:
    """`${{ expr }}` replaced as GitHub does before the shell sees the text."""

    def value(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        assert expr in expressions, f"unknown expression: {expr}"
        return expressions[expr]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


# A `gh` that records each call as one JSON line (its arguments, and the body it would send)
# in $GH_LOG and answers `gh api ... --jq FILTER` with jq's answer over $GH_COMMENTS (the
# pull request's comments as GitHub's REST API lists them).
GH_SHIM = """\
import json, os, subprocess, sys
args = sys.argv[1:]
call = {"args": args}
for a in args:
    if a.startswith("body=@"):
        with open(a[len("body=@"):], encoding="utf-8") as fh:
            call["body"] = fh.read()
with open(os.environ["GH_LOG"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps(call) + "\\n")
if "--jq" in args:
    query = args[args.index("--jq") + 1]
    with open(os.environ["GH_COMMENTS"], encoding="utf-8") as fh:
        answer = subprocess.run(["jq", "-r", query], stdin=fh, capture_output=True, text=True)
    sys.stdout.write(answer.stdout)
    sys.stderr.write(answer.stderr)
    sys.exit(answer.returncode)
"""


def gh_shim(directory: Path) -> Path:
    """A directory holding the `gh` shim, to put first on PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    gh = directory / "gh"
    gh.write_text(f"#!{sys.executable}\n{GH_SHIM}")
    gh.chmod(0o755)
    return directory


def gh_calls(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def run_step(
    step: Step, cwd: Path, env: dict[str, str], expressions: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The step's `run`, as GitHub runs it: `bash -e` (`shell: bash` adds pipefail), with the
    step's `env:` on top of the job's environment."""
    own = {k: fill(v, expressions) for k, v in step.env.items()}
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"] if step.shell else [
        "bash", "-e", "-c"
    ]  # fmt: skip
    return subprocess.run(
        [*command, fill(step.run, expressions)],
        cwd=cwd,
        env={**env, **own, "PATH": env.get("PATH", os.environ.get("PATH", ""))},
        capture_output=True,
        text=True,
        timeout=300,
    )


def holds(condition: str, values: dict[str, str]) -> bool:
    """A step's `if:` as GitHub evaluates it, for the expressions these files use: contexts
    (`inputs.ab`, `github.event_name`), string literals, `==`, `!=`, `&&`, `!` and
    `cancelled()` (false: nothing is cancelled here). No `if:` holds."""
    text = condition.strip()
    if not text:
        return True
    text = re.sub(r"^\$\{\{(.*)\}\}$", r"\1", text).strip()

    def context(m: re.Match[str]) -> str:
        name = m.group(0)
        assert name in values, f"unknown context in a condition: {name}"
        return repr(values[name])

    text = re.sub(
        r"'[^']*'|[A-Za-z_][\w-]*(?:\.[\w-]+)+",
        lambda m: m.group(0) if m.group(0).startswith("'") else context(m),
        text,
    )
    text = text.replace("cancelled()", "False").replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    return bool(eval(text, {"__builtins__": {}}, {}))  # noqa: S307  (the file's own text)
