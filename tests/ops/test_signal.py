"""DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15 and ISTFT-16 against OpenVINO's CPU plugin, by
hand, and their shape rules against OpenVINO's shape inference.

``ov.Model.evaluate`` has no kernel for these ops, so values come from the CPU plugin
(f32 precision, one thread).  Where the plugin is wrong (RDFT zero-padding an axis or
given a ``signal_size`` of -1, IRDFT padding its last axis: it reads past its input or
fails), it runs on an input that was padded with zeros (or trimmed) beforehand to the
sizes the transform works at, which is what the specification defines ``signal_size``
by; irrun runs the model with the ``signal_size`` input itself.

Tolerances: irrun computes in f64 and rounds once; the plugin computes in f32.  A
transform's error spreads over all its outputs, so the tolerance is absolute, scaled by
the largest magnitude of the expected output: 1e-5 for f32 (transforms of at most a few
thousand points: f32's eps times a few dozen) and f64 (the plugin computes f64 STFT in
f32), 2e-3 for f16 (one f16 ulp of the largest value, plus rounding near it).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset7, opset9, opset15, opset16
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_irrun, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES as ET
from irrun.ir.registry import ShapeError, TensorInfo, resolve

TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-5, np.dtype(np.float16): 2e-3}
FACTORIES = {"DFT": opset7.dft, "IDFT": opset7.idft, "RDFT": opset9.rdft, "IRDFT": opset9.irdft}
OPSETS = {"DFT": "opset7", "IDFT": "opset7", "RDFT": "opset9", "IRDFT": "opset9",
          "STFT": "opset15", "ISTFT": "opset16"}  # fmt: skip


def const(v, dtype=np.int64):
    return opset1.constant(np.array(v, dtype))


def close(got, want, what=""):
    assert_close(got, want, atol=TOL[np.asarray(want).dtype], scaled_atol=True, what=what)


# --------------------------------------------------------------------------- sizes


def resolved(op: str, dims: list[int], axes: list[int], sizes: list[int] | None) -> list[int]:
    """The sizes each axis is transformed at (``-1`` and absent sizes resolved)."""
    s = [dims[a] for a in axes]
    if op == "IRDFT":
        s[-1] = 2 * (s[-1] - 1)
    if sizes is not None:
        s = [old if v == -1 else v for old, v in zip(s, sizes, strict=True)]
    return s


def fitted(x: np.ndarray, axes: list[int], lengths: list[int]) -> np.ndarray:
    """``x`` trimmed or zero-padded at the end of each axis to its length: data prepared
    for the plugin, so that it runs the transform with no signal_size of its own."""
    for axis, n in zip(axes, lengths, strict=True):
        x = np.take(x, np.arange(min(n, x.shape[axis])), axis=axis)
        pad = [(0, 0)] * x.ndim
        pad[axis] = (0, n - x.shape[axis])
        x = np.pad(x, pad)
    return x


def normalized(op: str, rank: int, axes: list[int]) -> list[int]:
    dims = rank if op == "RDFT" else rank - 1
    return [a % dims for a in axes]


def check_fft(op, x, axes, sizes, tmp_path, index=np.int64):
    """irrun's ``op`` with ``sizes`` against the plugin: on the same model for DFT and
    IDFT, on the input fitted beforehand for RDFT and IRDFT (IRDFT's outer axes by the
    plugin's IDFT first)."""
    args = [const(axes, index)] + ([] if sizes is None else [const(sizes, index)])
    factory = FACTORIES[op]
    model = one_op_model(lambda p: factory(p, *args), [x])
    got = run_saved(model, [x], tmp_path)[0]
    ax = normalized(op, x.ndim, axes)
    s = resolved(op, list(x.shape), ax, sizes)
    if 0 in s:  # an empty transform: the plugin crashes on it
        assert got.size == 0 and got.dtype == x.dtype
        return got
    if op in ("DFT", "IDFT"):
        want = run_cpu(model, [x])[0]
    else:
        if op == "RDFT":
            fit = fitted(x, ax, s)
            want = run_cpu(one_op_model(lambda p: factory(p, const(axes, index)), [fit]), [fit])[0]
        else:
            # irfftn is ifft over the outer axes, then irfft over the last: the plugin's
            # IRDFT is given one axis only, whose input is fitted to the onesided length.
            fit = fitted(x, ax, [*s[:-1], s[-1] // 2 + 1])

            def composed(p):
                outer = opset7.idft(p, const(ax[:-1])) if len(ax) > 1 else p
                return factory(outer, const(ax[-1:]), const(s[-1:]))

            want = run_cpu(one_op_model(composed, [fit]), [fit])[0]
    close(got, want, what=f"{op} {x.shape} axes={axes} sizes={sizes}")
    return got


def _fft_cases():
    rng = random.Random(27)
    for i in range(44):
        op = ("DFT", "IDFT", "RDFT", "IRDFT")[i % 4]
        dims = rng.randint(1, 4)
        shape = [rng.randint(1, 7) for _ in range(dims)]
        n = rng.randint(1, dims)
        axes = rng.sample(range(dims), n)
        axes = [a - dims if rng.random() < 0.4 else a for a in axes]
        sizes = None
        if rng.random() < 0.7:
            sizes = [rng.choice((-1, rng.randint(1, 9))) for _ in axes]
        dtype = np.float16 if i % 7 == 3 else np.float32
        index = np.int32 if i % 5 == 2 else np.int64
        full = shape if op == "RDFT" else [*shape, 2]
        yield pytest.param(op, full, axes, sizes, dtype, index,
                           id=f"{op}-{full}-{axes}-{sizes}-{np.dtype(dtype).name}")  # fmt: skip


@pytest.mark.parametrize(("op", "shape", "axes", "sizes", "dtype", "index"), list(_fft_cases()))
def test_fft_matches_cpu(op, shape, axes, sizes, dtype, index, tmp_path):
    x = np.random.default_rng(len(shape) * 7 + sum(shape)).standard_normal(shape).astype(dtype)
    check_fft(op, x, axes, sizes, tmp_path, index)


@pytest.mark.parametrize(("op", "axes", "sizes"), [
    ("RDFT", [2], [6]), ("RDFT", [-1, 0], [4, 2]),
    ("IRDFT", [2], [11]), ("IRDFT", [1], [7]), ("IRDFT", [1, 2], [5, 15]),
    ("IRDFT", [-1, 0], [4, 3]), ("IRDFT", [0], None), ("RDFT", [1], None),
])  # fmt: skip
def test_real_transforms_match_cpu_where_it_trims(op, axes, sizes, tmp_path):
    # Sizes the plugin handles itself: no padding of RDFT's axes or IRDFT's last axis.
    # (Where it pads them, it reads and writes past its buffers: the heap it corrupts
    # crashes later tests, so no test runs it there.)
    shape = (3, 5, 8) if op == "RDFT" else (3, 5, 8, 2)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    args = [const(axes)] + ([] if sizes is None else [const(sizes)])
    got, want = run_both(lambda p: FACTORIES[op](p, *args), [x], tmp_path)
    close(got, want)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("DFT", "IDFT", "RDFT", "IRDFT")), st.data())
def test_fft_sweep(op, data):
    rank = data.draw(st.integers(1, 4), label="dims")
    shape = data.draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank), label="shape")
    axes = data.draw(st.permutations(range(rank)).map(lambda p: p[:max(1, len(p) // 2 + 1)]),
                     label="axes")  # fmt: skip
    axes = [a - rank if data.draw(st.booleans(), label="negative") else a for a in axes]
    sizes = data.draw(st.one_of(st.none(), st.lists(st.integers(-1, 12), min_size=len(axes),
                                                    max_size=len(axes))), label="sizes")  # fmt: skip
    if sizes is not None:
        sizes = [-1 if s == 0 else s for s in sizes]
    if op == "IRDFT" and sizes is None and shape[axes[-1]] == 1:
        shape[axes[-1]] = 2  # a default length of 0 gives an empty output
    if op == "IRDFT" and sizes is not None and sizes[-1] == -1 and shape[axes[-1]] == 1:
        sizes[-1] = 3
    full = shape if op == "RDFT" else [*shape, 2]
    x = np.random.default_rng(sum(full)).standard_normal(full).astype(np.float32)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        check_fft(op, x, axes, sizes, Path(tmp))


def test_bf16_goes_through_f32(tmp_path):
    # The tests' parameters cannot be bf16: convert to it in the model.
    x = np.random.default_rng(5).standard_normal((4, 6, 2)).astype(np.float32)

    def build(p):
        y = opset7.dft(opset1.convert(p, "bf16"), const([0, 1]), const([5, -1]))
        return opset1.convert(y, "f32")

    got, want = run_both(build, [x], tmp_path)
    assert_close(got, want, atol=1e-2, scaled_atol=True)


# --------------------------------------------------------------------------- by hand


def test_by_hand(tmp_path):
    impulse = np.zeros((4, 2), np.float32)
    impulse[0, 0] = 1
    got = run_irrun(lambda p: opset7.dft(p, const([0])), [impulse], tmp_path)
    np.testing.assert_allclose(got, [[1, 0]] * 4, atol=1e-7)  # an impulse: all ones
    got = run_irrun(lambda p: opset7.idft(p, const([0]), const([2])), [impulse], tmp_path)
    np.testing.assert_allclose(got, [[0.5, 0]] * 2, atol=1e-7)  # trimmed to 2, over 2
    ramp = np.array([1, 2, 3, 4], np.float32)
    got = run_irrun(lambda p: opset9.rdft(p, const([0])), [ramp], tmp_path)
    np.testing.assert_allclose(got, [[10, 0], [-2, 2], [-2, 0]], atol=1e-6)
    got = run_irrun(lambda p: opset9.rdft(p, const([0]), const([6])), [ramp], tmp_path)
    # [1, 2, 3, 4, 0, 0]: bin 3 is 1 - 2 + 3 - 4 = -2
    assert got.shape == (4, 2) and np.allclose(got[0], [10, 0]) and np.allclose(got[3], [-2, 0])
    spectrum = np.array([[10, 0], [-2, 2], [-2, 0]], np.float32)
    got = run_irrun(lambda p: opset9.irdft(p, const([-1])), [spectrum], tmp_path)
    np.testing.assert_allclose(got, [1, 2, 3, 4], atol=1e-6)
    # STFT of a constant 1 with a rectangular window: frame_size in bin 0, nothing else.
    ones = np.ones(10, np.float32)
    got = run_irrun(lambda p, w: opset15.stft(p, w, const(4), const(3), False),
                    [ones, np.ones(4, np.float32)], tmp_path)  # fmt: skip
    want = np.zeros((3, 3, 2), np.float32)
    want[:, 0, 0] = 4
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize(("center", "normalized"), [(False, False), (True, True), (True, False)])
def test_istft_inverts_stft(center, normalized, tmp_path):
    # A Hann window with 75% overlap: ISTFT(STFT(x)) is x where the frames cover it.
    x = np.random.default_rng(9).standard_normal((2, 64)).astype(np.float32)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)).astype(np.float32)
    spec = run_irrun(lambda p, w: opset15.stft(p, w, const(16), const(4), True),
                     [x, window], tmp_path)  # fmt: skip
    if normalized:
        spec = spec / np.float32(4)  # sqrt(16)
    signal = x[:, 8:] if center else x
    got = run_irrun(lambda p, w: opset16.istft(p, w, const(16), const(4), center, normalized,
                                               const(signal.shape[1])), [spec, window], tmp_path)
    np.testing.assert_allclose(got[:, 4:-12], signal[:, 4:-12], atol=1e-5)


# --------------------------------------------------------------------------- STFT, ISTFT


def _stft_cases():
    rng = random.Random(15)
    for i in range(16):
        frame = rng.randint(1, 12)
        length = rng.randint(frame, 30)
        shape = [length] if i % 4 == 0 else [rng.randint(1, 3), length]
        window, step = rng.randint(1, frame), rng.randint(1, 8)
        dtype = (np.float32, np.float32, np.float16, np.float64)[i % 4]
        yield pytest.param(shape, window, frame, step, bool(i % 2), dtype,
                           id=f"{shape}-w{window}-f{frame}-s{step}-{i % 2}-"
                              f"{np.dtype(dtype).name}")  # fmt: skip


@pytest.mark.parametrize(("shape", "window", "frame", "step", "transpose", "dtype"),
                         list(_stft_cases()))  # fmt: skip
def test_stft_matches_cpu(shape, window, frame, step, transpose, dtype, tmp_path):
    rng = np.random.default_rng(frame * 31 + step)
    inputs = [rng.standard_normal(shape).astype(dtype),
              rng.uniform(0.1, 1.0, window).astype(dtype)]  # fmt: skip
    got, want = run_both(lambda s, w: opset15.stft(s, w, const(frame), const(step), transpose),
                         inputs, tmp_path)  # fmt: skip
    close(got, want)


def _istft_cases():
    rng = random.Random(16)
    for i in range(20):
        frame, step = rng.randint(2, 12), rng.randint(1, 14)
        frames = rng.randint(1, 7)
        shape = [frame // 2 + 1, frames, 2]
        if i % 3:
            shape = [rng.randint(1, 3), *shape]
        length = (None, None, 0.5, 1.5, "one")[i % 5]
        dtype = (np.float32, np.float32, np.float16, np.float64)[i % 4]
        yield pytest.param(shape, rng.randint(1, frame), frame, step, bool(i % 2),
                           bool(i // 2 % 2), length, dtype,
                           id=f"{shape}-f{frame}-s{step}-{i % 2}-{i // 2 % 2}-{length}-"
                              f"{np.dtype(dtype).name}")  # fmt: skip


@pytest.mark.parametrize(("shape", "window", "frame", "step", "center", "normalized", "length",
                          "dtype"), list(_istft_cases()))  # fmt: skip
def test_istft_matches_cpu(shape, window, frame, step, center, normalized, length, dtype,
                           tmp_path):  # fmt: skip
    rng = np.random.default_rng(frame * 17 + step)
    inputs = [rng.standard_normal(shape).astype(dtype),
              rng.uniform(0.1, 1.0, window).astype(dtype)]  # fmt: skip
    extra = []
    if length is not None:
        full = (shape[-2] - 1) * step + frame
        n = max(1, int(full * length)) if length != "one" else 5
        extra = [const([n]) if length == "one" else const(n, np.int32)]
    got, want = run_both(lambda d, w: opset16.istft(d, w, const(frame), const(step), center,
                                                    normalized, *extra), inputs, tmp_path)
    close(got, want)


# --------------------------------------------------------------------------- shape rules


def _info(shape, value=None, et="i64"):
    return TensorInfo(shape, ET[et], None if value is None else np.array(value, np.int64))


def irrun_shape(op, attrs, infos):
    return resolve(op, OPSETS[op]).infer(SimpleNamespace(**attrs), infos)[0].shape


def ov_input(shape, value, et=ov.Type.i64):
    if value is None:
        return opset1.parameter(to_ov_shape(shape), et)
    return opset1.constant(np.array(value, np.int64 if et == ov.Type.i64 else np.int32))


FFT_SHAPES = [
    ("DFT", [Interval(0, None), 5, Interval(2, 8), 2], [1, 2], "none"),
    ("DFT", [Interval(0, None), 5, Interval(2, 8), 2], [1, 2], [7, -1]),
    ("DFT", [3, 5, 8, 2], None, "none"),
    ("DFT", [3, 5, 8, 2], None, [3, 4]),
    ("DFT", [3, 5, 8, 2], [2, 0], None),
    ("IDFT", [3, 5, Interval(0, None)], [-2], [0]),
    ("IDFT", [3, 5, Interval(1, 3)], [0, 1], "none"),
    ("RDFT", [Interval(0, None), 5, Interval(2, 8)], [1, 2], "none"),
    ("RDFT", [Interval(0, None), 5, Interval(2, 8)], [2, 1], [7, -1]),
    ("RDFT", [3, 5, 8], None, "none"),
    ("RDFT", [8], [0], [3]),
    ("RDFT", [3, 5, 8], [-3], "none"),
    ("IRDFT", [Interval(0, None), 5, Interval(1, 8), 2], [1, 2], "none"),
    ("IRDFT", [Interval(0, None), 5, Interval(2, 8), 2], [2, 1], [7, -1]),
    ("IRDFT", [3, 5, 8, 2], None, "none"),
    ("IRDFT", [3, 5, 8, 2], None, [3, 4]),
    ("IRDFT", [3, 1, 2], [1], "none"),
    ("IRDFT", [3, 5, 2], [0, 1], [0, 3]),
]  # fmt: skip


@pytest.mark.parametrize(("op", "shape", "axes", "sizes"), FFT_SHAPES)
def test_fft_shape_rule_matches_openvino(op, shape, axes, sizes):
    n = 2 if axes is None else len(axes)
    inputs = [opset1.parameter(to_ov_shape(shape), ov.Type.f32), ov_input([n], axes)]
    infos = [TensorInfo(tuple(shape), ET["f32"]), _info((n,), axes)]
    if sizes != "none":
        inputs.append(ov_input([n], sizes))
        infos.append(_info((n,), sizes))
    want = from_ov_shape(FACTORIES[op](*inputs).get_output_partial_shape(0))
    assert irrun_shape(op, {}, infos) == want


@pytest.mark.parametrize("op", ["RDFT", "IRDFT"])
def test_unknown_signal_size_makes_every_axis_unknown(op):
    # OpenVINO keeps the input's dim on an axis other than the last (8 here), though the
    # run gives it the signal size; irrun does not know it.
    shape = (3, 5, 8) if op == "RDFT" else (3, 5, 8, 2)
    node = FACTORIES[op](opset1.parameter(list(shape)), const([2, 0]),
                         opset1.parameter([2], ov.Type.i64))  # fmt: skip
    tail = (2,) if op == "RDFT" else ()
    assert from_ov_shape(node.get_output_partial_shape(0)) == (Interval(0, None), 5, 8, *tail)
    infos = [TensorInfo(shape, ET["f32"]), _info((2,), [2, 0]), _info((2,))]
    # RDFT's onesided axis has at least 1 bin.
    first = Interval(1, None) if op == "RDFT" else Interval(0, None)
    assert irrun_shape(op, {}, infos) == (first, 5, Interval(0, None), *tail)


STFT_SHAPES = [
    ([20], [5], 8, 3, False), ([2, 20], [5], 8, 3, True), ([2, 20], [5], 20, 3, False),
    ([Interval(0, None), Interval(10, 30)], [Interval(0, None)], 8, 3, False),
    ([Interval(0, None), Interval(0, None)], [Interval(0, None)], 8, 3, True),
    ([2, 20], [5], None, 3, True), ([20], [5], 8, None, False),
]  # fmt: skip


@pytest.mark.parametrize(("signal", "window", "frame", "step", "transpose"), STFT_SHAPES)
def test_stft_shape_rule_matches_openvino(signal, window, frame, step, transpose):
    node = opset15.stft(opset1.parameter(to_ov_shape(signal)),
                        opset1.parameter(to_ov_shape(window)),
                        ov_input([], frame), ov_input([], step), transpose)  # fmt: skip
    infos = [TensorInfo(tuple(signal), ET["f32"]), TensorInfo(tuple(window), ET["f32"]),
             _info((), frame), _info((), step)]  # fmt: skip
    want = from_ov_shape(node.get_output_partial_shape(0))
    assert irrun_shape("STFT", {"transpose_frames": transpose}, infos) == want


ISTFT_SHAPES = [
    ([5, 6, 2], 8, 3, False, "none"), ([5, 6, 2], 8, 3, True, "none"),
    ([2, 6, 9, 2], 11, 3, True, "none"), ([2, 7, 9, 2], 13, 3, True, "none"),
    ([4, 5, 6, 2], 8, 3, False, 30), ([4, 5, 6, 2], 8, 3, False, [30]),
    ([4, 5, 6, 2], 8, 3, False, 0), ([4, 5, 6, 2], 8, 3, False, None),
    ([4, 5, 6, 2], None, 3, False, "none"),
    ([Interval(0, None), 5, Interval(2, 9), 2], 8, 3, True, "none"),
    ([Interval(0, None), 5, Interval(0, 9), 2], 8, 3, False, "none"),
    ([5, 0, 2], 8, 3, True, "none"), ([5, 0, 2], 8, 3, False, "none"),
    ([5, 0, 2], 9, 3, True, "none"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "frame", "step", "center", "length"), ISTFT_SHAPES)
def test_istft_shape_rule_matches_openvino(data, frame, step, center, length):
    inputs = [opset1.parameter(to_ov_shape(data)), opset1.parameter([7]),
              ov_input([], frame), ov_input([], step)]  # fmt: skip
    infos = [TensorInfo(tuple(data), ET["f32"]), TensorInfo((7,), ET["f32"]),
             _info((), frame), _info((), step)]  # fmt: skip
    if length != "none":
        shape = [1] if isinstance(length, list) else []
        inputs.append(ov_input(shape, length))
        infos.append(_info(tuple(shape), length))
    want = from_ov_shape(opset16.istft(*inputs[:4], center, False, *inputs[4:])
                         .get_output_partial_shape(0))  # fmt: skip
    assert irrun_shape("ISTFT", {"center": center, "normalized": False}, infos) == want


SHAPE_ERRORS = [
    ("DFT", [(3, 5, 8, 3), (1,)], [None, [0]], "last dim of a complex input must be 2"),
    ("DFT", [(3, 5, 8, 2), (1,)], [None, [3]], r"axis 3 is out of range .* \(allowed -3..2\)"),
    ("DFT", [(3, 5, 8, 2), (1,)], [None, [-4]], "axis -4 is out of range"),
    ("IDFT", [(3, 5, 8, 2), (2,)], [None, [0, -3]], "name a dim twice"),
    ("DFT", [(3, 2), (2,)], [None, [0, 1]], "2 axes for a tensor of 1 complex dims"),
    ("DFT", [(3, 5, 2), (2,), (1,)], [None, [0, 1], [3]], "signal_size has 1 values for 2"),
    ("DFT", [(3, 5, 2), (1, 2)], [None, [[0, 1]]], "axes must be 1-D"),
    ("DFT", [(2,), (1,)], [None, [0]], "rank 2 or more"),
    ("IRDFT", [(3, 5, 2), (2,), (2,)], [None, [0, 1], [2, -2]], "must be -1 .* or a size"),
    ("RDFT", [(), (1,)], [None, [0]], "rank 1 or more"),
    ("RDFT", [(3, 5), (1,)], [None, [2]], r"allowed -2..1"),
]  # fmt: skip


@pytest.mark.parametrize(("op", "shapes", "values", "says"), SHAPE_ERRORS)
def test_fft_shape_rule_errors(op, shapes, values, says):
    infos = [TensorInfo(shapes[0], ET["f32"])] + [
        _info(s, v) for s, v in zip(shapes[1:], values[1:], strict=True)]
    with pytest.raises(ShapeError, match=says):
        irrun_shape(op, {}, infos)


@pytest.mark.parametrize(("op", "data", "window", "frame", "step", "says"), [
    ("STFT", (2, 20), (5,), 21, 3, "frame_size 21 is more than the 20 samples"),
    ("STFT", (2, 20), (5,), 0, 3, "frame_size must be positive"),
    ("STFT", (2, 20), (5,), 8, 0, "frame_step must be positive"),
    ("STFT", (2, 20), (9,), 8, 3, r"window of 9 values: must be 1..frame_size \(8\)"),
    ("STFT", (1, 2, 20), (5,), 8, 3, "must be 1-D or 2-D"),
    ("ISTFT", (4, 4, 6, 2), (7,), 8, 3, "4 bins must be frame_size // 2 \\+ 1 = 5"),
    ("ISTFT", (4, 5, 6, 3), (7,), 8, 3, "last dim of a complex input must be 2"),
    ("ISTFT", (5, 2), (7,), 8, 3, "must be 3-D or 4-D"),
    ("ISTFT", (5, 6, 2), (7,), 8, -1, "frame_step must be positive"),
])  # fmt: skip
def test_stft_shape_rule_errors(op, data, window, frame, step, says):
    infos = [TensorInfo(data, ET["f32"]), TensorInfo(window, ET["f32"]), _info((), frame),
             _info((), step)]  # fmt: skip
    attrs = {"transpose_frames": False} if op == "STFT" else {"center": False,
                                                              "normalized": False}
    with pytest.raises(ShapeError, match=says):
        irrun_shape(op, attrs, infos)


def test_types_are_checked():
    with pytest.raises(ShapeError, match="f64"):
        irrun_shape("DFT", {}, [TensorInfo((3, 2), ET["f64"]), _info((1,), [0])])
    with pytest.raises(ShapeError, match="f32"):
        irrun_shape("RDFT", {}, [TensorInfo((3,), ET["f32"]), TensorInfo((1,), ET["f32"])])
    with pytest.raises(ShapeError, match="window is f16, the data f32"):
        irrun_shape("STFT", {"transpose_frames": True},
                    [TensorInfo((20,), ET["f32"]), TensorInfo((4,), ET["f16"]),
                     _info((), 8), _info((), 2)])  # fmt: skip
    with pytest.raises(ShapeError, match="signal_length must not be negative"):
        irrun_shape("ISTFT", {"center": True, "normalized": False},
                    [TensorInfo((5, 6, 2), ET["f32"]), TensorInfo((4,), ET["f32"]),
                     _info((), 8), _info((), 2), _info((), -1)])  # fmt: skip


# --------------------------------------------------------------------------- run-time errors


def test_axes_known_only_at_run_time_are_checked(tmp_path):
    x = np.zeros((3, 4, 2), np.float32)
    model = one_op_model(lambda p, a: opset7.dft(p, a), [x, np.array([0], np.int64)])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    got = loaded.run({"in0": x, "in1": np.array([-1], np.int64)})
    assert next(iter(got.values())).shape == (3, 4, 2)
    with pytest.raises(irrun.IrrunError, match="axis 2 is out of range"):
        loaded.run({"in0": x, "in1": np.array([2], np.int64)})


def test_signal_sizes_known_only_at_run_time(tmp_path):
    x = np.random.default_rng(1).standard_normal((3, 4, 2)).astype(np.float32)
    sizes = np.array([5, -1], np.int64)
    got, want = run_both(lambda p, s: opset7.idft(p, const([0, 1]), s), [x, sizes], tmp_path)
    assert got.shape == (5, 4, 2)
    close(got, want)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def test_validate_names_the_layer(tmp_path):
    signal = np.zeros((2, 20), np.float32)
    window = np.ones(5, np.float32)
    model = one_op_model(lambda s, w: opset15.stft(s, w, const(8), const(3), True),
                         [signal, window])  # fmt: skip
    bad = saved(model, tmp_path, lambda t: t.replace('transpose_frames="true"',
                                                     'transpose_frames="maybe"'))  # fmt: skip
    found = [d for d in irrun.validate(bad) if d.layer is not None and d.layer.type == "STFT"]
    assert [d.code for d in found] == ["bad-attribute"] and "transpose_frames" in found[0].message

    x = np.zeros((3, 5, 2), np.float32)
    model = one_op_model(lambda p: opset7.dft(p, const([0]), const([7])), [x])

    def wrong_dim(text):  # the output's 7 declared as 6
        return re.sub(r'(names="out">\s*<dim>)7(</dim>)', r"\g<1>6\2", text)

    found = [d for d in irrun.validate(saved(model, tmp_path, wrong_dim))
             if d.layer is not None and d.layer.type == "DFT"]  # fmt: skip
    assert len(found) == 1 and found[0].level == "error" and "7" in found[0].message


def test_stft_of_a_signal_known_only_at_run_time(tmp_path):
    signal = opset1.parameter(ov.PartialShape([2, -1]), ov.Type.f32, name="in0")
    signal.output(0).get_tensor().set_names({"in0"})
    window = opset1.constant(np.hanning(6).astype(np.float32))
    node = opset15.stft(signal, window, const(8), const(3), False)
    model = ov.Model([node.output(0)], [signal], "stft")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    x = np.random.default_rng(4).standard_normal((2, 29)).astype(np.float32)
    got = next(iter(loaded.run({"in0": x}).values()))
    want = run_cpu(model, [x])[0]
    assert got.shape == (2, 8, 5, 2)
    close(got, want)
    with pytest.raises(irrun.IrrunError, match="frame_size 8 is more than the 7 samples"):
        loaded.run({"in0": x[:, :7]})


def test_empty_transforms_give_the_shapes_openvino_infers(tmp_path):
    # The plugin crashes on these; OpenVINO's shape inference gives (0, 3, 2) and (3, 0).
    x = np.ones((3, 5, 2), np.float32)
    got = run_irrun(lambda p: opset7.dft(p, const([0, 1]), const([0, 3])), [x], tmp_path)
    assert got.shape == (0, 3, 2) and got.dtype == np.float32
    got = run_irrun(lambda p: opset9.irdft(p, const([1])), [x[:, :1]], tmp_path)
    assert got.shape == (3, 0)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_stft_and_istft_sweep(data):
    frame = data.draw(st.integers(1, 16), label="frame_size")
    step = data.draw(st.integers(1, 12), label="frame_step")
    window = data.draw(st.integers(1, frame), label="window")
    batch = data.draw(st.sampled_from([(), (1,), (3,)]), label="batch")
    length = data.draw(st.integers(frame, 40), label="length")
    frames = data.draw(st.integers(1, 8), label="frames")
    center, normalized, transpose = (data.draw(st.booleans()) for _ in range(3))
    rng = np.random.default_rng(frame * 100 + step)
    win = rng.uniform(0.1, 1.0, window).astype(np.float32)
    signal = rng.standard_normal((*batch, length)).astype(np.float32)
    spectrum = rng.standard_normal((*batch, frame // 2 + 1, frames, 2)).astype(np.float32)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got, want = run_both(lambda s, w: opset15.stft(s, w, const(frame), const(step), transpose),
                             [signal, win], Path(tmp))  # fmt: skip
        close(got, want, what="STFT")
        if not batch:
            spectrum = spectrum[0] if spectrum.ndim == 4 else spectrum
        def build(d, w):
            return opset16.istft(d, w, const(frame), const(step), center, normalized)

        expected = (frames - 1) * step + (frame % 2 if center else frame)
        if expected == 0:  # the plugin crashes on an empty output
            assert run_irrun(build, [spectrum, win], Path(tmp)).shape == (*batch, 0)
            return
        got, want = run_both(build, [spectrum, win], Path(tmp))
        close(got, want, what="ISTFT")
