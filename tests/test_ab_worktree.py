"""`jaxperf ab`'s git handling and its import check, without running pytest: the temporary
worktree is removed however the block ends, refs and repository states give one clear line,
and a run that imported the wrong tree's code is named as such. The git that the command and
the plugin start leaves the user's repository alone: no variable a git hook exports reaches
it, and it takes no optional lock (a status stopped at its timeout would leave
`.git/index.lock` behind)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_jaxperf.ab import imports, worktree
from pytest_jaxperf.storage import history

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(root.parent)}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with two commits of one file."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "one")
    (root / "a.txt").write_text("two\n")
    git(root, "commit", "-qam", "two")
    return root


def worktrees(root: Path) -> list[str]:
    return [
        line[len("worktree ") :]
        for line in git(root, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


@pytest.mark.e2e
def test_the_base_worktree_holds_the_commit_and_is_removed_after(
    repo: Path, tmp_path: Path
) -> None:
    commit = worktree.resolve("HEAD~1", repo)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with worktree.base_worktree(repo, commit, scratch) as base:
        assert (base / "a.txt").read_text() == "one\n"
        assert git(base, "rev-parse", "HEAD").strip() == commit
        assert len(worktrees(repo)) == 2
        assert (repo / "a.txt").read_text() == "two\n"  # the user's tree as it was
    assert not base.exists()
    assert worktrees(repo) == [str(repo)]
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.e2e
@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_worktree_is_removed_when_the_block_raises(
    repo: Path, tmp_path: Path, error: BaseException
) -> None:
    commit = worktree.resolve("HEAD~1", repo)
    seen: list[Path] = []

    def measure() -> None:
        with worktree.base_worktree(repo, commit, tmp_path) as base:
            seen.append(base)
            (base / "scratch.txt").write_text("an untracked file left by a run\n")
            raise error

    with pytest.raises(type(error)):
        measure()
    base = seen[0]
    assert not base.exists()
    assert worktrees(repo) == [str(repo)]


@pytest.mark.e2e
def test_a_locked_or_vanished_worktree_is_still_removed(repo: Path, tmp_path: Path) -> None:
    commit = worktree.resolve("HEAD~1", repo)
    with worktree.base_worktree(repo, commit, tmp_path / "a") as base:
        git(repo, "worktree", "lock", str(base))
    assert worktrees(repo) == [str(repo)]
    with worktree.base_worktree(repo, commit, tmp_path / "b") as base:
        subprocess.run(["rm", "-rf", str(base)], check=True)
    assert worktrees(repo) == [str(repo)]


@pytest.mark.e2e
def test_an_unknown_ref_is_one_line(repo: Path) -> None:
    with pytest.raises(worktree.GitError) as info:
        worktree.resolve("origin/nope", repo)
    assert str(info.value) == (
        f"--base origin/nope: no such commit in {repo}; fetch it first (git fetch origin), "
        "or check the spelling"
    )
    with pytest.raises(worktree.GitError, match="expected a git ref"):
        worktree.resolve("--all", repo)


@pytest.mark.e2e
def test_a_shallow_clone_is_told_to_fetch_the_history(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)],
        check=True,
        capture_output=True,
    )
    with pytest.raises(worktree.GitError) as info:
        worktree.resolve("HEAD~1", clone)
    assert "this clone is shallow: fetch the history (actions/checkout: fetch-depth: 0)" in str(
        info.value
    )


@pytest.mark.e2e
def test_unmerged_paths_cannot_be_measured(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other", "HEAD~1")
    (repo / "a.txt").write_text("three\n")
    git(repo, "commit", "-qam", "three")
    merge = subprocess.run(["git", "merge", "-q", "main"], cwd=repo, capture_output=True)
    assert merge.returncode != 0  # a conflict
    with pytest.raises(worktree.GitError) as info:
        worktree.head(repo)
    assert str(info.value) == (
        f"{repo} has unmerged paths (a.txt): resolve the conflict or abort the merge/rebase, "
        "then run jaxperf ab again"
    )


@pytest.mark.e2e
def test_uncommitted_changes_are_counted_not_refused(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("untracked\n")
    head = worktree.head(repo)
    assert head.changed == 1 and head.commit == git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.e2e
def test_outside_a_repository(tmp_path: Path) -> None:
    with pytest.raises(worktree.GitError, match="is not inside a git working tree"):
        worktree.repository(tmp_path)


# -- the import check -----------------------------------------------------------------------


def spec(tmp_path: Path, side: str = "base") -> imports.Spec:
    other = "head" if side == "base" else "base"
    return imports.Spec(
        side=side,
        tree=str(tmp_path / side),
        other_side=other,
        other_tree=str(tmp_path / other),
        paths=(str(tmp_path / side),),
        packages=("pkg",),
        out=str(tmp_path / "out.json"),
    )


def module(name: str, file: Path) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = str(file)
    return mod


def test_the_package_from_its_own_tree_passes(tmp_path: Path) -> None:
    s = spec(tmp_path)
    modules = {"pkg": module("pkg", tmp_path / "base" / "pkg" / "__init__.py"), "os": os}
    assert imports.problems(s, modules, final=True) == (
        [],
        {"pkg": str(tmp_path / "base" / "pkg" / "__init__.py")},
    )


def test_the_package_from_the_other_tree_is_named_with_its_origin(tmp_path: Path) -> None:
    s = spec(tmp_path)
    where = tmp_path / "head" / "pkg" / "__init__.py"
    found, _ = imports.problems(s, {"pkg": module("pkg", where)}, final=False)
    assert found == [
        f"the base run imported pkg from {where} (the head tree), not from the base tree "
        f"{tmp_path / 'base'}: its --path ({tmp_path / 'base'}) did not come first; uninstall "
        "that copy or pass --path with the directory that holds the package"
    ]


def test_the_package_from_an_installed_copy_is_a_problem(tmp_path: Path) -> None:
    where = tmp_path / "venv" / "site-packages" / "pkg" / "__init__.py"
    found, _ = imports.problems(spec(tmp_path, "head"), {"pkg": module("pkg", where)}, final=True)
    assert len(found) == 1 and found[0].startswith(f"the head run imported pkg from {where}, ")


def test_another_module_from_the_other_tree_is_a_problem(tmp_path: Path) -> None:
    s = spec(tmp_path)
    modules = {
        "pkg": module("pkg", tmp_path / "base" / "pkg" / "__init__.py"),
        "helpers": module("helpers", tmp_path / "head" / "tools" / "helpers.py"),
    }
    found, _ = imports.problems(s, modules, final=True)
    assert found == [
        f"the base run imported helpers from {tmp_path / 'head' / 'tools' / 'helpers.py'}, in "
        f"the head tree {tmp_path / 'head'}: pass --path with the directory that holds helpers "
        "so that each run imports its own tree's copy"
    ]


def test_a_virtualenv_inside_the_other_tree_is_not_code_under_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = spec(tmp_path)
    venv = tmp_path / "head" / ".venv"
    monkeypatch.setattr(sys, "prefix", str(venv))
    modules = {
        "pkg": module("pkg", tmp_path / "base" / "pkg" / "__init__.py"),
        "numpy": module("numpy", venv / "lib" / "site-packages" / "numpy" / "__init__.py"),
    }
    assert imports.problems(s, modules, final=True)[0] == []


def test_a_package_never_imported_is_a_problem_at_the_end_only(tmp_path: Path) -> None:
    s = spec(tmp_path)
    assert imports.problems(s, {}, final=False) == ([], {})
    found, _ = imports.problems(s, {}, final=True)
    assert found == [
        f"the base run imported none of pkg (found in its --path: {tmp_path / 'base'}): pass "
        "--path with the directory that holds the package your tests import"
    ]


def test_find_packages(tmp_path: Path) -> None:
    for d in ("pkg", "tests", "docs", "data"):
        (tmp_path / d).mkdir()
    for f in ("pkg/__init__.py", "tests/__init__.py", "docs/__init__.py", "conftest.py",
              "setup.py", "tool.py", "test_x.py", "notes.txt"):  # fmt: skip
        (tmp_path / f).write_text("")
    assert imports.find_packages([tmp_path, tmp_path / "missing"]) == ["pkg", "tool"]


@pytest.mark.e2e
def test_the_base_worktree_does_not_touch_the_index_a_hook_exports(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What git exports to a pre-commit or pre-push hook.
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with worktree.base_worktree(repo, worktree.resolve("HEAD~1", repo), scratch) as base:
        assert (base / "a.txt").read_text() == "one\n"
    assert git(repo, "status", "--porcelain") == ""
    assert worktree.head(repo).changed == 0


@pytest.mark.e2e
def test_history_reads_the_repository_it_runs_in(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = git(repo, "rev-parse", "HEAD").strip()
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert history.git_state(repo) == {"commit": commit, "dirty": False}


@pytest.mark.e2e
def test_git_never_takes_an_optional_lock(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []
    run = subprocess.run

    def spy(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        started.append(list(argv))
        return run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    history.git_state(repo)
    worktree.head(repo)
    worktree.resolve("HEAD~1", repo)
    assert len(started) >= 5
    assert all(argv[:2] == ["git", "--no-optional-locks"] for argv in started), started


def test_which_files_pytest_would_take_as_its_configuration(tmp_path: Path) -> None:
    from pytest_jaxperf.ab import configs

    top, tree = tmp_path / "top", tmp_path / "top" / "tree"
    project = tree / "sub"
    project.mkdir(parents=True)
    # Files of pytest's names without a pytest section do not stop the search ...
    (project / "tox.ini").write_text("[tox]\nenvlist = py311\n")
    (tree / "setup.cfg").write_text("[metadata]\nname = x\n")
    (tree / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert configs.outside(project, tree) is None
    (top / "setup.cfg").write_text("[tool:pytest]\naddopts = -q\n")
    assert configs.outside(project, tree) == top / "setup.cfg"
    # ... one with it does, and then nothing above the tree is read.
    (tree / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert configs.outside(project, tree) is None
    other = tmp_path / "other" / "tree"
    other.mkdir(parents=True)
    assert configs.mismatch((other, other), (project, tree)) is None
    repo = tmp_path / "home" / "repo"
    repo.mkdir(parents=True)
    (repo.parent / "pytest.ini").write_text("[pytest]\n")
    line = configs.mismatch((other, other), (repo, repo))
    assert line == (
        f"the head runs would be configured by {repo.parent / 'pytest.ini'}, above your "
        "repository, and the base runs (in a temporary directory) would not; move that "
        "configuration into the repository"
    )


def test_a_run_asks_xdist_for_no_workers_only_where_xdist_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_jaxperf.ab import runner

    pytest.importorskip("xdist")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    report, none = tmp_path / "r.json", tmp_path / "none.json"
    tree = runner.Tree("head", tmp_path, tmp_path, (tmp_path,), ("pkg",))
    cmd = runner.command(report, none, [], tree)
    assert cmd[cmd.index("-n") + 1] == "0"
    assert f"--confcutdir={tmp_path}" in cmd
    # `-n 0` would be an unknown argument where the project's addopts block xdist ...
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:xdist\n")
    assert "-n" not in runner.command(report, none, [], tree)
    (tmp_path / "pytest.ini").unlink()
    # ... or PYTEST_ADDOPTS, or the arguments given to jaxperf ab.
    assert "-n" not in runner.command(report, none, ["-p", "no:xdist"], tree)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:xdist")
    assert "-n" not in runner.command(report, none, [], tree)


def test_a_tree_whose_path_holds_the_path_separator_is_refused(tmp_path: Path) -> None:
    from pytest_jaxperf.ab import runner

    odd = tmp_path / f"a{os.pathsep}b"
    tree = runner.Tree("head", odd, odd, (odd,), ("pkg",))
    with pytest.raises(runner.RunError) as info:
        runner.environment(tree, tmp_path / "check.json")
    assert str(info.value) == (
        f"the head tree's {odd} holds {os.pathsep!r}, which PYTHONPATH cannot hold; move the "
        "repository to a path without it"
    )
