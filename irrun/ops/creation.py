"""Tensors made to a pattern: Range-v0/v4, Eye-v9 and OneHot-v1/v16 (OpenVINO's C++
versions; Range-v0 is opset1's, Range-v4 opset4's).

- **Range** makes ``ceil(|stop - start| / |step|)`` values (0 when the step points away
  from ``stop``), counted in double precision from the inputs' values.  Range-v0 takes
  three scalars of one type, which is the output type; Range-v4 takes any numeric types
  and has ``output_type``: for an integer output type start, stop and step are first
  truncated toward zero (so a step such as 0.7 becomes 0 and the range is empty), and
  the values wrap into the type (``u8`` from -2 is 254).  Value ``i`` is
  ``start + T(i) * step`` computed in the output type ``T`` (f16 and bf16 in f32, rounded
  once), as the reference kernel does.
  The output length is static only when all three inputs are constants; otherwise it is
  known only when the kernel runs.
- **Eye-v9** builds ``batch_shape + [num_rows, num_columns]`` matrices with ones on the
  diagonal ``diagonal_index`` (positive: above the main one).
- **OneHot** puts ``on_value`` where the new axis's position equals the index and
  ``off_value`` elsewhere; the output has ``on_value``'s type.  An index outside
  ``[0, depth)`` gives a row of ``off_value``: OneHot-v1 (and OneHot-v16's default
  ``ignore_negative``) ignores negative indices; OneHot-v16 with ``normalize`` first adds
  ``depth`` to an index in ``[-depth, -1]``.

Tolerance against the CPU plugin: exact, except Range with a float output type, whose
values the plugin computes in another order (one unit in the last place).  Range's
kernel, for inputs that are not constants, checks what the shape rule could not (a step
of 0) and raises at the layer.

Where irrun follows OpenVINO's reference kernels rather than the CPU plugin:

- Range-v4 with non-integer inputs and an integer ``output_type``: the plugin counts and
  computes in floating point and rounds each value to nearest (start 2.9, stop 7.9, step
  1.9 as i64 gives ``[3, 5, 7]``), where the reference kernels and OpenVINO's shape
  inference (and so constant folding) truncate the inputs first (``[2, 3, 4, 5, 6]``).
  Range with f32 values near 1e8: the plugin accumulates the step (1e8 + 1 + 1 ... stays
  1e8), the reference computes each value from its index.
- Range (both versions) where the step points away from ``stop`` (0 to 10 by -1): the
  plugin makes ``|stop - start| / |step|`` values (0, -1, ... -9), the reference none.
- Range-v4 to u8 of negative values: the plugin saturates them to 0, the reference wraps
  them (-3 is 253).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.element_types import (
    ANY,
    ELEMENT_TYPES,
    INDEX_TYPES,
    INTEGERS,
    NUMBERS,
    PACKED_INTEGERS,
    ElementType,
)
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import flat_ints, fmt, int_values, normalize_axis, one_d, scalar_like

# OneHot's indices and depth: OpenVINO takes any integral type (boolean too; nf4's codes
# and strings it counts as integral, but they are no numbers to compare).
ONE_HOT_INDICES = (*INTEGERS, *PACKED_INTEGERS, "boolean")

# --------------------------------------------------------------------------- Range


def _scalar(info: TensorInfo, what: str) -> float | None:
    if info.shape is not None and len(info.shape) != 0:
        raise ShapeError(f"'{what}' must be a scalar, got shape {fmt(info.shape)}")
    if info.value is None:
        return None
    value = float(np.asarray(info.value, np.float64).reshape(-1)[0])
    if not math.isfinite(value):
        raise ShapeError(f"'{what}' is {value}; it must be finite")
    return value


def range_count(start: float, stop: float, step: float, integral: bool) -> int:
    """The length of a Range, computed in double precision as OpenVINO does.

    >>> range_count(0.1, 1.0, 0.1, False), range_count(2.9, 7.9, 1.9, True)
    (9, 5)
    """
    if integral:
        start, stop, step = math.trunc(start), math.trunc(stop), math.trunc(step)
    if step == 0:
        # Only an integer output type's truncation gets here: OpenVINO makes no values.
        return 0
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        return 0
    return math.ceil(abs(float(stop) - float(start)) / abs(float(step)))


def _range_values(start: float, step: float, n: int, et: ElementType) -> np.ndarray:
    dtype = et.dtype
    if dtype.kind == "f" or (dtype.itemsize == 2 and dtype.kind not in "iu"):
        # start + T(i) * step in T, as the reference kernel does; OpenVINO's 16-bit floats
        # compute in f32 and round once.
        wide = np.dtype(np.float32) if dtype.itemsize < 4 else dtype
        first, delta = np.asarray(start, wide), np.asarray(step, wide)
        return (first + np.arange(n, dtype=np.float64).astype(wide) * delta).astype(dtype)
    first, delta = math.trunc(start), math.trunc(step)
    values = first + np.arange(n, dtype=np.int64) * np.int64(delta)
    return values.astype(dtype)  # wraps, as the C++ casts do


def _range_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        start_i, stop_i, step_i = inputs
        if version == 0:
            types = {i.element_type.name for i in inputs if i.element_type is not None}
            if len(types) > 1:
                raise ShapeError(f"start, stop and step must have one element type, got "
                                 f"{', '.join(sorted(types))}")  # fmt: skip
            et = inputs[0].element_type
        else:
            et = a.output_type
        start = _scalar(start_i, "start")
        stop = _scalar(stop_i, "stop")
        step = _scalar(step_i, "step")
        if step == 0 and version == 0:
            raise ShapeError("'step' must not be 0")
        if start is None or stop is None or step is None:
            return [TensorInfo((DYNAMIC,), et)]
        integral = et is not None and et.dtype.kind in "iu"
        return [TensorInfo((range_count(start, stop, step, integral),), et)]

    return infer


def _range(version: int):
    def kernel(a: SimpleNamespace, start, stop, step) -> tuple[np.ndarray, ...]:
        et = a.output_type if version == 4 else ELEMENT_TYPES[_type_name(start)]
        values = [float(np.asarray(v, np.float64).reshape(-1)[0]) for v in (start, stop, step)]
        if not all(math.isfinite(v) for v in values):
            raise ShapeError(f"start, stop and step must be finite, got {values}")
        if values[2] == 0 and version == 0:
            raise ShapeError("'step' must not be 0")
        integral = et.dtype.kind in "iu"
        if integral:
            values = [math.trunc(v) for v in values]
        n = range_count(*values, integral)
        return (_range_values(values[0], values[2], n, et),)

    return kernel


def _type_name(x: np.ndarray) -> str:
    for name, et in ELEMENT_TYPES.items():
        if et.dtype == x.dtype and et.bits == 8 * et.dtype.itemsize:
            return name
    raise ShapeError(f"Range does not take {x.dtype}")


def _check_range4(a: SimpleNamespace) -> None:
    if a.output_type.name not in NUMBERS:
        raise KernelError(f"output_type must be a numeric type ({', '.join(NUMBERS)}), "
                         f"got {a.output_type.name}")  # fmt: skip


# --------------------------------------------------------------------------- Eye


def _eye_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    dims: list[Dim] = []
    for info, what in zip(inputs[:2], ("num_rows", "num_columns"), strict=True):
        v = scalar_like(info, what)
        if v is not None and v < 0:
            raise ShapeError(f"{what} must not be negative, got {v}")
        dims.append(DYNAMIC if v is None else v)
    scalar_like(inputs[2], "diagonal_index")
    batch: tuple[Dim, ...] | None = ()
    if len(inputs) == 4:
        info = inputs[3]
        one_d(info, "batch_shape")
        values = int_values(info)
        if values is not None:
            if any(v < 0 for v in values):
                raise ShapeError(f"batch_shape {values} must not be negative")
            batch = tuple(values)
        elif info.shape is not None and isinstance(info.shape[0], int):
            batch = (DYNAMIC,) * info.shape[0]
        else:
            batch = None
    shape = None if batch is None else (*batch, *dims)
    return [TensorInfo(shape, a.output_type)]


def _eye(a: SimpleNamespace, rows, cols, diagonal, batch=None) -> tuple[np.ndarray, ...]:
    r, c, k = (int(np.asarray(v).reshape(-1)[0]) for v in (rows, cols, diagonal))
    if r < 0 or c < 0:
        raise KernelError(f"num_rows {r} and num_columns {c} must not be negative")
    out = np.eye(r, c, k, dtype=a.output_type.dtype)
    if batch is not None:
        shape = tuple(int(v) for v in batch.reshape(-1))
        out = np.ascontiguousarray(np.broadcast_to(out, shape + out.shape))
    return (out,)


# --------------------------------------------------------------------------- OneHot


def _one_hot_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    idx, depth_i, on_i, off_i = inputs
    for info, what in ((depth_i, "depth"), (on_i, "on_value"), (off_i, "off_value")):
        if info.shape is not None and len(info.shape) != 0:
            raise ShapeError(f"{what} must be a scalar, got shape {fmt(info.shape)}")
    if on_i.element_type is not None and off_i.element_type is not None and \
            on_i.element_type.name != off_i.element_type.name:  # fmt: skip
        raise ShapeError(f"on_value ({on_i.element_type.name}) and off_value "
                         f"({off_i.element_type.name}) must have one type")  # fmt: skip
    depth = int_values(depth_i)
    if depth is not None and depth[0] < 0:
        raise ShapeError(f"depth must not be negative, got {depth[0]}")
    et = on_i.element_type
    if idx.shape is None:
        return [TensorInfo(None, et)]
    axis = normalize_axis(a.axis, len(idx.shape) + 1)
    d: Dim = DYNAMIC if depth is None else depth[0]
    out = (*idx.shape[:axis], d, *idx.shape[axis:])
    return [TensorInfo(out, et)]


def _one_hot(a: SimpleNamespace, idx, depth, on, off) -> tuple[np.ndarray, ...]:
    n = flat_ints(depth)[0]
    if n < 0:
        raise ShapeError(f"depth must not be negative, got {n}")
    axis = normalize_axis(a.axis, idx.ndim + 1)
    i = idx.astype(np.int64)
    if getattr(a, "negative_indices_mode", "ignore_negative") == "normalize":
        i = np.where((i < 0) & (i >= -n), i + n, i)
    hot = i[..., None] == np.arange(n, dtype=np.int64)  # out-of-range indices match nothing
    out = np.where(hot, on.reshape(()), off.reshape(())).astype(on.dtype)
    return (np.ascontiguousarray(np.moveaxis(out, -1, axis)),)


# --------------------------------------------------------------------------- registration

register(OpDef(type="Range", version=0, since_opset=1, attrs=(), infer=_range_infer(0),
               kernel=_range(0), inputs=(3, 3),
               input_types=(NUMBERS, NUMBERS, NUMBERS),
               scratch=per_element(16)))  # fmt: skip
register(OpDef(type="Range", version=4, since_opset=4,
               attrs=(Attr("output_type", "element_type"),),
               infer=_range_infer(4), kernel=_range(4), inputs=(3, 3), check=_check_range4,
               input_types=(NUMBERS, NUMBERS, NUMBERS), shape_attrs=("output_type",),
               scratch=per_element(16)))  # fmt: skip
register(
    OpDef(type="Eye", version=9, since_opset=9,
          attrs=(Attr("output_type", "element_type"),), infer=_eye_infer, kernel=_eye,
          inputs=(3, 4), input_types=(INDEX_TYPES,) * 4,
          scratch=nothing)
)  # fmt: skip
# OpenVINO leaves an absent OneHot axis uninitialised: irrun requires it.
register(OpDef(type="OneHot", version=1, since_opset=1, attrs=(Attr("axis", "int"),),
               infer=_one_hot_infer, kernel=_one_hot, inputs=(4, 4),
               input_types=(ONE_HOT_INDICES, ONE_HOT_INDICES, ANY, ANY), shape_attrs=("axis",),
               scratch=per_element(8)))  # fmt: skip
# OpenVINO leaves an absent OneHot axis uninitialised: irrun requires it.
register(OpDef(type="OneHot", version=16, since_opset=16,
               attrs=(Attr("axis", "int"),
                      Attr("negative_indices_mode", "enum", "ignore_negative",
                           ("ignore_negative", "normalize"))),
               infer=_one_hot_infer, kernel=_one_hot, inputs=(4, 4),
               input_types=(ONE_HOT_INDICES, ONE_HOT_INDICES, ANY, ANY), shape_attrs=("axis",),
               scratch=per_element(8)))  # fmt: skip
