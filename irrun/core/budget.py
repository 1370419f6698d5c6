"""A model's memory budget: the peak of a planned run, and the tensors and runs over it."""

from __future__ import annotations

from ..errors import Diagnostic
from ..ir.dims import format_shape, is_static
from ..ir.registry import TensorInfo
from .binding import Node
from .executor import Plan
from .folding import default_cap, plan_folding
from .graph import LayerGraph
from .memory import (
    IMPOSSIBLE_BYTES,
    Peak,
    available_memory,
    format_bytes,
    plan_peak,
    tensor_bytes,
)
from .propagation import Infos, propagate
from .subgraphs import Body

# Runs that need less than this are not checked against the memory available: reading
# the system's figures would cost more than such a run.
_UNCHECKED_BYTES = 16 * 2**20


def schedule_peak(
    plan: Plan, infos: Infos, wanted: tuple[int, ...], observed: bool = False
) -> tuple[Peak, str]:
    """The peak of the run of ``plan`` computing ``wanted``, and its largest tensor there
    as ``f32[1,3,8,8]``."""
    sizes: list[int | None] = [None] * len(plan.slots)
    keys: dict[int, tuple[str, int]] = {}
    for key, slot in plan.slots.items():
        sizes[slot] = _info_bytes(infos.get(key))
        keys[slot] = key
    schedule = plan._schedule(wanted, observed)
    steps = []
    for step, frees in schedule:
        outputs = step.outputs
        sub = getattr(step.attrs, "sub", None)
        if sub is not None:
            # A sub-graph layer also holds its largest body's tensors while it runs: a
            # slot of their peak, dropped at once (see irrun.core.subgraphs).
            sizes.append(max(body_peak(body) for body in sub.bodies))
            outputs, frees = (*outputs, len(sizes) - 1), (*frees, len(sizes) - 1)
        steps.append((outputs, frees, step.node.op.type != "Const"))
    peak = plan_peak(steps, sizes)
    if peak.slot >= len(plan.slots):
        return peak, "the tensors of its body"
    info = infos.get(keys[peak.slot]) if peak.slot >= 0 else None
    return peak, _describe_tensor(info)


def body_peak(body: Body) -> int:
    """The bytes a body holds at its peak, with the shapes its Parameters declare
    (unknown sizes count as nothing); worked out once per body."""
    if body.peak is None:
        infos, _ = propagate(body.lg, body.nodes)
        plan = Plan(body.lg, body.nodes)
        results = tuple(sorted({plan.slots[body.source(lid)] for lid, node in body.nodes.items()
                                if node.op is not None and node.op.type == "Result"
                                and node.layer.inputs}))  # fmt: skip
        body.peak = schedule_peak(plan, infos, results)[0].bytes if results else 0
    return body.peak


def budget_findings(
    lg: LayerGraph, nodes: dict[str, Node], infos: Infos, budget: int | str | None,
    plannable: bool,
) -> list[Diagnostic]:  # fmt: skip
    """Warnings for tensors larger than ``budget`` (bytes, ``"available"`` or None), and
    for a run of all outputs whose planned peak is (``plannable``: every layer bound)."""
    if budget is None:
        return []
    sized = [(size, key) for key, info in infos.items()
             if (size := _info_bytes(info)) is not None and size < IMPOSSIBLE_BYTES]  # fmt: skip
    peak = None
    if plannable and sized:
        plan = Plan(lg, nodes)
        # A loaded model's runs read its layers of constants folded (irrun.core.folding).
        weights = sum(n.attrs.size for n in nodes.values() if n.op is not None
                      and n.op.type == "Const" and n.attrs is not None)  # fmt: skip
        plan_folding(plan, infos, default_cap(weights, budget))
        results = tuple(sorted(plan.slots[lg.sources[(lid, nodes[lid].layer.inputs[0].id)]]
                               for lid in lg.order if nodes[lid].op is not None
                               and nodes[lid].op.type == "Result" and nodes[lid].layer.inputs))  # type: ignore[union-attr]  # fmt: skip
        if results:
            top, tensor = schedule_peak(plan, infos, results)
            peak = (top, tensor, plan._schedule(results)[top.step][0].node if top.step >= 0
                    else None)  # fmt: skip
    largest = max(([peak[0].bytes] if peak else []) + [size for size, _ in sized], default=0)
    if budget == "available":
        if largest <= _UNCHECKED_BYTES:
            return []
        limit = available_memory()
        if limit is None:
            return []
        room = f"the {format_bytes(limit)} of memory available now"
    else:
        limit = budget  # type: ignore[assignment]
        room = f"the {format_bytes(limit)} allowed"
    found = []
    for size, (lid, port_id) in sized:
        if size > limit:
            node = nodes[lid]
            port = node.layer.output_port(port_id)
            found.append(Diagnostic(
                "warning", "over-budget",
                f"output {port_id} is {_describe_tensor(infos[(lid, port_id)])}, "
                f"{'' if is_static(infos[(lid, port_id)].shape) else 'up to '}"
                f"{format_bytes(size)}: more than {room}; a run would be refused",
                lg.doc.location(port.line if port is not None and port.line else
                                node.layer.line), node.ref, port_id,
            ))  # fmt: skip
    if peak is not None and peak[2] is not None and peak[0].bytes > limit and not found:
        top, tensor, step_node = peak
        found.append(Diagnostic(
            "warning", "over-budget",
            f"a run needs {format_bytes(top.bytes)} of tensors at this layer, more than "
            f"{room} (its output {tensor} is {format_bytes(top.slot_bytes)}); it would be "
            "refused", lg.doc.location(step_node.layer.line), step_node.ref,
        ))  # fmt: skip
    return found


def _info_bytes(info: TensorInfo | None) -> int | None:
    """A tensor's bytes as irrun holds it (packed types unpacked), at most: a dim known
    only within bounds counts at its upper bound (NonZero's count is at most its input's
    size).  None when that is not known (no type, no rank, a dim without upper bound)."""
    if info is None or info.element_type is None or info.shape is None:
        return None
    dims = []
    for d in info.shape:
        hi = d if isinstance(d, int) else d.hi
        if hi is None:
            return None
        dims.append(hi)
    return tensor_bytes(dims, info.element_type.dtype.itemsize)


def _describe_tensor(info: TensorInfo | None) -> str:
    if info is None:
        return "?"
    et = info.element_type.name if info.element_type is not None else "?"
    return f"{et}{format_shape(info.shape)}"
