"""Converting a model's float weights between f32 (or f64) and f16, as OpenVINO's
``save_model(model, path, compress_to_fp16=True)`` does.

:func:`convert_precision` with ``"f16"`` turns each f32 constant into an f16 constant
(named ``<name>_compressed``, holding the tensor names) followed by a ``Convert`` to f32
that carries the name and OpenVINO's ``decompression`` attribute, so that a plugin sees
f32 weights and may fold the ``Convert`` away.  A constant stays in f32 where OpenVINO
keeps it:

- on a shape path: anything feeding, up to a ``ShapeOf``, an input that holds a shape
  or indices (``Reshape``'s pattern, ``Broadcast``'s target shape, ``Interpolate``'s sizes
  or scales, ``Pad``'s pads, ``StridedSlice``'s bounds...).  Such constants, of any type,
  are also marked ``DisablePrecisionConversion``, as OpenVINO marks them;
- when f16 would change it too much: a value off by more than 1 after rounding vetoes
  the constant; otherwise it stays when at least 75% of its values are out of f16's
  range (non-zero but below f16's smallest subnormal, or beyond 65504) or lose more
  than a relative 1e-3 (1e-4 for a constant of one value: epsilons, scales);
- when the file marks it so: ``DisablePrecisionConversion`` for f16 (or the older
  ``precise``), as OpenVINO marked the constants above;
- when the model is already quantized or compressed (a ``FakeQuantize``, a
  ``FakeConvert``, or an integer weight decompressed by ``Convert`` [``Subtract``]
  ``Multiply``): OpenVINO then converts nothing, and neither does this.

Values are rounded to the nearest f16, ties to even; values beyond f16's range become
+-65504, and NaN becomes 65504, as OpenVINO writes them.  f64 constants go the same
way, with a ``Convert`` back to f64 (OpenVINO's rules for them differ in two details,
followed here: NaN stays NaN and counts for nothing, values below f16's smallest
subnormal become +0).  Constants inside ``If``, ``Loop`` and ``TensorIterator`` bodies
are converted too.

``"f32"`` undoes it: each ``Convert`` to f32 (or f64) marked ``decompression`` whose
input is an f16 constant becomes an f32 (f64) constant with the same values (exactly:
every f16 is an f32), named as the ``Convert`` was, with its tensor names and those of
the f16 constant, which goes when nothing else reads it.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from ..core.documents import copy_document
from ..errors import IrrunError, Location, UsageError
from ..ir.element_types import ELEMENT_TYPES, ElementType
from ..ir.records import Edge, IRDocument, Layer, Port, RtInfo
from ..ir.registry import opset_number
from ..ir.weights import Weights
from ..ir.writer import constant_bytes, constant_type, is_constant
from .layers import next_id

if TYPE_CHECKING:
    from ..core.model import Model

F16_MAX = 65504.0
# The smallest positive f16 (a subnormal): a non-zero f32 below it becomes zero.
_F16_TINY = float(np.finfo(np.float16).smallest_subnormal)
_MAX_ABS_ERROR = 1.0
_MAX_REL_ERROR = 1e-3
_MAX_REL_ERROR_ONE = 1e-4
_KEEP_SHARE = 0.75

# The inputs that OpenVINO's ops mark precision-sensitive (they hold shapes, sizes,
# counts or indices), by op type: input positions.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Broadcast": (1,), "Tile": (1,), "TopK": (1,), "Interpolate": (1,),
    "OneHot": (1,), "Pad": (1, 2), "BatchToSpace": (1, 2, 3), "SpaceToBatch": (1, 2, 3),
    "StridedSlice": (1, 2, 3), "ConvolutionBackpropData": (2,),
    "GroupConvolutionBackpropData": (2,),
}  # fmt: skip
# Interpolate-4 (opsets 4 to 10) marks its scales too; Interpolate-0 and -11 have one input
# for sizes or scales.
_INTERPOLATE_4 = range(4, 11)
_QUANTIZED_TYPES = frozenset(("i4", "u4", "i8", "u8", "nf4", "f8e4m3", "f8e5m2"))
_DECOMPRESSION_XML = b'<rt_info><attribute name="decompression" version="0" /></rt_info>'
_DISABLE = "DisablePrecisionConversion"
_DISABLE_VALUE = "dynamic:f16"
_F16 = ELEMENT_TYPES["f16"]
# The types converted to f16, with the dtype of their bytes.
_WIDE = {"f32": "<f4", "f64": "<f8"}


@dataclass
class Conversion:
    """What :func:`convert_precision` made: the new document and what it did."""

    document: IRDocument
    # Names of the constants converted (their original names).
    converted: list[str] = field(default_factory=list)
    # Names of the f32 and f64 constants kept, with why ("shape path"...).
    kept: list[tuple[str, str]] = field(default_factory=list)
    # Why nothing was converted at all (a quantized model), else None.
    skipped: str | None = None


def convert_precision(model: Model, to: str) -> Conversion:
    """The document of ``model`` with its float weights converted ``to`` ``"f16"`` or
    ``"f32"`` (see the module's docstring); ``model`` is left as it was.

    >>> from irrun import load
    >>> c = convert_precision(load("tests/torch_models/classifier.xml"), "f16")
    >>> c.converted, c.kept, c.skipped
    (['self.fc.weight', 'Constant_27472'], [], None)
    >>> [layer.type for layer in c.document.layers if layer.name == "self.fc.weight"]
    ['Convert']
    """
    return convert_document(model.document(), model.weights, to)


def convert_document(doc: IRDocument, weights: Weights | None, to: str) -> Conversion:
    """:func:`convert_precision` on records read from an IR file and their ``.bin``.

    Raises :class:`~irrun.errors.UsageError` for a ``to`` other than ``"f16"`` or ``"f32"``.
    """
    if to not in ("f16", "f32"):
        raise UsageError(f"convert to 'f16' or 'f32', not {to!r}")
    doc = copy_document(doc)
    out = Conversion(doc)
    if to == "f16":
        reason = _quantized(doc)
        if reason:
            out.skipped = reason
            return out
        _compress(doc, weights, out)
    else:
        _decompress(doc, weights, out)
    return out


# ----------------------------------------------------------------------------- f16


def keep_reason(values: np.ndarray) -> str | None:
    """Why OpenVINO keeps a float constant holding ``values`` (f64 if they are, else f32)
    in its type rather than converting it to f16, or None.

    >>> keep_reason(np.float32([0.1])), keep_reason(np.float32([0.1, 0.2]))
    ('f16 would change its value', None)
    >>> keep_reason(np.float32([1e-6, 2e-6, 3e-6, 1.0])), keep_reason(np.float32([4098, 0.5]))
    ('out of f16 range or too imprecise in f16', 'f16 would change a value by more than 1')
    """
    a = np.asarray(values)
    wide = a.dtype == np.float64
    a = a.reshape(-1) if wide else a.astype(np.float32).reshape(-1)
    if a.size == 0:
        return "empty"
    with np.errstate(all="ignore"):
        out = ((np.abs(a) < _F16_TINY) & (a != 0)) | (a > F16_MAX) | (a < -F16_MAX)
        exact = a.astype(np.float64)
        error = np.abs(exact - a.astype(np.float32).astype(np.float16).astype(np.float64))
        if np.any(~out & (error > _MAX_ABS_ERROR)):
            return "f16 would change a value by more than 1"
        limit = _MAX_REL_ERROR_ONE if a.size == 1 else _MAX_REL_ERROR
        ratio = error / np.abs(exact)
        # NaN counts against an f32 constant (OpenVINO's vectorised check compares
        # unordered), not against an f64 one (its loop compares ordered).
        imprecise = ~out & (a != 0) & (ratio > limit if wide else ~(ratio <= limit))
    if (np.count_nonzero(out) + np.count_nonzero(imprecise)) / a.size >= _KEEP_SHARE:
        if a.size == 1 and not out[0]:
            return "f16 would change its value"
        return "out of f16 range or too imprecise in f16"
    return None


def to_f16(values: np.ndarray) -> np.ndarray:
    """``values`` as OpenVINO writes them in f16: nearest, ties to even; beyond the
    range +-65504.  From f32, NaN becomes 65504; from f64 (rounded to f32 first), NaN
    stays NaN and what is too small for f16 becomes +0.

    >>> to_f16(np.float32([1e5, -np.inf, np.nan, 0.1])).tolist()
    [65504.0, -65504.0, 65504.0, 0.0999755859375]
    >>> to_f16(np.float64([-1e-10, np.nan])).view(np.uint16).tolist()
    [0, 32256]
    """
    a = np.asarray(values)
    if a.dtype == np.float64:
        with np.errstate(invalid="ignore"):
            tiny = (np.abs(a) < _F16_TINY) & (a != 0)
        a = np.where(tiny, 0.0, np.clip(a, -F16_MAX, F16_MAX)).astype(np.float32)
        return a.astype(np.float16)
    a = np.asarray(a, np.float32)
    a = np.where(np.isnan(a), np.float32(F16_MAX), np.clip(a, -F16_MAX, F16_MAX))
    return a.astype(np.float16)


def _compress(doc: IRDocument, weights: Weights | None, out: Conversion) -> None:
    for layer in doc.layers:
        for body in (layer.bodies or {}).values():
            _compress(body, weights, out)
    shape_path = _shape_path_constants(doc)
    layers: list[Layer] = []
    moved: dict[tuple[str, int], str] = {}  # a constant's output -> its Convert's id
    new_id = next_id(doc)
    for layer in doc.layers:
        layers.append(layer)
        if not is_constant(layer):
            continue
        et = constant_type(layer)
        if layer.id in shape_path:
            if et.name in _WIDE:
                out.kept.append((layer.name, "shape path"))
            _mark(layer, _DISABLE, _DISABLE_VALUE)
            continue
        if et.name not in _WIDE or not layer.outputs:
            continue
        if layer.rt_info.get(_DISABLE) == _DISABLE_VALUE or "precise" in layer.rt_info:
            out.kept.append((layer.name, f"marked {_DISABLE}"))
            continue
        values = _values(layer, weights, np.dtype(_WIDE[et.name]), doc)
        reason = keep_reason(values)
        if reason:
            if reason != "empty":
                out.kept.append((layer.name, reason))
            continue
        convert = _decompression(layer, str(new_id), et)
        new_id += 1
        _to_f16_constant(layer, to_f16(values))
        layers.append(convert)
        moved[(layer.id, layer.outputs[0].id)] = convert.id
        out.converted.append(convert.name)
    edges = []
    for e in doc.edges:
        convert_id = moved.get((e.from_layer, e.from_port))  # type: ignore[arg-type]
        edges.append(e if convert_id is None else Edge(convert_id, 1, e.to_layer, e.to_port, 0))
    edges += [Edge(lid, port, convert_id, 0, 0) for (lid, port), convert_id in moved.items()]
    doc.layers[:] = layers
    doc.edges[:] = edges


def _to_f16_constant(layer: Layer, values: np.ndarray) -> None:
    blob = values.astype("<f2").tobytes()
    layer.name = f"{layer.name}_compressed"
    layer.data = {**layer.data, "element_type": "f16", "offset": "0", "size": str(len(blob))}
    layer.blob = blob
    layer.outputs[0].precision = _F16


def _decompression(const: Layer, lid: str, et: ElementType) -> Layer:
    """The Convert back to ``et`` that follows a compressed constant."""
    dims = const.outputs[0].dims
    return Layer(lid, const.name, "Convert", "opset1", 0, data={"destination_type": et.name},
                 rt_info=RtInfo({"decompression": ""}, xml=_DECOMPRESSION_XML),
                 inputs=[Port(0, 0, _F16, (), dims)],
                 outputs=[Port(1, 0, et, (), dims)])  # fmt: skip


def _mark(layer: Layer, key: str, value: str) -> None:
    """Add the rt_info attribute ``key`` (version 0) to ``layer``, keeping what it has."""
    if layer.rt_info.get(key) == value:
        return
    xml = layer.rt_info.xml if isinstance(layer.rt_info, RtInfo) else None
    if xml is None:  # no <rt_info> was read: the writer writes the dict, with the version
        layer.rt_info = {**layer.rt_info, key: value}
        return
    el = etree.fromstring(xml)
    etree.SubElement(el, "attribute", name=key, version="0", value=value)
    layer.rt_info = RtInfo({**layer.rt_info, key: value}, xml=etree.tostring(el))


def _inputs(doc: IRDocument) -> dict[str, list[str | None]]:
    """Each layer's producers, in the order of its input ports."""
    source = {(e.to_layer, e.to_port): e.from_layer for e in doc.edges}
    return {layer.id: [source.get((layer.id, p.id)) for p in layer.inputs] for layer in doc.layers}


def _shape_path_constants(doc: IRDocument) -> set[str]:
    """The constants OpenVINO's MarkPrecisionSensitiveConstants marks in ``doc``: those
    on the paths up from a shape input (:data:`SHAPE_INPUTS`), stopping at ``ShapeOf``,
    found by walking up from the Results and sinks in OpenVINO's order."""
    by_id = {layer.id: layer for layer in doc.layers}
    inputs = _inputs(doc)
    marked: set[str] = set()
    on_path: set[str] = set()
    starts = [lr.id for lr in doc.layers if lr.type == "Result"]
    starts += [lr.id for lr in doc.layers if lr.type == "Assign"]
    visited = set(starts)
    todo = collections.deque(starts)
    while todo:
        lid = todo.popleft()
        layer = by_id.get(lid)
        if layer is None:
            continue
        sources = inputs[lid]
        for i in _shape_inputs(layer):
            if i < len(sources) and sources[i] is not None:
                visited.add(sources[i])
                _walk_shape_path(sources[i], by_id, inputs, on_path, marked)
        for src in sources:
            if src is None or src in visited:
                continue
            visited.add(src)
            todo.appendleft(src)
    return marked


def _shape_inputs(layer: Layer) -> tuple[int, ...]:
    """The positions of ``layer``'s inputs that hold shapes (:data:`SHAPE_INPUTS`)."""
    if layer.type == "Interpolate" and opset_number(layer.version) in _INTERPOLATE_4:
        return (1, 2)
    return SHAPE_INPUTS.get(layer.type, ())


def _walk_shape_path(start: str, by_id: dict[str, Layer], inputs: dict[str, list[str | None]],
                     visited: set[str], marked: set[str]) -> None:  # fmt: skip
    visited.add(start)
    todo = collections.deque([start])
    while todo:
        lid = todo.popleft()
        layer = by_id.get(lid)
        if layer is None or layer.type == "ShapeOf":
            continue
        if is_constant(layer):
            marked.add(lid)
        for src in inputs[lid]:
            if src is None or src in visited:
                continue
            visited.add(src)
            todo.appendleft(src)


def _quantized(doc: IRDocument) -> str | None:
    """Why OpenVINO would convert nothing in ``doc`` (quantized or compressed), or None."""
    by_id = {layer.id: layer for layer in doc.layers}
    inputs = _inputs(doc)

    def kind(lid: str | None) -> Layer | None:
        return by_id.get(lid) if lid is not None else None

    def int_convert(lid: str | None) -> bool:
        conv = kind(lid)
        if conv is None or conv.type != "Convert" or not inputs[conv.id]:
            return False
        const = kind(inputs[conv.id][0])
        return (
            const is not None
            and is_constant(const)
            and constant_type(const).name in _QUANTIZED_TYPES
        )

    def constant_or_converted(lid: str | None) -> bool:
        node = kind(lid)
        if node is not None and node.type == "Convert" and inputs[node.id]:
            node = kind(inputs[node.id][0])
        return node is not None and is_constant(node)

    for layer in doc.layers:
        if layer.type in ("FakeQuantize", "FakeConvert"):
            return f"it is quantized (a {layer.type}, layer {layer.name!r})"
        if layer.type == "Multiply" and len(inputs[layer.id]) == 2:
            for a, b in (inputs[layer.id], inputs[layer.id][::-1]):
                node, scale = kind(a), kind(b)
                if node is None or scale is None or not is_constant(scale):
                    continue
                if int_convert(a) or (node.type == "Subtract" and len(inputs[node.id]) == 2
                                      and int_convert(inputs[node.id][0])
                                      and constant_or_converted(inputs[node.id][1])):  # fmt: skip
                    return f"its weights are already compressed (layer {layer.name!r})"
        for body in (layer.bodies or {}).values():
            reason = _quantized(body)
            if reason:
                return reason
    return None


# ----------------------------------------------------------------------------- f32


def _decompress(doc: IRDocument, weights: Weights | None, out: Conversion) -> None:
    for layer in doc.layers:
        for body in (layer.bodies or {}).values():
            _decompress(body, weights, out)
    by_id = {layer.id: layer for layer in doc.layers}
    inputs = _inputs(doc)
    readers = collections.Counter(e.from_layer for e in doc.edges)
    removed: set[str] = set()
    folded: set[tuple[str, int]] = set()  # the outputs of the Converts made constants
    for layer in doc.layers:
        if layer.type != "Convert" or "decompression" not in layer.rt_info:
            continue
        to = layer.data.get("destination_type", "")
        if to not in _WIDE or len(inputs[layer.id]) != 1 or not layer.outputs:
            continue
        const = by_id.get(inputs[layer.id][0] or "")
        if const is None or not is_constant(const) or constant_type(const).name != "f16":
            continue
        values = _values(const, weights, np.dtype("<f2"), doc)
        folded.add((layer.id, layer.outputs[0].id))
        readers[const.id] -= 1
        # The f16 constant's tensor names go with it to its last decompression, and the
        # constant with them, when nothing else reads it.
        last = readers[const.id] == 0
        if last:
            removed.add(const.id)
        names = tuple(
            dict.fromkeys((const.outputs[0].names if last else ()) + layer.outputs[0].names)
        )
        rt = {k: v for k, v in layer.rt_info.items() if k != "decompression"}
        blob = values.astype(_WIDE[to]).tobytes()
        shape = const.data.get("shape", "")
        layer.type, layer.version = "Const", "opset1"
        layer.data = {"element_type": to, "shape": shape, "offset": "0", "size": str(len(blob))}
        layer.data_line = 0
        layer.blob = blob
        layer.rt_info = rt
        layer.inputs = []
        layer.outputs = [Port(0, 0, ELEMENT_TYPES[to], names, layer.outputs[0].dims)]
        out.converted.append(layer.name)
    doc.layers[:] = [layer for layer in doc.layers if layer.id not in removed]
    constants = {lid for lid, _ in folded}  # which read nothing now
    doc.edges[:] = [
        Edge(e.from_layer, 0, e.to_layer, e.to_port, e.line)
        if (e.from_layer, e.from_port) in folded else e
        for e in doc.edges
        if e.to_layer not in constants
    ]  # fmt: skip


def _values(layer: Layer, weights: Weights | None, dtype: np.dtype, doc: IRDocument) -> np.ndarray:
    if layer.blob is None and (weights is None or not weights.exists):
        where = Location(str(doc.path), layer.line)
        missing = weights.path.name if weights is not None else "the .bin"
        raise IrrunError(f"cannot read constant {layer.name!r}: {missing} does not exist", where)
    try:
        raw = constant_bytes(layer, weights)
    except ValueError as e:
        where = Location(str(doc.path), layer.line)
        raise IrrunError(f"cannot read constant {layer.name!r}: {e}", where) from None
    if len(raw) % dtype.itemsize:
        where = Location(str(doc.path), layer.line)
        raise IrrunError(f"constant {layer.name!r} has {len(raw)} bytes, not a whole number "
                         f"of {dtype.itemsize}-byte values", where)  # fmt: skip
    return np.frombuffer(raw, dtype)
