"""The op registry: every op is declared once and registered by type and version.

An :class:`OpDef` holds an op's attributes (IR spellings, kinds, defaults), a
pure shape rule over :class:`TensorInfo` (shapes as integer tuples), and a
vectorized NumPy kernel.  A layer's ``version="opsetN"`` picks the newest
version of its type whose opset of introduction is not above N.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

# Re-exported: the ops import their errors with OpDef.
from ..errors import KernelError as KernelError
from ..errors import LookupFailure as LookupFailure
from ..errors import ShapeError as ShapeError
from .attributes import Attr
from .dims import Shape
from .element_types import ElementType
from .opsets import OPSETS

# The newest opset OpenVINO defines (2026.4); a layer naming a later one is an error.
# OpenVINO 2026.4's opset17 holds only Parameter, Convert, ShapeOf and its new ops
# (irrun/ir/opsets.py): its reader refuses e.g. Result or Add with version="opset17".
LATEST_OPSET = 17

# OpenVINO looks opsets up by exact name: no spaces, lower case, no leading zeros.
_OPSET_RE = re.compile(r"opset([1-9][0-9]*)")


@dataclass(frozen=True)
class TensorInfo:
    """What is known about a tensor before running: shape, element type, maybe its value."""

    shape: Shape | None
    element_type: ElementType | None
    value: np.ndarray | None = None  # known when the tensor is a constant


# A shape rule: (attributes, input infos) -> output infos. Raises ShapeError.
ShapeRule = Callable[[SimpleNamespace, Sequence[TensorInfo]], list[TensorInfo]]
# A kernel: (attributes, input arrays) -> output arrays.  A kernel of an op with
# ``optional_outputs`` also takes ``needed=`` (see OpDef) and may return None for
# an output it was told is not needed.
Kernel = Callable[..., tuple[np.ndarray | None, ...]]
# Checks attribute values that no single attribute parser can (lengths, ranges).
AttrCheck = Callable[[SimpleNamespace], None]
# A kernel's scratch bytes: (attributes, input infos, output infos) -> bytes.
Scratch = Callable[[SimpleNamespace, Sequence[TensorInfo], Sequence[TensorInfo]], int]
# A layer's warnings: (attributes, input infos) -> messages.
Warn = Callable[[SimpleNamespace, Sequence[TensorInfo]], list[str]]


# ``OpDef.inputs[1]`` at least this: no upper bound on the number of inputs.
VARIADIC = 1 << 16


@dataclass(frozen=True)
class OpDef:
    type: str
    version: int
    since_opset: int
    attrs: tuple[Attr, ...]
    infer: ShapeRule
    kernel: Kernel
    inputs: tuple[int, int] = (1, 1)  # accepted number of inputs (min, max)
    check: AttrCheck | None = None
    # Attributes whose values explain a shape, shown in shape-mismatch messages.
    shape_attrs: tuple[str, ...] = ()
    doc: str = field(default="", compare=False)
    # The kernel can skip outputs: when some output of a layer feeds nothing that a
    # run computes, the executor calls ``kernel(attrs, *inputs, needed=mask)`` with
    # one bool per output (never all True) and ignores what it returns for the others.
    optional_outputs: bool = False
    # The element types each input port takes (names, in the sets of
    # irrun.ir.element_types; None: any), one entry per port; an op with no upper bound
    # on its inputs (Concat) declares its last entry for all the ports from there on.
    # A shape rule never sees another type: :func:`register` checks them first, for every
    # op alike, and ``irrun ops`` lists them.
    input_types: tuple[tuple[str, ...] | None, ...] = ()

    # Facts about the op that the passes, the folding, the memory plan and the checker
    # read (declared here, never kept as lists of op names elsewhere):
    # Each output element comes from the input elements at its position (broadcast).
    elementwise: bool = False
    # The result may be computed into the memory of the first input, when the run owns it
    # and nothing else reads it (an activation, a bias added).
    in_place: bool = False
    # The kernel always returns a new array of its own for its first output.
    fresh_output: bool = False
    # The first output may be a view of the first input (a Reshape's, a Squeeze's).
    view_output: bool = False
    # The kernel reads any strided view of its inputs as fast as a contiguous array.
    view_reader: bool = False
    # The outputs are a function of the inputs alone (no state, no randomness, not an end
    # of the graph), so that a layer of constants may be computed once at load.
    foldable: bool = True
    # Bytes of memory the kernel holds beside its inputs and outputs, at most, for these
    # attributes, input infos and output infos (shapes static); None: nothing to speak of.
    scratch: Scratch | None = None
    # Warnings about a layer that is valid but computes something surprising, from its
    # attributes and input infos: one message each (validate reports them).
    warn: Warn | None = None

    @property
    def label(self) -> str:
        return f"{self.type}-v{self.version}"

    @property
    def variadic(self) -> bool:
        """The op takes any number of inputs from its least (Concat, Einsum)."""
        return self.inputs[1] >= VARIADIC

    def port_types(self, port: int) -> tuple[str, ...] | None:
        """The element types input ``port`` takes (None: any)."""
        declared = self.input_types
        if port < len(declared):
            return declared[port]
        return declared[-1] if declared and self.variadic else None


def _typed(op: OpDef) -> ShapeRule:
    """``op``'s shape rule behind a check of its inputs' element types."""
    rule = op.infer

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        for port, info in enumerate(inputs):
            et, types = info.element_type, op.port_types(port)
            if types is not None and et is not None and et.name not in types:
                raise ShapeError(
                    f"input {port} is {et.name}, which {op.label} does not take "
                    f"(it takes {', '.join(types)})"
                )
        return rule(a, inputs)

    return infer


_REGISTRY: dict[str, list[OpDef]] = {}


def register(op: OpDef) -> OpDef:
    """Add ``op``; its (type, version) and (type, since_opset) must be new."""
    if op.input_types:
        op = dataclasses.replace(op, infer=_typed(op))
    versions = _REGISTRY.setdefault(op.type.lower(), [])
    for other in versions:
        if other.version == op.version or other.since_opset == op.since_opset:
            raise ValueError(f"{op.label} is registered twice")
    versions.append(op)
    versions.sort(key=lambda o: o.since_opset)
    return op


def opset_number(version: str) -> int | None:
    """N for ``opsetN`` spelled exactly as OpenVINO spells it, else None.

    >>> [opset_number(v) for v in ("opset8", "OPSET8", "opset8 ", "opset08")]
    [8, None, None, None]
    """
    m = _OPSET_RE.fullmatch(version)
    return int(m.group(1)) if m else None


def supported_ops() -> list[OpDef]:
    return [op for versions in _REGISTRY.values() for op in versions]


def describe_versions(type_name: str) -> str:
    """``MaxPool-v1 (opset1..7), MaxPool-v8 (opset8..13), MaxPool-v14 (opset14..16)``.

    A version's range ends where OpenVINO's next version of the type begins, or with the
    last opset that holds the type.
    """
    versions = _REGISTRY.get(type_name.lower(), [])
    name = openvino_type(type_name)
    starts = set(OPSETS[name][1]) if name else set()
    parts = []
    for op in versions:
        later = [s for s in starts | {o.since_opset for o in versions} if s > op.since_opset]
        last = min(later) - 1 if later else max(openvino_opsets(type_name), default=LATEST_OPSET)
        parts.append(f"{op.label} (opset{op.since_opset}..{last})")
    return ", ".join(parts)


# OpenVINO's reader builds these from opset2 when a layer says opset1.
_FROM_OPSET2 = {"mvn", "roipooling", "reorgyolo"}
# The IR spells Constant as Const.
_RENAMED = {"const": "constant"}
_OPENVINO = {name.lower(): name for name in OPSETS}


def _parse_ranges(text: str) -> frozenset[int]:
    """``"1,3-16"`` -> {1, 3, 4, ..., 16}."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def openvino_type(type_name: str) -> str | None:
    """The type as OpenVINO's opset tables spell it, or None when no opset has it.

    >>> openvino_type("maxpool"), openvino_type("Const"), openvino_type("MaxPoolX")
    ('MaxPool', 'Constant', None)
    """
    key = type_name.lower()
    return _OPENVINO.get(_RENAMED.get(key, key))


def openvino_opsets(type_name: str) -> frozenset[int]:
    """The opsets of OpenVINO that hold ``type_name`` (empty when none does).

    >>> sorted(openvino_opsets("ShuffleChannels"))[:3], sorted(openvino_opsets("Slice"))[0]
    ([1, 3, 4], 8)
    """
    name = openvino_type(type_name)
    return _parse_ranges(OPSETS[name][0]) if name else frozenset()


def describe_opsets(opsets: frozenset[int]) -> str:
    """``opset1, opset3..16`` for {1, 3, ..., 16}."""
    runs: list[list[int]] = []
    for n in sorted(opsets):
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"opset{a}..{b}" if a != b else f"opset{a}" for a, b in runs)


def close_types(type_name: str) -> list[str]:
    """OpenVINO's op types spelled like ``type_name``, for a "did you mean" hint."""
    import difflib

    found = difflib.get_close_matches(type_name.lower(), list(_OPENVINO), n=3, cutoff=0.75)
    return [_OPENVINO[k] for k in found]


def resolve(type_name: str, version: str) -> OpDef:
    """The op a layer ``type=... version="opsetN"`` denotes.

    >>> resolve("MaxPool", "opset11").label, resolve("avgpool", "opset15").label
    ('MaxPool-v8', 'AvgPool-v14')
    """
    n = opset_number(version)
    if n is None or not 1 <= n <= LATEST_OPSET:
        raise LookupFailure(
            f"unsupported opset '{version}' (expected opset1 to opset{LATEST_OPSET})"
        )
    if n == 1 and type_name.lower() in _FROM_OPSET2:
        n = 2
    versions = _REGISTRY.get(type_name.lower())
    if not versions:
        opsets = openvino_opsets(type_name)
        if opsets:
            raise LookupFailure(
                f"op type '{type_name}' is not supported by irrun (OpenVINO has it in "
                f"{describe_opsets(opsets)}; 'irrun ops' lists the ops irrun runs)"
            )
        hint = close_types(type_name)
        did_you_mean = f"; did you mean {' or '.join(hint)}?" if hint else ""
        raise LookupFailure(
            f"unknown op type '{type_name}' (no opset of OpenVINO has it{did_you_mean})"
        )
    candidates = [op for op in versions if op.since_opset <= n]
    opsets = openvino_opsets(type_name)
    if (opsets and n not in opsets) or (not opsets and not candidates):
        raise LookupFailure(
            f"{version} has no op {type_name} (irrun supports {describe_versions(type_name)})"
        )
    name = openvino_type(type_name)
    if name is not None:
        # The version opsetN holds may be one irrun lacks: an older one would compute
        # something else.
        newest = max(v for v in OPSETS[name][1] if v <= n)
        if not candidates or candidates[-1].since_opset != newest:
            raise LookupFailure(
                f"{version} holds {name}-{newest}, which irrun does not run "
                f"(irrun supports {describe_versions(type_name)})",
                unsupported=True,
            )
    return candidates[-1]


def attrs_namespace(values: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**values)
