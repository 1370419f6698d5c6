"""A model's memory budget: the peak of a planned run, and the tensors and runs over it."""

from __future__ import annotations

from pathlib import Path

from ..errors import Diagnostic, IrrunError, Location
from ..fast import fast_kernel, scratch_bytes
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
from .steps import Step, parts
from .subgraphs import Body

# Runs that need less than this are not checked against the memory available: reading
# the system's figures would cost more than such a run.
UNCHECKED_BYTES = 16 * 2**20


def schedule_peak(
    plan: Plan, infos: Infos, wanted: tuple[int, ...], observed: bool = False
) -> tuple[Peak, str, Node | None]:
    """The peak of the run of ``plan`` computing ``wanted`` (observing every layer, with
    ``observed``), the largest thing held there (``its output f32[1,3,8,8]``, ``its
    kernel's scratch space``), and the layer where it is.

    Each step holds its outputs, and while it runs its kernels' scratch space (as each op
    declares it for these shapes) and a sub-graph's largest body; an observed run also
    holds what its tail reads (see :meth:`Plan.observed_schedule`) until the tail has run.
    """
    sizes: list[int | None] = [None] * len(plan.slots)
    keys: dict[int, tuple[str, int]] = {}
    for key, slot in plan.slots.items():
        sizes[slot] = _info_bytes(infos.get(key))
        keys[slot] = key
    extra: dict[int, tuple[str, Node]] = {}  # slot past the plan's -> what, and whose

    def held_while_running(what: str, size: int, node: Node) -> int:
        sizes.append(size)
        extra[len(sizes) - 1] = (what, node)
        return len(sizes) - 1

    if observed:
        schedule, tail = plan.observed_schedule(wanted)
        kept = {s for step in tail for s in step.inputs}
        # A tail input made inside a fused step is kept from that step on.
        inner = {s: i for i, (step, _) in enumerate(schedule) for part in parts(step)
                 for s in part.outputs if s in kept and s not in step.outputs}
        last = {s: i for i, step in enumerate(tail) for s in step.inputs}
        entries = [(step, tuple(s for s in frees if s not in kept)) for step, frees in schedule]
        entries += [(step, tuple(s for s in step.inputs if last.get(s) == i))
                    for i, step in enumerate(tail)]
    else:
        entries, inner = list(plan.schedule(wanted)), {}
    steps, nodes = [], []
    for i, (step, frees) in enumerate(entries):
        outputs = (*step.outputs, *(s for s, at in inner.items() if at == i))
        passing = []
        sub = getattr(step.attrs, "sub", None)
        if sub is not None:
            # A sub-graph layer also holds its largest body's tensors while it runs.
            passing.append(held_while_running(
                "the tensors of its body", max(body_peak(body) for body in sub.bodies),
                step.node))
        if getattr(step.kernel, "holds_intermediates", False):
            # A chain run part by part: each part holds the one before's output, its own
            # and its scratch; the step's output, counted from its start, is the last's
            # (the parts before it hold that much less beside it).
            chain = parts(step)
            made = [sum(sizes[s] or 0 for s in part.outputs) for part in chain]
            held = max(0, *((made[i - 1] if i else 0) + _scratch(plan, part, infos, keys)
                            + (made[i] - made[-1] if i < len(chain) - 1 else 0)
                            for i, part in enumerate(chain)))
            if held:
                passing.append(held_while_running(
                    "its kernel's scratch space and the chain's intermediates", held,
                    step.node))
        else:
            # A fused step's parts run one after the other: it holds the largest one's scratch.
            scratch, part = max(((_scratch(plan, part, infos, keys), part)
                                 for part in parts(step)), key=lambda pair: pair[0])
            if scratch:
                passing.append(held_while_running("its kernel's scratch space", scratch,
                                                  part.node))
        steps.append(((*outputs, *passing), (*frees, *passing), step.node.op.type != "Const"))
        nodes.append(step.node)
    peak = plan_peak(steps, sizes)
    node = nodes[peak.step] if peak.step >= 0 else None
    if peak.slot in extra:
        return peak, *extra[peak.slot]
    info = infos.get(keys[peak.slot]) if peak.slot >= 0 else None
    return peak, f"its output {_describe_tensor(info)}", node


def _scratch(plan: Plan, step: Step, infos: Infos, keys: dict[int, tuple[str, int]]) -> int:
    """The scratch bytes ``step``'s kernel declares for the shapes in ``infos`` (0 where a
    shape is not known)."""
    op = step.node.op
    # A kernel that reads other inputs than its op's (a weight kept compressed) says its own.
    declared = getattr(step.kernel, "scratch_of", None)
    if declared is None and op.scratch is None and fast_kernel(op) is None:
        return 0
    ins = [infos.get(keys[s]) for s in step.inputs]
    outs = [infos.get(keys[s]) for s in step.outputs]
    if any(i is None or i.element_type is None or not is_static(i.shape) for i in ins + outs):
        return 0
    if declared is not None:
        return declared(ins, outs)
    return scratch_bytes(op, step.attrs, ins, outs, plan.reference)


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
            peak = schedule_peak(plan, infos, results)
    largest = max(([peak[0].bytes] if peak else []) + [size for size, _ in sized], default=0)
    if budget == "available":
        if largest <= UNCHECKED_BYTES:
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
            f"{room} ({tensor} is {format_bytes(top.slot_bytes)}); it would be "
            "refused", lg.doc.location(step_node.layer.line), step_node.ref,
        ))  # fmt: skip
    return found


class RunBudget:
    """A loaded model's memory check before each run: the run's planned peak against its
    ``max_memory``, refused before anything is computed, naming the layer where it peaks.
    Peaks are planned once per outputs wanted and, for a dynamic model, per input shapes.
    """

    def __init__(
        self, plan: Plan, lg: LayerGraph, nodes: dict[str, Node], infos: Infos, path: Path
    ) -> None:
        self._plan, self._graph, self._nodes, self._infos = plan, lg, nodes, infos
        self._path = path
        # A run's memory is planned from the inferred shapes, or from its own inputs'
        # shapes when some dim is left to them.
        self.dynamic = not all(is_static(info.shape) for info in infos.values())
        self._peaks: dict[tuple, tuple[Peak, str, Node | None]] = {}
        self._small: set[tuple] = set()  # buckets of shapes whose runs are small (check)

    def check(
        self,
        budget: int | str | None,
        shapes: dict[str, tuple[int, ...]],
        wanted: tuple[int, ...],
        observed: bool,
    ) -> None:
        """Refuse a run on inputs of ``shapes`` (by Parameter layer id) whose tensors would
        not fit in ``budget`` (a ``max_memory``: bytes, ``"available"`` or None)."""
        if budget is None:
            return
        # A dynamic model run on ever other shapes (an LLM's attention mask grows by one a
        # token) would infer every shape again at each run.  Under the default budget, a run
        # whose shapes are within 2x per dim of a run planned at a quarter of the unchecked
        # size is taken as small as well: shapes are bucketed by powers of two.
        bucket = None
        if budget == "available" and self.dynamic:
            bucket = (wanted, observed, tuple((lid, tuple(_pow2(d) for d in shape))
                                              for lid, shape in shapes.items()))  # fmt: skip
            if bucket in self._small:
                return
        key = (wanted, observed, tuple(shapes.items()) if self.dynamic else ())
        planned = self._peaks.get(key)
        if planned is None:
            if len(self._peaks) >= 32:  # a caller running ever other shapes
                self._peaks.clear()
            planned = self._peaks[key] = self.peak(shapes, wanted, observed)
        peak, largest, node = planned
        if budget == "available":
            if bucket is not None and peak.bytes * 4 <= UNCHECKED_BYTES:
                if len(self._small) >= 256:
                    self._small.clear()
                self._small.add(bucket)
            if peak.bytes <= UNCHECKED_BYTES:  # reading the system's figures costs more
                return
            limit = available_memory()
            if limit is None:
                return
        else:
            limit = budget  # type: ignore[assignment]
        if peak.bytes > limit:
            assert node is not None
            allowed = ("allowed (--max-memory, or max_memory= in Python)"
                       if budget != "available" else
                       "available to this process (--max-memory, or max_memory= in Python, "
                       "sets another limit)")  # fmt: skip
            raise IrrunError(
                f"the run needs {format_bytes(peak.bytes)} of tensors at this layer, more than "
                f"the {format_bytes(limit)} {allowed}, of which {largest} is "
                f"{format_bytes(peak.slot_bytes)}",
                Location(str(self._path), node.layer.line), node.ref, code="over-budget",
            )  # fmt: skip

    def peak(
        self, shapes: dict[str, tuple[int, ...]], wanted: tuple[int, ...], observed: bool
    ) -> tuple[Peak, str, Node | None]:
        """The run's peak, the largest thing it holds there, and its layer (see
        :func:`schedule_peak`)."""
        infos = self._infos
        if self.dynamic:  # the sizes of this run's shapes
            given = {lid: TensorInfo(shape, self._nodes[lid].attrs.element_type)  # type: ignore[union-attr]
                     for lid, shape in shapes.items()}  # fmt: skip
            infos, _ = propagate(self._graph, self._nodes, given)
        return schedule_peak(self._plan, infos, wanted, observed)


def _pow2(n: int) -> int:
    """The power of two at or above ``n`` (0 for 0)."""
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


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
    return tensor_bytes(dims, info.element_type.item_bytes)


def _describe_tensor(info: TensorInfo | None) -> str:
    if info is None:
        return "?"
    et = info.element_type.name if info.element_type is not None else "?"
    return f"{et}{format_shape(info.shape)}"
