"""The fast engine's depthwise convolution (irrun.fast.conv_jit: numba, on where installed).

The NumPy path (irrun.fast.conv_depthwise) is the default install's, and it and the JIT must give
the reference kernel's bits (irrun.ops.convolution.convolve) exactly, element for element (no tolerance: the JIT promises the same
operations in the same order, without fused multiply-adds).  Swept over geometries
(both layouts: flat planes and channels last), strides, dilations, pads, auto_pad,
batch, f32/f64/f16 data and 1/2/3 threads, plus seeded random geometries; then a
loaded model with and without the switch; then the warning when numba is missing.
"""

from __future__ import annotations

import builtins
import itertools
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba not installed")

from openvino import opset1

import irrun
from irrun import threads
from irrun.fast import conv_jit, jit
from irrun.fast import convolution as fast
from irrun.ops import convolution as reference


def convolve(x, w, a):
    """The fast kernel, or the reference where the fast one does not apply."""
    out = fast.convolve(x, w, a)
    return reference.convolve(x, w, a) if out is NotImplemented else out


@pytest.fixture
def switch(monkeypatch):
    """A function that turns the JIT on or off, as IRRUN_JIT would at start-up."""

    def turn(on: bool) -> None:
        monkeypatch.setenv("IRRUN_JIT", "1" if on else "0")
        jit.reset()

    yield turn
    monkeypatch.undo()
    jit.reset()


def _attrs(strides, dilations, pads_begin, pads_end, auto_pad="explicit"):
    return SimpleNamespace(strides=strides, dilations=dilations, pads_begin=pads_begin,
                           pads_end=pads_end, auto_pad=auto_pad)  # fmt: skip


def _both(switch, x, w, a, n_threads):
    """The NumPy path's and the JIT's outputs, on ``n_threads`` threads (the NumPy
    path's checked against the reference's bits first)."""
    out = []
    for on in (False, True):
        switch(on)
        with threads.using(n_threads):
            out.append(convolve(x, w, a))
    _same_bits(reference.convolve(x, w, a), out[0])
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


GEOMETRIES = [
    # (N, C, H, W), kernel, strides, dilations, pads_begin, pads_end
    ((1, 6, 40, 40), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),  # flat planes
    ((2, 5, 37, 41), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((1, 4, 36, 36), (5, 5), (1, 1), (1, 1), (2, 2), (2, 2)),
    ((1, 3, 40, 38), (7, 7), (1, 1), (1, 1), (3, 3), (3, 3)),
    ((1, 4, 40, 40), (3, 3), (3, 2), (2, 1), (0, 2), (1, 0)),
    ((2, 3, 45, 45), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0)),
    ((1, 3, 44, 40), (5, 3), (2, 1), (1, 2), (0, 0), (0, 0)),
    ((1, 2, 34, 34), (3, 3), (1, 1), (1, 1), (6, 0), (0, 5)),  # pads wider than a tap reaches
    ((1, 70, 14, 14), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),  # channels last
    ((2, 96, 7, 7), (5, 5), (1, 1), (1, 1), (2, 2), (2, 2)),
    ((1, 80, 14, 14), (7, 7), (1, 1), (1, 1), (3, 3), (3, 3)),
    ((1, 72, 15, 15), (3, 3), (2, 2), (2, 2), (1, 1), (1, 1)),
    ((1, 64, 9, 9), (1, 1), (2, 2), (1, 1), (1, 1), (0, 0)),
    ((3, 130, 6, 9), (2, 3), (1, 2), (2, 1), (0, 1), (2, 0)),
]


@pytest.mark.parametrize(("geometry", "dtype", "n_threads"), [
    (g, dt, n) for g, (dt, n) in itertools.product(
        GEOMETRIES, [(np.float32, 1), (np.float32, 2), (np.float32, 3), (np.float16, 2),
                     (np.float64, 3)])
], ids=str)  # fmt: skip
def test_the_jit_gives_the_numpy_path_s_bits(geometry, dtype, n_threads, switch):
    shape, kernel, strides, dilations, pb, pe = geometry
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((shape[1], 1, 1, *kernel)).astype(dtype)
    numpy_path, jit = _both(switch, x, w, _attrs(strides, dilations, pb, pe), n_threads)
    _same_bits(numpy_path, jit)


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower", "valid"])
def test_auto_pad_and_1d(auto_pad, switch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 41, 39)).astype(np.float32)
    w = rng.standard_normal((9, 1, 1, 4, 3)).astype(np.float32)
    _same_bits(*_both(switch, x, w, _attrs((2, 1), (1, 1), (0, 0), (0, 0), auto_pad), 2))
    x1 = rng.standard_normal((2, 80, 30)).astype(np.float32)
    w1 = rng.standard_normal((80, 1, 1, 3)).astype(np.float32)
    _same_bits(*_both(switch, x1, w1, _attrs((2,), (2,), (1,), (1,), auto_pad), 2))


def test_random_geometries_and_extreme_values(switch):
    """Seeded random geometries, values across magnitudes, infinities and NaNs: any
    fused multiply-add or reordered sum would show in the last bits somewhere."""
    rng = np.random.default_rng(2026)
    done = 0
    while done < 60:
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 90))
        h, wd = (int(v) for v in rng.integers(1, 36, 2))
        kernel = tuple(int(v) for v in rng.integers(1, 6, 2))
        strides = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilations = tuple(int(v) for v in rng.integers(1, 3, 2))
        pb = tuple(int(v) for v in rng.integers(0, 4, 2))
        pe = tuple(int(v) for v in rng.integers(0, 4, 2))
        reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
        if h + pb[0] + pe[0] < reach[0] or wd + pb[1] + pe[1] < reach[1]:
            continue
        dtype = (np.float32, np.float64)[done % 2]
        x = (rng.standard_normal((n, c, h, wd)) * 10.0 ** rng.integers(-20, 20)).astype(dtype)
        if done % 10 == 0:
            x.flat[rng.integers(0, x.size, 3)] = [np.inf, -np.inf, np.nan]
        w = rng.standard_normal((c, 1, 1, *kernel)).astype(dtype)
        a = _attrs(strides, dilations, pb, pe)
        _same_bits(*_both(switch, x, w, a, 1 + done % 3))
        done += 1


def test_the_jit_runs_when_switched_on(switch, monkeypatch):
    """Not a vacuous comparison: with the switch, the compiled kernels do the work."""
    calls = []
    flat, last = conv_jit.kernels()
    monkeypatch.setattr(conv_jit, "kernels", lambda: (
        lambda *a: (calls.append("flat"), flat(*a)),
        lambda *a: (calls.append("last"), last(*a))))  # fmt: skip
    x = np.ones((1, 70, 40, 40), np.float32)
    w = np.ones((70, 1, 1, 3, 3), np.float32)
    switch(True)
    convolve(x, w, _attrs((1, 1), (1, 1), (1, 1), (1, 1)))  # flat planes
    convolve(x, w, _attrs((4, 4), (1, 1), (1, 1), (1, 1)))  # 10x10 outputs: channels last
    assert calls and set(calls) == {"flat", "last"}
    calls.clear()
    switch(False)
    convolve(x, w, _attrs((1, 1), (1, 1), (1, 1), (1, 1)))
    assert not calls
    # integers stay on NumPy: the JIT takes f32 and f64 (f16 arrives as f32)
    switch(True)
    assert conv_jit.takes(np.ones(1, np.float32)) and not conv_jit.takes(np.ones(1, np.int32))


def test_hand_computed(switch):
    """3x3 ones on a 2x2 plane of 1, 2, 3, 4 with one pad: every window sums the plane."""
    switch(True)
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    w = np.ones((1, 1, 1, 3, 3), np.float32)
    got = convolve(x, w, _attrs((1, 1), (1, 1), (1, 1), (1, 1)))
    assert got.tolist() == [[[[10.0, 10.0], [10.0, 10.0]]]]


def test_a_model_run_with_the_jit_gives_the_default_run_s_bits(tmp_path, switch):
    """Through a loaded model: depthwise (flat, then channels last, strided), on 1 and 2
    threads, with and without IRRUN_JIT."""
    import openvino as ov

    rng = np.random.default_rng(9)
    w1 = rng.standard_normal((96, 1, 1, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((96, 1, 1, 5, 5)).astype(np.float32)
    p = opset1.parameter([2, 96, 40, 40], ov.Type.f32, name="x")
    a = opset1.group_convolution(p, opset1.constant(w1), [1, 1], [1, 1], [1, 1], [1, 1])
    b = opset1.group_convolution(opset1.relu(a), opset1.constant(w2), [2, 2], [2, 2], [2, 2],
                                 [1, 1])  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([b], [p], "m"), path, compress_to_fp16=False)
    x = rng.standard_normal((2, 96, 40, 40)).astype(np.float32)
    outs = []
    for on, n in itertools.product((False, True), (1, 2)):
        switch(on)
        outs.append(next(iter(irrun.load(path, threads=n).run({"x": x}).values())))
    for out in outs[1:]:
        _same_bits(outs[0], out)


def test_missing_numba_warns_once_and_runs_numpy(switch, monkeypatch):
    real_import = builtins.__import__

    def no_numba(name, *args, **kwargs):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_numba)
    try:
        rng = np.random.default_rng(3)
        x = rng.standard_normal((1, 8, 20, 20)).astype(np.float32)
        w = rng.standard_normal((8, 1, 1, 3, 3)).astype(np.float32)
        a = _attrs((1, 1), (1, 1), (1, 1), (1, 1))
        switch(False)
        expected = convolve(x, w, a)
        switch(True)
        with pytest.warns(RuntimeWarning, match=r"pip install 'irrun\[fast\]'"):
            got = convolve(x, w, a)
        _same_bits(expected, got)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            convolve(x, w, a)  # once: no second warning
    finally:
        monkeypatch.setattr(builtins, "__import__", real_import)
        jit.reset()

