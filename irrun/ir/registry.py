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

from .attributes import Attr
from .dims import Shape
from .element_types import ElementType

# The newest opset OpenVINO defines (2026.x); a layer naming a later one is an error.
LATEST_OPSET = 16

# OpenVINO looks opsets up by exact name: no spaces, lower case, no leading zeros.
_OPSET_RE = re.compile(r"opset([1-9][0-9]*)")


@dataclass(frozen=True)
class TensorInfo:
    """What is known about a tensor before running: shape, element type, maybe its value."""

    shape: Shape | None
    element_type: ElementType | None
    value: np.ndarray | None = None  # known when the tensor is a constant


class ShapeError(ValueError):
    """A shape rule rejects its inputs; the message names the values that broke it."""


# A shape rule: (attributes, input infos) -> output infos. Raises ShapeError.
ShapeRule = Callable[[SimpleNamespace, Sequence[TensorInfo]], list[TensorInfo]]
# A kernel: (attributes, input arrays) -> output arrays.  A kernel of an op with
# ``optional_outputs`` also takes ``needed=`` (see OpDef) and may return None for
# an output it was told is not needed.
Kernel = Callable[..., tuple[np.ndarray | None, ...]]
# Checks attribute values that no single attribute parser can (lengths, ranges).
AttrCheck = Callable[[SimpleNamespace], None]


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
    # The element types each input port takes (names; None or absent: any).  A shape
    # rule never sees another: :func:`register` checks them first, for every op alike.
    input_types: tuple[tuple[str, ...] | None, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.type}-v{self.version}"


def _typed(op: OpDef) -> ShapeRule:
    """``op``'s shape rule behind a check of its inputs' element types."""
    rule, accepted = op.infer, op.input_types

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        for port, (info, types) in enumerate(zip(inputs, accepted, strict=False)):
            et = info.element_type
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
    """``MaxPool-v1 (opset1..7), MaxPool-v8 (opset8..13), MaxPool-v14 (opset14..16)``."""
    versions = _REGISTRY.get(type_name.lower(), [])
    parts = []
    for i, op in enumerate(versions):
        last = versions[i + 1].since_opset - 1 if i + 1 < len(versions) else LATEST_OPSET
        parts.append(f"{op.label} (opset{op.since_opset}..{last})")
    return ", ".join(parts)


class LookupFailure(LookupError):
    pass


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
    versions = _REGISTRY.get(type_name.lower())
    if not versions:
        known = ", ".join(sorted({op.type for op in supported_ops()}))
        raise LookupFailure(f"unknown op type '{type_name}' (irrun supports {known})")
    candidates = [op for op in versions if op.since_opset <= n]
    if not candidates:
        raise LookupFailure(
            f"{version} has no op {type_name} (irrun supports {describe_versions(type_name)})"
        )
    return candidates[-1]


def attrs_namespace(values: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**values)
