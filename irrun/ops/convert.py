"""Element type conversion: Convert-v1 and ConvertLike-v1.

Convert-v1 converts to ``destination_type`` as the CPU plugin does (see :func:`convert`).
ConvertLike-v1 converts its first input to the element type of its second (whose values
are not read) exactly as Convert does; ONNX's LpPool, for one, converts to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import largest


def _convert_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, a.destination_type)]


def convert(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Convert as OpenVINO's CPU plugin does.

    Floats become integers by truncation toward zero; NaN, infinities and values
    outside int32 become int32's minimum (x86's "integer indefinite") before being
    wrapped into narrower types.  Integers wrap.  Booleans are ``x != 0`` (NaN is false).

    >>> convert(np.array([2.7, -2.7, 300.0, np.nan], np.float32), np.dtype(np.uint8)).tolist()
    [2, 254, 44, 0]
    """
    if dtype == np.bool_:
        with np.errstate(invalid="ignore"):
            return (x != 0) & ~np.isnan(x) if x.dtype.kind == "f" else x != 0
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore", over="ignore"):
            t = np.trunc(x.astype(np.float64))
            wide = 64 if dtype.itemsize == 8 else 32
            info = np.iinfo(np.int64 if wide == 64 else np.int32)
            bad = ~np.isfinite(t) | (t < info.min) | (t > info.max)
            ints = np.where(bad, info.min, np.where(bad, 0, t)).astype(np.int64)
        return ints.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Floats made integers go through f64 and i64 (a few of each per element); NaN tests
    for booleans take a byte or two; any other conversion is NumPy's, into the output."""
    source, target = inputs[0].element_type, outputs[0].element_type
    elements = largest([*inputs[:1], *outputs])
    if source is None or target is None or (source.dtype.kind in "fV" and
                                            target.dtype.kind in "iu"):  # fmt: skip
        return 32 * elements
    return 2 * elements if target.dtype == np.bool_ else 0


def _convert(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (convert(x, a.destination_type.dtype),)


def _convert_like_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, inputs[1].element_type)]


def _convert_like(a: SimpleNamespace, x: np.ndarray, like: np.ndarray) -> tuple[np.ndarray, ...]:
    return (convert(x, like.dtype),)


register(
    OpDef(
        type="Convert",
        version=1,
        since_opset=1,
        attrs=(Attr("destination_type", "element_type"),),
        infer=_convert_infer,
        kernel=_convert,
        scratch=_scratch,
    )
)
register(
    OpDef(
        type="ConvertLike",
        version=1,
        since_opset=1,
        attrs=(),
        infer=_convert_like_infer,
        kernel=_convert_like,
        inputs=(2, 2),
        scratch=_scratch,
    )
)
