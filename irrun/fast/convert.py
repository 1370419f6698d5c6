"""Convert between NumPy's own number types where the reference's rule is ``astype``.

The reference (:func:`irrun.ops.convert.convert`) sorts a conversion by its source and
target types: packed integers, nf4, ml_dtypes' floats, the small floats, booleans and
floats made integers each have a rule of their own; what is left (an integer or a
boolean to a float or an integer, a float to a float) is ``x.astype(dtype)``, the same
type a copy.  Those take the fast way: the reference's call without its sorting (a
position id or an attention mask made float, some microseconds a call in a decode step),
bit for bit.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ir.registry import supported_ops
from .registry import FastKernel, register_fast

# NumPy's own types whose element type names are irrun's plain ones (not i4, u4...).
_PLAIN = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16,
                                 np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                 np.uint64)}  # fmt: skip
_PLAIN_NAMES = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}


def _convert(a: SimpleNamespace, x: np.ndarray):
    et = a.destination_type
    dtype = et.dtype
    if et.name not in _PLAIN_NAMES or not (x.dtype in _PLAIN or x.dtype == np.bool_):
        return NotImplemented
    if x.dtype.kind == "f" and dtype.kind != "f":
        return NotImplemented  # truncation with x86's rule for what does not fit
    return (x.astype(dtype),)  # (a copy when the types agree)


for _op in supported_ops():
    if _op.type == "Convert":
        register_fast(FastKernel("Convert", (_op.version,), "NumPy's number types where the "
                                 "reference's rule is astype: that call", _convert))  # fmt: skip
