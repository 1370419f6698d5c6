"""YUV images to RGB and BGR and back: NV12toRGB-8, NV12toBGR-8, I420toRGB-8, I420toBGR-8,
RGBtoNV12-17, BGRtoNV12-17.

The input is a YUV 4:2:0 image, NHWC with one channel, in one plane or in several:

* NV12: one plane [N, H * 3 / 2, W, 1] (the H rows of Y, then H / 2 rows of interleaved
  U, V pairs), or two: Y [N, H, W, 1] and UV [N, H / 2, W / 2, 2];
* I420: one plane [N, H * 3 / 2, W, 1] (Y, then the H * W / 4 values of U, then those of
  V, each plane row-major), or three: Y [N, H, W, 1], U and V [N, H / 2, W / 2, 1].

H and W are even; each U, V pair serves a 2x2 block of Y.  The output is [N, H, W, 3],
(R, G, B) or (B, G, R), of the input's type, by the BT.601 limited-range formula in f32:

    c = Y - 16, d = U - 128, e = V - 128
    R = 1.164 c + 1.596 e,  G = 1.164 c - 0.391 d - 0.813 e,  B = 1.164 c + 2.018 d

each clipped to [0, 255]; a u8 result is rounded half away from zero first (f16 and
bf16 results are rounded once from f32).  This is OpenVINO's reference kernel (which
``ov.Model.evaluate`` does not run).  Its CPU plugin computes the same f32 values but
rounds u8 results half to even: where the f32 value is a tie (x.5 exactly, about 0.2%
of all (Y, U, V) triples in some channel) irrun gives one more than the plugin.  Float
results agree with the plugin bit for bit.

RGBtoNV12-17 and BGRtoNV12-17 (opset17) go the other way: an image [N, H, W, 3], (R, G, B)
or (B, G, R), u8 or a float, H and W even, to NV12 of its type: with ``single_plane``
(the default) one plane [N, H * 3 / 2, W, 1], else two outputs, Y [N, H, W, 1] and UV
[N, H / 2, W / 2, 2].  Each pixel's value is made f32 (an f64 input too) and

    Y = 0.257 R + 0.504 G + 0.098 B + 16
    U = -0.148 R - 0.291 G + 0.439 B + 128
    V = 0.439 R - 0.368 G - 0.071 B + 128

in f32, left to right, each clipped to [0, 255] (a u8 result rounded half away from
zero first) and stored in the output's type; a U, V pair is then the mean of the four
stored values of its 2x2 block, summed in f32 row by row, divided by 4 and stored again
(rounded half away from zero for u8).  A bf16 value is stored as OpenVINO's
``bfloat16(float)`` rounds, which is not to nearest even: it adds half an ulp only where
the kept last bit is 1, so where that bit is 0 it truncates.  This is OpenVINO's
reference kernel, bit for bit (checked once over every u8 colour and random floats of
each type against that kernel compiled from OpenVINO's header).  OpenVINO 2026.4 runs
the op neither in its CPU plugin nor in ``ov.Model.evaluate`` (both refuse it), so the
tests compare with a scalar transcription of the kernel and with OpenVINO's shape
inference.  The shape rule is OpenVINO's: a static odd H or W is an error, an interval
is taken as it is (H 3..5 gives a single plane of 5..7 rows: H + H / 2 bound
by bound, H / 2 rounding the lower bound up and the upper down).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import ml_dtypes
import numpy as np

from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, format_shape
from ..ir.element_types import FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import try_merge_dims

TYPES = (*FLOATS, "u8")
_BF16 = np.dtype(ml_dtypes.bfloat16)


def _bounds(d: Dim) -> tuple[int, int | None]:
    return (d, d) if isinstance(d, int) else (d.lo, d.hi)


def _dim(lo: int, hi: int | None) -> Dim:
    return lo if lo == hi else Interval(lo, hi)


def _times_two(d: Dim) -> Dim:
    lo, hi = _bounds(d)
    return _dim(2 * lo, None if hi is None else 2 * hi)


def _two_thirds(d: Dim) -> Dim | None:
    """The heights h with h * 3 / 2 in ``d`` (None if none is)."""
    lo, hi = _bounds(d)
    lo, hi = -(-2 * lo // 3), None if hi is None else 2 * hi // 3
    if hi is not None and hi < lo:
        return None
    if isinstance(d, int) and (2 * d) % 3:
        return None
    return _dim(lo, hi)


def _may_be_even(d: Dim) -> bool:
    lo, hi = _bounds(d)
    return hi is None or hi > lo or lo % 2 == 0


def _merge(a: Sequence[Dim], b: Sequence[Dim], what: str) -> list[Dim]:
    out = []
    for x, y in zip(a, b, strict=True):
        m = try_merge_dims(x, y)
        if m is None:
            raise ShapeError(what)
        out.append(m)
    return out


def _four_d(info: TensorInfo, name: str, channels: int) -> Sequence[Dim] | None:
    shape = info.shape
    if shape is None:
        return None
    if len(shape) != 4:
        raise ShapeError(f"{name} must be 4-D [N, H, W, C], got shape {format_shape(shape)}")
    if try_merge_dims(shape[3], channels) is None:
        raise ShapeError(f"{name} must have {channels} channel{'s' * (channels > 1)}, got "
                         f"shape {format_shape(shape)}")  # fmt: skip
    return shape


def _color_infer(planes: str):
    names = {"nv12": ("Y", "UV"), "i420": ("Y", "U", "V")}[planes]

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        if len(inputs) not in (1, len(names)):
            raise ShapeError(f"takes one plane or {len(names)} ({', '.join(names)}), got "
                             f"{len(inputs)} inputs")  # fmt: skip
        ets = {i.element_type for i in inputs if i.element_type is not None}
        if len(ets) > 1:
            raise ShapeError(f"the planes must have one element type, got "
                             f"{', '.join(sorted(e.name for e in ets))}")  # fmt: skip
        et = next(iter(ets), None)
        y = _four_d(inputs[0], "the Y plane" if len(inputs) > 1 else "the image", 1)
        out = list(y[:3]) if y is not None else [DYNAMIC] * 3
        if len(inputs) == 1:
            if y is not None:
                height = _two_thirds(y[1])
                if height is None:
                    raise ShapeError(f"the image's height {y[1]} is not a multiple of 3 "
                                     "(H rows of Y and H / 2 of U and V)")  # fmt: skip
                out[1] = height
        else:
            chroma: list[Dim] | None = None
            for info, name in zip(inputs[1:], names[1:], strict=True):
                shape = _four_d(info, f"the {name} plane", len(names[1]))
                if shape is not None:
                    doubled = [shape[0], _times_two(shape[1]), _times_two(shape[2])]
                    chroma = doubled if chroma is None else _merge(
                        chroma, doubled, f"the {' and '.join(names[1:])} planes differ in "
                        "shape")  # fmt: skip
            if chroma is not None:
                out = _merge(out, chroma, "the Y plane's shape is inconsistent with the "
                             f"{' and '.join(names[1:])} planes' (half its height and width)")
        if not _may_be_even(out[1]):
            raise ShapeError(f"the image's height {out[1]} must be even")
        if not _may_be_even(out[2]):
            raise ShapeError(f"the image's width {out[2]} must be even")
        return [TensorInfo((*out, 3), et)]

    return infer


def _to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray, dtype: np.dtype,
            bgr: bool) -> np.ndarray:  # fmt: skip
    """[N, H, W] Y and full-size U, V planes as [N, H, W, 3] of ``dtype``."""
    f = np.float32
    c = y.astype(f) - f(16)
    d = u.astype(f) - f(128)
    e = v.astype(f) - f(128)
    luma = f(1.164) * c
    r = luma + f(1.596) * e
    g = luma - f(0.391) * d - f(0.813) * e
    b = luma + f(2.018) * d
    out = np.stack([b, g, r] if bgr else [r, g, b], axis=-1)
    if dtype.kind in "iu":
        # Half away from zero, as std::round.
        out = np.sign(out) * np.floor(np.abs(out) + f(0.5))
    return np.clip(out, f(0), f(255)).astype(dtype)


def _upsample(plane: np.ndarray) -> np.ndarray:
    """[N, H/2, W/2] -> [N, H, W]: each value over its 2x2 block."""
    return np.repeat(np.repeat(plane, 2, axis=1), 2, axis=2)


def _color_kernel(planes: str, bgr: bool):
    infer = _color_infer(planes)

    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray]:
        infer(a, [TensorInfo(x.shape, None) for x in arrays])
        first = arrays[0]
        n, rows, w = first.shape[:3]
        if len(arrays) == 1:
            h = rows * 2 // 3
            y = first[:, :h, :, 0]
            rest = first[:, h:, :, 0].reshape(n, -1)  # the H * W / 2 chroma values
            if planes == "nv12":
                pairs = rest.reshape(n, h // 2, w // 2, 2)
                u, v = pairs[..., 0], pairs[..., 1]
            else:
                quarter = h * w // 4
                u = rest[:, :quarter].reshape(n, h // 2, w // 2)
                v = rest[:, quarter:].reshape(n, h // 2, w // 2)
        elif planes == "nv12":
            y, u, v = first[..., 0], arrays[1][..., 0], arrays[1][..., 1]
        else:
            y, u, v = first[..., 0], arrays[1][..., 0], arrays[2][..., 0]
        return (_to_rgb(y, _upsample(u), _upsample(v), first.dtype, bgr),)

    return kernel


for _planes, _name, _count in (("nv12", "NV12", 2), ("i420", "I420", 3)):
    for _bgr in (False, True):
        register(
            OpDef(type=f"{_name}to{'BGR' if _bgr else 'RGB'}", version=8, since_opset=8,
                  attrs=(), infer=_color_infer(_planes), kernel=_color_kernel(_planes, _bgr),
                  inputs=(1, _count), input_types=(TYPES,) * _count,
                  scratch=per_element(24, 24, 28))
        )  # fmt: skip


def _even(d: Dim, what: str) -> None:
    if isinstance(d, int) and d % 2:
        raise ShapeError(f"the image's {what} {d} must be even")


def _half(d: Dim) -> Dim:
    """``d / 2``: an interval's lower bound rounded up, its upper down (as OpenVINO)."""
    lo, hi = _bounds(d)
    return _dim(-(-lo // 2), None if hi is None else hi // 2)


def _to_nv12_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (info,) = inputs
    et = info.element_type
    shape = _four_d(info, "the image", 3)
    if shape is None:
        n = h = w = DYNAMIC
    else:
        n, h, w = shape[:3]
        _even(h, "height")
        _even(w, "width")
    if a.single_plane:
        lo, hi = _bounds(h)
        half = _bounds(_half(h))
        rows = _dim(lo + half[0], None if hi is None else hi + half[1])
        return [TensorInfo((n, rows, w, 1), et)]
    return [TensorInfo((n, h, w, 1), et), TensorInfo((n, _half(h), _half(w), 2), et)]


def _ov_bf16(x: np.ndarray) -> np.ndarray:
    """f32 as bf16 the way OpenVINO's ``bfloat16(float)`` rounds: half an ulp is added
    only where the kept last bit is 1, so a value whose kept last bit is 0 truncates."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    kept = (bits + ((bits & np.uint32(0x10000)) >> np.uint32(1))) >> np.uint32(16)
    return kept.astype(np.uint16).view(ml_dtypes.bfloat16)


def _stored(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """f32 values clipped to [0, 255] as ``dtype`` (u8: rounded half away from zero; bf16
    as OpenVINO's kernels round)."""
    f = np.float32
    if dtype.kind in "iu":
        x = np.sign(x) * np.floor(np.abs(x) + f(0.5))
    x = np.clip(x, f(0), f(255))
    return _ov_bf16(x) if dtype == _BF16 else x.astype(dtype)


def _to_nv12_kernel(bgr: bool):
    def kernel(a: SimpleNamespace, image: np.ndarray) -> tuple[np.ndarray, ...]:
        _to_nv12_infer(a, [TensorInfo(image.shape, None)])
        f = np.float32
        dtype = image.dtype
        pixels = image.astype(f)
        r, g, b = (pixels[..., k] for k in ((2, 1, 0) if bgr else (0, 1, 2)))
        y = _stored(f(0.257) * r + f(0.504) * g + f(0.098) * b + f(16), dtype)
        u = _stored(f(-0.148) * r - f(0.291) * g + f(0.439) * b + f(128), dtype)
        v = _stored(f(0.439) * r - f(0.368) * g - f(0.071) * b + f(128), dtype)
        n, h, w = y.shape

        def mean(plane: np.ndarray) -> np.ndarray:
            blocks = plane.astype(f).reshape(n, h // 2, 2, w // 2, 2)
            total = blocks[:, :, 0, :, 0] + blocks[:, :, 0, :, 1]
            total = total + blocks[:, :, 1, :, 0]
            total = total + blocks[:, :, 1, :, 1]
            return _stored(total / f(4), dtype)

        uv = np.stack([mean(u), mean(v)], axis=-1)  # [N, H/2, W/2, 2]
        if not a.single_plane:
            return y[..., None], uv
        return (np.concatenate([y, uv.reshape(n, h // 2, w)], axis=1)[..., None],)

    return kernel


for _bgr in (False, True):
    register(
        OpDef(type=f"{'BGR' if _bgr else 'RGB'}toNV12", version=17, since_opset=17,
              attrs=(Attr("single_plane", "bool", True),), infer=_to_nv12_infer,
              kernel=_to_nv12_kernel(_bgr), input_types=(TYPES,),
              scratch=per_element(40, 40, 40))
    )  # fmt: skip
