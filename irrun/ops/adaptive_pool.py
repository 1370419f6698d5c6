"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8.

Output ``o`` of an axis of size ``H`` pooled to ``O`` covers
``[floor(o*H/O), ceil((o+1)*H/O))``; windows may overlap and differ in length.
The average sums in f32 (f64 for f64) in row-major order from +0.0 and divides once
by the window's size.  The maximum starts from the window's first element (so a
leading NaN is returned) and is replaced only by a strictly greater one (NaN after the
first never wins; of equal elements, zeros of either sign too, the first does); its
index is flat within the (n, c) plane.  An integer average to an all-ones output is
the plugin's ReduceMean (see :func:`_integer_mean`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.element_types import INDEX_TYPES, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .avg_pool import accumulator_dtype, sequential_sums, to_input_type
from .window import POOL_TYPES, computed, computed_type, restored, spread, window_elements


def window_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of each adaptive window on one axis.

    >>> [b.tolist() for b in window_bounds(7, 3)]
    [[0, 2, 4], [3, 5, 7]]
    """
    o = np.arange(out, dtype=np.int64)
    return (o * size) // out, -((-(o + 1) * size) // out)


def output_sizes(value: np.ndarray, rank: int) -> tuple[int, ...]:
    sizes = tuple(int(v) for v in np.asarray(value).reshape(-1))
    if len(sizes) != rank - 2:
        raise ShapeError(
            f"output_shape has {len(sizes)} values {list(sizes)} but the input has "
            f"{rank - 2} spatial dims"
        )
    if any(s <= 0 for s in sizes):
        raise ShapeError(f"output_shape values must be positive, got {list(sizes)}")
    return sizes


def _infer(with_indices: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        x, target = inputs
        if target.shape is not None and len(target.shape) != 1:
            raise ShapeError(f"output_shape must be 1-D, got rank {len(target.shape)}")
        out: tuple[Dim, ...] | None = None  # OpenVINO keeps an unknown rank unknown
        if x.shape is not None:
            if len(x.shape) not in (3, 4, 5):
                raise ShapeError(f"expected a 3D, 4D or 5D input, got rank {len(x.shape)}")
            if target.shape is not None and target.shape[0] != len(x.shape) - 2:
                raise ShapeError(
                    f"output_shape has {target.shape[0]} values but the input has "
                    f"{len(x.shape) - 2} spatial dims"
                )
            if target.value is not None:
                spatial: tuple[Dim, ...] = output_sizes(target.value, len(x.shape))
                boolean = x.element_type is not None and x.element_type.name == "boolean"
                if boolean and not with_indices and all(s == 1 for s in spatial):
                    # The plugin makes it a ReduceMean (see _integer_mean), which
                    # refuses booleans: the model does not compile.
                    raise ShapeError(
                        "a boolean average to an all-ones output_shape is a ReduceMean in "
                        "OpenVINO's CPU plugin, which takes numbers only"
                    )
            else:
                spatial = (DYNAMIC,) * (len(x.shape) - 2)
            out = (*x.shape[:2], *spatial)
        infos = [TensorInfo(out, x.element_type)]
        if with_indices:
            infos.append(TensorInfo(out, a.index_element_type))
        return infos

    return infer


def adaptive_windows(sizes: Sequence[int], outs: Sequence[int]) -> list:
    """Per axis, each output's window as ``(first, count, step)`` (see
    :func:`.window.window_elements`)."""
    bounds = [window_bounds(size, out) for size, out in zip(sizes, outs, strict=True)]
    return [(start, end - start, 1) for start, end in bounds]


def adaptive_avg_pool(x: np.ndarray, out_sizes: Sequence[int]) -> np.ndarray:
    """Average over adaptive windows, summed in row-major order and divided once.

    >>> adaptive_avg_pool(np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8), (3,)).tolist()
    [[[2.0, 4.5, 7.0]]]
    """
    if x.dtype.kind in "iu" and all(o == 1 for o in out_sizes) and x.size:
        return _integer_mean(x)
    acc = accumulator_dtype(x.dtype)
    windows = adaptive_windows(x.shape[2:], out_sizes)
    taps, _, inverse = window_elements(x, windows, 0, dtype=acc)
    counts = np.ones((), acc)
    for i, (_, count, _) in enumerate(windows):  # each window's size, over the outputs
        counts = np.multiply.outer(counts, count.astype(acc)) if i else count.astype(acc)
    means = spread(sequential_sums(taps), inverse) / counts
    return to_input_type(means, x.dtype).reshape(x.shape[:2] + tuple(out_sizes))


def _integer_mean(x: np.ndarray) -> np.ndarray:
    """The integer average of whole planes, as OpenVINO's CPU plugin computes it.

    With a constant all-ones ``output_shape`` the plugin's AdaptivePoolToReduce pass
    makes the pool a ReduceMean, whose integer kernel differs from the pooling one
    (which rounds an f32 mean half to even): it adds the plane in f32, stores that
    sum in the data type (saturating 8-bit types; i32 gets x86's conversion, whose
    out-of-range result is the minimum), divides it by the count in f32, and
    truncates toward zero.  So u8 [200, 200] averages to 255 / 2 = 127 and i32
    [-1, -2] to -1.  Swept against the plugin (AVX2) for every integer type (16-bit
    and unsigned 32/64-bit run as i32, see :func:`..window.computed`) and every
    output size from 1 to the input's, in 1-D, 2-D and 3-D; only all-ones sizes go
    this way.  Not matched: i8 planes of 2-D and 3-D inputs whose partial sums leave
    i8's range, where the plugin's JIT kernel adds in an order (and with
    intermediate stores) that depends on its vector code; OpenVINO's reference has
    no i8 ReduceMean to settle it.  A non-constant ``output_shape`` keeps the
    pooling kernel in the plugin; irrun cannot tell and takes the constant, usual
    in IR files.  irrun's i64 keeps its range (the plugin runs it as i32).
    """
    planes = x.shape[0] * x.shape[1]
    sums = sequential_sums(x.reshape(planes, -1).astype(np.float32))
    info = np.iinfo(x.dtype)
    if x.dtype.itemsize == 1:
        stored = np.clip(sums, info.min, info.max)
    else:  # out of range (f32's 2**31 included): the type's minimum
        wide = sums.astype(np.float64)  # compared exactly, not in f32
        stored = np.where((wide >= info.min) & (wide <= info.max), sums, info.min)
    count = np.float32(x.size // planes)
    mean = np.trunc(stored.astype(np.float32) / count)
    mean = np.where(mean.astype(np.float64) <= info.max, mean, info.min)  # 2**31 / 1 too
    return mean.astype(x.dtype).reshape(x.shape[:2] + (1,) * (x.ndim - 2))


def adaptive_max_pool(x: np.ndarray, out_sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The first strict maximum of each adaptive window and its index in the plane (int64).

    >>> v, i = adaptive_max_pool(np.array([[[1, 3, 3, 2, np.nan, 0]]], np.float32), (2,))
    >>> v.tolist(), i.tolist()
    ([[[3.0, 2.0]]], [[[1, 3]]])
    """
    floats = x.dtype.kind == "f"
    fill = -np.inf if floats else np.iinfo(x.dtype).min  # never above a window's first
    windows = adaptive_windows(x.shape[2:], out_sizes)
    taps, positions, inverse = window_elements(x, windows, fill)
    # The first tap of the greatest value wins (argmax takes the first); NaN ranks lowest,
    # but a leading NaN is where the running maximum starts, and nothing is greater.
    ranked = np.where(np.isnan(taps), -np.inf, taps) if floats else taps
    first = np.argmax(ranked, axis=-1)
    if floats:
        first = np.where(np.isnan(taps[..., 0]), 0, first)
    first = first[..., None]
    values = np.take_along_axis(taps, first, -1)[..., 0]
    index = np.take_along_axis(np.broadcast_to(positions, taps.shape), first, -1)[..., 0]
    shape = x.shape[:2] + tuple(out_sizes)
    return spread(values, inverse).reshape(shape), spread(index, inverse).reshape(shape)


def _avg_kernel(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
        return (restored(adaptive_avg_pool(computed(x), output_sizes(target, x.ndim)), x.dtype),)


def _max_kernel(
    a: SimpleNamespace, x: np.ndarray, target: np.ndarray, needed=(True, True)
) -> tuple:
    with np.errstate(all="ignore"):  # NaN compares as a value here, never a warning
        values, index = adaptive_max_pool(computed(x), output_sizes(target, x.ndim))
    return restored(values, x.dtype), index.astype(a.index_element_type.dtype)


def _check_max(a: SimpleNamespace) -> None:
    if a.index_element_type.name not in INDEX_TYPES:
        raise KernelError(f"index_element_type must be i32 or i64, got {a.index_element_type.name}")


def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo], outputs) -> int:
    """The input in the type pooled in and as planes with one more element each; every
    window's taps with their positions, ranks or running sums; per window the result,
    spread over each axis and cast back."""
    x = inputs[0]
    size = int(np.prod(x.shape, dtype=object))
    planes = x.shape[0] * x.shape[1]
    item = computed_type(x.element_type.dtype).itemsize
    wide = max(accumulator_dtype(computed_type(x.element_type.dtype)).itemsize, item)
    outs = outputs[0].shape[2:]
    windows = int(np.prod(outs, dtype=object))
    taps = int(np.prod([-(-size // out) + 1 for size, out in zip(x.shape[2:], outs, strict=True)],
                       dtype=object))
    return (size * item + (size + planes) * wide + windows * taps * (3 * 8 + 1)
            + planes * windows * (taps * (2 * wide + 1) + 4 * 8 + 2 * wide)
            + (len(x.shape) + 3) * planes * windows * (wide + 8))


register(
    OpDef(
        type="AdaptiveAvgPool",
        version=8,
        since_opset=8,
        attrs=(),
        infer=_infer(with_indices=False),
        kernel=_avg_kernel,
        inputs=(2, 2),
        # output_shape: OpenVINO reads the values of any type; irrun of integers.
        input_types=(POOL_TYPES, INTEGERS),
        scratch=scratch,
    )
)
register(
    OpDef(
        type="AdaptiveMaxPool",
        version=8,
        since_opset=8,
        attrs=(Attr("index_element_type", "element_type", element_types.ELEMENT_TYPES["i64"]),),
        infer=_infer(with_indices=True),
        kernel=_max_kernel,
        inputs=(2, 2),
        check=_check_max,
        optional_outputs=True,
        input_types=(POOL_TYPES, INTEGERS),
        scratch=scratch,
    )
)
