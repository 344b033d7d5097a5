"""examples/ci/github-actions.yml, run here: every `run:` step of the workflow, in order, on a
pull request made in a small repository (base commit with a committed baseline, head commit
with a change), with the GitHub expressions filled in as GitHub fills them in, and `gh` (the
pull-request comment) a shim that records its calls. docs/ci.md starts with this very file.

GitHub itself cannot be reached, so two things stand in for it: the checkout is the test's
repository (its whole history, as `fetch-depth: 0` gives), and the install step runs with
pip offline and as a dry run (PIP_NO_INDEX, PIP_DRY_RUN): pip resolves the command for real,
and PYTHONPATH gives what the editable install would (the package importable from the
checkout, this plugin from its source)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _workflow import Step, gh_calls, gh_shim, run_step, steps
from conftest import needs_valgrind
from test_ab import CORE, TESTS, commit_files, environment, new_repo, worktrees

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
BIN = Path(sys.executable).parent

# A build backend kept in the repository, so that pip can prepare the package's metadata
# offline (the real project would use hatchling or setuptools from the index).
BACKEND = """\
import os

NAME, VERSION = "tinypkg", "0.1"


def _metadata(directory):
    info = os.path.join(directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as fh:
        fh.write(f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n")
    return os.path.basename(info)


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _metadata(metadata_directory)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError("this test only makes dry runs")


build_editable = build_wheel
"""
PYPROJECT = """\
[build-system]
requires = []
build-backend = "tiny_backend"
backend-path = ["_backend"]

[project]
name = "tinypkg"
version = "0.1"
"""
# Timings never fail the counts step here: it runs beside other tests. The baseline is
# saved and gated on one kind of machine: no reference compile is measured.
INI = """\
[pytest]
jaxperf_min_rounds = 5
jaxperf_max_time = 0.02
jaxperf_compile_rtol = 1000
jaxperf_runtime_rtol = 1000
jaxperf_no_reference_compile = true
"""

# The pull request's repository: a package, its tests, and what pip needs offline.
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE,
    "tests/test_core.py": TESTS,
    "pytest.ini": INI,
    "pyproject.toml": PYPROJECT,
    "_backend/tiny_backend.py": BACKEND,
    ".gitignore": "*.egg-info/\n.jaxperf/*.lock\n",
}


def run_lines(text: str) -> list[str]:
    """The one-line `run:` commands of a workflow or a page's yaml, in order."""
    found = re.finditer(r"^\s*(?:-\s+)?run:\s*(\S.*)$", text, re.M)
    return [m.group(1) for m in found if m.group(1) not in ("|", ">-")]


def job(name: str) -> str:
    """The text of one job of the workflow (from its name to the next job's); an opt-in job,
    commented out, as it reads once uncommented (each line's `# ` after the indent removed)."""
    text = WORKFLOW.read_text()
    if f"\n  {name}:\n" not in text:
        text = uncommented(text, name)
    start = text.index(f"\n  {name}:\n")
    end = re.search(r"\n  \S[^\n]*:\n", text[start + 1 :])
    return text[start : start + 1 + end.start()] if end else text[start:]


def uncommented(text: str, name: str) -> str:
    """`text` with the commented-out job `name` uncommented: from its `  # name:` line to the
    end of that comment block, `  # ` becomes `  ` (an editor's toggle-comment does the
    same)."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  # {name}:\n")
    end = start
    while end < len(lines) and lines[end].startswith("  #"):
        end += 1
    job_lines = ["  " + line[4:] if line.startswith("  # ") else "\n" for line in lines[start:end]]
    return "".join(lines[:start] + job_lines + lines[end:])


def test_the_instructions_job_is_opt_in_and_says_what_it_needs() -> None:
    """A copied workflow runs only the job that gates against a committed baseline; the
    instructions job needs valgrind, an extra and a baseline of its own to gate anything."""
    text = WORKFLOW.read_text()
    jobs = text[text.index("\njobs:\n") :]
    assert re.findall(r"^  (\w[\w-]*):$", jobs, re.M) == ["jaxperf"]  # the only job on
    comment = text[text.index("\n  # Opt-in") : text.index("\n  # instructions:\n")]
    for needed in (
        "valgrind",
        "[instructions]",
        ".jaxperf/baseline-instructions.json",
        "pytest --jaxperf --jaxperf-runtime-clock=instructions --jaxperf-save",
    ):
        assert needed in comment, needed  # fmt: skip
    instructions = steps(job("instructions"))
    assert [s.uses or s.name for s in instructions] == [
        "actions/checkout@v4", "actions/setup-python@v5", "Install valgrind", "Install",
        "Instructions per call against .jaxperf/baseline-instructions.json",
    ]  # fmt: skip
    for line in run_lines(job("instructions")):
        if "apt-get install" in line:
            assert line.index("apt-get update") < line.index("apt-get install"), line


def test_the_workflow_runs_on_pull_requests_and_main_and_reports_everywhere() -> None:
    text = WORKFLOW.read_text()
    assert re.search(r"^on:\n  pull_request:\n  push:\n    branches: \[main\]\n", text, re.M)
    assert re.search(r"^permissions:\n  contents: read\n  pull-requests: write", text, re.M)
    checkout, python, *rest = steps(job("jaxperf"))
    assert checkout.uses == "actions/checkout@v4"
    assert checkout.with_ == {"fetch-depth": "0"}  # jaxperf ab checks out the base commit
    assert python.uses == "actions/setup-python@v5" and python.with_["cache"] == "pip"
    commands = [step.run.split()[0] for step in rest if step.run]
    assert commands == ["pip", "pytest", "jaxperf", "for", 'marker="<!--']
    pytest_line = rest[1].run
    for output in ("json=jaxperf-report.json", "html=jaxperf-report.html", "markdown="):
        assert f"--jaxperf-{output}" in pytest_line
    assert "--base ${{ github.event.pull_request.base.sha }}" in rest[2].run
    upload = rest[-1]
    assert upload.uses == "actions/upload-artifact@v4" and upload.condition == "${{ !cancelled() }}"
    assert upload.with_["path"].split() == [
        "jaxperf-report.json", "jaxperf-report.html", "jaxperf-ab.json"
    ]  # fmt: skip
    # Every apt-get install is preceded by an apt-get update (a runner's lists are stale).
    for line in run_lines(text):
        if "apt-get install" in line:
            assert line.index("apt-get update") < line.index("apt-get install"), line


def test_the_ci_page_starts_with_the_workflow_file() -> None:
    page = (ROOT / "docs" / "ci.md").read_text()
    first_block = re.search(r"^```yaml\n(.*?)^```$", page, re.S | re.M)
    assert first_block is not None
    assert first_block.group(1) == WORKFLOW.read_text(), "docs/ci.md starts with the workflow"
    assert page.index(first_block.group(0)) < page.index("\n## ")
    assert "](../examples/ci/github-actions.yml)" in page.split("```yaml")[0]


def test_the_documented_recipes_are_the_workflow() -> None:
    docs = ROOT / "docs"
    ab_page = run_lines((docs / "ab.md").read_text())
    assert ab_page and set(ab_page) <= set(run_lines(job("jaxperf")))
    assert run_lines((docs / "instructions.md").read_text()) == run_lines(job("instructions"))


REPOSITORY, PR_NUMBER = "owner/tinypkg", "7"
MARKER = "<!-- pytest-jaxperf -->"


def pull_request(
    tmp_path: Path, comments: list[dict[str, object]]
) -> tuple[Path, str, dict[str, str]]:
    """A checkout of a pull request (base commit with a committed baseline, head commit with
    a change that keeps the counts), its base commit, and a job's environment: pip offline as
    a dry run, `gh` shimmed with `comments` as the pull request's comments."""
    root = new_repo(tmp_path / "checkout")
    commit_files(root, FILES, "base")
    (tmp_path / "comments.json").write_text(json.dumps(comments))
    env = environment(
        PATH=os.pathsep.join([str(gh_shim(tmp_path / "shims")), str(BIN), os.environ["PATH"]]),
        PYTHONPATH=f"{environment()['PYTHONPATH']}{os.pathsep}{root}",
        PIP_NO_INDEX="1",
        PIP_DRY_RUN="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary.md"),
        GITHUB_REPOSITORY=REPOSITORY,
        GITHUB_SERVER_URL="https://github.com",
        GITHUB_RUN_ID="42",
        GH_LOG=str(tmp_path / "gh.log"),
        GH_COMMENTS=str(tmp_path / "comments.json"),
    )
    # The committed baseline, saved on the base commit.
    saved = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxperf",
         "--jaxperf-save"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stdout + saved.stderr
    base = commit_files(root, {}, "baseline")
    commit_files(root, {"pkg/core.py": '"""Scaling and work."""\n' + CORE}, "a docstring")
    return root, base, env


def expressions(base: str) -> dict[str, str]:
    """What GitHub fills in on a pull request of this repository."""
    return {
        "github.event.pull_request.base.sha": base,
        "github.event.pull_request.number": PR_NUMBER,
        "github.token": "a-token",
    }


def comment(login: str, body: str, id: int) -> dict[str, object]:
    """A comment as GitHub's REST API lists it."""
    return {"id": id, "user": {"login": login}, "body": body}


def check_comment_calls(tmp_path: Path, root: Path, edited: int | None) -> str:
    """The shimmed `gh` was asked for the comments, then created one (`edited` None) or
    edited comment `edited`, with the reports as its body; that body."""
    listed, sent = gh_calls(tmp_path / "gh.log")
    assert listed["args"][:4] == ["api", f"repos/{REPOSITORY}/issues/{PR_NUMBER}/comments",
                                  "--paginate", "--jq"]  # fmt: skip
    if edited is None:
        assert sent["args"][:2] == ["api", f"repos/{REPOSITORY}/issues/{PR_NUMBER}/comments"]
    else:
        assert sent["args"][:4] == [
            "api", "--method", "PATCH", f"repos/{REPOSITORY}/issues/comments/{edited}"
        ]  # fmt: skip
    assert "body=@jaxperf-comment.md" in sent["args"]
    body = str(sent["body"])
    assert body == (root / "jaxperf-comment.md").read_text()
    assert body.startswith(MARKER + "\n## pytest-jaxperf\n")
    assert body.rstrip().endswith(
        f"[The run](https://github.com/{REPOSITORY}/actions/runs/42): its summary, and the "
        "JSON and HTML reports as artifacts."
    )
    return body


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("jq") is None, reason="the gh shim answers --jq with jq")
def test_every_command_of_the_workflow_runs(tmp_path: Path) -> None:
    others = [comment("someone", "Looks good", 1), comment("someone", f"> {MARKER} quoted", 2)]
    root, base, env = pull_request(tmp_path, others)
    done: list[tuple[Step, subprocess.CompletedProcess[str]]] = []
    for step in steps(job("jaxperf")):
        if step.run:
            done.append((step, run_step(step, root, env, expressions(base))))
    (_, pip), (_, counts), (ab_step, ab), (_, summary_step), (comment_step, commented) = done
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert "Would install tinypkg-0.1" in pip.stdout
    assert counts.returncode == 0, counts.stdout + counts.stderr
    assert "jaxperf: 0 regressions" in counts.stdout
    # Runtime is measured, so the verdict is the machine's; the counts are not.
    assert ab.returncode in (0, 1), ab.stdout + ab.stderr
    assert ab_step.run.startswith("jaxperf ab --base ${{ github.event.pull_request.base.sha }}")
    report = json.loads((root / "jaxperf-ab.json").read_text())
    assert report["base"]["commit"] == base
    assert report["rounds"] >= 1
    counted = [r for r in report["rows"] if r["metric"] in ("traces", "compiles")]
    assert counted and all(r["verdict"] == "ok" for r in counted)
    assert json.loads((root / "jaxperf-report.json").read_text())["tests"]
    assert (root / "jaxperf-report.html").read_text().startswith("<!DOCTYPE html>")
    # Both reports in the step summary, the plugin's first.
    assert summary_step.returncode == 0, summary_step.stderr
    summary = (tmp_path / "step_summary.md").read_text()
    assert summary.index("## pytest-jaxperf") < summary.index("### jaxperf ab: head")
    # ab's section: the counts, ok, folded away; under its table one sentence between
    # the gate's runtime verdict above and ab's, whatever ab judged (the machine's verdict).
    ours = summary[summary.index("### jaxperf ab: head") :]
    folded = ours[re.search(r"<details><summary>\d+ rows ok</summary>", ours).start() :]
    assert "| `tests/test_core.py::test_scale` | traces | 1 | 1 |  |  | ok |" in folded
    assert re.search(
        r"\nRuntime: 3 alternated rounds of both commits on this machine judge (every runtime "
        r"ok|runtime of work \(`test_work`\) \S+ [\d.]+x \[[\d.]+, [\d.]+\]); where the gate's "
        r"report \(`pytest --jaxperf`\) leaves a runtime out \(`machine_load`, ",
        ours,
    ), ours
    # The comment: no earlier one of the bot's, so a new one, holding both reports.
    assert commented.returncode == 0, commented.stdout + commented.stderr
    body = check_comment_calls(tmp_path, root, edited=None)
    assert body.index("## pytest-jaxperf") < body.index("### jaxperf ab: head")
    assert worktrees(root) == [str(root)]

    # The next push: the bot's comment of the last push is edited, not repeated.
    (tmp_path / "gh.log").unlink()
    ours = comment("github-actions[bot]", f"{MARKER}\nthe last push's", 99)
    (tmp_path / "comments.json").write_text(json.dumps([*others, ours]))
    again = run_step(comment_step, root, env, expressions(base))
    assert again.returncode == 0, again.stdout + again.stderr
    check_comment_calls(tmp_path, root, edited=99)


@pytest.mark.e2e
@needs_valgrind
@pytest.mark.skipif(shutil.which("apt-get") is None, reason="the job installs valgrind with apt")
def test_every_command_of_the_instructions_job_runs(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "checkout")
    commit_files(root, FILES, "base")
    # GitHub's runners have passwordless sudo; apt only simulates here (APT_CONFIG), so that
    # the line runs for real against this machine's package lists without changing them.
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    # `apt-get update` would fetch the lists for real (simulation does not cover it).
    real_apt = shutil.which("apt-get")
    (shims / "apt-get").write_text(
        f'#!/bin/sh\nif [ "$1" = update ]; then echo "update: $*" >> {tmp_path / "apt.log"}; '
        f'exit 0; fi\nexec {real_apt} "$@"\n'
    )
    for shim in ("sudo", "apt-get"):
        (shims / shim).chmod(0o755)
    (tmp_path / "apt.conf").write_text('APT::Get::Simulate "true";\n')
    env = environment(
        PATH=os.pathsep.join([str(shims), str(BIN), os.environ.get("PATH", "")]),
        PYTHONPATH=f"{environment()['PYTHONPATH']}{os.pathsep}{root}",
        PIP_NO_INDEX="1",
        PIP_DRY_RUN="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        APT_CONFIG=str(tmp_path / "apt.conf"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary.md"),
    )
    saved = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jaxperf",
         "--jaxperf-runtime-clock=instructions", "--jaxperf-save"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stdout + saved.stderr
    commit_files(root, {}, "the instructions baseline")
    commit_files(root, {"pkg/core.py": '"""Scaling and work."""\n' + CORE}, "a docstring")
    done = []
    for line in run_lines(job("instructions")):
        done.append(subprocess.run(["bash", "-e", "-c", line], cwd=root, env=env,
                                   capture_output=True, text=True, timeout=300))  # fmt: skip
    apt, pip, counted = done
    assert apt.returncode == 0, apt.stdout + apt.stderr
    assert (tmp_path / "apt.log").read_text() == "update: update\n"  # before the install
    assert "valgrind" in apt.stdout
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert counted.returncode == 0, counted.stdout + counted.stderr
    assert "jaxperf: 0 regressions" in counted.stdout
    assert re.search(r"instructions per call\b.* not gated", counted.stdout) is None
    assert "instructions per call" in (tmp_path / "step_summary.md").read_text()


# What pip prints when it cannot reach the package index (no network, a proxy refused).
UNREACHABLE = ("NewConnectionError", "Failed to establish a new connection", "ProxyError",
               "Temporary failure in name resolution", "No matching distribution found",
               "Could not find a version that satisfies")  # fmt: skip


def plain_venv(directory: Path) -> Path:
    """A virtualenv holding this plugin as its wheel installs it (no extras, so no
    matplotlib) and the jax this suite runs with; its bin directory. Skips the test where
    the package index cannot be reached."""
    from importlib.metadata import version

    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True, timeout=120)
    python = directory / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(ROOT),
         f"jax=={version('jax')}", f"jaxlib=={version('jaxlib')}"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = installed.stdout + installed.stderr
    if installed.returncode != 0 and any(sign in out for sign in UNREACHABLE):
        pytest.skip(f"the package index cannot be reached to build the venv: {out[-300:]}")
    assert installed.returncode == 0, out
    return directory / "bin"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("jq") is None, reason="the gh shim answers --jq with jq")
def test_the_workflow_runs_with_the_plain_package_and_no_extras(tmp_path: Path) -> None:
    """The job as a user copies it: `pip install ... pytest-jaxperf` gives the plain package,
    without matplotlib, and every step runs on it (the HTML report without its plots). The
    other tests of the workflow run in this suite's environment, which has every extra."""
    bin_dir = plain_venv(tmp_path / "venv")
    python = bin_dir / "python"
    probe = "import importlib.util as u; print(u.find_spec('matplotlib') is None)"
    no_matplotlib = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    assert no_matplotlib.stdout.strip() == "True"
    root, base, env = pull_request(tmp_path, [])
    env = {
        **env,
        # The venv's pip, pytest and jaxperf first; the checkout importable as the editable
        # install would make it; nothing of this suite's own environment on sys.path.
        "PATH": os.pathsep.join([str(tmp_path / "shims"), str(bin_dir), os.environ["PATH"]]),
        "PYTHONPATH": str(root),
        "VIRTUAL_ENV": str(tmp_path / "venv"),
    }
    done = [(s, run_step(s, root, env, expressions(base))) for s in steps(job("jaxperf")) if s.run]
    (_, pip), (_, counts), (_, ab), (_, summary), (_, commented) = done
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert "Would install tinypkg-0.1" in pip.stdout  # pytest-jaxperf: the venv's, satisfied
    assert counts.returncode == 0, counts.stdout + counts.stderr
    assert "jaxperf: 0 regressions" in counts.stdout
    # The venv's pytest ran them (this suite's environment would have drawn the plots).
    assert shutil.which("pytest", path=env["PATH"]) == str(bin_dir / "pytest")
    page = (root / "jaxperf-report.html").read_text()
    assert "Plots need matplotlib" in page and "data:image/png" not in page
    assert "## pytest-jaxperf" in (root / "jaxperf-report.md").read_text()
    assert ab.returncode in (0, 1), ab.stdout + ab.stderr
    assert json.loads((root / "jaxperf-ab.json").read_text())["base"]["commit"] == base
    assert summary.returncode == 0, summary.stderr
    assert commented.returncode == 0, commented.stdout + commented.stderr


def test_the_quickstart_ignores_every_file_the_workflow_writes() -> None:
    """A run in a checkout writes the workflow's reports beside the code: the quickstart's
    `.gitignore` lines keep each out of a commit, and the baseline in."""
    import fnmatch

    page = (ROOT / "docs" / "quickstart.md").read_text()
    block = re.search(r"`\.gitignore` lines for them.*?```\n(.*?)```", page, re.S)
    assert block is not None
    patterns = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    written = set(re.findall(r"\bjaxperf-[\w-]+\.(?:json|html|md)\b", job("jaxperf")))
    assert written >= {"jaxperf-report.json", "jaxperf-report.html", "jaxperf-report.md",
                       "jaxperf-ab.json", "jaxperf-ab.md", "jaxperf-comment.md"}  # fmt: skip
    for name in sorted(written) + [".jaxperf/baseline.json.lock", "jaxperf-history.jsonl"]:
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name
    assert not any(fnmatch.fnmatch(".jaxperf/baseline.json", p) for p in patterns)
