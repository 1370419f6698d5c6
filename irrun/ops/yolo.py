"""YOLO heads: RegionYolo-1 and ReorgYolo-2.

RegionYolo reads a map ``[N, C, H, W]`` whose channels hold, per region (anchor),
``coords`` box coordinates, an objectness score and ``classes`` class scores.  The
logistic function is applied to the first two coordinates (x, y) and to the
objectness; the other coordinates pass unchanged.

* ``do_softmax`` (YOLO v2's Region layer): ``num`` regions; the class scores of each
  region and location become a softmax over the classes; the output is the input's
  shape with dims ``axis..end_axis`` flattened into one.
* otherwise (YOLO v3's Yolo layer): the ``len(mask)`` regions the mask selects (the
  map holds only those); the class scores go through the logistic function too, and
  the output has ``(coords + classes + 1) * len(mask)`` channels.

The channels must be exactly ``regions * (coords + classes + 1)``; OpenVINO does not
check it (its kernels then mix batches up or copy part of the map) and irrun refuses
other maps at run time.  OpenVINO's reference kernel of the YOLO v3 mode copies only
the first batch of the map before transforming it in place (the other batches are
read from uninitialized memory); the CPU plugin computes every batch, and so does
irrun.  Element types: f64, f32, f16 and bf16, computed in f32 and rounded once as the
plugin does (f64 too: the plugin computes it in f32); the softmax sums in its own order:
f32 results agree with the plugin to about 1e-6 relative.

ReorgYolo (``stride`` s: only the first value counts) reorders ``[N, C, H, W]`` into
``[N, C * s * s, H / s, W / s]`` as Darknet's reorg does: the output, read with the
input's shape, takes at ``[n, c, h, w]`` the input, read as ``[N, C / s**2, H * s,
W * s]``, at ``[n, c % (C / s**2), h * s + k // s, w * s + k % s]`` with ``k = c //
(C / s**2)``.  H and W must be multiples of s and C of ``s * s`` (OpenVINO asks only
``C >= s * s``; its kernels read past the input otherwise).  Any element type.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval
from ..ir.element_types import ANY, FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import fmt, normalize_axis

# --------------------------------------------------------------------------- RegionYolo

REGION_ATTRS = (
    Attr("coords", "int"),
    Attr("classes", "int"),
    Attr("num", "int"),
    Attr("do_softmax", "bool", True),
    Attr("mask", "ints", ()),
    Attr("axis", "int", 1),
    Attr("end_axis", "int", 3),
    Attr("anchors", "floats", ()),
)


def _check_region(a: SimpleNamespace) -> None:
    if a.coords < 2 or a.classes < 0 or a.num < 0:
        raise KernelError(f"coords must be at least 2 and classes and num not negative, got "
                          f"coords={a.coords}, classes={a.classes}, num={a.num}")  # fmt: skip


def _regions(a: SimpleNamespace) -> int:
    return a.num if a.do_softmax else len(a.mask)


def _region_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    if len(x.shape) != 4:
        raise ShapeError(f"RegionYolo's input must be 4-D [N, C, H, W], got {fmt(x.shape)}")
    if not a.do_softmax:
        channels = (a.classes + a.coords + 1) * len(a.mask)
        return [TensorInfo((x.shape[0], channels, *x.shape[2:]), x.element_type)]
    axis = normalize_axis(a.axis, 4, "axis")
    end = normalize_axis(a.end_axis, 4, "end_axis")
    merged: Dim = 1
    for d in x.shape[axis : end + 1]:
        merged = _multiply(merged, d)
    shape = (*x.shape[:axis], merged, *x.shape[max(end + 1, axis + 1) :])
    return [TensorInfo(shape, x.element_type)]


def _multiply(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    lo_a, hi_a = (a, a) if isinstance(a, int) else (a.lo, a.hi)
    lo_b, hi_b = (b, b) if isinstance(b, int) else (b.lo, b.hi)
    hi = None if hi_a is None or hi_b is None else hi_a * hi_b
    return Interval(lo_a * lo_b, hi)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def _region_kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray]:
    """Per region: sigmoid on x, y and the objectness, then softmax (v2) or sigmoid (v3)
    on the class scores."""
    if x.ndim != 4:
        raise ShapeError(f"RegionYolo's input must be 4-D, got {list(x.shape)}")
    n, c, h, w = x.shape
    regions, entries = _regions(a), a.coords + a.classes + 1
    if c != regions * entries:
        raise KernelError(f"the map has {c} channels, but {regions} regions of {a.coords} "
                          f"coords, 1 objectness and {a.classes} classes need "
                          f"{regions * entries}")  # fmt: skip
    out = x.astype(np.float32).reshape(n, regions, entries, h, w)
    out[:, :, :2] = _sigmoid(out[:, :, :2])
    out[:, :, a.coords] = _sigmoid(out[:, :, a.coords])
    scores = out[:, :, a.coords + 1 :]
    if a.do_softmax:
        e = np.exp(scores - scores.max(axis=2, keepdims=True))
        scores[...] = e / e.sum(axis=2, keepdims=True)
    else:
        scores[...] = _sigmoid(scores)
    shape = _region_infer(a, [TensorInfo(x.shape, None)])[0].shape
    return (out.reshape(shape).astype(x.dtype, copy=False),)


register(OpDef(type="RegionYolo", version=1, since_opset=1, attrs=REGION_ATTRS,
               infer=_region_infer, kernel=_region_kernel, inputs=(1, 1),
               check=_check_region, input_types=(FLOATS,),
               shape_attrs=("coords", "classes", "num", "do_softmax", "mask", "axis", "end_axis"),
               scratch=per_element(8, 12)))  # fmt: skip


# --------------------------------------------------------------------------- ReorgYolo

REORG_ATTRS = (Attr("stride", "ints"),)


def _check_reorg(a: SimpleNamespace) -> None:
    if not a.stride or a.stride[0] < 1:
        raise KernelError(f"stride must hold a positive value, got {list(a.stride)}")


def _divide(d: Dim, by: int, what: str) -> Dim:
    if isinstance(d, int):
        if d % by:
            raise ShapeError(f"{what} {d} is not a multiple of the stride {by}")
        return d // by
    lo = -(-d.lo // by)
    hi = None if d.hi is None else d.hi // by
    if hi is not None and hi < lo:
        raise ShapeError(f"{what} {d} holds no multiple of the stride {by}")
    return lo if lo == hi else Interval(lo, hi)


def _reorg_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    if len(x.shape) != 4:
        raise ShapeError(f"ReorgYolo's input must be 4-D [N, C, H, W], got {fmt(x.shape)}")
    s = a.stride[0]
    n, c, h, w = x.shape
    if isinstance(c, int) and c < s * s:
        raise ShapeError(f"C = {c} must be at least stride * stride = {s * s}")
    channels = c * s * s if isinstance(c, int) else _multiply(c, s * s)
    shape = (n, channels, _divide(h, s, "H"), _divide(w, s, "W"))
    return [TensorInfo(shape, x.element_type)]


def _reorg_kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray]:
    if x.ndim != 4:
        raise ShapeError(f"ReorgYolo's input must be 4-D, got {list(x.shape)}")
    s = a.stride[0]
    n, c, h, w = x.shape
    if c % (s * s) or h % s or w % s:
        raise KernelError(f"ReorgYolo needs C a multiple of {s * s} and H and W multiples of "
                          f"{s}, got {list(x.shape)}")  # fmt: skip
    groups = c // (s * s)
    # [n, g, h, a, w, b] -> [n, a, b, g, h, w]: channel (a * s + b) * groups + g.
    split = x.reshape(n, groups, h, s, w, s).transpose(0, 3, 5, 1, 2, 4)
    return (np.ascontiguousarray(split).reshape(n, c * s * s, h // s, w // s),)


register(OpDef(type="ReorgYolo", version=2, since_opset=2, attrs=REORG_ATTRS,
               infer=_reorg_infer, kernel=_reorg_kernel, inputs=(1, 1), check=_check_reorg,
               input_types=(ANY,), shape_attrs=("stride",), scratch=nothing))  # fmt: skip
