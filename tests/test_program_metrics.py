"""Unit tests for measure.program_metrics: exact metrics of small known programs (CPU)."""

from __future__ import annotations

from typing import Any

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest
from _jax_releases import builtin_sum_eqns
from jax import lax

from pytest_jaxperf.measure._jaxhooks import module_ops
from pytest_jaxperf.measure.program_metrics import (
    LineTally,
    count_eqns,
    device_peak_bytes,
    eqn_lines,
    measure,
)

pytestmark = pytest.mark.jax_internals


def builtin_sum(x: Any) -> Any:
    return sum(x)  # Python's sum: unrolls into slice + squeeze + add per element


@jax.custom_jvp
def softplus(x: Any) -> Any:
    return jnp.log1p(jnp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return softplus(x), t * jax.nn.sigmoid(x)


@jax.jit
def inner(v: Any) -> Any:
    return jnp.sin(v) * 2.0


def nested(x: Any) -> Any:
    def body(carry: Any, xi: Any) -> Any:
        y = lax.cond(xi > 0, lambda v: v + xi, lambda v: v - 1.0, carry)
        return y, y

    c, ys = lax.scan(body, 0.0, x)
    return inner(ys).sum() + softplus(c)


# The jaxpr of `nested` on f32[4] (jax 0.10.2, printed with jax.make_jaxpr):
#   top level, 7 eqns: scan, jit(inner), convert_element_type, reduce_sum, custom_jvp_call,
#                      convert_element_type, add
#   scan body, 3 eqns: gt, convert_element_type, cond
#     cond branch 0 (false), 1 eqn: sub
#     cond branch 1 (true), 2 eqns: convert_element_type, add
#   jit(inner) body, 2 eqns: sin, mul
#   custom_jvp_call call_jaxpr, 2 eqns: exp, log1p (the jvp rule is a thunk: not counted)
# recursive: 7 + (3 + 1 + 2) + 2 + 2 = 17
NESTED_TOP = 7
NESTED_RECURSIVE = 17


def reference_count(jaxpr: Any) -> int:
    """Independent recursive count using jax's own sub-jaxpr walker."""
    closed_or_open = getattr(jaxpr, "jaxpr", jaxpr)
    return len(closed_or_open.eqns) + sum(
        reference_count(sub) for sub in _subjaxprs(closed_or_open)
    )


# The oldest supported jax (0.6.2) has neither jax.extend.core.subjaxprs (jax.core.subjaxprs
# instead) nor jax.monitoring's public unregister (a private one instead).
_subjaxprs = getattr(jax.extend.core, "subjaxprs", None) or jax.core.subjaxprs
_unregister_duration_listener = getattr(
    jax.monitoring, "unregister_event_duration_listener", None
) or getattr(jax._src.monitoring, "_unregister_event_duration_listener_by_callback")
# The primitive of a nested jit: "pjit" in jax 0.6.2, "jit" in 0.10.2.
JIT_PRIMITIVES = ("jit", "pjit")


# -- count_eqns -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 100])
def test_builtin_sum_is_equations_per_element(n: int) -> None:
    x = jnp.ones(n)
    assert count_eqns(jax.make_jaxpr(builtin_sum)(x)) == builtin_sum_eqns(n)
    assert count_eqns(jax.jit(builtin_sum).trace(x).jaxpr) == builtin_sum_eqns(n)


def test_jnp_sum_is_one_eqn() -> None:
    x = jnp.ones(100)
    assert count_eqns(jax.jit(jnp.sum).trace(x).jaxpr) == 1


def test_nested_sub_jaxprs_counted_recursively() -> None:
    closed = jax.make_jaxpr(nested)(jnp.arange(4.0))
    assert len(closed.jaxpr.eqns) == NESTED_TOP
    assert count_eqns(closed) == NESTED_RECURSIVE
    assert count_eqns(jax.jit(nested).trace(jnp.arange(4.0)).jaxpr) == NESTED_RECURSIVE


def test_recursive_count_is_top_level_plus_inner() -> None:
    closed = jax.make_jaxpr(nested)(jnp.arange(4.0))
    eqns = closed.jaxpr.eqns
    by_primitive = {e.primitive.name: e for e in eqns}
    scan_body = by_primitive["scan"].params["jaxpr"]
    branches = next(e for e in scan_body.jaxpr.eqns if e.primitive.name == "cond").params[
        "branches"
    ]
    (jit_name,) = set(JIT_PRIMITIVES) & by_primitive.keys()
    inner_body = by_primitive[jit_name].params["jaxpr"]
    jvp_body = by_primitive["custom_jvp_call"].params["call_jaxpr"]
    assert count_eqns(scan_body) == 3 + 1 + 2
    assert [count_eqns(b) for b in branches] == [1, 2]
    assert count_eqns(inner_body) == 2
    assert count_eqns(jvp_body) == 2
    inner_total = count_eqns(scan_body) + count_eqns(inner_body) + count_eqns(jvp_body)
    assert count_eqns(closed) == len(eqns) + inner_total
    # and the same as jax's own sub-jaxpr walker gives
    assert count_eqns(closed) == reference_count(closed)


def test_open_jaxpr_counts_like_closed() -> None:
    closed = jax.make_jaxpr(nested)(jnp.arange(4.0))
    assert count_eqns(closed.jaxpr) == count_eqns(closed) == NESTED_RECURSIVE


def test_while_loop_cond_and_body_counted() -> None:
    def f(x: Any) -> Any:
        return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))

    closed = jax.make_jaxpr(f)(1.0)
    # while (1) + body: add, mul (2) + cond: lt (1)
    assert len(closed.jaxpr.eqns) == 1
    assert count_eqns(closed) == 4 == reference_count(closed)


def test_custom_vjp_body_counted() -> None:
    @jax.custom_vjp
    def g(x: Any) -> Any:
        return jnp.sin(x)

    g.defvjp(lambda x: (jnp.sin(x), x), lambda r, t: (t * jnp.cos(r),))
    closed = jax.make_jaxpr(lambda x: g(x) * 2.0)(1.0)
    # custom_vjp_call, mul (2) + call_jaxpr: sin (1)
    assert count_eqns(closed) == 3 == reference_count(closed)


def test_builtin_sum_count_matches_reference_walker() -> None:
    closed = jax.make_jaxpr(builtin_sum)(jnp.ones(10))
    assert count_eqns(closed) == reference_count(closed) == len(closed.jaxpr.eqns)
    assert count_eqns(closed) == builtin_sum_eqns(10)


# -- module_ops -------------------------------------------------------------------------------

# Every operation counts, in every region: func.func x2, constant, reduce, the reducer's add
# and stablehlo.return (hidden by the `applies` form), call, return x2.
STABLEHLO_MODULE = """\
module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<f32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %1 = call @helper(%0) : (tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @helper(%arg0: tensor<f32>) -> tensor<f32> {
    return %arg0 : tensor<f32>
  }
}
"""  # noqa: E501


def test_module_ops_counts_every_operation_of_a_literal_module() -> None:
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        assert module_ops(ir.Module.parse(STABLEHLO_MODULE)) == 9
        assert module_ops(ir.Module.parse("module {}")) == 0


# -- program_metrics --------------------------------------------------------------------------


def matmul(a: Any, b: Any) -> Any:
    return a @ b


def test_program_metrics_of_a_matmul() -> None:
    jitted = jax.jit(matmul)
    a, b = jnp.ones((64, 64)), jnp.ones((64, 64))
    jax.block_until_ready(jitted(a, b))
    m = measure(jitted, (a, b), {})
    assert m.jaxpr_eqns == 1  # dot_general
    assert m.flops == 2 * 64**3 == 524288  # a multiply and an add per inner-product term
    assert m.argument_bytes == 2 * 64 * 64 * 4
    assert m.output_bytes == 64 * 64 * 4
    assert m.bytes_accessed == 3 * 64 * 64 * 4  # read a and b, write the product
    # main, dot_general, return
    assert m.hlo_ops == module_ops(jitted.trace(a, b).lower().compiler_ir("stablehlo")) == 3


def test_program_metrics_kwargs_and_transcendentals() -> None:
    def f(x: Any, *, scale: Any) -> Any:
        return jnp.exp(x) * scale

    jitted = jax.jit(f)
    x = jnp.ones(1000)
    jax.block_until_ready(jitted(x, scale=2.0))
    m = measure(jitted, (x,), {"scale": 2.0})
    assert m.jaxpr_eqns == 3  # exp, convert_element_type (the weakly typed scale), mul
    assert m.transcendentals == 1000  # one exp per element
    assert m.argument_bytes == 1000 * 4 + 4
    assert m.output_bytes == 1000 * 4


def test_program_metrics_nested_function() -> None:
    jitted = jax.jit(nested)
    x = jnp.arange(4.0)
    jax.block_until_ready(jitted(x))
    m = measure(jitted, (x,), {})
    assert m.jaxpr_eqns == NESTED_RECURSIVE
    assert m.argument_bytes == 16 and m.output_bytes == 4


def _compile_events(action: Any) -> list[str]:
    events: list[str] = []

    def listener(event: str, duration_secs: float, **kwargs: str | int) -> None:
        events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        action()
    finally:
        _unregister_duration_listener(listener)
    return [e for e in events if e.startswith("/jax/core/compile/")]


def test_program_metrics_after_a_call_adds_no_trace_or_compile() -> None:
    jitted = jax.jit(matmul)
    a = jnp.full((64, 64), 2.0)
    jax.block_until_ready(jitted(a, a))
    assert _compile_events(lambda: measure(jitted, (a, a), {})) == []


def test_compile_event_listener_sees_a_fresh_program() -> None:
    # The check above could pass with a deaf listener: a never-called function must show
    # its trace, lowering and backend compile.
    jitted = jax.jit(lambda a: a * 3.0 + 1.0)
    events = _compile_events(lambda: measure(jitted, (jnp.ones(7),), {}))
    assert "/jax/core/compile/backend_compile_duration" in events
    assert "/jax/core/compile/jaxpr_trace_duration" in events


def test_device_peak_bytes_is_none_on_cpu() -> None:
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only expectation")
    assert device_peak_bytes() is None


class _NoEstimate:
    """A compiled program as XLA's GPU backend reports one it did not estimate (-1)."""

    def cost_analysis(self) -> dict[str, float]:
        return {"flops": -1.0, "transcendentals": 0.0, "bytes accessed": -1.0}

    def memory_analysis(self) -> Any:
        class Stats:
            argument_size_in_bytes = 64
            output_size_in_bytes = -1
            temp_size_in_bytes = 0

        return Stats()


def test_a_negative_figure_from_xla_is_not_recorded() -> None:
    from pytest_jaxperf.measure import program_metrics

    assert program_metrics._cost(_NoEstimate()) == {"transcendentals": 0.0}
    assert program_metrics._memory(_NoEstimate()) == {
        "argument_size_in_bytes": 64,
        "temp_size_in_bytes": 0,
    }


# -- source lines and the patterns read with them (`eqn_lines`) ----------------------------

WEIGHTS = np.ones((64, 64), np.float32)  # 16 KiB


def _lines(fn: Any, *args: Any) -> dict[int, tuple[list[int], set[str]]]:
    tally: LineTally = {}
    eqn_lines(jax.jit(fn).trace(*args).jaxpr, tally)
    return {line[1]: value for line, value in tally.items() if line is not None}


def test_eqn_lines_reads_the_unroll_of_a_fori_loop_and_a_scan() -> None:
    def loops(x: Any) -> Any:
        x = lax.fori_loop(0, 8, lambda i, z: z * 2.0, x, unroll=True)
        x = lax.fori_loop(0, 8, lambda i, z: z + 1.0, x, unroll=4)
        x = lax.fori_loop(0, 8, lambda i, z: z - 1.0, x)
        return lax.scan(lambda c, _: (c * 3.0, None), x, None, length=5, unroll=5)[0]

    first = loops.__code__.co_firstlineno
    lines = _lines(loops, jnp.ones(3))
    # [equations, largest unroll, constant bytes]: unroll=True reads as the loop's length.
    assert lines[first + 1][0][1] == 8
    assert lines[first + 2][0][1] == 4
    assert lines[first + 3][0][1] == 1  # a loop not unrolled
    assert lines[first + 4][0][1] == 5
    assert all(counts[2] == 0 for counts, _ in lines.values())


def test_eqn_lines_charges_a_closed_over_constant_to_the_line_that_uses_it() -> None:
    def project(x: Any) -> Any:
        y = jnp.tanh(x)
        return y @ WEIGHTS + y @ WEIGHTS  # the same constant twice: charged once

    first = project.__code__.co_firstlineno
    lines = _lines(project, jnp.ones((2, 64)))
    assert lines[first + 1][0][2] == 0
    assert lines[first + 2][0][2] == WEIGHTS.nbytes
    # Passed as an argument, the array is no constant of the program.
    passed = _lines(lambda x, w: x @ w, jnp.ones((2, 64)), WEIGHTS)
    assert all(counts[2] == 0 for counts, _ in passed.values())


def test_a_sub_jaxpr_made_inside_jax_is_charged_to_the_line_that_holds_it() -> None:
    def layer(x: Any) -> Any:
        return jax.nn.relu(x * 2.0)  # relu: a custom_jvp whose body JAX traces itself

    tally: LineTally = {}
    jaxpr = jax.jit(layer).trace(jnp.ones(3)).jaxpr
    eqn_lines(jaxpr, tally)
    line = layer.__code__.co_firstlineno + 1
    assert [(at[1], counts[0]) for at, (counts, _) in tally.items() if at] == [
        (line, count_eqns(jaxpr))
    ]
    assert None not in tally
