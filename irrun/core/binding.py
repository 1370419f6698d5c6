"""Binding layers to ops: resolve each layer's op, parse and check its attributes.

Every problem is collected as a :class:`Diagnostic` so that ``validate`` can
show all of them; ``load`` refuses a model with any error among them.  The
checks are driven by the registry (each op's declared inputs and attributes and
its own attribute check), so they cover every op irrun knows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..errors import Diagnostic, LayerRef, Level, Location
from ..ir import element_types, registry
from ..ir.attributes import read_attributes
from ..ir.records import Layer
from ..ir.registry import LookupFailure, OpDef, opset_number, resolve
from ..ir.weights import Weights
from .graph import LayerGraph

# Codes of the findings that mean irrun has no op for a layer: a type it lacks, and an
# opset it does not know or that has no op of the layer's type.
UNSUPPORTED_CODES = ("unsupported-op", "unknown-opset")


# 4-bit Consts of more elements than this stay packed in the mapped .bin (PackedConst).
PACKED_ELEMENTS = 4096


class PackedConst(SimpleNamespace):
    """A large 4-bit Const's attributes: ``value`` is unpacked from the ``.bin`` at each
    read, not held.  Unpacked, a 4-bit weight takes a byte an element, twice the ``.bin``;
    a weight kept compressed (:mod:`irrun.core.compressed`) reads the packed bytes, and
    only what asks for the values (folding, a run that observes every layer) unpacks
    them.  ``vars()`` of it has no ``value``: propagation keeps none for it (it folds
    only small values anyway), and the packed bytes are no attribute of the layer."""

    __slots__ = ("packed",)

    @classmethod
    def of(cls, attrs: SimpleNamespace, weights: Weights) -> PackedConst:
        count = 1
        for d in attrs.shape:
            count *= d
        made = cls(**vars(attrs))
        made.packed = weights.raw(attrs.offset, element_types.byte_size(attrs.element_type, count))
        return made

    @property
    def value(self) -> Any:
        count = 1
        for d in self.shape:
            count *= d
        return element_types.decode(self.packed, self.element_type, count).reshape(self.shape)


@dataclass
class Node:
    layer: Layer
    op: OpDef | None  # None when the layer's op could not be resolved or configured
    attrs: SimpleNamespace | None
    ref: LayerRef
    # Layers of one kind (one op, the same <data> items) read and infer alike; the number
    # stands for the kind within one bind(), cheaper to hash than the items it stands for.
    kind: int = -1

    @property
    def ok(self) -> bool:
        return self.op is not None and self.attrs is not None


def bind(lg: LayerGraph, weights: Weights) -> tuple[dict[str, Node], list[Diagnostic]]:
    binder = _Binder(lg, weights)
    nodes = {lid: binder.bind(lg.layers[lid]) for lid in lg.order}
    if binder.unread:  # one finding for the file, not one per Const
        binder.problems.append(missing_weights(weights.path, len(binder.unread),
                                               lg.doc.location(min(binder.unread))))  # fmt: skip
    return nodes, binder.problems


def missing_weights(path: Path, consts: int, where: Location) -> Diagnostic:
    """The one finding for a weights file that does not exist, which ``consts`` Consts read
    (``where`` is the first); ``extra["missing-weights"]`` holds the count."""
    what = "is not a file" if path.is_dir() else "does not exist"
    return Diagnostic(
        "error", "bad-weights",
        f"weights file {path} {what} ({consts} Const layer{'s' * (consts != 1)} read from it; "
        "give its path with --weights, or weights= in Python)",
        where, extra={"missing-weights": consts},
    )  # fmt: skip


def _lookup_failure(layer: Layer, exc: LookupFailure) -> tuple[str, str]:
    """The code and message for a layer whose op irrun cannot resolve."""
    n = opset_number(layer.version)
    if exc.unsupported:
        return "unsupported-op", str(exc)
    if n is None or not 1 <= n <= registry.LATEST_OPSET or registry.describe_versions(layer.type):
        return "unknown-opset", str(exc)
    op = f"op {layer.type} ({layer.version})"
    opsets = registry.openvino_opsets(layer.type)
    if opsets:
        return "unsupported-op", (
            f"{op} is not supported by irrun (OpenVINO has it in "
            f"{registry.describe_opsets(opsets)}; 'irrun ops' lists the ops irrun runs)"
        )
    hint = registry.close_types(layer.type)
    did_you_mean = f" (did you mean {' or '.join(hint)}?)" if hint else ""
    return "unsupported-op", f"{op} is not an op of any OpenVINO opset{did_you_mean}"


class _Binder:
    def __init__(self, lg: LayerGraph, weights: Weights) -> None:
        self.lg = lg
        self.weights = weights
        self.problems: list[Diagnostic] = []
        # (op, <data> items) -> what read() gives, and the kind's number
        self.attributes: dict[tuple, tuple] = {}
        self.ops: dict[tuple[str, str], OpDef | LookupFailure] = {}
        self.unread: list[int] = []  # lines of the Consts whose weights file is missing

    def report(self, level: Level, code: str, message: str, line: int, ref: LayerRef,
               expected: Any = None, actual: Any = None) -> None:  # fmt: skip
        where = self.lg.doc.location(line)
        self.problems.append(Diagnostic(level, code, message, where, ref, None, expected, actual))

    def bind(self, layer: Layer) -> Node:
        if layer.unnamed_op:  # the reader has reported the missing type or version
            return Node(layer, None, None, layer.ref())
        op = self.ops.get((layer.type, layer.version))
        if op is None:
            try:
                op = resolve(layer.type, layer.version)
            except LookupFailure as exc:
                op = exc
            self.ops[(layer.type, layer.version)] = op
        if isinstance(op, LookupFailure):
            exc = op
            code, message = _lookup_failure(layer, exc)
            self.report("error", code, message, layer.line, layer.ref(),
                        actual=f"{layer.type} ({layer.version})")  # fmt: skip
            return Node(layer, None, None, layer.ref())
        ref = layer.ref(op.version)
        data_line = layer.data_line or layer.line

        n_in = len(layer.inputs)
        low, high = op.inputs
        inputs_fit = layer.unreadable_ports or low <= n_in <= high
        if not inputs_fit:
            want = low if low == high else f"{low} to {high}"
            self.report("error", "input-count", f"has {n_in} input ports, expected {want}",
                        layer.line, ref, expected=want, actual=n_in)  # fmt: skip

        # Layers of one op with the same <data> parse and check alike: done once per model.
        key = (id(op), tuple(layer.data.items()))
        outcome = self.attributes.get(key)
        if outcome is None:
            outcome = self.attributes[key] = (*self.read(op, layer.data), len(self.attributes))
        values, found, failure, kind = outcome
        for f in found:
            self.report(f.level, f.code, f.message, data_line, ref, f.expected, f.actual)
        if failure is not None:
            if failure.code == "internal-error":
                self.problems.append(replace(failure, location=self.lg.doc.location(data_line),
                                             layer=ref))  # fmt: skip
            elif failure.code:
                self.report("error", failure.code, failure.message, data_line, ref)
            return Node(layer, op, None, ref)
        if not inputs_fit:
            # Its attributes are checked, but no shape rule sees a wrong number of inputs:
            # one missing or extra port is one finding, not a second one from the rule.
            return Node(layer, op, None, ref)
        attrs = SimpleNamespace(**values)
        if op.type == "Const":
            if not self.read_const(ref, attrs, data_line):
                # Its shape or size is in doubt: nothing is inferred from it, so the one
                # mistake is not reported again at every layer it feeds.
                return Node(layer, op, None, ref)
            if not hasattr(attrs, "value"):  # a large 4-bit weight, kept packed
                attrs = PackedConst.of(attrs, self.weights)
        return Node(layer, op, attrs, ref, kind)

    @staticmethod
    def read(op: OpDef, data: dict[str, str]) -> tuple[dict, list, Diagnostic | None]:
        """A layer's attribute values, the findings about them, and why they cannot be
        used (a Diagnostic without location; code "" when a finding says why), if so."""
        values, found = read_attributes(op.attrs, data)
        if any(f.level == "error" for f in found):
            return values, found, Diagnostic("error", "", "", Location(""))
        if op.check is not None:
            try:
                op.check(SimpleNamespace(**values))
            except ValueError as exc:
                return values, found, Diagnostic("error", "bad-attribute", str(exc), Location(""))
            except Exception as exc:  # a bug in the op's check: report it, check the rest
                return values, found, Diagnostic(
                    "error", "internal-error",
                    f"irrun's attribute check for {op.label} failed ({type(exc).__name__}: "
                    f"{exc}); this is a bug in irrun (--debug shows where)",
                    Location(""), extra={"exception": exc},
                )  # fmt: skip
        return values, found, None

    def read_const(self, ref: LayerRef, a: SimpleNamespace, line: int) -> bool:
        """Decode a Const's weights into ``a.value``; report why not and return False.

        The sizes are checked here rather than left to :meth:`Weights.read`: in Python
        integers (a huge shape must not wrap around) and with the values compared kept
        in the finding.
        """
        w = self.weights
        if not w.exists:
            self.unread.append(line)
            return False
        et = a.element_type
        count = 1
        for d in a.shape:
            count *= d
        strings = et.name == "string"  # a count, count + 1 offsets, then the bytes
        need = 4 * (count + 2) if strings else element_types.byte_size(et, count)
        if a.size < need:
            self.report("error", "bad-weights",
                        f"size {a.size} bytes is too small for shape {list(a.shape)} of {et} "
                        f"(needs {need} bytes)", line, ref, expected=need,
                        actual=a.size)  # fmt: skip
            return False
        end = a.offset + a.size
        if end > w.size:
            self.report("error", "bad-weights",
                        f"offset {a.offset} + size {a.size} = {end} is past the end of "
                        f"{w.path.name} ({w.size} bytes)", line, ref, expected=w.size,
                        actual=end)  # fmt: skip
            return False
        if a.size > need and not strings:
            # OpenVINO reads the bytes it needs and ignores the rest.
            self.report("warning", "const-size",
                        f"size {a.size} bytes is more than shape {list(a.shape)} of {et} needs "
                        f"({need} bytes); OpenVINO ignores the rest", line, ref,
                        expected=need, actual=a.size)  # fmt: skip
        if et.bits == 4 and count > PACKED_ELEMENTS and not strings:
            return True  # read when asked (see PackedConst)
        try:
            a.value = w.read(a.offset, a.size, et, a.shape)
        except (ValueError, OSError) as exc:
            self.report("error", "bad-weights", str(exc), line, ref)
            return False
        return True
