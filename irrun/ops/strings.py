"""String tensors packed and unpacked: StringTensorPack-15, StringTensorUnpack-15.

A string tensor is an object array of Python ``str`` (irrun/ir/element_types.py says
why; OpenVINO's strings are bytes, held as UTF-8 decoded with ``surrogateescape``).

StringTensorUnpack takes a string tensor of any shape and gives three tensors: ``begins``
and ``ends``, i32 of the input's shape, and ``symbols``, 1-D u8: the bytes of every
element one after the other in row-major order, element i being
``symbols[begins[i]:ends[i]]`` (so ``begins`` starts at 0 and each ``ends`` is the next
``begins``).  The length of ``symbols`` is known before running only for a constant
input.

StringTensorPack goes back: ``begins`` and ``ends`` (one type, i32 or i64, of compatible
shapes) and 1-D u8 ``symbols`` give the string tensor of their shape whose element i is
``symbols[begins[i]:ends[i]]``; the ranges may overlap, be empty and leave bytes out.
OpenVINO's shape inference, wherever it sees their values (constants; at run time in its
CPU plugin where the shapes are dynamic), requires ``begins`` and ``ends`` each in
ascending (non-decreasing) row-major order, from at least 0 up to at most the length of
``symbols``: irrun checks the same, in the shape rule for constants and in the kernel
(KernelError) always.  Where the plugin's shapes are static it checks nothing: it packs
descending ranges, reads outside ``symbols`` for a negative index or one past its end,
and gave wrong strings (['', ''] for ['0', '']) for descending ranges that came through
a Gather; irrun refuses all of those.  It also refuses a begin above its end, which
OpenVINO does not check (its plugin fails in ``std::string``).

Both agree with OpenVINO's CPU plugin (``ov.Model.evaluate`` runs neither), but for
string tensors with no element (a dim of 0), on which the plugin dies of a floating point
exception: irrun gives the empty outputs the shapes say.  Making a
string is a step per element (a bytes slice decoded, a str encoded); the offsets and the
checks are whole-tensor NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.dims import DYNAMIC, format_shape
from ..ir.element_types import ELEMENT_TYPES, INDEX_TYPES, STRING, encode_string
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import largest
from ._shapes import try_merge_dims


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Python's str and bytes objects, one per element (some 50 bytes of header each),
    with int64 offsets: measured well under 160 bytes per element of the largest tensor."""
    return 160 * largest([*inputs, *outputs])


def _pack_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    begins, ends, symbols = inputs
    bt, et = begins.element_type, ends.element_type
    if bt is not None and et is not None and bt != et:
        raise ShapeError(f"begins and ends must have one element type, got {bt} and {et}")
    if symbols.shape is not None and len(symbols.shape) != 1:
        raise ShapeError(f"symbols must be 1-D, got shape {format_shape(symbols.shape)}")
    shape = begins.shape
    if shape is None:
        shape = ends.shape
    elif ends.shape is not None:
        if len(ends.shape) != len(shape):
            raise ShapeError(f"begins {format_shape(shape)} and ends "
                             f"{format_shape(ends.shape)} differ in shape")  # fmt: skip
        merged = [try_merge_dims(x, y) for x, y in zip(shape, ends.shape, strict=True)]
        if any(d is None for d in merged):
            raise ShapeError(f"begins {format_shape(shape)} and ends "
                             f"{format_shape(ends.shape)} differ in shape")  # fmt: skip
        shape = tuple(merged)  # type: ignore[arg-type]
    size = symbols.shape[0] if symbols.shape is not None and isinstance(symbols.shape[0], int) \
        else None  # fmt: skip
    for info, what in ((begins, "begins"), (ends, "ends")):
        if info.value is not None:
            _check_order(np.asarray(info.value), what, size, ShapeError)
    return [TensorInfo(shape, ELEMENT_TYPES["string"])]


def _check_order(index: np.ndarray, what: str, size: int | None, error: type) -> None:
    """OpenVINO's checks of ``begins`` or ``ends``: ascending, from 0 up to ``size``."""
    flat = index.astype(np.int64).reshape(-1)
    if not flat.size:
        return
    if flat[0] < 0:
        raise error(f"{what} must not be negative, got {flat[0]}")
    if size is not None and flat[-1] > size:
        raise error(f"{what} must be at most the {size} symbols, got {flat[-1]}")
    down = np.flatnonzero(flat[1:] < flat[:-1])
    if down.size:
        i = int(down[0])
        raise error(f"{what} must be in ascending order (as OpenVINO requires), got "
                    f"{flat[i]} then {flat[i + 1]} at {i}, {i + 1}")  # fmt: skip


def _pack(a: SimpleNamespace, begins: np.ndarray, ends: np.ndarray,
          symbols: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    _pack_infer(a, [TensorInfo(x.shape, None) for x in (begins, ends, symbols)])
    if begins.shape != ends.shape:
        raise KernelError(f"begins {format_shape(begins.shape)} and ends "
                          f"{format_shape(ends.shape)} differ in shape")  # fmt: skip
    _check_order(begins, "begins", symbols.size, KernelError)
    _check_order(ends, "ends", symbols.size, KernelError)
    lo, hi = begins.astype(np.int64).reshape(-1), ends.astype(np.int64).reshape(-1)
    bad = hi < lo
    if bad.any():
        i = int(np.argmax(bad))
        raise KernelError(f"string {i} begins at {lo[i]}, after its end {hi[i]}")
    data = symbols.tobytes()
    out = np.empty(lo.size, STRING)
    for i, (b, e) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        out[i] = data[b:e].decode("utf-8", "surrogateescape")
    return (out.reshape(begins.shape),)


def _unpack_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (data,) = inputs
    shape = data.shape
    length = DYNAMIC
    if data.value is not None:
        length = sum(len(encode_string(s)) for s in np.asarray(data.value).reshape(-1).tolist())
    i32 = ELEMENT_TYPES["i32"]
    return [TensorInfo(shape, i32), TensorInfo(shape, i32),
            TensorInfo((length,), ELEMENT_TYPES["u8"])]  # fmt: skip


def _unpack(a: SimpleNamespace, data: np.ndarray) -> tuple[np.ndarray, ...]:
    encoded = [encode_string(s) for s in data.reshape(-1).tolist()]
    lengths = np.fromiter((len(b) for b in encoded), np.int64, len(encoded))
    ends = np.cumsum(lengths)
    if ends.size and ends[-1] > np.iinfo(np.int32).max:
        raise KernelError(f"the strings' {ends[-1]} bytes are past i32's offsets")
    symbols = np.frombuffer(b"".join(encoded), np.uint8).copy()
    begins = ends - lengths
    return (begins.astype(np.int32).reshape(data.shape), ends.astype(np.int32).reshape(data.shape),
            symbols)  # fmt: skip


register(
    OpDef(type="StringTensorPack", version=15, since_opset=15, attrs=(), infer=_pack_infer,
          kernel=_pack, inputs=(3, 3), input_types=(INDEX_TYPES, INDEX_TYPES, ("u8",)),
          scratch=_scratch)
)  # fmt: skip
register(
    OpDef(type="StringTensorUnpack", version=15, since_opset=15, attrs=(), infer=_unpack_infer,
          kernel=_unpack, input_types=(("string",),), scratch=_scratch)
)  # fmt: skip
