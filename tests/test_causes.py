"""Unit tests for pytest_jaxperf.causes: JAX cache-miss explanations -> one-line causes.

The messages are built exactly as jax 0.10.2 logs them
(jax/_src/interpreters/partial_eval.py `explain` and `diff_*`; quoted in
/work/shared/notes/jax-internals.md section 2).
"""

from __future__ import annotations

import pytest

from pytest_jaxperf.causes import cause, is_first_sight

pytestmark = pytest.mark.jax_internals

WEAK_TYPES_URL = "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
STATIC = "<class 'jax._src.tree_util.Static'> with pytree metadata Static(val={})"


def miss(diff: str) -> str:
    """A 'seen this function before' explanation whose closest previous key differs by `diff`."""
    return "\n".join(
        [
            "TRACING CACHE MISS at /proj/t.py:10:30 (<module>):",
            "  for f defined at /proj/t.py:8",
            "  all previously seen cache keys differ. For the closest previous key:",
            "  " + diff,
        ]
    )


def static_diff(path: str, new: str, old: str) -> str:
    return (
        "different input pytree:\n"
        f"  * at input path {path}, now {STATIC.format(new)} and before {STATIC.format(old)}, "
        "so the pytree node metadata does not match"
    )


FIRST_CALL = (
    "TRACING CACHE MISS at /proj/t.py:10:30 (<module>):\n"
    "  never seen function:\n"
    "    f id=140408259590912 defined at /proj/t.py:8"
)
CLOSURE_LOOP = (
    "TRACING CACHE MISS at /proj/t.py:23:8 (run):\n"
    "  never seen function:\n"
    "    <lambda> id=140408259591200 defined at /proj/t.py:22\n"
    "  but seen another function defined on the same line; maybe the function is\n"
    "  being re-defined repeatedly, preventing caching?"
)


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        pytest.param(
            "different input types:\n  * at x, now f32[4] and before f32[3]",
            "x: f32[3] -> f32[4]",
            id="new-shape",
        ),
        pytest.param(
            "different input types:\n  * at x, now i32[4] and before f32[3]",
            "x: f32[3] -> i32[4]",
            id="new-dtype",
        ),
        pytest.param(
            "different input types:\n  * at x, now f32[] and before i32[]",
            "x: i32[] -> f32[]",
            id="weak-int-to-weak-float",
        ),
        pytest.param(
            "different input types:\n"
            "  * at x, now f32[]{weak_type=False} and before f32[]{weak_type=True}"
            + WEAK_TYPES_URL,
            "x: f32[]{weak_type=True} -> f32[]{weak_type=False}",
            id="weak-to-strong-url-glued-on",
        ),
        pytest.param(
            "different input types:\n"
            "  * at x, now f32[4] and before f32[3]\n"
            "  * at y, now i32[] and before f32[]",
            "x: f32[3] -> f32[4]; y: f32[] -> i32[]",
            id="two-arguments",
        ),
        pytest.param(
            "different input types:\n"
            "  * at x, now f32[4@i]({Explicit: ('i',)}) and before f32[4]({Explicit: ('i',)})",
            "x: f32[4]({Explicit: ('i',)}) -> f32[4@i]({Explicit: ('i',)})",
            id="sharding",
        ),
        pytest.param(
            static_diff("[0][1]", "3", "2"),
            "static argument n: 2 -> 3",
            id="static-positional-named-from-arg_names",
        ),
        pytest.param(
            static_diff("[1]['cutoff']", "0.5", "0.25"),
            "static argument cutoff: 0.25 -> 0.5",
            id="static-keyword",
        ),
        pytest.param(
            static_diff("[0][1]", "'b'", "'a'"),
            "static argument n: 'a' -> 'b'",
            id="static-string-value",
        ),
        pytest.param(
            "different input pytree:\n"
            "  * at input path [0][0], now list of length 3 and before list of length 2, "
            "so the lengths do not match",
            "x: list of length 2 -> list of length 3 (the lengths do not match)",
            id="list-length",
        ),
        pytest.param(
            "different input pytree:\n"
            "  * at input path [0][0][2], now list of length 3 and before list of length 2, "
            "so the lengths do not match",
            "x[2]: list of length 2 -> list of length 3 (the lengths do not match)",
            id="nested-path",
        ),
        pytest.param(
            "different input pytree:\n"
            "  * at input path [0][0], now <class 'tuple'> and before <class 'list'>, "
            "so their Python types differ",
            "x: <class 'list'> -> <class 'tuple'> (their Python types differ)",
            id="list-to-tuple",
        ),
        pytest.param(
            "different input pytree:\n"
            "  * at input path [1], now <class 'dict'> with 1 child and before <class 'dict'> "
            "with 0 child, so the numbers of children do not match, with the symmetric "
            "difference of key sets: {'y'}",
            "input [1]: <class 'dict'> with 0 child -> <class 'dict'> with 1 child "
            "(the numbers of children do not match, with the symmetric difference of key "
            "sets: {'y'})",
            id="new-kwarg",
        ),
        pytest.param(
            "Tracing context doesn't match, e.g. due to config or context manager.",
            "tracing context changed (a config option or context manager)",
            id="context-without-detail",
        ),
        pytest.param(
            "Tracing context doesn't match, e.g. due to config or context manager.\n"
            "  * jax_enable_x64 differs: now True and before False",
            "config jax_enable_x64: False -> True",
            id="context-x64",
        ),
        pytest.param(
            "Tracing context doesn't match, e.g. due to config or context manager.\n"
            "  * jax_default_matmul_precision differs: now highest and before None",
            "config jax_default_matmul_precision: None -> highest",
            id="context-matmul-precision",
        ),
        pytest.param(
            "Tracing context doesn't match, e.g. due to config or context manager.\n"
            "  * number of tracing context values differs: now 31 and before 30",
            "tracing context changed (a config option or context manager)",
            id="context-length-differs",
        ),
        pytest.param(
            "Debug info doesn't match.",
            "debug info changed (argument names or source location)",
            id="debug-info",
        ),
        pytest.param(
            "cache miss explanation unavailable",
            "cache miss explanation unavailable",
            id="jax-has-no-explanation",
        ),
        pytest.param(
            "something a later jax version says\n  over two lines",
            "something a later jax version says over two lines",
            id="unknown-text-after-closest-key",
        ),
    ],
)
def test_cause_of_each_explanation(diff: str, expected: str) -> None:
    message = miss(diff)
    assert cause(message, ("x", "n")) == expected
    assert not is_first_sight(message)


def test_cause_of_foreign_text_is_unknown() -> None:
    assert cause("some log line that is not a cache-miss explanation") == "cause unknown"
    assert cause("") == "cause unknown"


def test_keyword_static_argument_needs_no_arg_names() -> None:
    assert cause(miss(static_diff("[1]['cutoff']", "0.5", "0.25"))) == (
        "static argument cutoff: 0.25 -> 0.5"
    )


def test_positional_path_beyond_arg_names_is_numbered() -> None:
    diff = (
        "different input pytree:\n"
        "  * at input path [0][3], now list of length 3 and before list of length 2, "
        "so the lengths do not match"
    )
    assert cause(miss(diff), ("x",)) == (
        "argument 3: list of length 2 -> list of length 3 (the lengths do not match)"
    )


def test_static_argument_without_its_name_is_not_doubled() -> None:
    result = cause(miss(static_diff("[0][1]", "3", "2")), ())
    assert result == "static argument 1: 2 -> 3"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(FIRST_CALL, True, id="first-call"),
        pytest.param(CLOSURE_LOOP, True, id="closure-redefined-in-loop"),
        pytest.param(
            miss("different input types:\n  * at x, now f32[4] and before f32[3]"),
            False,
            id="retrace-of-a-seen-function",
        ),
        pytest.param("", False, id="empty"),
    ],
)
def test_is_first_sight(message: str, expected: bool) -> None:
    assert is_first_sight(message) is expected
