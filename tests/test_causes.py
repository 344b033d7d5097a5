"""Unit tests for pytest_jaxperf.causes: JAX cache-miss explanations -> one-line causes.

The messages are built exactly as jax 0.10.2 logs them
(jax/_src/interpreters/partial_eval.py `explain` and `diff_*`; quoted in
/work/shared/notes/jax-internals.md section 2).
"""

from __future__ import annotations

import pytest

from pytest_jaxperf.causes import (
    CLOSURE,
    LINE_LIMIT,
    REDEFINED,
    LeafDiff,
    add_reason,
    cause,
    is_first_sight,
    label_name,
    redefined,
    summary,
)
from pytest_jaxperf.model import MAX_REASONS

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
            "  * at input path [0][0], now <class 'm.M'> with pytree metadata (<function f>,) "
            "and before <class 'm.M'> with pytree metadata (<function f>,), "
            "so the pytree node metadata does not match",
            "x: static fields of M (f,): equal repr, compared by identity "
            "(the pytree node metadata does not match)",
            id="node-metadata-compared-by-identity",
        ),
        pytest.param(
            "different input pytree:\n"
            "  * at input path [0][0], now <class 'M'> with pytree metadata (3,) "
            "and before <class 'M'> with pytree metadata (2,), "
            "so the pytree node metadata does not match",
            "x: static fields of M: (2,) -> (3,) (the pytree node metadata does not match)",
            id="node-metadata-by-value",
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


# -- summary: the failure summary's lines -------------------------------------------------
SHAPE_FIX = "fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))"


def test_summary_folds_repeated_shape_changes_of_one_argument() -> None:
    reasons = ["idx: i32[33] -> i32[36]", "idx: i32[36] -> i32[30]", "idx: i32[30] -> i32[31]"]
    assert summary(reasons + ["idx: i32[31] -> i32[40]"], traces=5) == [
        f"idx: shape changed on 4 of 5 traces: i32[33], i32[36], i32[30], ...; {SHAPE_FIX}"
    ]
    assert summary(reasons[:1], traces=2) == [f"idx: i32[33] -> i32[36]; {SHAPE_FIX}"]


def test_summary_counts_past_a_full_list_of_an_older_file_as_a_lower_bound() -> None:
    reasons = [f"x: f32[{n}] -> f32[{n + 1}]" for n in range(MAX_REASONS)]
    (line,) = summary(reasons, traces=40)
    assert line.startswith(f"x: shape changed on {MAX_REASONS}+ of 40 traces: f32[0], ")


def test_summary_says_each_fix_once() -> None:
    fixed: set[str] = set()
    first = summary(["x: f32[3] -> f32[4]"], 2, "f: ", fixed)
    second = summary(["y: f32[5] -> f32[6]"], 2, "g: ", fixed)
    assert first == [f"f: x: f32[3] -> f32[4]; {SHAPE_FIX}"]
    assert second == ["g: y: f32[5] -> f32[6]"]


def test_summary_splits_causes_of_several_arguments() -> None:
    assert summary(["x: f32[3] -> f32[4]; y: f32[] -> i32[]"], 2) == [
        f"x: f32[3] -> f32[4]; {SHAPE_FIX}",
        "y: f32[] -> i32[]; fix: give it one dtype on every call (jnp.int32(x))",
    ]


@pytest.mark.parametrize(
    ("reason", "line"),
    [
        pytest.param(
            "x: i32[]{weak_type=True} -> i32[]{weak_type=False}",
            "x: i32[]{weak_type=True} -> i32[]{weak_type=False}; "
            "fix: create it with an explicit dtype (jnp.int32(x), not a Python number)",
            id="weak-type",
        ),
        pytest.param(
            "static argument k: 2 -> 3",
            "static argument k: 2 -> 3; "
            "fix: use a few fixed values (buckets), or pass it as an array",
            id="static-value",
        ),
        pytest.param(
            "static argument opt: Opt(a=<function f>) -> Opt(a=<function f>)",
            "static argument opt: Opt(a=<function f>) -> Opt(a=<function f>); "
            "fix: pass one object, or give its class __eq__ and __hash__ over its values",
            id="jax-text-of-an-object-compared-by-identity",
        ),
        pytest.param(
            "x: list of length 2 -> list of length 3 (the lengths do not match)",
            "x: list of length 2 -> list of length 3 (the lengths do not match); "
            "fix: pass the same pytree structure on every call",
            id="pytree-structure",
        ),
        pytest.param(
            "function re-defined on every call (jit inside a loop?): a new step object was "
            "traced; create and jit it once, outside the loop",
            "function re-defined on every call: a new step object was traced; "
            "fix: create and jit it once, outside the loop",
            id="re-defined",
        ),
        pytest.param(
            "m: static fields of M: (1,) -> (2,) (the pytree node metadata does not match)",
            "m: static fields of M: (1,) -> (2,); "
            "fix: pass one object, or hashable values in its static fields",
            id="static-field-of-an-argument",
        ),
        pytest.param("config jax_enable_x64: False -> True", "config jax_enable_x64: False -> True",
                     id="no-fix"),  # fmt: skip
    ],
)
def test_summary_line_of_each_kind(reason: str, line: str) -> None:
    assert summary([reason], 2) == [line]


def test_summary_cuts_a_long_cause_only_after_its_fix_and_repeats_are_short() -> None:
    long = "static argument opt: " + "Opt(init=<function chain.<locals>.init_fn>)" * 5
    (line,) = summary([long + " -> " + long[21:]], 2, "fit: ")
    assert len(line) == LINE_LIMIT
    # The fix in a few words, '<locals>' left out, and only then the cause cut.
    assert line.startswith("fit: static argument opt: Opt(init=<function chain.init_fn>)Opt(")
    assert line.endswith("...; fix: pass one object, or give it __eq__/__hash__")


WEAK_FIX = "fix: create it with an explicit dtype (jnp.int32(x), not a Python number)"


def test_summary_line_keeps_the_whole_change_by_a_shorter_fix_first() -> None:
    reason = "x: i32[]{weak_type=True} -> i32[]{weak_type=False}"
    label = "a_longer_step_name: "
    assert summary([reason], 2, label) == [f"{label}{reason}; {WEAK_FIX}"]
    longer = "p" * 60 + ": "
    assert summary([reason], 2, longer) == [f"{longer}{reason}; fix: give it an explicit dtype"]
    longest = "p" * 100 + ": "
    (line,) = summary([reason], 2, longest)
    assert line == f"{longest}x: i32[]{{weak}} -> i32[]; fix: give it an explicit dtype"


def test_summary_shows_fewer_values_of_a_fold_before_cutting_it() -> None:
    reasons = [f"idx: f32[{n},1024] -> f32[{n + 1},1024]" for n in range(1000, 1004)]
    label = "e" * 50 + ": "
    (line,) = summary(reasons, 5, label)
    assert line == (
        f"{label}idx: shape changed on 4 of 5 traces: f32[1000,1024], ...; "
        "fix: pad to a fixed size or a few buckets"
    )
    assert len(line) <= LINE_LIMIT


def test_label_name_drops_the_enclosing_functions() -> None:
    assert label_name("test_python_scalar_carry.<locals>.step") == "step"
    assert label_name("a.<locals>.Model.<locals>.f") == "f"
    assert label_name("Model.__call__") == "Model.__call__"


def test_causes_past_the_cap_are_counted_by_fold() -> None:
    reasons: list[str] = []
    for n in range(1, 20):
        add_reason(reasons, f"x: f32[{n}] -> f32[{n + 1}]")
    add_reason(reasons, "static argument k: 2 -> 3")
    add_reason(reasons, "x: f32[1] -> f32[2]")  # said before: not counted again
    assert reasons[MAX_REASONS:] == [
        "and 9 more retraces: x: shape changed",
        "and 1 more retraces of other causes",
    ]
    lines = summary(reasons, traces=21)
    assert lines[0].startswith("x: shape changed on 19 of 21 traces: f32[1], f32[2], f32[3], ")
    assert lines[1] == "and 1 more retraces of other causes"


def test_a_full_list_without_counts_past_it_is_a_lower_bound_unless_traces_say() -> None:
    reasons = [f"x: f32[{n}] -> f32[{n + 1}]" for n in range(MAX_REASONS)]
    assert summary(reasons, traces=11)[0].startswith(f"x: shape changed on {MAX_REASONS} of 11")


def test_redefined_is_told_from_the_causes() -> None:
    assert redefined(["x: f32[3] -> f32[4]", REDEFINED.format(name="f")])
    assert not redefined(["x: f32[3] -> f32[4]"])


def test_static_argument_with_a_leaf_names_it() -> None:
    leaf = LeafDiff(".update", "chain.<locals>.update_fn", "chain.<locals>.update_fn", CLOSURE)
    assert cause(miss(static_diff("[0][1]", "Opt(...)", "Opt(...)")), ("x", "opt"),
                 leaves={"[0][1]": leaf}) == (  # fmt: skip
        "static argument opt.update: new closure chain.<locals>.update_fn per call, compared by "
        "identity"
    )
