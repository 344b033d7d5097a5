"""The self-check's line (measure/selfcheck.py): a missing hook names an unsupported JAX,
anything else a probe that misbehaved; nothing failed, no line."""

from __future__ import annotations

from pytest_jaxperf.measure.selfcheck import problem_line


def test_the_self_check_line_tells_a_moved_jax_from_a_misbehaving_probe() -> None:
    assert problem_line({}, "0.10.2", "jax 0.6.2 - 0.12.x") is None
    moved = {"traces": "missing pjit._infer_params", "compiles": "no compile seen"}
    assert problem_line(moved, "0.13.0", "jax 0.6.2 - 0.12.x") == (
        "pytest-jaxperf: jax 0.13.0 is not supported, its internals moved (compiles: no "
        "compile seen; traces: missing pjit._infer_params); supported: jax 0.6.2 - 0.12.x"
    )
    assert problem_line({"compiles": "no compile seen"}, "0.10.2", "s") == (
        "pytest-jaxperf: the self-check failed on jax 0.10.2 (compiles: no compile seen)"
    )
