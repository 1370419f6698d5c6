"""Shape and type helpers that several op families share: merging dims, auto-broadcasting,
and reading and checking shape-like inputs (axes, target shapes, indices).

:func:`broadcast_shapes` is the one implementation of OpenVINO's ``auto_broadcast``
rules, for shape rules on partial shapes and for kernels on concrete ones:

* ``numpy``: right-aligned, a dim of 1 stretches (NumPy's own rule);
* ``pdpd``: the second input, of no higher rank, is laid over the first from axis 0,
  and its dims must be 1 or the first's (only the second input stretches);
* ``none`` (also spelled ``explicit``): equal shapes.

The last section serves the shape rules and kernels of ops with shape-like inputs: the
element types those inputs may have (``INTEGERS``, ``INDEX_TYPES``...), their known values
(``int_values``, ``scalar_like``), their checks (``check_vector``, ``one_d``,
``normalize_axis``, ``normalized_indices``) and arithmetic on dims (``add_dims``,
``affine_dim``, ``dim_within``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval, Shape, format_shape
from ..ir.element_types import ElementType
from ..ir.registry import ShapeError, TensorInfo

# "explicit" is OpenVINO's other spelling of "none".
AUTO_BROADCASTS = ("none", "explicit", "numpy", "pdpd")
BROADCAST_ATTR = Attr("auto_broadcast", "enum", "numpy", AUTO_BROADCASTS)


def _bounds(d: Dim) -> tuple[int, int | None]:
    return (d, d) if isinstance(d, int) else (d.lo, d.hi)


def _dim(lo: int, hi: int | None) -> Dim:
    return lo if lo == hi else Interval(lo, hi)


def _has_one(d: Dim) -> bool:
    lo, hi = _bounds(d)
    return lo <= 1 and (hi is None or hi >= 1)


def try_merge_dims(a: Dim, b: Dim) -> Dim | None:
    """The sizes both dims allow (their intersection), or None if there is none.

    >>> try_merge_dims(Interval(2, 6), Interval(4, 10)), try_merge_dims(3, Interval(4, 8))
    (Interval(lo=4, hi=6), None)
    """
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    lo = max(alo, blo)
    hi = bhi if ahi is None else ahi if bhi is None else min(ahi, bhi)
    if hi is not None and hi < lo:
        return None
    return _dim(lo, hi)


def merge_dims(a: Dim, b: Dim, what: str) -> Dim:
    """The dim two equal-by-contract dims are (the tighter of the two); ShapeError
    naming ``what`` if they cannot be equal.

    >>> merge_dims(Interval(2, 6), 4, "rows")
    4
    >>> merge_dims(3, 4, "rows")
    Traceback (most recent call last):
    irrun.errors.ShapeError: rows: 3 != 4
    """
    merged = try_merge_dims(a, b)
    if merged is not None:
        return merged
    if isinstance(a, int) and isinstance(b, int):
        raise ShapeError(f"{what}: {a} != {b}")
    if isinstance(a, int) or isinstance(b, int):
        n, other = (a, b) if isinstance(a, int) else (b, a)
        raise ShapeError(f"{what}: {n} does not fit {other}")
    raise ShapeError(f"{what}: {a} and {b} do not overlap")


def broadcast_dims(a: Dim, b: Dim) -> Dim | None:
    """Numpy broadcasting of two dims as OpenVINO infers it, or None if they clash.

    A dim that may be 1 yields the other; if both may be 1 the result spans both.

    >>> broadcast_dims(1, Interval(0, None)), broadcast_dims(Interval(1, 5), Interval(10, 15))
    (Interval(lo=0, hi=None), Interval(lo=10, hi=15))
    >>> broadcast_dims(Interval(0, 6), Interval(0, 4)), broadcast_dims(3, Interval(2, 8))
    (Interval(lo=0, hi=6), 3)
    """
    a_one, b_one = _has_one(a), _has_one(b)
    if a_one and b_one:
        (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
        return _dim(min(alo, blo), None if ahi is None or bhi is None else max(ahi, bhi))
    if a_one:
        return b
    if b_one:
        return a
    return try_merge_dims(a, b)


def _clash(a: Shape | None, b: Shape | None, mode: str, why: str = "") -> ShapeError:
    detail = f": {why}" if why else ""
    return ShapeError(
        f"shapes {format_shape(a)} and {format_shape(b)} do not broadcast "
        f"(auto_broadcast={mode}){detail}"
    )


def broadcast_shapes(
    a: Shape | None, b: Shape | None, mode: str = "numpy", axis: int = 0
) -> Shape | None:
    """The result shape of an element-wise op on ``a`` and ``b``; raises ShapeError.

    Works on partial shapes (ints and :class:`Interval`; ``None`` is an unknown
    rank) and on concrete ones alike.  ``mode`` is an ``auto_broadcast`` value;
    ``axis`` is where PDPD lays ``b`` over ``a`` (-1: right-aligned).  OpenVINO's
    IR always means axis 0 for ``pdpd``.

    >>> broadcast_shapes((2, 3, 4), (3, 1)), broadcast_shapes((2, 3, 4), (2,), "pdpd")
    ((2, 3, 4), (2, 3, 4))
    >>> broadcast_shapes(None, (3,), "none"), broadcast_shapes(None, (3,))
    ((3,), None)
    """
    if mode in ("none", "explicit"):
        if a is None or b is None:
            return b if a is None else a
        if len(a) != len(b):
            raise _clash(a, b, mode, "ranks differ")
        out = tuple(try_merge_dims(x, y) for x, y in zip(a, b, strict=True))
        if any(d is None for d in out):
            raise _clash(a, b, mode, "dims differ")
        return out  # type: ignore[return-value]
    if a is None or b is None:
        return None
    if mode == "numpy":
        rank = max(len(a), len(b))
        pa = (1,) * (rank - len(a)) + tuple(a)
        pb = (1,) * (rank - len(b)) + tuple(b)
        out = tuple(broadcast_dims(x, y) for x, y in zip(pa, pb, strict=True))
        if any(d is None for d in out):
            raise _clash(a, b, mode)
        return out  # type: ignore[return-value]
    if mode != "pdpd":
        raise KernelError(f"auto_broadcast '{mode}' is not one of {', '.join(AUTO_BROADCASTS)}")
    if len(b) > len(a) or axis < -1:
        raise _clash(a, b, mode, "the second input has the higher rank")
    start = len(a) - len(b) if axis == -1 else axis
    if start + len(b) > len(a):
        raise _clash(a, b, mode, f"the second input does not fit from axis {start}")
    out_list = list(a)
    for i, db in enumerate(b):
        da = a[start + i]
        # PDPD only stretches the second input, never the first.
        if isinstance(da, int) and isinstance(db, int) and db > da:
            raise _clash(a, b, mode, f"dim {db} is larger than {da}")
        merged = broadcast_dims(da, db)
        if merged is None:
            raise _clash(a, b, mode)
        out_list[start + i] = merged
    return tuple(out_list)


def broadcast_operands(
    x: np.ndarray, y: np.ndarray, mode: str, axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` shaped so that NumPy's broadcasting gives ``mode``'s result;
    KernelError naming the shapes where they do not broadcast by ``mode``."""
    try:
        broadcast_shapes(x.shape, y.shape, mode, axis)
    except ShapeError as e:
        raise KernelError(str(e)) from None
    if mode == "pdpd":
        start = x.ndim - y.ndim if axis == -1 else axis
        y = y.reshape((1,) * start + y.shape + (1,) * (x.ndim - start - y.ndim))
    return x, y


def same_element_type(inputs: Sequence[TensorInfo]) -> ElementType | None:
    """The inputs' common element type (None if none is known); ShapeError if they differ."""
    types = {i.element_type.name for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"inputs have different element types: {', '.join(sorted(types))}")
    return next((i.element_type for i in inputs if i.element_type is not None), None)


def infer_unary(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    """The shape rule of an op whose output is its first input's shape and type."""
    return [TensorInfo(inputs[0].shape, inputs[0].element_type)]


# --------------------------------------------------------------------------- shape-like inputs

# Element types of shape-like and index inputs (irrun.ir.element_types' sets, imported here
# by the ops that read such inputs).
INTEGERS = element_types.INTEGERS
NUMBERS = element_types.NUMBERS
INDEX_TYPES = element_types.INDEX_TYPES
# Every integer type, the packed ones too: what OpenVINO's ``is_integral_number`` takes
# (it also lets nf4 and string through, which hold no integers).
ALL_INTEGERS = (*element_types.INTEGERS, *element_types.PACKED_INTEGERS)


def zeros(shape, dtype: np.dtype) -> np.ndarray:
    """What OpenVINO fills padding and out-of-range picks with: elements of all bits
    zero (f8e8m0's 2**-127, nf4's code 0, not a cast of 0), ``""`` for strings.

    >>> zeros((2,), np.dtype(object)).tolist()
    ['', '']
    """
    if dtype == element_types.STRING:
        return np.full(shape, "", element_types.STRING)
    return np.zeros(shape, dtype)


def int_values(info: TensorInfo) -> list[int] | None:
    """The known value of a shape-like input as a flat list of ints, else None."""
    if info.value is None:
        return None
    return [int(v) for v in np.asarray(info.value).reshape(-1)]


def flat_ints(array: np.ndarray) -> list[int]:
    flat = np.asarray(array).reshape(-1)
    if flat.dtype.kind in "iu":  # Python ints at once, without a NumPy scalar each
        return flat.tolist()
    return [int(v) for v in flat]


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ShapeError(
            f"{what} {axis} is out of range for rank {rank} (allowed {-rank}..{rank - 1})"
        )
    return axis % rank


def check_vector(info: TensorInfo, what: str, allow_scalar: bool = True,
                 integers: bool = True) -> None:  # fmt: skip
    """Shape-like inputs are 1-D (or scalars where OpenVINO accepts them), of integers
    (but for ``integers=False``: Interpolate's scales).  An op that declares its ports'
    ``input_types`` checks the shape alone, with :func:`vector_rank`."""
    et = info.element_type
    if integers and et is not None and (et.dtype.kind not in "iu" or et.name == "boolean"):
        # A float tensor there would be read as whatever its values truncate to at run time.
        raise ShapeError(f"{what} must be integers, got {et.name}")
    vector_rank(info, what, allow_scalar)


def vector_rank(info: TensorInfo, what: str, allow_scalar: bool = True) -> None:
    """A shape-like input is 1-D (or a scalar where OpenVINO accepts one)."""
    if info.shape is None:
        return
    ranks = (0, 1) if allow_scalar else (1,)
    if len(info.shape) not in ranks:
        raise ShapeError(f"{what} must be {'0-D or ' if allow_scalar else ''}1-D, "
                         f"got shape {list(info.shape)}")  # fmt: skip


def vector_length(info: TensorInfo) -> int | None:
    """How many values a 0-D or 1-D input holds, if its shape says so."""
    if info.shape is None:
        return None
    if len(info.shape) == 0:
        return 1
    n = info.shape[0]
    return n if isinstance(n, int) else None


def add_dims(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    lo_a, hi_a = (a, a) if isinstance(a, int) else (a.lo, a.hi)
    lo_b, hi_b = (b, b) if isinstance(b, int) else (b.lo, b.hi)
    hi = None if hi_a is None or hi_b is None else hi_a + hi_b
    return Interval(lo_a + lo_b, hi)


def may_be_one(d: Dim) -> bool:
    return d == 1 if isinstance(d, int) else d.contains(1)


def fmt(shape: Sequence[Dim]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def one_d(info: TensorInfo, what: str) -> None:
    if info.shape is not None and len(info.shape) != 1:
        raise ShapeError(f"{what} must be 1-D, got shape {format_shape(info.shape)}")


def scalar_like(info: TensorInfo, what: str) -> int | None:
    """The known value of an input that is 0-D or holds one value, else None."""
    if info.shape is not None and (len(info.shape) > 1 or (
            len(info.shape) == 1 and info.shape[0] != 1)):  # fmt: skip
        raise ShapeError(f"{what} must be 0-D or hold one value, got shape "
                         f"{format_shape(info.shape)}")  # fmt: skip
    values = int_values(info)
    return None if values is None else values[0]


def shapes_of(*arrays: np.ndarray, axis: np.ndarray | None = None) -> list[TensorInfo]:
    """The inputs of a kernel as its shape rule sees them, to check them by the same rule."""
    infos = [TensorInfo(x.shape, None) for x in arrays]
    return infos if axis is None else [*infos, TensorInfo(axis.shape, None, axis)]


def normalized_indices(
    indices: np.ndarray, size: int | np.ndarray, what: str, negative: bool = True
) -> np.ndarray:
    """``indices`` as int64 with negative ones counted from the end, all checked to be
    in range (``size`` may vary per last-dim position, as GatherND's tuples need)."""
    idx = indices.astype(np.int64)
    size = np.asarray(size, np.int64)
    if negative:
        idx = np.where(idx < 0, idx + size, idx)
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        pos = np.unravel_index(int(np.flatnonzero(bad.reshape(-1))[0]), bad.shape)
        value = int(indices[pos])
        limit = int(np.broadcast_to(size, bad.shape)[pos])
        allowed = f"{-limit}..{limit - 1}" if negative else f"0..{limit - 1}"
        raise KernelError(
            f"{what} {value} at {list(map(int, pos))} is out of range for a dim of size "
            f"{limit} (allowed {allowed})"
        )
    return idx


def element_count(dims: Sequence[int]) -> int:
    return int(np.prod(dims, dtype=np.int64))


def upper_bound(d: Dim) -> int | None:
    return d if isinstance(d, int) else d.hi


def dim_within(lo: int, hi: int | None) -> Dim:
    """The dim ``lo..hi``, where an upper bound at or past 2**62 is taken for none (an
    interval with no upper bound is searched up to the largest dim, 2**63 - 1)."""
    if hi is not None and hi >= 1 << 62:
        hi = None
    return lo if lo == hi else Interval(lo, hi)


def bounded_dim(lo: int, hi: int | None) -> Dim:
    """The dim ``lo..hi`` (``hi`` None: no upper bound), an int where the bounds meet."""
    return lo if lo == hi else Interval(lo, hi)


def affine_dim(d: Dim, mul: int, add: int) -> Dim:
    """``d * mul + add``, bound by bound for an interval (a lower bound below 0 is 0)."""
    if isinstance(d, int):
        return d * mul + add
    return bounded_dim(max(d.lo * mul + add, 0), None if d.hi is None else d.hi * mul + add)
