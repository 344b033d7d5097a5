"""The trace hooks against each layout of JAX's trace-cache frames: jax 0.9 - 0.10 fire the
"trace_to_jaxpr" test event inside the cached `pe.trace_to_jaxpr`; jax 0.11 fires it inside
`pe.trace_to_jaxpr_nocache`, which the cached function calls. The 0.11 layout is rebuilt on
the installed JAX (one frame named `trace_to_jaxpr_nocache` between the event and the cache),
so that the recorder's self-check can be run against it here."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pytest_jaxperf.measure import _jaxhooks
from pytest_jaxperf.measure.recorder import Recorder

pytestmark = pytest.mark.jax_internals


class _Info:
    static_argnums = (1,)


def _frames() -> dict[str, FrameType | None]:
    """The frame that fires the event, reached the ways JAX reaches it, by layout."""
    seen: dict[str, FrameType | None] = {}

    def trace_to_jaxpr_nocache(fun: Any, in_avals: Any, debug_info: Any, label: str) -> None:
        seen[label] = sys._getframe(0)

    def trace_to_jaxpr(fun: Any, in_avals: Any, debug_info: Any, label: str) -> None:
        if label.startswith("0.10"):
            seen[label] = sys._getframe(0)
        else:
            trace_to_jaxpr_nocache(fun, in_avals, debug_info, label)

    def _trace_for_jit(fun: Any, ji: Any, args: tuple[Any, ...], label: str) -> None:
        trace_to_jaxpr(fun, ("avals",), "dbg", label)

    def scan_body_tracer(fun: Any, label: str) -> None:
        trace_to_jaxpr(fun, ("avals",), "dbg", label)

    def pallas_kernel_tracer(fun: Any, label: str) -> None:
        trace_to_jaxpr_nocache(fun, ("avals",), "dbg", label)

    _trace_for_jit(len, _Info(), (1.0, "static"), "0.11 jit")
    scan_body_tracer(len, "0.11 scan")
    pallas_kernel_tracer(len, "0.11 direct")
    _trace_for_jit(len, _Info(), (1.0, "static"), "0.10 jit")
    return seen


def test_jax_011_layout_reads_the_trace_below_the_cached_function() -> None:
    frames = _frames()
    hooks = _jaxhooks._TraceToJaxprNocache()

    jit = hooks.trace_call(frames["0.11 jit"])  # type: ignore[arg-type]
    assert jit is not None
    assert (jit.fun, jit.in_avals, jit.debug_info) == (len, ("avals",), "dbg")
    assert jit.by_jit and jit.static == ("static",)

    for label in ("0.11 scan", "0.11 direct"):
        call = hooks.trace_call(frames[label])  # type: ignore[arg-type]
        assert call is not None and call.fun is len
        assert not call.by_jit and call.static == ()

    # The 0.10 frame is not the 0.11 set's, and the reverse.
    assert hooks.trace_call(frames["0.10 jit"]) is None  # type: ignore[arg-type]
    assert _jaxhooks._TraceToJaxpr().trace_call(frames["0.11 jit"]) is None  # type: ignore[arg-type]
    old = _jaxhooks._TraceToJaxpr().trace_call(frames["0.10 jit"])  # type: ignore[arg-type]
    assert old is not None and old.by_jit and old.static == ("static",)


def test_the_hook_set_follows_where_the_trace_event_fires() -> None:
    from jax._src.interpreters import partial_eval as pe

    hooks = _jaxhooks._hooks()
    if isinstance(hooks, _jaxhooks._CreatePjitJaxpr):
        pytest.skip("jax < 0.9 traces jit through _create_pjit_jaxpr")
    nocache = hasattr(pe, "trace_to_jaxpr_nocache")
    assert isinstance(hooks, _jaxhooks._TraceToJaxprNocache) is nocache
    assert hooks.missing() == []


def _jax_011_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fire partial_eval's test events one frame further down, from a function named as
    jax 0.11's, holding the same locals (jax 0.9 - 0.10 only)."""
    from jax._src import util
    from jax._src.interpreters import partial_eval as pe

    if hasattr(pe, "trace_to_jaxpr_nocache"):
        pytest.skip("the installed JAX has jax 0.11's layout already")
    if not hasattr(pe, "test_event") or not isinstance(_jaxhooks._hooks(), _jaxhooks._TraceToJaxpr):
        pytest.skip("jax < 0.9: jit does not trace through pe.trace_to_jaxpr")

    def trace_to_jaxpr_nocache(name: str, *args: Any) -> None:
        # Called by the cached `trace_to_jaxpr` in place of `test_event`: a frame with
        # 0.11's name and locals between the event and the cached function.
        cached = sys._getframe(1)
        if cached.f_code.co_name == "trace_to_jaxpr":
            fun = cached.f_locals.get("fun")  # noqa: F841 - read from this frame
            in_avals = cached.f_locals.get("in_avals")  # noqa: F841
            debug_info = cached.f_locals.get("debug_info")  # noqa: F841
        util.test_event(name, *args)

    monkeypatch.setattr(pe, "test_event", trace_to_jaxpr_nocache)
    monkeypatch.setattr(pe, "trace_to_jaxpr_nocache", trace_to_jaxpr_nocache, raising=False)


def test_self_check_passes_on_the_jax_011_layout_only_with_its_hook_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from jax._src import util

    _jax_011_layout(monkeypatch)
    monkeypatch.setattr(util, "test_event_listener", util.test_event_listener)
    results = {}
    for hooks in (_jaxhooks._TraceToJaxpr(), _jaxhooks._TraceToJaxprNocache()):
        monkeypatch.setattr(_jaxhooks, "_HOOKS", hooks)
        recorder = Recorder()
        recorder.isolate()  # as the session does before a recorded test's self-check
        results[type(hooks).__name__] = recorder.self_check(tmp_path)
        recorder.active = None
    # As seen on jax 0.11.2 before the 0.11 hook set existed (the GPU machine's report).
    assert results["_TraceToJaxpr"] == {
        "traces": "a probe function's trace was not counted under its name "
        "(traces counted: 0/0/none)",
        "compiles": "an evicted probe function was not compiled again",
    }
    assert results["_TraceToJaxprNocache"] == {}


# jax 0.11's FlatTree cases, by the names `_static_diffs` tells them by.
class FTStatic:
    def __init__(self, val: Any) -> None:
        self.val = val

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is FTStatic and type(self.val) is type(other.val) and self.val == other.val
        )

    __hash__ = None  # type: ignore[assignment]


class FTTuple:
    def __init__(self, *elts: Any) -> None:
        self.elts = elts


class FTDict:
    def __init__(self, keys: tuple[str, ...], vals: tuple[Any, ...]) -> None:
        self.keys, self._vals = keys, vals


class FTPyTree:
    pass


def _jit_args(k: Any, **kwargs: Any) -> FTTuple:
    """jit's FlatTree of (x, k) with `k` and the keyword arguments static."""
    keys = tuple(sorted(kwargs))
    return FTTuple(
        FTTuple(FTPyTree(), FTStatic(k)), FTDict(keys, tuple(FTStatic(kwargs[n]) for n in keys))
    )


def test_jax_011_static_argument_causes_are_read_from_its_flat_trees() -> None:
    # jax 0.11.2 explains these misses as "cache miss explanation unavailable" (checked on
    # the GPU machine's jax 0.11.2, where these lines parse to the causes below).
    from pytest_jaxperf import causes

    lines = _jaxhooks._static_diffs(_jit_args(2, m=3), _jit_args(1, m=3))
    assert causes.cause("different input pytree:\n" + "\n".join(lines), ["x", "k"]) == (
        "static argument k: 1 -> 2"
    )
    lines = _jaxhooks._static_diffs(_jit_args(2, m=4), _jit_args(2, m=3))
    assert causes.cause("\n".join(lines), ["x", "k"]) == "static argument m: 3 -> 4"
    assert _jaxhooks._static_diffs(_jit_args(2, m=3), _jit_args(2, m=3)) == []
    # 1 and 1.0 are equal but not the same static value: JAX retraces.
    assert len(_jaxhooks._static_diffs(_jit_args(1.0), _jit_args(1))) == 1
    # Different structures (a keyword added) are JAX's to explain.
    assert _jaxhooks._static_diffs(_jit_args(2, m=3), _jit_args(2)) == []
    assert _jaxhooks._static_diffs(_jit_args(2), FTPyTree()) == []
