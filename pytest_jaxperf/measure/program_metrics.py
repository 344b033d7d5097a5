"""Measuring a jitted program's size: jaxpr equations, StableHLO ops, cost and memory analyses
(records them as model.ProgramMetrics)."""

from __future__ import annotations

from typing import Any

from ..model import ProgramMetrics
from . import _jaxhooks as hooks


def count_eqns(jaxpr: Any) -> int:
    """Equations of a (Closed)Jaxpr, recursively: scan/while/cond bodies, nested jits and
    custom_jvp/vjp functions count with their own equations."""
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    return sum(1 + sum(count_eqns(j) for j in _subjaxprs(eqn.params)) for eqn in inner.eqns)


# Per source line (file, line; None: no frame outside JAX), [equations made there, the
# largest `unroll` of a scan made there (1: none unrolled), bytes of the closed-over constants
# its equations use] and the names of their primitives: where a program's equations come
# from and the known patterns among them (`eqn_lines`).
LineTally = dict[tuple[str, int] | None, tuple[list[int], set[str]]]


def eqn_lines(jaxpr: Any, into: LineTally) -> None:
    """Adds to `into` the equations of a (Closed)Jaxpr by the source line that made each,
    counted as `count_eqns` counts them (sub-jaxprs' equations at their own lines, or their
    holder's where they have none), with the unrolled loops and closed-over constants made
    or used there. A program whose lines
    cannot be read is left out whole."""
    found: LineTally = {}
    try:
        # Each (sub-)jaxpr with the line of the equation that holds it: an equation of a
        # sub-jaxpr made with no frame outside JAX (the body of a custom_jvp such as
        # jax.nn.relu, traced inside JAX) is charged there.
        stack: list[tuple[Any, tuple[str, int] | None]] = [(jaxpr, None)]
        while stack:
            closed, holder = stack.pop()
            inner = getattr(closed, "jaxpr", closed)
            # Array constants the program closes over, by variable, each charged once to the
            # first equation that uses it; looked up only in a program that has any (most
            # have none: no extra work per equation there).
            consts = {id(var): size for var, size in hooks.closed_over_consts(closed)}
            for eqn in inner.eqns:
                line = hooks.eqn_user_line(eqn) or holder
                tally = found.get(line)
                if tally is None:
                    tally = found[line] = ([0, 1, 0], set())
                tally[0][0] += 1
                name = str(eqn.primitive)
                tally[1].add(name)
                if name == "scan":
                    tally[0][1] = max(tally[0][1], hooks.scan_unroll(eqn))
                if consts:
                    for var in eqn.invars:
                        tally[0][2] += consts.pop(id(var), 0)
                stack.extend((sub, line) for sub in _subjaxprs(eqn.params))
    except Exception:  # an unexpected object in the program: its lines are not measured
        return
    for line, (counts, names) in found.items():
        tally = into.get(line)
        if tally is None:
            into[line] = (counts, names)
        else:
            mine = tally[0]
            mine[0] += counts[0]
            mine[1] = max(mine[1], counts[1])
            mine[2] = max(mine[2], counts[2])  # the same constant in each program
            tally[1].update(names)


def _subjaxprs(params: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    stack = list(params.values())
    while stack:
        value = stack.pop()
        if hasattr(value, "eqns") or (hasattr(value, "jaxpr") and hasattr(value, "consts")):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            stack.extend(value)
    return found


def size(lowering: hooks.Lowering) -> tuple[int | None, int | None]:
    """(jaxpr equations, StableHLO ops) of one lowering, from what JAX built for it; None
    for what was not found or could not be walked."""
    eqns = ops = None
    try:
        if lowering.jaxpr is not None:
            eqns = count_eqns(lowering.jaxpr)
    except Exception:  # an unexpected object in the frame: not measured
        pass
    try:
        if lowering.module is not None:
            ops = hooks.module_ops(lowering.module)
    except Exception:
        pass
    return eqns, ops


def traced_eqns(jaxpr: Any) -> int | None:
    """Equations of a traced jaxpr, as a lowering's are counted; None where it was not found
    or could not be walked (not measured, never 0)."""
    if jaxpr is None:
        return None
    try:
        return count_eqns(jaxpr)
    except Exception:  # an unexpected object in the frame: not measured
        return None


def xla_ops(executable: Any) -> int | None:
    """HLO instructions of a compiled executable after XLA's passes (every computation:
    fusions and loop bodies included); None where the backend does not expose its modules."""
    if executable is None:
        return None
    try:
        return hooks.executable_ops(executable)
    except Exception:  # an executable without HLO modules: not measured
        return None


def hlo_ops(lowered: Any) -> int:
    """StableHLO operations of a `jax.stages.Lowered`, counted as the recorder counts each
    lowering's (`_jaxhooks.module_ops`)."""
    return hooks.module_ops(lowered.compiler_ir("stablehlo"))


def measure(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ProgramMetrics:
    """Metrics of `jitted` specialised to these arguments. Called after the program ran once,
    it is served from JAX's in-memory caches: no new trace or compile."""
    traced = jitted.trace(*args, **kwargs)
    lowered = traced.lower()
    compiled = lowered.compile()
    cost = _cost(compiled)
    memory = _memory(compiled)
    return ProgramMetrics(
        jaxpr_eqns=count_eqns(traced.jaxpr),
        hlo_ops=hlo_ops(lowered),
        flops=cost.get("flops"),
        transcendentals=cost.get("transcendentals"),
        bytes_accessed=cost.get("bytes accessed"),
        argument_bytes=memory.get("argument_size_in_bytes"),
        output_bytes=memory.get("output_size_in_bytes"),
        temp_bytes=memory.get("temp_size_in_bytes"),
        peak_bytes=memory.get("peak_memory_in_bytes"),
    )


def _cost(compiled: Any) -> dict[str, float]:
    try:
        cost = compiled.cost_analysis()
    except Exception:  # not every backend implements it
        return {}
    if isinstance(cost, (list, tuple)):  # older jax: one dict per device
        cost = cost[0] if cost else {}
    if not isinstance(cost, dict):
        return {}
    keys = ("flops", "transcendentals", "bytes accessed")
    # XLA's GPU backend answers -1 for a figure it did not estimate: not a measurement.
    return {k: float(cost[k]) for k in keys if k in cost and float(cost[k]) >= 0}


def _memory(compiled: Any) -> dict[str, int]:
    try:
        stats = compiled.memory_analysis()
    except Exception:
        return {}
    names = ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
             "peak_memory_in_bytes")  # fmt: skip
    values = {n: getattr(stats, n, None) for n in names}
    return {n: int(v) for n, v in values.items() if v is not None and v >= 0}


def device_peak_bytes() -> int | None:
    """Peak device memory where the backend reports it (GPUs, TPUs; None on CPU)."""
    import jax

    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:
        return None
    if not stats or "peak_bytes_in_use" not in stats:
        return None
    return int(stats["peak_bytes_in_use"])
