"""Odd paths and faults get one line, early: a path option written as two arguments that
moved pytest's rootdir, symbolic link loops, a lock file that cannot be one, Ctrl-C while
the files are written, and the temporary files a killed save left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_jaxperf.cli import main
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import store

ONE_TEST = """
import jax
import jax.numpy as jnp
import pytest

@pytest.mark.jaxperf
def test_f():
    jax.jit(lambda x: x + 1)(jnp.ones(3))
"""


def test_a_path_option_given_as_two_arguments_that_moved_the_rootdir_is_refused(
    jp: pytest.Pytester,
) -> None:
    (jp.path / "tox.ini").unlink()  # the moved rootdir has no ini file, as usually
    project = jp.mkdir("project")
    (project / "tox.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (project / "test_one.py").write_text(ONE_TEST)
    elsewhere = jp.mkdir("elsewhere") / "baseline.json"
    os.chdir(project)
    saved = jp.runpytest("--jaxperf", f"--jaxperf-baseline={elsewhere}", "--jaxperf-save")
    saved.assert_outcomes(passed=1)
    # Once the file exists, pytest takes it for a test path and its rootdir moves up to
    # what holds both: the ini file is ignored and every test id changes.
    result = jp.runpytest("--jaxperf", "--jaxperf-baseline", str(elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--jaxperf-baseline {elsewhere}: pytest took {elsewhere} for a test path and moved "
         f"its rootdir to {jp.path} (*); write --jaxperf-baseline={elsewhere}"]
    )  # fmt: skip
    # With "=", or a path inside the project, nothing moves.
    result = jp.runpytest("--jaxperf", f"--jaxperf-baseline={elsewhere}")
    result.assert_outcomes(passed=1)
    result = jp.runpytest("--jaxperf", "--jaxperf-json", "out/run.json")
    result.assert_outcomes(passed=1)


def test_a_symbolic_link_loop_is_one_line(
    jp: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jp.makepyfile(test_one=ONE_TEST)
    loop = jp.path / "loop.json"
    loop.symlink_to(loop)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=loop.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--jaxperf-json */loop.json: is a loop of symbolic links; pass the path of a file"]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    path = tmp_path / "b.json"
    store.save(path, RunRecord())
    assert main(["compare", str(path), str(path), "--markdown", str(loop)]) == 2  # usage
    assert "is a loop of symbolic links" in capsys.readouterr().err


def test_a_lock_path_that_cannot_be_a_lock_is_refused_before_the_first_test(
    jp: pytest.Pytester,
) -> None:
    jp.makepyfile(test_one=ONE_TEST)
    (jp.path / ".jaxperf" / "baseline.json.lock").mkdir(parents=True)
    result = jp.runpytest("--jaxperf", "--jaxperf-save")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*its lock file *baseline.json.lock is a directory; remove it*"])
    assert "test_one.py" not in result.stdout.str()  # refused before the first test


def test_ctrl_c_while_the_files_are_written_is_one_line(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_one=ONE_TEST)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "save_locked", interrupted)  # the inner session's, in-process
    result = jp.runpytest("--jaxperf", "--jaxperf-save")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["pytest-jaxperf: interrupted while writing its files: each is as it was or as written "
         "whole (none is left half-written)"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_save_removes_the_temporary_files_a_killed_save_left(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_one=ONE_TEST)
    folder = jp.mkdir(".jaxperf")
    stale = folder / ".baseline.json.abc123.tmp"
    stale.write_text("{half")
    other = folder / ".history.jsonl.x.tmp"  # another file's: not the baseline's to remove
    other.write_text("")
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    assert not stale.exists() and other.exists()
    assert (folder / "baseline.json").is_file()
