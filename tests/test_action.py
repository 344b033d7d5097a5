"""action.yml, the composite GitHub Action: the `jaxperf` job of the example workflow in one
step. Its shell steps are run here, in order, on a small pull request (the one
tests/test_ab_ci.py makes), with its inputs and GitHub's expressions filled in as GitHub
fills them in, `gh` shimmed and each `if:` evaluated; and the steps that run on a push or
with an input turned off are those the inputs say."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from _workflow import Step, fill, gh_calls, holds, run_step, steps
from test_ab_ci import (
    MARKER,
    PR_NUMBER,
    REPOSITORY,
    WORKFLOW,
    check_comment_calls,
    comment,
    expressions,
    job,
    pull_request,
)

ACTION = Path(__file__).resolve().parent.parent / "action.yml"


def inputs() -> dict[str, str]:
    """Each input of the action and its default."""
    text = ACTION.read_text()
    block = text[text.index("\ninputs:\n") : text.index("\nruns:\n")]
    found = {}
    for m in re.finditer(r"^  ([\w-]+):\n((?:    .*\n)+)", block, re.M):
        default = re.search(r"^    default: (.*)$", m.group(2), re.M)
        assert default, f"input {m.group(1)} has no default"
        value = default.group(1).strip()
        found[m.group(1)] = value[1:-1] if value[:1] == value[-1:] == '"' else value
    return found


def values(event: str, given: dict[str, str], base: str = "abc") -> dict[str, str]:
    """What GitHub fills in: the inputs (defaults, then `given`) and the contexts."""
    filled = {f"inputs.{k}": v for k, v in {**inputs(), **given}.items()}
    filled["inputs.github-token"] = "a-token"
    return {
        **filled,
        **expressions(base),
        "github.event_name": event,
        "github.repository": REPOSITORY,
        "github.event.pull_request.head.repo.full_name": REPOSITORY,
    }


def ran(event: str, given: dict[str, str] | None = None) -> list[str]:
    """The names (or `uses`) of the action's steps that run for `event`."""
    v = values(event, given or {})
    return [s.name or s.uses for s in steps(ACTION.read_text()) if holds(s.condition, v)]


def test_the_action_has_the_inputs_people_change() -> None:
    assert inputs() == {
        "python-version": "3.11",
        "install": "pip install -e . pytest-jaxperf",
        "baseline": "",
        "pytest-args": "",
        "ab": "true",
        "ab-args": "",
        "comment": "true",
        "artifact-name": "jaxperf",
        "github-token": "${{ github.token }}",
    }
    assert re.search(r"^runs:\n  using: composite\n", ACTION.read_text(), re.M)
    assert all(s.shell == "bash" for s in steps(ACTION.read_text()) if s.run)


def test_the_action_does_what_the_workflows_job_does() -> None:
    """The same commands, steps and upload as the workflow's job, less the checkout."""
    workflow = [s for s in steps(job("jaxperf")) if s.uses != "actions/checkout@v4"]
    action = steps(ACTION.read_text())
    assert [s.uses for s in action] == [s.uses for s in workflow]
    defaults = values("pull_request", {})
    commands = [fill(s.run, defaults).split()[:2] for s in action]
    assert commands == [s.run.split()[:2] for s in workflow]
    summary = next(s for s in action if s.name == "Step summary")
    assert summary.run in [s.run for s in workflow]
    commented = next(s for s in action if s.name.startswith("Comment"))
    assert commented.run == next(s.run for s in workflow if s.name.startswith("Comment"))
    upload = action[-1]
    assert upload.with_["path"] == workflow[-1].with_["path"]
    assert "fetch-depth: 0" in ACTION.read_text().split("\nname:")[0]  # said to the user


def test_which_steps_run_on_a_push_a_pull_request_and_with_inputs_off() -> None:
    everything = [
        "actions/setup-python@v5",
        "Install",
        "Counts, compile time and program sizes against the committed baseline",
        "Runtime against the pull request's base commit, both measured here",
        "Step summary",
        "Comment on the pull request, edited in place on every push",
        "actions/upload-artifact@v4",
    ]
    assert ran("pull_request") == everything
    assert ran("push") == [everything[i] for i in (0, 1, 2, 4, 6)]
    assert ran("pull_request", {"ab": "false", "comment": "false"}) == ran("push")
    assert ran("pull_request", {"python-version": ""}) == everything[1:]
    # The workflow file decides the same way.
    on_push = values("push", {})
    kept = [s.name or s.uses for s in steps(job("jaxperf")) if holds(s.condition, on_push)]
    assert kept == ["actions/checkout@v4", *ran("push")]
    assert "pull-requests: write" in WORKFLOW.read_text()


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("jq") is None, reason="the gh shim answers --jq with jq")
def test_every_shell_step_of_the_action_runs(tmp_path: Path) -> None:
    ours = comment("github-actions[bot]", f"{MARKER}\nthe last push's", 5)
    root, base, env = pull_request(tmp_path, [comment("someone", "lgtm", 4), ours])
    (root / "perf").mkdir()
    shutil.move(root / ".jaxperf" / "baseline.json", root / "perf" / "baseline.json")
    given = {
        "baseline": "perf/baseline.json",
        "pytest-args": '-k "test_scale or test_work" -p no:cacheprovider',
        "ab-args": "--rounds 1",
    }
    v = values("pull_request", given, base)
    done: list[tuple[Step, object]] = []
    for step in steps(ACTION.read_text()):
        if step.run and holds(step.condition, v):
            filled = Step(name=step.name, run=fill(step.run, v), shell=step.shell, env=step.env)
            done.append((step, run_step(filled, root, env, v)))
    results = [r for _, r in done]
    names = [s.name for s, _ in done]
    assert names == [
        "Install",
        "Counts, compile time and program sizes against the committed baseline",
        "Runtime against the pull request's base commit, both measured here",
        "Step summary",
        "Comment on the pull request, edited in place on every push",
    ]
    install, counts, ab, summary, commented = results
    assert install.returncode == 0, install.stdout + install.stderr  # type: ignore[attr-defined]
    assert "Would install tinypkg-0.1" in install.stdout  # type: ignore[attr-defined]
    out = counts.stdout + counts.stderr  # type: ignore[attr-defined]
    assert counts.returncode == 0, out  # type: ignore[attr-defined]
    assert "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated" in out
    assert not (root / ".jaxperf" / "baseline.json").exists()  # the input's baseline was read
    assert "perf/baseline.json" in (root / "jaxperf-report.md").read_text()
    assert (root / "jaxperf-report.html").exists()
    assert ab.returncode in (0, 1), ab.stdout + ab.stderr  # type: ignore[attr-defined]
    assert json.loads((root / "jaxperf-ab.json").read_text())["rounds"] == 1  # ab-args
    assert summary.returncode == 0  # type: ignore[attr-defined]
    assert commented.returncode == 0, commented.stderr  # type: ignore[attr-defined]
    check_comment_calls(tmp_path, root, edited=5)
    calls = gh_calls(tmp_path / "gh.log")
    assert [c["args"][1] for c in calls] == [
        f"repos/{REPOSITORY}/issues/{PR_NUMBER}/comments",
        "--method",
    ]
