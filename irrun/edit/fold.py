"""Constant folding written into a document (``irrun fold``): the layers whose outputs
are the same at every run become Consts holding their values.

What folds is what irrun folds at load (:mod:`irrun.core.folding`): a layer whose op is
foldable (no state, no randomness, no body) and whose inputs are all constants, Consts
or layers folded so; and, once the input shapes are static (the model's own, or those
``shapes`` gives: the model is reshaped first), each ShapeOf, whose value its input's
shape is, so that shape subgraphs fold.  Each value a layer that stays reads (or a
Result) becomes a Const (:func:`irrun.edit.layers.constant`), named as OpenVINO's
ConstantFolding names it (the layer's name, ``name.N`` for its output N of several) and
keeping its tensor names; the values are computed by irrun's reference kernels, those
irrun's own values are defined by.  Then :func:`irrun.edit.cleanup.clean` removes the
layers that made them, merges equal constants and renumbers.

Compressed weights stay compressed.  A Convert from a Const of a compact type (f16,
bf16, 8-bit, 4-bit...) to a wider float decompresses a weight: folding it would write
an f32 Const 2 to 8 times the size of the weight.  Such a Convert, and what reads it,
is not folded, as OpenVINO marks these Converts (``decompression``) and its
ConstantFolding leaves them and what follows them alone; so is any layer whose rt_info
says ``decompression`` or ``disable_const_folding``.

The cap.  A value larger than ``cap`` bytes is not written as a Const: the layer that
makes it stays, and what it reads is folded instead (a Broadcast or Tile of a small
constant costs less to compute than to store).  Polygraphy's ``--fold-size-threshold``
caps the same way, one value at a time.

The bodies of If, Loop and TensorIterator are written as they were: those layers never
fold, and nothing inside them is folded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.documents import with_inferred_shapes
from ..core.executor import Plan
from ..core.folding import may_fold
from ..core.memory import format_bytes, parse_size
from ..core.model import Model
from ..core.propagation import Infos
from ..core.steps import Step
from ..errors import LayerRef, UsageError
from ..ir.dims import is_static
from ..ir.element_types import ElementType, of_array
from ..ir.records import Edge, IRDocument
from ..ir.writer import constants, source_range
from ..text import count
from .cleanup import Cleanup, clean
from .layers import constant, next_id
from .reshape import reshaped

DEFAULT_CAP = 64 * 2**20
# Element types a weight is stored in to be decompressed: a Convert from a Const of one
# of these to a wider float is a decompression.
COMPACT = frozenset(("f16", "bf16", "i8", "u8", "i4", "u4", "nf4", "u1", "u2", "u3", "u6",
                     "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1"))  # fmt: skip
_FLOATS = frozenset(("f16", "bf16", "f32", "f64"))
_NO_FOLDING = ("decompression", "disable_const_folding", "disable_constant_folding")


@dataclass
class Folded:
    """What :func:`folded` did."""

    layers_before: int = 0
    layers_after: int = 0
    bytes_before: int = 0  # the constants' bytes in the source document
    bytes_after: int = 0
    folded_layers: int = 0  # layers removed because their values are Consts now
    constants: int = 0  # Consts made
    constant_bytes: int = 0
    shape_ofs: int = 0  # ShapeOfs folded (their inputs' shapes static)
    compressed: int = 0  # decompression Converts kept (of weights, zero points, scales)
    over_cap: list[LayerRef] = field(default_factory=list)
    failed: list[LayerRef] = field(default_factory=list)
    cap: int | None = DEFAULT_CAP
    cleanup: Cleanup = field(default_factory=Cleanup)

    def describe(self) -> list[str]:
        """Lines for people: before and after, and what was left unfolded, and why."""
        before, after = format_bytes(self.bytes_before), format_bytes(self.bytes_after)
        lines = [f"layers: {self.layers_before} -> {self.layers_after}; "
                 f"constants' bytes: {before} -> {after}"]  # fmt: skip
        shape = f", {count(self.shape_ofs, 'ShapeOf')} among them" if self.shape_ofs else ""
        lines.append(f"folded {count(self.folded_layers, 'layer')}{shape} into "
                     f"{count(self.constants, 'constant')} "
                     f"({format_bytes(self.constant_bytes)})")  # fmt: skip
        if self.compressed:
            lines.append(f"kept {count(self.compressed, 'constant')} compressed (weights, "
                         "zero points, scales: their decompression Converts stay)")  # fmt: skip
        if self.over_cap:
            lines.append(f"left {count(len(self.over_cap), 'layer')} unfolded: values above the "
                         f"{format_bytes(self.cap or 0)} cap ({_refs(self.over_cap)})")  # fmt: skip
        if self.failed:
            lines.append(f"left {count(len(self.failed), 'layer')} unfolded: their kernel "
                         f"failed ({_refs(self.failed)})")  # fmt: skip
        done = self.cleanup
        other = len(done.dead) - self.folded_layers
        if other > 0:
            lines.append(f"removed {count(other, 'other dead layer')}")
        lines += [line for line in done.describe() if not line.startswith("removed ")]
        return lines


def _refs(refs: list[LayerRef], most: int = 3) -> str:
    shown = ", ".join(str(r) for r in refs[:most])
    return shown + (f" and {len(refs) - most} more" if len(refs) > most else "")


def cap_option(cap: int | str | None) -> int | None:
    """A cap as bytes (None: no cap) from bytes or a size: ``"64M"``, ``"none"``."""
    if isinstance(cap, str):
        try:
            return parse_size(cap)
        except ValueError as exc:
            raise UsageError(f"cap: {exc}") from None
    if cap is None or (isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0):
        return cap
    raise UsageError(f"cap: expected bytes, a size like '64M' or 'none', not {cap!r}")


def fold(model: Model, cap: int | str | None = DEFAULT_CAP, shapes: Any = None) -> IRDocument:
    """``model``'s document with its constant layers folded into Consts (see the
    module's docstring); ``shapes`` (as :meth:`Model.reshape <irrun.Model.reshape>`
    takes them) reshapes it first, ``cap`` (bytes, ``"64M"``, None for none) bounds a
    folded value's size.  :func:`folded` also says what it did."""
    return folded(model, cap, shapes)[0]


def folded(model: Model, cap: int | str | None = DEFAULT_CAP,
           shapes: Any = None) -> tuple[IRDocument, Folded]:  # fmt: skip
    """:func:`fold`'s document and a :class:`Folded` of what was done."""
    limit = cap_option(cap)
    infos, inputs = reshaped(model, shapes)
    lg = model._graph
    plan = Plan(lg, model._nodes, reference=True)
    report = Folded(cap=limit)
    kinds = _kinds(plan, infos)
    report.compressed = sum(k == "kept" for k in kinds)
    while True:
        wanted = _wanted(plan, infos, kinds, limit, report)
        values, failed = _compute(plan, infos, kinds, wanted)
        if failed is None:
            break
        report.failed.append(plan.steps[failed].node.layer.ref())
        _unfold(plan, kinds, failed)
    doc = with_inferred_shapes(lg, infos, inputs) if inputs else model.document()
    report.layers_before = len(doc.layers)
    report.bytes_before = _constant_bytes(doc)
    _write_constants(doc, plan, infos, values, report)
    doc, report.cleanup = clean(doc, model.weights)
    ids = {k: {plan.steps[i].node.layer.id for i, kind in enumerate(kinds) if kind == k}
           for k in ("fold", "shape", "const")}  # fmt: skip
    dead = {r.id for r in report.cleanup.dead}
    # The Consts only folded layers read went with them: folded too.
    report.folded_layers = len(dead & (ids["fold"] | ids["shape"] | ids["const"]))
    report.shape_ofs = len(dead & ids["shape"])
    report.layers_after = len(doc.layers)
    report.bytes_after = _constant_bytes(doc)
    return doc, report


def _constant_bytes(doc: IRDocument) -> int:
    """The bytes of the constants of ``doc`` (its bodies' too), each counted once even
    where several share them."""
    ranges = set()
    blobs = 0
    for layer in constants(doc):
        if layer.blob is not None:
            blobs += len(layer.blob)
        elif (r := source_range(layer)) is not None:
            ranges.add(r)
    return blobs + sum(size for _, size in ranges)


def _static(infos: Infos, key: tuple[str, int]) -> tuple[int, ...] | None:
    info = infos.get(key)
    return tuple(info.shape) if info is not None and is_static(info.shape) else None  # type: ignore[arg-type]


def _kinds(plan: Plan, infos: Infos) -> list[str | None]:
    """Each step's part: ``const`` (a Const), ``shape`` (a ShapeOf of a static shape),
    ``fold`` (foldable, its inputs constant), ``kept`` (a decompression), None (runs)."""
    key_of = {slot: key for key, slot in plan.slots.items()}
    kinds: list[str | None] = []
    constant: set[int] = set()
    for step in plan.steps:
        node = step.node
        op = node.op
        kind = None
        if op.type == "Const":  # type: ignore[union-attr]
            kind = "const"
        elif any(k in node.layer.rt_info for k in _NO_FOLDING):
            kind = "kept" if op.type == "Convert" else None  # type: ignore[union-attr]
        elif _decompresses(plan, step, kinds):
            kind = "kept"
        elif op.type == "ShapeOf" and _static(infos, key_of[step.inputs[0]]) is not None:  # type: ignore[union-attr]
            kind = "shape"
        elif may_fold(step) and all(s in constant for s in step.inputs):
            kind = "fold"
        if kind in ("const", "shape", "fold"):
            constant.update(step.outputs)
        kinds.append(kind)
    return kinds


def _decompresses(plan: Plan, step: Step, kinds: list[str | None]) -> bool:
    """A Convert of a Const of a compact type to a wider float."""
    if step.node.op.type != "Convert" or len(step.inputs) != 1:  # type: ignore[union-attr]
        return False
    p = plan.producer.get(step.inputs[0])
    if p is None or kinds[p] != "const":
        return False
    source: ElementType = plan.steps[p].attrs.element_type
    target: ElementType = step.attrs.destination_type
    return (
        source.name in COMPACT
        and target.name in _FLOATS
        and (target.dtype.itemsize > source.dtype.itemsize or source.bits < 8)
    )


def _wanted(plan: Plan, infos: Infos, kinds: list[str | None], cap: int | None,
            report: Folded) -> list[int]:  # fmt: skip
    """The folded values layers that stay read, each within the cap; the layers whose
    value is above it stay (and are no longer folded)."""
    key_of = {slot: key for key, slot in plan.slots.items()}
    while True:
        folds = {i for i, k in enumerate(kinds) if k in ("fold", "shape")}
        wanted = sorted({s for i, step in enumerate(plan.steps) if i not in folds
                         for s in step.inputs if plan.producer.get(s) in folds})  # fmt: skip
        over = []
        for s in wanted:
            shape = _static(infos, key_of[s])
            et = infos[key_of[s]].element_type
            if cap is not None and shape is not None and et is not None \
                    and int(np.prod(shape)) * max(et.bits, 8) // 8 > cap:  # fmt: skip
                over.append(plan.producer[s])
        if not over:
            return wanted
        for i in sorted(set(over)):
            report.over_cap.append(plan.steps[i].node.layer.ref())
            kinds[i] = None


def _unfold(plan: Plan, kinds: list[str | None], failed: int) -> None:
    """``failed`` and every folded layer that reads it, directly or not, run instead."""
    broken = set(plan.steps[failed].outputs)
    kinds[failed] = None
    for i in range(failed + 1, len(plan.steps)):
        step = plan.steps[i]
        if kinds[i] == "fold" and any(s in broken for s in step.inputs):
            kinds[i] = None
            broken.update(step.outputs)


def _compute(plan: Plan, infos: Infos, kinds: list[str | None], wanted: list[int]
             ) -> tuple[dict[int, np.ndarray], int | None]:  # fmt: skip
    """The values of ``wanted``, each intermediate dropped after its last reader; or the
    index of the step whose kernel failed."""
    steps, producer = plan.steps, plan.producer
    key_of = {slot: key for key, slot in plan.slots.items()}
    needed: set[int] = set()
    stack = [producer[s] for s in wanted]
    while stack:
        i = stack.pop()
        if i in needed:
            continue
        needed.add(i)
        if kinds[i] != "shape":
            stack.extend(producer[s] for s in steps[i].inputs)
    order = sorted(needed)
    reads: dict[int, int] = {}
    for i in order:
        if kinds[i] != "shape":
            for s in steps[i].inputs:
                reads[s] = reads.get(s, 0) + 1
    keep = set(wanted)
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):  # as in a run
        for i in order:
            step = steps[i]
            if kinds[i] == "shape":
                # Only the input's shape is read: a view of one zero, whatever its size.
                shape = _static(infos, key_of[step.inputs[0]])
                args = [np.broadcast_to(np.zeros((), np.float32), shape)]  # type: ignore[arg-type]
            else:
                args = [values[s] for s in step.inputs]
            try:
                results = step.kernel(step.attrs, *args)
            except Exception:  # left to the runs, which say why
                return {}, i
            for s, value in zip(step.outputs, results, strict=False):
                if s in keep or reads.get(s):
                    values[s] = value
            if kinds[i] != "shape":
                for s in step.inputs:
                    reads[s] -= 1
                    if not reads[s] and s not in keep:
                        values.pop(s, None)
    return {s: values[s] for s in wanted}, None


def _write_constants(doc: IRDocument, plan: Plan, infos: Infos, values: dict[int, np.ndarray],
                     report: Folded) -> None:  # fmt: skip
    """Replace each value by a Const its readers read."""
    key_of = {slot: key for key, slot in plan.slots.items()}
    layers = {layer.id: layer for layer in doc.layers}
    lid_next = next_id(doc)
    moved: dict[tuple[str, int], str] = {}
    for s, value in values.items():
        lid, port_id = key_of[s]
        layer = layers[lid]
        port = layer.output_port(port_id)
        value = np.asarray(value)
        et = infos[key_of[s]].element_type or of_array(value)
        if et is None:
            raise UsageError(f"{layer.ref()}: cannot write a value of type {value.dtype}")
        # OpenVINO's ConstantFolding names an output N of several "name.N", N its index.
        index = next(i for i, p in enumerate(layer.outputs) if p.id == port_id)
        name = layer.name if len(layer.outputs) == 1 else f"{layer.name}.{index}"
        made = constant(str(lid_next), name, value.astype(et.dtype, copy=False), et,
                        port.names if port is not None else ())  # fmt: skip
        lid_next += 1
        doc.layers.append(made)
        moved[(lid, port_id)] = made.id
        report.constants += 1
        report.constant_bytes += len(made.blob or b"")
    doc.edges = [Edge(moved[(e.from_layer, e.from_port)], 0, e.to_layer, e.to_port, e.line)  # type: ignore[index]
                 if (e.from_layer, e.from_port) in moved else e for e in doc.edges]  # fmt: skip
