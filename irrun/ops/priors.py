"""Prior boxes of SSD-style detectors: PriorBox-1, PriorBox-8, PriorBoxClustered-1.

Both ops read the *values* of their two integer inputs, ``output_size``
``[height, width]`` (the feature map's) and ``image_size`` ``[image_height,
image_width]``; a converted model usually computes them with ShapeOf, so they are
known before the run and the output shape ``[2, 4 * height * width * priors]`` is
static (irrun folds them as OpenVINO does; while ``output_size`` is unknown, the
second dim is too).  Row 0 holds the boxes ``[xmin, ymin, xmax, ymax]`` normalized by
the image size, point by point (row-major over the map) and prior by prior; row 1
the variances (``variance``: one value for all four coordinates, four values, or
none for 0.1).  Everything is computed in f32, in OpenVINO's order of operations.

PriorBox: a point's centre is ``(w + 0.5) * image_width / width`` (``step`` 0;
``offset`` then plays no part) or ``(w + offset) * step``.  Its priors are, for each
``fixed_size`` (with ``density`` and ``fixed_ratio``: boxes on a ``density x
density`` grid inside the fixed box, each clipped to the image), then for each
``min_size`` ``s``: the square of side ``s``, the square of side ``sqrt(s *
max_size)`` where a max size is given, and a box ``s * sqrt(r)`` by ``s / sqrt(r)``
for each aspect ratio ``r`` other than 1 (the ratios deduplicated, each followed by
``1 / r`` with ``flip``), in the order min, max, ratios
(``min_max_aspect_ratios_order``, version 8's default and version 1's only order) or
min, ratios, max.  Without ``scale_all_sizes`` (MXNet's PriorBox) the sizes and the
step are fractions of the image height (``step`` -1: ``image_height / height``), and
only the last min size has ratio boxes.  ``clip`` clips every coordinate to [0, 1].

The number of priors per point that sizes the output is computed from the attributes
by a formula of its own (ratios deduplicated to 1e-6, ``scale_all_sizes`` counting
every max size, density adding ``density**2 - 1`` boxes per ratio); where the boxes
the kernel makes are not that many (``max_size`` without ``scale_all_sizes``, more
max than min sizes, ``fixed_size`` without as many ``density`` values) OpenVINO's
kernels write past their output or leave some of it unwritten: irrun refuses such
attributes (validate reports them).

PriorBoxClustered: centres ``(w + offset) * step_w`` and ``(h + offset) * step_h``
(``step_w``/``step_h`` 0 take ``step``; both 0 take ``image_size / output_size``),
one box per ``width``/``height`` pair, divided by the image size, clipped with
``clip``.

The CPU plugin and the reference kernels agree exactly with irrun on every case
tested.  The plugin cannot compile PriorBox-8 with ``min_max_aspect_ratios_order``
false when its inputs are not constants ("Unexpected op type in PriorBox shape
inference factory"); folded from constants it runs.  OpenVINO writes float-list
attributes to the IR with 6 significant digits, so a model read back from its IR may
differ from the one built in memory (irrun computes what the IR says).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC
from ..ir.element_types import INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import int_values

# The sizes: the integers and three of the packed ones (i4, u4, u1).
SIZE_TYPES = (*INTEGERS, "i4", "u4", "u1")
F32 = np.float32

PRIOR_BOX_ATTRS = (
    Attr("min_size", "floats", ()),
    Attr("max_size", "floats", ()),
    Attr("aspect_ratio", "floats", ()),
    Attr("density", "floats", ()),
    Attr("fixed_ratio", "floats", ()),
    Attr("fixed_size", "floats", ()),
    Attr("clip", "bool", False),
    Attr("flip", "bool", False),
    Attr("step", "float", 0.0),
    Attr("offset", "float"),
    Attr("variance", "floats", ()),
    Attr("scale_all_sizes", "bool", True),
)
CLUSTERED_ATTRS = (
    Attr("width", "floats", ()),
    Attr("height", "floats", ()),
    Attr("clip", "bool", True),
    Attr("step", "float", 0.0),
    Attr("step_w", "float", 0.0),
    Attr("step_h", "float", 0.0),
    Attr("offset", "float"),
    Attr("variance", "floats", ()),
)


def _ratios(a: SimpleNamespace) -> list[np.float32]:
    """The aspect ratios the kernel uses: 1 first, then each new one (and its inverse)."""
    ratios = [F32(1)]
    for r in a.aspect_ratio:
        r = F32(r)
        if all(abs(float(r) - float(q)) >= 1e-6 for q in ratios):
            ratios.append(r)
            if a.flip:
                ratios.append(F32(1) / r)
    return ratios


def number_of_priors(a: SimpleNamespace) -> int:
    """Priors per point as OpenVINO sizes the output (its formula, not its kernel's)."""
    unique = set()
    for r in a.aspect_ratio:
        unique.add(round(float(F32(r)) * 1e6) / 1e6)
        if a.flip:
            unique.add(round(float(F32(1) / F32(r)) * 1e6) / 1e6)
    unique.add(1.0)
    ratios = len(unique)
    if a.scale_all_sizes:
        count = ratios * len(a.min_size) + len(a.max_size)
    else:
        count = ratios + len(a.min_size) - 1
    if a.fixed_size:
        count = ratios * len(a.fixed_size)
    for d in a.density:
        grid = int(d) * int(d) - 1
        count += (len(a.fixed_ratio) if a.fixed_ratio else ratios) * grid
    return count


def _boxes_made(a: SimpleNamespace) -> int:
    """Priors per point the kernel makes."""
    ratios = len(_ratios(a)) - 1  # other than 1
    count = 0
    for s in range(len(a.fixed_size)):
        grid = int(a.density[s]) ** 2 if s < len(a.density) else 0
        count += grid * (len(a.fixed_ratio) if a.fixed_ratio else 1 + ratios)
    for i in range(len(a.min_size)):
        count += 1 + (len(a.max_size) > i)
        if a.scale_all_sizes or i == len(a.min_size) - 1:
            count += ratios
    return count


def _check_prior_box(a: SimpleNamespace) -> None:
    if len(a.variance) not in (0, 1, 4):
        raise KernelError(f"variance must hold 0, 1 or 4 values, got {len(a.variance)}")
    if any(r <= 0 for r in a.aspect_ratio):
        raise KernelError(f"aspect_ratio must be positive, got {list(a.aspect_ratio)}")
    if a.fixed_size and len(a.density) < len(a.fixed_size):
        raise KernelError(f"fixed_size has {len(a.fixed_size)} values but density only "
                          f"{len(a.density)}: OpenVINO's kernels read past density")  # fmt: skip
    if any(int(d) <= 0 for d in a.density[: len(a.fixed_size)]) or any(
            int(f) <= 0 for f in a.fixed_size):  # fmt: skip
        raise KernelError("fixed_size and density must be at least 1")
    sized, made = number_of_priors(a), _boxes_made(a)
    if sized != made:
        raise KernelError(f"these attributes make {made} priors per point, but OpenVINO sizes "
                          f"the output for {sized} (its kernels then write past it or leave "
                          "part of it unwritten)")  # fmt: skip


def _check_clustered(a: SimpleNamespace) -> None:
    if len(a.width) != len(a.height):
        raise KernelError(f"width and height must have as many values, got {len(a.width)} "
                          f"and {len(a.height)}")  # fmt: skip
    if len(a.variance) not in (0, 1, 4):
        raise KernelError(f"variance must hold 0, 1 or 4 values, got {len(a.variance)}")


def _infer(priors):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        for info, name in zip(inputs, ("output_size", "image_size"), strict=True):
            if info.shape is not None and len(info.shape) != 1:
                raise ShapeError(f"{name} must be 1-D [height, width], got shape "
                                 f"{list(info.shape)}")  # fmt: skip
        size = int_values(inputs[0])
        if size is None:
            return [TensorInfo((2, DYNAMIC), element_types.ELEMENT_TYPES["f32"])]
        if len(size) != 2:
            raise ShapeError(f"output_size must hold 2 values [height, width], got {size}")
        if size[0] < 0 or size[1] < 0:
            raise ShapeError(f"output_size {size} must not be negative")
        n = 4 * size[0] * size[1] * priors(a)
        return [TensorInfo((2, n), element_types.ELEMENT_TYPES["f32"])]

    return infer


def _sizes(output_size: np.ndarray, image_size: np.ndarray) -> tuple[int, int, int, int]:
    if output_size.shape != (2,) or image_size.shape != (2,):
        raise ShapeError(f"output_size {list(output_size.shape)} and image_size "
                         f"{list(image_size.shape)} must each hold 2 values")  # fmt: skip
    h, w = (int(v) for v in output_size)
    ih, iw = (int(v) for v in image_size)
    if h < 0 or w < 0:
        raise KernelError(f"output_size {[h, w]} must not be negative")
    return h, w, ih, iw


def _finish(boxes: np.ndarray, variance: Sequence[float], clip: bool) -> np.ndarray:
    """``[points, priors, 4]`` boxes -> the ``[2, N]`` output with the variances."""
    out = np.empty((2, boxes.size), F32)
    out[0] = boxes.reshape(-1)
    if clip:
        np.clip(out[0], F32(0), F32(1), out=out[0])
    var = np.asarray(variance or (0.1,), F32)
    out[1].reshape(-1, len(var))[:] = var  # one value everywhere, or four per box
    return out


def _prior_box_kernel(a: SimpleNamespace, output_size: np.ndarray,
                      image_size: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    """Boxes per point from templates: a centre shift and half sizes per prior."""
    h, w, ih, iw = _sizes(output_size, image_size)
    ratios = _ratios(a)
    step = F32(a.step)
    min_size = [F32(s) for s in a.min_size]
    if not a.scale_all_sizes:  # MXNet's sizes: fractions of the image height
        step = F32(F32(ih) / F32(h)) if a.step == -1 else F32(step * F32(ih))
        min_size = [F32(s * F32(ih)) for s in min_size]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iwi, ihi = F32(1) / F32(iw), F32(1) / F32(ih)
        xs, ys = np.arange(w, dtype=F32), np.arange(h, dtype=F32)
        if step == 0:
            cx = (xs + F32(0.5)) * F32(F32(iw) / F32(w))
            cy = (ys + F32(0.5)) * F32(F32(ih) / F32(h))
        else:
            cx, cy = (F32(a.offset) + xs) * step, (F32(a.offset) + ys) * step
        # Per prior: the integer and fractional centre shifts of each axis, the grid
        # offset, the half width and height, and whether the box is clipped on its own.
        shift_x, shift_y, half_w, half_h, own_clip = [], [], [], [], []

        def add(bw, bh, dx=(0.0, 0.0, 0.0), dy=(0.0, 0.0, 0.0), clipped=False):
            shift_x.append(dx)
            shift_y.append(dy)
            half_w.append(F32(bw))
            half_h.append(F32(bh))
            own_clip.append(clipped)

        for s, size in enumerate(a.fixed_size):
            whole = int(size)  # OpenVINO truncates the fixed size here (not in the ratios)
            density = int(a.density[s])
            shift = int(F32(size) / F32(density))

            def grid(bw, bh, whole=whole, shift=shift, density=density):
                for r in range(density):
                    for c in range(density):
                        add(bw, bh, (whole // 2, shift / 2, c * shift),
                            (whole // 2, shift / 2, r * shift), True)  # fmt: skip

            square = F32(whole) * F32(0.5)
            if a.fixed_ratio:
                for ratio in a.fixed_ratio:
                    root = np.sqrt(F32(ratio))
                    grid(F32(size) * F32(0.5) * root, F32(size) * F32(0.5) / root)
            else:
                grid(square, square)
                for ratio in ratios[1:]:
                    root = np.sqrt(ratio)
                    grid(F32(size) * F32(0.5) * root, F32(size) * F32(0.5) / root)
        for i, size in enumerate(min_size):
            half = size * F32(0.5)
            add(half, half)
            big = [np.sqrt(size * F32(a.max_size[i])) * F32(0.5)] if len(a.max_size) > i else []
            shaped = []
            if a.scale_all_sizes or i == len(min_size) - 1:
                base = min_size[i] if a.scale_all_sizes else min_size[0]
                for ratio in ratios[1:]:
                    root = np.sqrt(ratio)
                    shaped.append((base * F32(0.5) * root, base * F32(0.5) / root))
            squares = [(b, b) for b in big]
            caffe = getattr(a, "min_max_aspect_ratios_order", True)
            order = squares + shaped if caffe else shaped + squares
            for bw, bh in order:
                add(bw, bh)
        centre_x = _shifted(cx, shift_x)[None, :, :]  # [1, W, P]
        centre_y = _shifted(cy, shift_y)[:, None, :]  # [H, 1, P]
        bw, bh = np.array(half_w, F32), np.array(half_h, F32)
        shape = (h, w, len(half_w))
        boxes = np.stack([
            np.broadcast_to((centre_x - bw) * iwi, shape),
            np.broadcast_to((centre_y - bh) * ihi, shape),
            np.broadcast_to((centre_x + bw) * iwi, shape),
            np.broadcast_to((centre_y + bh) * ihi, shape),
        ], axis=-1)  # fmt: skip
        own = np.array(own_clip, bool)[:, None]
        if own.any():
            low = np.where(own & (np.arange(4) < 2), np.maximum(boxes, F32(0)), boxes)
            boxes = np.where(own & (np.arange(4) >= 2), np.minimum(low, F32(1)), low)
        return (_finish(boxes, a.variance, a.clip),)


def _shifted(centres: np.ndarray, shifts: list[tuple]) -> np.ndarray:
    """``centre - whole // 2 + shift / 2 + k * shift`` per prior, rounded as OpenVINO
    does it (f32 at each step); a prior without a grid keeps the centre."""
    if not shifts:
        return np.zeros((len(centres), 0), F32)
    whole, half, k = (np.array(col, F32) for col in zip(*shifts, strict=True))
    return ((centres[:, None] - whole) + half) + k


def _clustered_kernel(a: SimpleNamespace, output_size: np.ndarray,
                      image_size: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    h, w, ih, iw = _sizes(output_size, image_size)
    step_w = F32(a.step if a.step_w == 0 else a.step_w)
    step_h = F32(a.step if a.step_h == 0 else a.step_h)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if step_w == 0 and step_h == 0:
            step_w, step_h = F32(F32(iw) / F32(w)), F32(F32(ih) / F32(h))
        cx = ((np.arange(w, dtype=F32) + F32(a.offset)) * step_w)[None, :, None]
        cy = ((np.arange(h, dtype=F32) + F32(a.offset)) * step_h)[:, None, None]
        half_w = np.array(a.width, F32) / F32(2)
        half_h = np.array(a.height, F32) / F32(2)
        shape = (h, w, len(half_w))
        boxes = np.stack([
            np.broadcast_to((cx - half_w) / F32(iw), shape),
            np.broadcast_to((cy - half_h) / F32(ih), shape),
            np.broadcast_to((cx + half_w) / F32(iw), shape),
            np.broadcast_to((cy + half_h) / F32(ih), shape),
        ], axis=-1)  # fmt: skip
        return (_finish(boxes, a.variance, a.clip),)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The four coordinates' arrays (and their clipped copies) and their stack: about
    the output's size each."""
    out = static_shape(outputs[0]) if outputs else None
    return 0 if out is None else 4 * 4 * out[1]


for _version in (1, 8):
    _attrs = PRIOR_BOX_ATTRS + (
        (Attr("min_max_aspect_ratios_order", "bool", True),) if _version == 8 else ()
    )
    register(OpDef(type="PriorBox", version=_version, since_opset=_version, attrs=_attrs,
                   infer=_infer(number_of_priors), kernel=_prior_box_kernel, inputs=(2, 2),
                   check=_check_prior_box, input_types=(SIZE_TYPES, SIZE_TYPES),
                   scratch=_scratch))  # fmt: skip

register(OpDef(type="PriorBoxClustered", version=1, since_opset=1, attrs=CLUSTERED_ATTRS,
               infer=_infer(lambda a: len(a.width)), kernel=_clustered_kernel, inputs=(2, 2),
               check=_check_clustered, input_types=(SIZE_TYPES, SIZE_TYPES),
               scratch=_scratch))  # fmt: skip
