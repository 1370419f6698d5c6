"""Sub-graph ops: If-8, Loop-5 and TensorIterator-1, whose layers hold graphs of their own.

An If or Loop layer carries its bodies (``<then_body>``/``<else_body>``, ``<body>``), read
by :mod:`irrun.ir.reader` into documents of their own, and its port maps and back edges.
The ops are declared here, in core, rather than in :mod:`irrun.ops`: a body is bound,
propagated and planned with core's own machinery (:mod:`.graph`, :mod:`.binding`,
:mod:`.propagation`, :mod:`.executor`), which ops may not import.  They are declared as
every op is (attributes, shape rule, kernel, ``register``), and :func:`attach_bodies`,
the stage :func:`irrun.core.check.check_ir` runs right after binding, compiles each
sub-graph layer's bodies and port maps into a :class:`Compiled` it puts in the layer's
attributes (``attrs.sub``).  The shape rule and the kernel read it there, so
propagation, planning and the executor's loop know no sub-graph op.  Compiling a body
checks it like the main graph (wiring, ops, attributes, declared dims against the
shapes its Parameters declare): its findings name the body's layer and line, and say
in which body of which layer they are.  The port maps are checked too: an entry naming
no port of the layer or no Parameter/Result of the body, an output some body does not
map, a back edge from a non-Result or to a non-Parameter.

If-8 (``src/core/src/op/if.cpp``): input 0 is the condition (a one-element boolean),
the others are mapped to the bodies' Parameters (a branch may use only some).  With a
known condition the taken branch's shapes are the outputs'; otherwise each output
merges the two branches' as OpenVINO's ``resolve_shape``: equal dims stay, a dynamic
one stays dynamic, two different static dims become the interval between them, ranks
that differ give a dynamic rank (a 1-D dynamic shape when both are at most 1-D).  A
body Parameter carries the input's shape and type but never its value (it is a
Parameter to OpenVINO too).  The kernel runs the taken branch.

Loop-5 (``src/core/src/op/loop.cpp``, reference ``loop.cpp``): inputs trip_count and
execution_condition, then data inputs, each mapped to a body Parameter as sliced (the
entry has ``axis``: one part per iteration), merged (a back edge feeds the Parameter
from a body Result after each iteration, the input is its first value) or invariant.
The entries with ``purpose="current_iteration"`` (input) and
``purpose="execution_condition"`` (output) name the body's iteration counter Parameter
and condition Result.  An output with ``axis`` concatenates the Result's value of every
iteration along it; one without is the last iteration's value.  Iterations: up to
trip_count (negative: no limit) while the initial condition and then the body's
condition hold.  Shapes as OpenVINO infers them: the number of iterations is known when
the trip count is a constant and the body's condition a constant true (or a constant
false: one iteration), then a concatenated dim is the Result's times that number, else
dynamic; a merged Parameter whose back-edged Result has other dims gets those dims
dynamic (irrun relaxes every back edge so, OpenVINO only those feeding an output: the
shapes it would leave declared would be wrong after the first iteration anyway).  A
constant false initial condition gives a concatenated output ``[0]`` and a last-value
output with first dim 0.

TensorIterator-1 (``src/core/src/op/tensor_iterator.cpp``): Loop's port map without
trip count, condition or iteration counter: it runs once per part of its sliced inputs.
A sliced input's ``start`` and ``end`` bound its parts, negative ones counting from past
the end (-1: the end; with a negative ``stride`` the parts go from ``start`` down to
``end``), ``stride`` apart, ``part_size`` long, as the CPU plugin cuts them; a
concatenated output puts the parts back the same way (reversed with a negative stride)
and its dim is the part size times the iterations.  Without sliced inputs it runs
``|end - start| / part_size`` times of its first concatenated output, as OpenVINO infers.

Zero iterations, which the reference kernel rejects: with a trip count of 0 each
concatenated output has zero parts along its axis and each last-value output is the
first value of the merged input its Result feeds back (the body's declared shape with a
first dim 0 when it feeds none), as the plugin gives for torchvision's paste-masks loop
over no detections; with a false initial condition the outputs have the shapes
OpenVINO infers for a constant false one.  A body without a condition Result iterates
up to the trip count.  With more iterations than a sliced input has
parts, the last part is fed again, as the reference does (the plugin fails).

The CPU plugin is wrong where tests/core/test_subgraphs.py says: a Loop output concatenated
along an axis other than 0 (refused for static shapes, empty for dynamic ones), a
Loop whose initial condition is a constant false (refused), and the first inference of
a compiled If around NonMaxSuppression (garbage, right from the second on).

Memory: the budget (:mod:`.budget`) counts, beside a sub-graph layer's inputs and
outputs, the peak of its largest body while it runs, planned as the main graph's with
the shapes the body's Parameters declare: an estimate, since a Loop's merged values may
grow past them and dynamic dims count as nothing; the values a Loop concatenates are
its outputs, counted already.

Values: a body runs the kernels of its layers, so each op's own tolerance applies.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np

from ..errors import Diagnostic
from ..ir.dims import DYNAMIC, Interval, Shape, format_shape
from ..ir.element_types import ANY, NUMBERS
from ..ir.records import IRDocument, MapEntry
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ..ir.weights import Weights
from ..ops._scratch import nothing, outputs_bytes
from .binding import Node, bind
from .executor import Plan, reference_mode
from .graph import LayerGraph, build_graph
from .passes import PASSES
from .passes.loop_append import grow_accumulators
from .propagation import propagate

# Findings about a body that do not make it unusable (OpenVINO re-infers its shapes too).
_INFORMATIONAL = ("shape-mismatch", "type-mismatch")
_KINDS = itertools.count(1)
# If's and Loop's conditions: read as true when not zero, as OpenVINO, which checks no
# type there, reads them.
CONDITION_TYPES = ("boolean", *NUMBERS)


@dataclass(repr=False)
class Body:
    """One body, bound and ready to infer and run."""

    tag: str
    lg: LayerGraph
    nodes: dict[str, Node]
    _plans: dict[bool, Plan] = field(default_factory=dict, repr=False)  # by reference mode
    peak: int | None = None  # the bytes it holds at its peak (see irrun.core.budget)

    def __repr__(self) -> str:
        return f"<{self.tag} of {len(self.nodes)} layers>"

    def parameter(self, lid: str) -> bool:
        node = self.nodes.get(lid)
        return node is not None and node.op is not None and node.op.type == "Parameter"

    def result(self, lid: str) -> bool:
        node = self.nodes.get(lid)
        return node is not None and node.op is not None and node.op.type == "Result" and \
            bool(node.layer.inputs)  # fmt: skip

    def declared(self, lid: str) -> TensorInfo:
        attrs = self.nodes[lid].attrs
        return TensorInfo(attrs.shape, attrs.element_type)  # type: ignore[union-attr]

    def source(self, result: str):
        layer = self.nodes[result].layer
        return self.lg.sources[(result, layer.inputs[0].id)]

    def infer(self, given: Mapping[str, TensorInfo]) -> dict[str, TensorInfo]:
        """The infos of the body's Results (by layer id) when its Parameters are ``given``
        (others keep their declared shapes); raise ShapeError naming a layer that fails."""
        infos, problems = propagate(self.lg, self.nodes, dict(given))
        for d in problems:
            if d.level == "error" and d.code not in _INFORMATIONAL:
                raise ShapeError(f"in the {self.tag}, {d.layer}: {d.message}")
        out = {}
        for lid, node in self.nodes.items():
            if node.op is not None and node.op.type == "Result" and node.layer.inputs:
                info = infos.get(self.source(lid))
                if info is None:  # some layer before it could not be inferred
                    raise ShapeError(f"in the {self.tag}, the shape of Result {lid} is unknown")
                out[lid] = info
        return out

    def run(self, feeds: Mapping[str, np.ndarray], results: Sequence[str]) -> list[np.ndarray]:
        reference = reference_mode()  # a body runs as the plan that runs its layer
        plan = self._plans.get(reference)
        if plan is None:
            # A body's plan takes the passes of the top level's; a Loop's (or a
            # TensorIterator's) also grows the values it accumulates by Concat in place (see
            # irrun.core.passes.loop_append).
            passes = (*PASSES, grow_accumulators) if self.tag == "body" else PASSES
            plan = self._plans[reference] = Plan(self.lg, self.nodes, passes, reference=reference)
        slots = [plan.slots[self.source(r)] for r in results]
        got = plan.run({plan.parameters[lid]: v for lid, v in feeds.items()}, slots)
        return [got[s] for s in slots]


@dataclass
class Sliced:
    axis: int
    start: int
    end: int
    stride: int
    part_size: int


@dataclass(repr=False)
class Compiled:
    """A sub-graph layer's bodies and port maps, by input and output position."""

    bodies: list[Body]
    # Per body: Parameter id -> input position; output position -> Result id.
    inputs: list[dict[str, int]]
    outputs: list[dict[int, str]]
    n_outputs: int
    # Loop: per body Parameter, how its input is sliced (absent: not sliced); per output
    # position, the concatenation axis (absent: last value); back edges Result -> Parameter.
    sliced: dict[int, Sliced] = field(default_factory=dict)
    concat: dict[int, Sliced] = field(default_factory=dict)
    back: dict[str, str] = field(default_factory=dict)
    current_iteration: str | None = None
    condition: str | None = None

    def __repr__(self) -> str:  # what `irrun inspect` shows among the attributes
        return ", ".join(f"{b.tag} of {len(b.nodes)} layers" for b in self.bodies)


# --- compiling --------------------------------------------------------------------------

_BODIES = {"If": ("then_body", "else_body"), "Loop": ("body",), "TensorIterator": ("body",)}
_MAPS = {"If": ("then_port_map", "else_port_map"), "Loop": ("port_map",),
         "TensorIterator": ("port_map",)}  # fmt: skip
# The position of the first input a port map maps: If's condition and Loop's trip count
# and execution condition are not mapped.
_FIRST_DATA = {"If": 1, "Loop": 2, "TensorIterator": 0}


def attach_bodies(lg: LayerGraph, nodes: dict[str, Node], weights: Weights) -> list[Diagnostic]:
    """Compile the bodies and port maps of every bound sub-graph layer into its
    attributes (``attrs.sub``), and return what checking them found.  A layer whose
    bodies or port maps are broken is left without attributes (nothing is inferred)."""
    found: list[Diagnostic] = []
    for node in nodes.values():
        if not node.ok or node.op.type not in _BODIES:  # type: ignore[union-attr]
            continue
        compiled, problems = _compile(lg.doc, node, weights)
        found += problems
        if compiled is None:
            node.attrs = None
            continue
        node.attrs.sub = compiled  # type: ignore[union-attr]
        # Two such layers with the same <data> and inputs still infer apart.
        node.kind = -1 - next(_KINDS)
    return found


class _Checker:
    def __init__(self, doc: IRDocument, node: Node) -> None:
        self.doc, self.node = doc, node
        self.problems: list[Diagnostic] = []

    def error(self, message: str, line: int, code: str = "bad-port-map") -> None:
        self.problems.append(Diagnostic("error", code, message,
                                        self.doc.location(line or self.node.layer.line),
                                        self.node.ref))  # fmt: skip

    def integer(self, entry: MapEntry, name: str, where: str) -> int | None:
        text = entry.attributes.get(name)
        if text is None:
            self.error(f"<{entry.tag}> of the {where} has no {name}", entry.line)
            return None
        try:
            return int(text)
        except ValueError:
            self.error(f'<{entry.tag}> of the {where} has {name}="{text}", not an integer',
                       entry.line)  # fmt: skip
            return None


def _body(doc: IRDocument, node: Node, tag: str, weights: Weights
          ) -> tuple[Body | None, list[Diagnostic]]:  # fmt: skip
    layer = node.layer
    inner = layer.bodies.get(tag) if layer.bodies else None
    if inner is None:
        return None, [Diagnostic("error", "missing-body", f"has no <{tag}>",
                                 doc.location(layer.line), node.ref)]  # fmt: skip
    lg = build_graph(inner, unneeded=False)  # a branch may leave inputs unused: no warnings
    nodes, bound = bind(lg, weights)
    bound += attach_bodies(lg, nodes, weights)
    _, propagated = propagate(lg, nodes)
    where = f"in the {tag} of layer {layer.id} '{layer.name}' ({node.op.label}): "  # type: ignore[union-attr]
    problems = [replace(d, message=where + d.message) for d in lg.problems + bound + propagated]
    broken = any(d.level == "error" and d.code not in _INFORMATIONAL for d in problems)
    return (None if broken else Body(tag, lg, nodes)), problems


def _positions(ports) -> dict[int, int]:
    return {p.id: i for i, p in reversed(list(enumerate(ports)))}


def _compile(doc: IRDocument, node: Node, weights: Weights
             ) -> tuple[Compiled | None, list[Diagnostic]]:  # fmt: skip
    op_type = node.op.type  # type: ignore[union-attr]
    layer = node.layer
    check = _Checker(doc, node)
    bodies: list[Body | None] = []
    for tag in _BODIES[op_type]:
        body, problems = _body(doc, node, tag, weights)
        check.problems += problems
        bodies.append(body)
    if any(b is None for b in bodies):
        return None, check.problems
    real = [b for b in bodies if b is not None]
    in_pos, out_pos = _positions(layer.inputs), _positions(layer.outputs)
    compiled = Compiled(real, [], [], len(layer.outputs))
    first_data = _FIRST_DATA[op_type]
    maps = layer.port_maps or {}
    for tag, body in zip(_MAPS[op_type], real, strict=True):
        entries = maps.get(tag)
        where = f"{tag} of the {body.tag}"
        if entries is None:
            check.error(f"has no <{tag}>", layer.line)
            return None, check.problems
        ins: dict[str, int] = {}
        outs: dict[int, str] = {}
        fed: set[str] = set()
        reported = len(check.problems)
        for e in entries:
            if e.tag not in ("input", "output"):
                check.error(f"<{tag}> holds a <{e.tag}>; expected <input> and <output>", e.line)
                continue
            ext = check.integer(e, "external_port_id", tag)
            inner = e.attributes.get("internal_layer_id")
            if inner is None:
                check.error(f"<{e.tag}> of the {tag} has no internal_layer_id", e.line)
            if ext is None or inner is None:
                continue
            inner = inner.strip()
            purpose = e.attributes.get("purpose")
            if e.tag == "input":
                if not body.parameter(inner):
                    check.error(f"<input> of the {tag} maps port {ext} to layer {inner}"
                                f"{_what(body, inner, 'Parameter')}", e.line)  # fmt: skip
                    continue
                fed.add(inner)
                if purpose == "current_iteration" and op_type == "Loop":
                    compiled.current_iteration = inner
                    continue
                pos = in_pos.get(ext)
                if pos is None:
                    check.error(f"<input> of the {tag} maps external port {ext}, which is "
                                "no input port of the layer", e.line)  # fmt: skip
                    continue
                # OpenVINO lets a body read the condition or trip count too.
                ins[inner] = pos
                if "axis" in e.attributes and op_type != "If":
                    s = _slicing(check, e, tag)
                    if s is not None:
                        compiled.sliced[inner] = s
            else:
                if not body.result(inner):
                    check.error(f"<output> of the {tag} maps port {ext} to layer {inner}"
                                f"{_what(body, inner, 'Result')}", e.line)  # fmt: skip
                    continue
                if purpose == "execution_condition" and op_type == "Loop":
                    compiled.condition = inner
                    continue
                pos = out_pos.get(ext)
                if pos is None:
                    check.error(f"<output> of the {tag} maps external port {ext}, which is "
                                "no output port of the layer", e.line)  # fmt: skip
                    continue
                outs[pos] = inner
                if "axis" in e.attributes and op_type != "If":
                    s = _slicing(check, e, tag)
                    if s is not None:
                        compiled.concat[pos] = s
        compiled.inputs.append(ins)
        compiled.outputs.append(outs)
        if len(check.problems) > reported:
            continue  # a broken entry: what it leaves unmapped is no news
        missing = [layer.outputs[i].id for i in range(len(layer.outputs)) if i not in outs]
        if missing:
            n = len(layer.outputs)
            check.error(f"the {where} maps {n - len(missing)} of the layer's {n} outputs "
                        f"to Results (output port {missing[0]} has none)", layer.line)  # fmt: skip
        for lid, n in body.nodes.items():
            if n.op is not None and n.op.type == "Parameter" and lid not in fed and \
                    op_type == "If":  # fmt: skip
                check.error(f"Parameter layer {lid} '{n.layer.name}' of the {body.tag} is fed "
                            f"by no <input> of the {tag}", n.layer.line)  # fmt: skip
    if op_type != "If" and not any(d.code == "bad-port-map" for d in check.problems):
        body, ins = real[0], compiled.inputs[0]
        positions = set(ins.values())
        unmapped = [layer.inputs[i].id for i in range(first_data, len(layer.inputs))
                    if i not in positions]  # fmt: skip
        if unmapped:
            check.error(f"input port {unmapped[0]} is mapped to no Parameter of the body",
                        layer.line)  # fmt: skip
        mapped = set(ins)
        for e in maps.get("back_edges", []):
            src = e.attributes.get("from-layer", "").strip()
            dst = e.attributes.get("to-layer", "").strip()
            if not body.result(src):
                check.error(f"back edge from layer {src or '?'}{_what(body, src, 'Result')}",
                            e.line)  # fmt: skip
            elif not body.parameter(dst):
                check.error(f"back edge to layer {dst or '?'}{_what(body, dst, 'Parameter')}",
                            e.line)  # fmt: skip
            elif dst not in mapped and dst != compiled.current_iteration:
                check.error(f"back edge to Parameter {dst}, which no <input> of the port_map "
                            "gives a first value", e.line)  # fmt: skip
            else:
                compiled.back[src] = dst
        for lid, n in body.nodes.items():
            if n.op is not None and n.op.type == "Parameter" and lid not in mapped and \
                    lid != compiled.current_iteration:  # fmt: skip
                check.error(f"Parameter layer {lid} '{n.layer.name}' of the body is fed by no "
                            "<input> of the port_map", n.layer.line)  # fmt: skip
    if any(d.level == "error" and d.code == "bad-port-map" for d in check.problems):
        return None, check.problems
    return compiled, check.problems


def _what(body: Body, lid: str, wanted: str) -> str:
    """``, which the then_body does not have`` or ``, a Multiply, not a Result``."""
    node = body.nodes.get(lid)
    if node is None:
        return f", which the {body.tag} does not have"
    return f", a {node.layer.type}, not a {wanted}"


def _slicing(check: _Checker, e: MapEntry, tag: str) -> Sliced | None:
    values = []
    for name, default in (("axis", None), ("start", 0), ("end", -1), ("stride", 1),
                          ("part_size", 1)):  # fmt: skip
        if name not in e.attributes and default is not None:
            values.append(default)
            continue
        v = check.integer(e, name, tag)
        if v is None:
            return None
        values.append(v)
    s = Sliced(*values)
    if s.stride == 0 or s.part_size <= 0:
        check.error(f"<{e.tag}> of the {tag} has stride {s.stride} and part_size "
                    f"{s.part_size}: expected a stride other than 0 and a part_size above 0",
                    e.line)  # fmt: skip
        return None
    return s


# --- If-8 ---------------------------------------------------------------------------------


def _stripped(info: TensorInfo) -> TensorInfo:
    """A body Parameter's info: the input's shape and type, not its value."""
    return info if info.value is None else TensorInfo(info.shape, info.element_type)


def body_infos(sub: Compiled, inputs: Sequence[TensorInfo]
               ) -> list[dict[tuple[str, int], TensorInfo]]:  # fmt: skip
    """The infos of every output of each body's layers (in ``sub.bodies``' order) when the
    layer's inputs are ``inputs``, as its shape rule gives them to the bodies: a sliced
    input's part, back edges relaxed.  A body its inputs do not infer gets the shapes its
    Parameters declare."""
    try:
        if len(sub.bodies) == 2:  # If: each branch its own inputs
            givens = [{lid: _stripped(inputs[i]) for lid, i in ins.items()} for ins in sub.inputs]
        else:
            givens = [_body_infos(sub, inputs)[0]]
    except (ShapeError, IndexError):
        givens = [{} for _ in sub.bodies]
    return [propagate(body.lg, body.nodes, given)[0]
            for body, given in zip(sub.bodies, givens, strict=True)]  # fmt: skip


def _condition_rank(info: TensorInfo, what: str) -> None:
    if info.shape is not None and len(info.shape) > 1:
        raise ShapeError(f"{what} must be a scalar or 1-D, got {format_shape(info.shape)}")
    if info.value is not None and info.value.size != 1:
        raise ShapeError(f"{what} must hold one value, it holds {info.value.size}")


def _merge_dim(a, b):
    if isinstance(a, Interval) or isinstance(b, Interval):
        return DYNAMIC
    return a if a == b else Interval(min(a, b), max(a, b))


def _merge_shapes(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return (DYNAMIC,) if len(a) <= 1 and len(b) <= 1 else None
    return tuple(_merge_dim(x, y) for x, y in zip(a, b, strict=True))


def _if_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    sub: Compiled = a.sub
    cond = inputs[0]
    _condition_rank(cond, "the condition (input 0)")
    results = []
    for body, ins in zip(sub.bodies, sub.inputs, strict=True):
        results.append(body.infer({lid: _stripped(inputs[i]) for lid, i in ins.items()}))
    out = []
    for i in range(sub.n_outputs):
        then = results[0][sub.outputs[0][i]]
        other = results[1][sub.outputs[1][i]]
        if cond.value is not None:
            out.append(then if bool(cond.value.reshape(-1)[0]) else other)
            continue
        et_a, et_b = then.element_type, other.element_type
        if et_a is not None and et_b is not None and et_a.name != et_b.name:
            raise ShapeError(f"output {i} is {et_a.name} in the then_body and {et_b.name} in "
                             "the else_body")  # fmt: skip
        out.append(TensorInfo(_merge_shapes(then.shape, other.shape), et_a or et_b))
    return out


def _if_kernel(a: SimpleNamespace, *args: np.ndarray) -> tuple:
    sub: Compiled = a.sub
    cond = args[0]
    if cond.size != 1:
        raise ShapeError(f"the condition holds {cond.size} values, expected one")
    taken = 0 if bool(cond.reshape(-1)[0]) else 1
    body = sub.bodies[taken]
    feeds = {lid: args[i] for lid, i in sub.inputs[taken].items()}
    outs = sub.outputs[taken]
    return tuple(body.run(feeds, [outs[i] for i in range(sub.n_outputs)]))


register(OpDef(
    type="If", version=8, since_opset=8, attrs=(), infer=_if_infer, kernel=_if_kernel,
    inputs=(1, 1 << 20), doc="Runs the then_body or the else_body by a boolean condition.",
    input_types=(CONDITION_TYPES, ANY),
    scratch=nothing,  # the body's tensors: budget.body_peak
))  # fmt: skip


# --- Loop-5 -------------------------------------------------------------------------------


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _scalar_value(info: TensorInfo) -> object | None:
    return None if info.value is None else info.value.reshape(-1)[0]


def _body_infos(sub: Compiled, inputs: Sequence[TensorInfo]
                ) -> tuple[dict[str, TensorInfo], dict[str, TensorInfo]]:  # fmt: skip
    """The infos given to the body's Parameters and those of its Results: sliced inputs
    are one part; a back edge whose Result's dims differ from its Parameter's makes those
    dims dynamic, until nothing changes."""
    body, ins = sub.bodies[0], sub.inputs[0]
    given: dict[str, TensorInfo] = {}
    for lid, i in ins.items():
        info = _stripped(inputs[i])
        s = sub.sliced.get(lid)
        if s is not None and info.shape is not None:
            shape = list(info.shape)
            shape[_axis(s.axis, len(shape), f"sliced input {i}")] = s.part_size
            info = TensorInfo(tuple(shape), info.element_type)
        given[lid] = info
    results = body.infer(given)
    for _ in range(8):
        changed = False
        for res, param in sub.back.items():
            r, p = results.get(res), given.get(param)
            if r is None or p is None or r.shape is None or p.shape is None or r.shape == p.shape:
                continue
            if len(r.shape) != len(p.shape):
                raise ShapeError(f"the back edge from Result {res} to Parameter {param} "
                                 f"changes the rank: {format_shape(p.shape)} to "
                                 f"{format_shape(r.shape)}")  # fmt: skip
            relaxed = tuple(x if x == y else DYNAMIC for x, y in zip(r.shape, p.shape, strict=True))
            if relaxed != p.shape:
                given[param] = TensorInfo(relaxed, p.element_type)
                changed = True
        if not changed:
            break
        results = body.infer(given)
    return given, results


def _iterated_outputs(sub: Compiled, given: dict[str, TensorInfo],
                      results: dict[str, TensorInfo], iterations: int, zero: bool,
                      by_part: bool) -> list[TensorInfo]:  # fmt: skip
    """The outputs of a Loop or TensorIterator that runs ``iterations`` times (-1: not
    known; ``zero``: never).  A concatenated dim is the Result's dim times the
    iterations (Loop), or the part size times them (``by_part``: TensorIterator)."""
    out = []
    for i in range(sub.n_outputs):
        res = sub.outputs[0][i]
        info = results[res]
        shape = info.shape
        c = sub.concat.get(i)
        if c is not None:
            if zero:
                shape = (0,)
            elif shape is not None:
                shape = shape or (1,)
                axis = _axis(c.axis, len(shape), f"concatenated output {i}")
                dims = list(shape)
                d = c.part_size if by_part else dims[axis]
                dims[axis] = d * iterations if isinstance(d, int) and iterations >= 0 else DYNAMIC
                shape = tuple(dims)
        elif shape is not None:
            p = given.get(sub.back[res]) if res in sub.back else None
            if p is not None and p.shape is not None and len(p.shape) == len(shape) and \
                    p.shape != shape:  # fmt: skip
                shape = tuple(x if x == y else DYNAMIC for x, y in zip(shape, p.shape, strict=True))
            elif zero and shape:
                shape = (0, *shape[1:])
        out.append(TensorInfo(shape, info.element_type))
    return out


def _loop_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    sub: Compiled = a.sub
    trip, start = inputs[0], inputs[1]
    _condition_rank(trip, "trip_count (input 0)")
    _condition_rank(start, "execution_condition (input 1)")
    zero = start.value is not None and not bool(_scalar_value(start))
    given, results = _body_infos(sub, inputs)
    iterations = -1
    if sub.condition is not None:
        value = _body_condition(sub, results, inputs)
        if value is not None:
            if not value:
                iterations = 1
            else:
                t = _scalar_value(trip)
                if t is not None and int(t) >= 0:  # type: ignore[call-overload]
                    iterations = int(t)  # type: ignore[call-overload]
    return _iterated_outputs(sub, given, results, iterations, zero, False)


def _body_condition(sub: Compiled, results: dict[str, TensorInfo],
                    inputs: Sequence[TensorInfo]) -> bool | None:  # fmt: skip
    """The body's condition when it is a constant, or a Parameter whose input is one (as
    OpenVINO reads it, even when a back edge feeds the Parameter); else None."""
    assert sub.condition is not None
    info = results.get(sub.condition)
    if info is not None and info.value is not None:
        return bool(info.value.reshape(-1)[0])
    i = sub.inputs[0].get(sub.bodies[0].source(sub.condition).layer)
    if i is not None and inputs[i].value is not None:
        return bool(inputs[i].value.reshape(-1)[0])  # type: ignore[union-attr]
    return None


def _parts(x: np.ndarray, s: Sliced) -> list[np.ndarray]:
    """The parts of a sliced input, in iteration order (TensorIterator's start, end,
    stride and part_size; negative start and end count from the end, -1 the last)."""
    axis = s.axis + x.ndim if s.axis < 0 else s.axis
    n = x.shape[axis]
    start = s.start + n + 1 if s.start < 0 else s.start
    end = s.end + n + 1 if s.end < 0 else s.end
    index = [slice(None)] * x.ndim
    parts = []
    if s.stride > 0:
        for b in range(start, end - s.part_size + 1, s.stride):
            index[axis] = slice(b, b + s.part_size)
            parts.append(x[tuple(index)])
    else:
        # Backwards: from the part ending at start down to the part starting at end.
        for b in range(start - s.part_size, end - 1, s.stride):
            index[axis] = slice(b, b + s.part_size)
            parts.append(x[tuple(index)])
    return parts


def _loop_kernel(a: SimpleNamespace, *args: np.ndarray) -> tuple:
    limit = int(args[0].reshape(-1)[0])
    return _iterate(a.sub, args, limit if limit >= 0 else 1 << 62, bool(args[1].reshape(-1)[0]))


def _iterate(sub: Compiled, args: Sequence[np.ndarray], limit: int | None, go: bool) -> tuple:
    """Run the body up to ``limit`` times (None: as many as the sliced inputs have parts)
    while ``go`` and then the body's condition hold; ``args`` are the layer's inputs."""
    body, ins, outs = sub.bodies[0], sub.inputs[0], sub.outputs[0]
    started = go
    feeds: dict[str, np.ndarray] = {}
    parts: dict[str, list[np.ndarray]] = {}
    for lid, i in ins.items():
        s = sub.sliced.get(lid)
        if s is None:
            feeds[lid] = args[i]
        else:
            parts[lid] = _parts(args[i], s)
    if limit is None:
        if parts:
            limit = min(len(p) for p in parts.values())
        else:
            c = next(iter(sub.concat.values()), None)
            limit = abs(c.end - c.start) // c.part_size if c is not None else 1
    counter = sub.current_iteration
    counter_info = body.declared(counter) if counter is not None else None
    wanted = sorted({*outs.values(), *sub.back, *([sub.condition] if sub.condition else [])})
    collected: dict[int, list[np.ndarray]] = {i: [] for i in sub.concat}
    last: dict[str, np.ndarray] = {}
    iteration = 0
    while go and iteration < limit:
        for lid, ps in parts.items():
            if ps:
                feeds[lid] = ps[min(iteration, len(ps) - 1)]
        if counter is not None and counter not in sub.back.values():
            shape = counter_info.shape if counter_info.shape == (1,) else ()  # type: ignore[union-attr]
            feeds[counter] = np.full(shape, iteration,
                                     counter_info.element_type.dtype)  # type: ignore[union-attr]
        values = dict(zip(wanted, body.run(feeds, wanted), strict=True))
        for i in collected:
            collected[i].append(values[outs[i]])
        last = values
        for res, param in sub.back.items():
            feeds[param] = values[res]
        if sub.condition is not None:
            go = bool(np.asarray(values[sub.condition]).reshape(-1)[0])
        iteration += 1
    result = []
    for i in range(sub.n_outputs):
        res = outs[i]
        c = sub.concat.get(i)
        if not started:
            # Never started: the shapes OpenVINO infers for a constant false condition.
            if c is not None:
                result.append(_empty(body, res, None))
            else:
                first_value = feeds.get(sub.back.get(res, ""))
                result.append(_empty(body, res, 0) if first_value is None or
                              first_value.ndim == 0 else
                              np.zeros((0, *first_value.shape[1:]), first_value.dtype))  # fmt: skip
            continue
        if c is not None:
            if collected[i]:
                pieces = [np.reshape(v, (1,)) if np.ndim(v) == 0 else v for v in collected[i]]
                axis = c.axis + pieces[0].ndim if c.axis < 0 else c.axis
                if c.stride < 0:
                    pieces = pieces[::-1]
                result.append(np.concatenate(pieces, axis=axis))
            else:
                result.append(_empty(body, res, c.axis))
        elif res in last:
            result.append(last[res])
        elif res in sub.back and sub.back[res] in feeds:
            result.append(feeds[sub.back[res]])
        else:
            result.append(_empty(body, res, 0))
    return tuple(result)


def _empty(body: Body, res: str, axis: int | None) -> np.ndarray:
    """A Result's value when the body never ran: its declared shape with no parts along
    ``axis`` (None: ``[0]``)."""
    port = body.nodes[res].layer.inputs[0]
    dims = [d if isinstance(d, int) else 0 for d in (port.dims or ())] or [0]
    if axis is None:
        dims = [0]
    else:
        dims[axis + len(dims) if axis < 0 else axis] = 0
    et = port.precision
    return np.zeros(dims, et.dtype if et is not None else np.float32)


register(OpDef(
    type="Loop", version=5, since_opset=5, attrs=(), infer=_loop_infer, kernel=_loop_kernel,
    inputs=(2, 1 << 20), input_types=(NUMBERS, CONDITION_TYPES, ANY),
    doc="Runs its body while a condition holds, up to a trip count, slicing and "
        "concatenating along axes and feeding Results back to Parameters.",
    scratch=outputs_bytes,  # the iterations' pieces, joined at the end
))  # fmt: skip


# --- TensorIterator-1 ---------------------------------------------------------------------


def _parts_count(dim: int, s: Sliced) -> int:
    """How many parts :func:`_parts` cuts from a dim of ``dim``."""
    lo = s.start + dim + 1 if s.start < 0 else s.start
    hi = s.end + dim + 1 if s.end < 0 else s.end
    if s.stride < 0:
        lo, hi = hi, lo
    span = hi - lo - s.part_size
    return 0 if span < 0 else span // abs(s.stride) + 1


def _ti_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    sub: Compiled = a.sub
    given, results = _body_infos(sub, inputs)
    iterations = -1
    for lid, s in sub.sliced.items():
        i = sub.inputs[0][lid]
        shape = inputs[i].shape
        if shape is not None:
            d = shape[_axis(s.axis, len(shape), f"sliced input {i}")]
            if isinstance(d, int):
                iterations = _parts_count(d, s)
    if not sub.sliced and sub.concat:
        c = next(iter(sub.concat.values()))
        iterations = abs(c.end - c.start) // c.part_size
    return _iterated_outputs(sub, given, results, iterations, False, True)


def _ti_kernel(a: SimpleNamespace, *args: np.ndarray) -> tuple:
    return _iterate(a.sub, args, None, True)


register(OpDef(
    type="TensorIterator", version=0, since_opset=1, attrs=(), infer=_ti_infer,
    kernel=_ti_kernel, inputs=(0, 1 << 20), input_types=(ANY,),
    doc="Runs its body once per part of its sliced inputs, concatenating along axes and "
        "feeding Results back to Parameters.",
    scratch=outputs_bytes,  # the iterations' pieces, joined at the end
))  # fmt: skip


__all__ = ["Body", "Compiled", "attach_bodies"]
