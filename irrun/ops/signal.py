"""DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15 and ISTFT-16: discrete Fourier transforms over
chosen axes, and the short-time transform and its inverse (``torch.fft``, ``torch.stft``).

Complex tensors are real ones with a trailing dim of 2 (real, imaginary).

* DFT / IDFT take a complex tensor of rank ``r`` (``r - 1`` complex dims) and transform
  it over ``axes`` (each in ``-(r-1)..r-2``, a negative one counted as ``r - 1 + a``); an
  optional ``signal_size`` per axis trims the axis to its first ``n`` elements or pads it
  with zeros at the end, ``-1`` keeping the axis as it is.  IDFT divides by the product of
  the sizes (``numpy.fft.ifftn``).
* RDFT takes a real tensor (axes in ``-r..r-1``) and gives the onesided spectrum: the last
  of ``axes`` keeps ``n // 2 + 1`` bins (``numpy.fft.rfftn``).
* IRDFT takes the onesided spectrum (complex, axes as DFT's) and gives a real tensor: the
  last of ``axes`` has ``signal_size`` samples, ``2 * (m - 1)`` by default or for ``-1``
  (``numpy.fft.irfftn``: the spectrum is extended Hermitian-symmetric, the imaginary parts
  of the zero and Nyquist bins do not count).
* STFT frames a signal ``[batch, length]`` (or ``[length]``) by ``frame_size`` and
  ``frame_step``, multiplies each frame by ``window`` zero-padded to ``frame_size`` around
  its centre (``(frame_size - window_length) // 2`` zeros on the left), and gives each
  frame's RDFT: ``[batch, frames, frame_size // 2 + 1, 2]``, or ``[batch, bins, frames,
  2]`` with ``transpose_frames``.
* ISTFT inverts it as ``torch.istft`` does (and OpenVINO's reference and CPU plugin): each
  frame's IRDFT of ``frame_size`` samples, times the padded window, is overlap-added, and
  the sum divided by the overlap-added squared window; samples where that sum is 0 are 0.
  ``normalized`` multiplies by ``sqrt(frame_size)``; ``center`` drops ``frame_size // 2``
  samples at each end, so the default length is ``(frames - 1) * frame_step + frame_size
  - 2 * (frame_size // 2)`` (else ``+ frame_size``); a given ``signal_length`` trims the
  signal or pads it with zeros at the end.

irrun computes in f64 and rounds once to the data's type (f32, f16, bf16; STFT and ISTFT
also take f64).  OpenVINO's kernels compute in f32, so results agree to some f32 ulps of
the output's largest magnitude, not elementwise (a transform's rounding error is spread
over every output element).

Where OpenVINO differs (2026.4):

* the CPU plugin's RDFT reads past the input instead of zero-padding when a
  ``signal_size`` is larger than the axis, and fails for a ``signal_size`` of ``-1`` (so
  does IRDFT); its IRDFT reads past the input when the last axis is padded (its
  ``signal_size // 2 + 1`` is more than the input's), and gives wrong values for some
  trimmed outer axes of a multi-axis IRDFT.  Where it reads past its buffers it can also
  corrupt the heap (a later inference crashes).  irrun pads with zeros as the
  specification says; the tests check it against the plugin run on an input fitted
  beforehand.  ``ov.Model.evaluate`` has no kernel for these ops;
* the plugin crashes on an empty transform (a size of 0) and on ISTFT's
  ``signal_length`` of 0 (its reference then writes the default length into an empty
  output); irrun gives the empty output the shape inference gives;
* the plugin computes f64 STFT and ISTFT in f32; irrun in f64;
* OpenVINO's shape inference takes a ``signal_size`` below ``-1`` (giving a dim of 0),
  an ISTFT ``signal_length`` below 0 (and its reference then computes the default
  length), and an ISTFT input whose last dim is not 2; irrun refuses them.  With RDFT's
  ``signal_size`` unknown OpenVINO keeps the input's dims on the axes but the last; irrun
  makes them unknown, since the run gives them the signal sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval
from ..ir.element_types import FLOATS, INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import largest
from ._shapes import check_vector, int_values, scalar_like

# Not f64: OpenVINO's DFT, IDFT, RDFT and IRDFT refuse it.
FFT_TYPES = ("f32", "f16", "bf16")
UNKNOWN = Interval(0, None)


# --------------------------------------------------------------------------- shapes


def _half_plus_one(d: Dim) -> Dim:
    """The onesided spectrum's length ``n // 2 + 1`` of a signal of ``d`` samples."""
    if isinstance(d, int):
        return d // 2 + 1
    return Interval(d.lo // 2 + 1, None if d.hi is None else d.hi // 2 + 1)


def _full_length(d: Dim) -> Dim:
    """The default signal length ``2 * (m - 1)`` of a onesided spectrum of ``m`` bins."""
    if isinstance(d, int):
        return max(2 * (d - 1), 0)
    return Interval(max(2 * (d.lo - 1), 0), None if d.hi is None else max(2 * (d.hi - 1), 0))


def _axes_and_sizes(inputs: Sequence[TensorInfo], rank: int | None, complex_input: bool
                    ) -> tuple[list[int] | None, list[int] | None]:  # fmt: skip
    """The normalized axes and the signal sizes, each None while unknown."""
    axes_info = inputs[1]
    check_vector(axes_info, "axes", allow_scalar=False)
    n_axes = None if axes_info.shape is None or not isinstance(axes_info.shape[0], int) \
        else axes_info.shape[0]  # fmt: skip
    dims = None if rank is None else rank - 1 if complex_input else rank
    if dims is not None and n_axes is not None and n_axes > dims:
        raise ShapeError(f"{n_axes} axes for a tensor of {dims} "
                         f"{'complex ' if complex_input else ''}dims")  # fmt: skip
    axes = int_values(axes_info)
    if axes is not None and dims is not None:
        for a in axes:
            if not -dims <= a < dims:
                raise ShapeError(f"axis {a} is out of range for {dims} "
                                 f"{'complex ' if complex_input else ''}dims "
                                 f"(allowed {-dims}..{dims - 1})")  # fmt: skip
        axes = [a % dims for a in axes]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"axes {int_values(axes_info)} name a dim twice")
    sizes = None
    if len(inputs) > 2:
        size_info = inputs[2]
        check_vector(size_info, "signal_size", allow_scalar=False)
        n_sizes = None if size_info.shape is None or not isinstance(size_info.shape[0], int) \
            else size_info.shape[0]  # fmt: skip
        if n_axes is not None and n_sizes is not None and n_axes != n_sizes:
            raise ShapeError(f"signal_size has {n_sizes} values for {n_axes} axes")
        sizes = int_values(size_info)
        if sizes is not None and any(s < -1 for s in sizes):
            raise ShapeError(f"signal_size {sizes} must be -1 (keep) or a size >= 0")
    return (None if dims is None else axes), sizes


def _check_complex(x: TensorInfo) -> None:
    if x.shape is None:
        return
    if len(x.shape) < 2:
        raise ShapeError(f"a complex input needs rank 2 or more, got {list(x.shape)}")
    last = x.shape[-1]
    lo, hi = (last, last) if isinstance(last, int) else (last.lo, last.hi)
    if lo > 2 or (hi is not None and hi < 2):
        raise ShapeError(f"the last dim of a complex input must be 2, got {last}")


def _infer_dft(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    _check_complex(x)
    rank = None if x.shape is None else len(x.shape)
    axes, sizes = _axes_and_sizes(inputs, rank, complex_input=True)
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    shape = list(x.shape)
    if len(inputs) > 2:
        if axes is None:
            shape[:-1] = [UNKNOWN] * (len(shape) - 1)
        else:
            for i, axis in enumerate(axes):
                if sizes is None:
                    shape[axis] = UNKNOWN
                elif sizes[i] != -1:
                    shape[axis] = sizes[i]
    return [TensorInfo(tuple(shape), x.element_type)]


def _infer_rdft(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    if x.shape is not None and len(x.shape) < 1:
        raise ShapeError("RDFT needs an input of rank 1 or more, got a scalar")
    rank = None if x.shape is None else len(x.shape)
    axes, sizes = _axes_and_sizes(inputs, rank, complex_input=False)
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    if axes is None:
        return [TensorInfo((UNKNOWN,) * len(x.shape) + (2,), x.element_type)]
    shape = list(x.shape)
    for i, axis in enumerate(axes):
        if len(inputs) > 2:
            shape[axis] = UNKNOWN if sizes is None else shape[axis] if sizes[i] == -1 \
                else sizes[i]  # fmt: skip
        if axes and i == len(axes) - 1:
            shape[axis] = _half_plus_one(shape[axis])
    return [TensorInfo((*shape, 2), x.element_type)]


def _infer_irdft(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    _check_complex(x)
    rank = None if x.shape is None else len(x.shape)
    axes, sizes = _axes_and_sizes(inputs, rank, complex_input=True)
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    shape = list(x.shape[:-1])
    if axes is None:
        return [TensorInfo((UNKNOWN,) * len(shape), x.element_type)]
    for i, axis in enumerate(axes):
        last = i == len(axes) - 1
        if len(inputs) > 2 and sizes is None:
            shape[axis] = UNKNOWN
        elif len(inputs) > 2 and sizes[i] != -1:
            shape[axis] = sizes[i]
        elif last:
            shape[axis] = _full_length(shape[axis])
    return [TensorInfo(tuple(shape), x.element_type)]


# --------------------------------------------------------------------------- kernels


def _checked(infer, inputs: Sequence[np.ndarray]) -> None:
    """The kernel's inputs checked by the shape rule (a KernelError if it refuses them)."""
    infos = [TensorInfo(x.shape, None, None if i == 0 else x) for i, x in enumerate(inputs)]
    try:
        infer(SimpleNamespace(), infos)
    except ShapeError as e:
        raise KernelError(str(e)) from e


def _complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)


def _real_imag(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.stack([y.real, y.imag], axis=-1).astype(dtype)


def _plan(x_dims: Sequence[int], axes: np.ndarray, sizes: np.ndarray | None,
          last_default=None) -> tuple[list[int], list[int]]:  # fmt: skip
    """Normalized axes and the sizes each is transformed at (``-1`` resolved)."""
    n = len(x_dims)
    ax = [int(a) % n for a in np.asarray(axes).reshape(-1)]
    s = [x_dims[a] for a in ax]
    if last_default is not None and ax:
        s[-1] = last_default(s[-1])
    if sizes is not None:
        s = [old if int(v) == -1 else int(v)
             for old, v in zip(s, np.asarray(sizes).reshape(-1), strict=True)]  # fmt: skip
    return ax, s


def _dft(inverse: bool):
    def kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray,
               sizes: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
        """Whole-tensor ``numpy.fft.fftn`` (``ifftn``) over the axes, in complex128."""
        _checked(_infer_dft, [x, axes] + ([] if sizes is None else [sizes]))
        ax, s = _plan(x.shape[:-1], axes, sizes)
        shape = list(x.shape)
        for axis, n in zip(ax, s, strict=True):
            shape[axis] = n
        if not ax or math.prod(shape) == 0:
            # No axes: the identity (the plugin's too); an empty axis: an empty result.
            return (np.zeros(shape, x.dtype) if math.prod(shape) == 0 else x.copy(),)
        transform = np.fft.ifftn if inverse else np.fft.fftn
        return (_real_imag(transform(_complex(x), s=s, axes=ax), x.dtype),)

    return kernel


def _rdft(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray,
          sizes: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
    """Whole-tensor ``numpy.fft.rfftn``: the last axis onesided."""
    _checked(_infer_rdft, [x, axes] + ([] if sizes is None else [sizes]))
    ax, s = _plan(x.shape, axes, sizes)
    shape = list(x.shape)
    for axis, n in zip(ax, s, strict=True):
        shape[axis] = n
    if ax:
        shape[ax[-1]] = s[-1] // 2 + 1
    if not ax:
        return (np.stack([x, np.zeros_like(x)], axis=-1),)
    if 0 in s or 0 in shape:
        return (np.zeros((*shape, 2), x.dtype),)
    return (_real_imag(np.fft.rfftn(x.astype(np.float64), s=s, axes=ax), x.dtype),)


def _irdft(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray,
           sizes: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
    """Whole-tensor ``numpy.fft.irfftn``: the last axis from its onesided spectrum."""
    _checked(_infer_irdft, [x, axes] + ([] if sizes is None else [sizes]))
    ax, s = _plan(x.shape[:-1], axes, sizes, last_default=lambda m: max(2 * (m - 1), 0))
    shape = list(x.shape[:-1])
    for axis, n in zip(ax, s, strict=True):
        shape[axis] = n
    if not ax:
        return (x[..., 0].copy(),)
    if 0 in s or 0 in shape:
        return (np.zeros(shape, x.dtype),)
    return (np.fft.irfftn(_complex(x), s=s, axes=ax).astype(x.dtype),)


# --------------------------------------------------------------------------- STFT, ISTFT


def _scalar_input(info: TensorInfo, what: str) -> int | None:
    if info.element_type is not None and info.element_type.name not in INDEX_TYPES:
        raise ShapeError(f"{what} must be i32 or i64, got {info.element_type.name}")
    if info.shape is not None and len(info.shape) != 0:
        raise ShapeError(f"{what} must be a scalar, got shape {list(info.shape)}")
    values = int_values(info)
    if values is None:
        return None
    if values[0] <= 0:
        raise ShapeError(f"{what} must be positive, got {values[0]}")
    return values[0]


def _check_window(window: TensorInfo, frame_size: int | None) -> None:
    if window.shape is not None and len(window.shape) != 1:
        raise ShapeError(f"window must be 1-D, got shape {list(window.shape)}")
    if window.shape is None or frame_size is None or not isinstance(window.shape[0], int):
        return
    if not 0 < window.shape[0] <= frame_size:
        raise ShapeError(f"window of {window.shape[0]} values: must be 1..frame_size "
                         f"({frame_size})")  # fmt: skip


def _same_type(inputs: Sequence[TensorInfo]) -> None:
    a, b = inputs[0].element_type, inputs[1].element_type
    if a is not None and b is not None and a != b:
        raise ShapeError(f"window is {b.name}, the data {a.name}: they must be the same")


def _frames(length: Dim, frame_size: int, step: int) -> Dim:
    """How many whole frames fit in a signal of ``length`` samples."""
    if isinstance(length, int):
        if frame_size > length:
            raise ShapeError(f"frame_size {frame_size} is more than the {length} samples")
        return (length - frame_size) // step + 1
    lo = max(length.lo - frame_size, 0) // step + 1
    if length.hi is not None and frame_size > length.hi:
        raise ShapeError(f"frame_size {frame_size} is more than the at most {length.hi} samples")
    return Interval(lo, None if length.hi is None else (length.hi - frame_size) // step + 1)


def _infer_stft(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    signal, window, size_info, step_info = inputs
    _same_type(inputs)
    frame_size = _scalar_input(size_info, "frame_size")
    step = _scalar_input(step_info, "frame_step")
    _check_window(window, frame_size)
    et = signal.element_type
    if signal.shape is None:
        return [TensorInfo(None, et)]
    if len(signal.shape) not in (1, 2):
        raise ShapeError(f"the signal must be 1-D or 2-D, got shape {list(signal.shape)}")
    batch = tuple(signal.shape[:-1])
    if frame_size is None or step is None:
        return [TensorInfo((*batch, UNKNOWN, UNKNOWN, 2), et)]
    frames, bins = _frames(signal.shape[-1], frame_size, step), frame_size // 2 + 1
    return [TensorInfo((*batch, *((bins, frames) if a.transpose_frames else (frames, bins)), 2),
                       et)]  # fmt: skip


def _padded_window(window: np.ndarray, frame_size: int) -> np.ndarray:
    """``window`` zero-padded to ``frame_size`` around its centre, in f64."""
    padded = np.zeros(frame_size)
    left = (frame_size - window.shape[0]) // 2
    padded[left:left + window.shape[0]] = window
    return padded


def _frame_index(frames: int, frame_size: int, step: int) -> np.ndarray:
    return np.arange(frames)[:, None] * step + np.arange(frame_size)


def _stft(a: SimpleNamespace, signal: np.ndarray, window: np.ndarray, frame_size: np.ndarray,
          frame_step: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    """Frames ``[..., frames, frame_size]`` by fancy indexing, windowed, ``rfft`` each."""
    infos = [TensorInfo(signal.shape, None), TensorInfo(window.shape, None),
             TensorInfo((), None, frame_size), TensorInfo((), None, frame_step)]  # fmt: skip
    try:
        _infer_stft(a, infos)
    except ShapeError as e:
        raise KernelError(str(e)) from e
    size, step = int(frame_size), int(frame_step)
    frames = (signal.shape[-1] - size) // step + 1
    framed = signal.astype(np.float64)[..., _frame_index(frames, size, step)]
    spectrum = np.fft.rfft(framed * _padded_window(window.astype(np.float64), size), axis=-1)
    out = _real_imag(spectrum, signal.dtype)  # [..., frames, bins, 2]
    return (np.swapaxes(out, -3, -2).copy() if a.transpose_frames else out,)


def _infer_istft(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, window, size_info, step_info = inputs[:4]
    _same_type(inputs)
    frame_size = _scalar_input(size_info, "frame_size")
    step = _scalar_input(step_info, "frame_step")
    _check_window(window, frame_size)
    length = None
    if len(inputs) > 4:
        length = scalar_like(inputs[4], "signal_length")
        et = inputs[4].element_type
        if et is not None and et.name not in INDEX_TYPES:
            raise ShapeError(f"signal_length must be i32 or i64, got {et.name}")
        if length is not None and length < 0:
            raise ShapeError(f"signal_length must not be negative, got {length}")
    et = data.element_type
    if data.shape is None:
        return [TensorInfo(None, et)]
    if len(data.shape) not in (3, 4):
        raise ShapeError(f"the data must be 3-D or 4-D, got shape {list(data.shape)}")
    _check_complex(data)
    bins, frames = data.shape[-3], data.shape[-2]
    if frame_size is not None and isinstance(bins, int) and bins != frame_size // 2 + 1:
        raise ShapeError(f"the data's {bins} bins must be frame_size // 2 + 1 = "
                         f"{frame_size // 2 + 1}")  # fmt: skip
    batch = tuple(data.shape[:-3])
    if len(inputs) > 4:
        return [TensorInfo((*batch, UNKNOWN if length is None else length), et)]
    if frame_size is None or step is None:
        return [TensorInfo((*batch, UNKNOWN), et)]
    extra = frame_size - 2 * (frame_size // 2) if a.center else frame_size
    # No frames count as one, as OpenVINO's dim arithmetic has it.
    if isinstance(frames, int):
        out: Dim = max(frames - 1, 0) * step + extra
    else:
        out = Interval(max(frames.lo - 1, 0) * step + extra,
                       None if frames.hi is None else max(frames.hi - 1, 0) * step + extra)
    return [TensorInfo((*batch, out), et)]


def _istft(a: SimpleNamespace, data: np.ndarray, window: np.ndarray, frame_size: np.ndarray,
           frame_step: np.ndarray, signal_length: np.ndarray | None = None
           ) -> tuple[np.ndarray]:  # fmt: skip
    """``irfft`` of every frame, windowed and overlap-added by ``np.add.at``, divided by
    the overlap-added squared window."""
    infos = [TensorInfo(data.shape, None), TensorInfo(window.shape, None),
             TensorInfo((), None, frame_size), TensorInfo((), None, frame_step)]  # fmt: skip
    if signal_length is not None:
        infos.append(TensorInfo(signal_length.shape, None, signal_length))
    try:
        (out_info,) = _infer_istft(a, infos)
    except ShapeError as e:
        raise KernelError(str(e)) from e
    size, step = int(frame_size), int(frame_step)
    frames = data.shape[-2]
    full = (frames - 1) * step + size
    spectrum = np.swapaxes(_complex(data), -1, -2)  # [..., frames, bins]
    framed = np.fft.irfft(spectrum, n=size, axis=-1) if frames else \
        np.zeros((*spectrum.shape[:-1], size))  # fmt: skip
    index = _frame_index(frames, size, step)
    padded = _padded_window(window.astype(np.float64), size)
    summed = np.zeros((*data.shape[:-3], max(full, 0)))
    np.add.at(summed, (..., index), framed * padded)
    window_sum = np.zeros(max(full, 0))
    np.add.at(window_sum, index, np.broadcast_to(padded * padded, index.shape))
    scale = math.sqrt(size) if a.normalized else 1.0
    nonzero = window_sum != 0
    restored = np.where(nonzero, summed * scale / np.where(nonzero, window_sum, 1.0), 0.0)
    length = out_info.shape[-1]
    margin = size // 2 if a.center else 0
    out = np.zeros((*data.shape[:-3], length))
    kept = max(min(length, full - margin), 0)
    out[..., :kept] = restored[..., margin:margin + kept]
    return (out.astype(data.dtype),)


def _fft_scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                 outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """A complex128 copy of the input and the result (8 bytes per real element each) and
    the f64 pair the result rounds from: measured at most 22 bytes per element of the
    larger tensor."""
    return 24 * largest([*inputs[:1], *outputs])


def _stft_scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                  outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The f64 frames (about as many samples as the output has elements) and their
    complex128 spectrum: measured at most 28 bytes per element of the larger tensor."""
    return 32 * largest([*inputs[:1], *outputs])


for _type, _infer, _kernel in (("DFT", _infer_dft, _dft(False)), ("IDFT", _infer_dft, _dft(True))):
    register(OpDef(type=_type, version=7, since_opset=7, attrs=(), infer=_infer, kernel=_kernel,
                   inputs=(2, 3), input_types=(FFT_TYPES, INDEX_TYPES, INDEX_TYPES),
                   scratch=_fft_scratch))  # fmt: skip
register(OpDef(type="RDFT", version=9, since_opset=9, attrs=(), infer=_infer_rdft, kernel=_rdft,
               inputs=(2, 3), input_types=(FFT_TYPES, INDEX_TYPES, INDEX_TYPES),
               scratch=_fft_scratch))
register(OpDef(type="IRDFT", version=9, since_opset=9, attrs=(), infer=_infer_irdft,
               kernel=_irdft, inputs=(2, 3), input_types=(FFT_TYPES, INDEX_TYPES, INDEX_TYPES),
               scratch=_fft_scratch))  # fmt: skip
register(OpDef(type="STFT", version=15, since_opset=15, attrs=(Attr("transpose_frames", "bool"),),
               infer=_infer_stft, kernel=_stft, inputs=(4, 4),
               input_types=(FLOATS, FLOATS, INDEX_TYPES, INDEX_TYPES), scratch=_stft_scratch))
register(OpDef(type="ISTFT", version=16, since_opset=16,
               attrs=(Attr("center", "bool"), Attr("normalized", "bool")),
               infer=_infer_istft, kernel=_istft, inputs=(4, 5),
               input_types=(FLOATS, FLOATS, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES),
               scratch=_stft_scratch))  # fmt: skip
