"""The fast depthwise and grouped convolution paths (irrun.ops.conv_depthwise).

Values against the CPU plugin across the geometry (kernels 1/3/5/7, strides, dilations,
pads, auto_pad, 1-D and 2-D, batch > 1, channel multipliers, f32 and f16), with the
tolerance of tests/test_ops_compute.py's convolutions: the plugin sums in another
order, so values agree within rounding (rtol 1e-4, atol 1e-5 of the largest output;
f16 outputs within one f16 rounding, 1e-3).  Then the properties the paths promise:
the same bits for any thread count, depthwise the same bits as the plain tap loop,
and where the fast paths must not apply.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from openvino import opset1

import irrun
from irrun import threads
from irrun.ops import conv_depthwise, conv_taps, convolution
from irrun.ops.convolution import convolve
from tests.ov_oneop import assert_close, run_both

F32_TOL = {"rtol": 1e-4, "atol": 1e-5}  # as the convolutions of test_ops_compute.py
F16_TOL = {"rtol": 1e-3, "atol": 1e-3}  # one f16 rounding of the output (2^-11 ~ 5e-4)
F64_TOL = F32_TOL  # the CPU plugin computes an f64 convolution in f32


def _case(shape, groups, co, ci, kernel, strides, pads_begin=None, pads_end=None,
          dilations=None, auto_pad="explicit", dtype=np.float32):  # fmt: skip
    n = len(kernel)
    return SimpleNamespace(
        shape=shape, groups=groups, co=co, ci=ci, kernel=kernel, strides=strides,
        pads_begin=pads_begin or (0,) * n, pads_end=pads_end or (0,) * n,
        dilations=dilations or (1,) * n, auto_pad=auto_pad, dtype=dtype,
    )  # fmt: skip


CASES = [
    # depthwise, flat planes (large outputs)
    _case((1, 6, 40, 40), 6, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 5, 37, 41), 5, 1, 1, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 4, 36, 36), 4, 1, 1, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 3, 40, 38), 3, 1, 1, (7, 7), (1, 1), (3, 3), (3, 3)),
    _case((1, 4, 40, 40), 4, 1, 1, (3, 3), (3, 2), (0, 2), (1, 0), (2, 1)),
    _case((2, 3, 45, 45), 3, 1, 1, (1, 1), (1, 1)),
    _case((1, 3, 44, 40), 3, 1, 1, (5, 3), (2, 1), (0, 0), (0, 0), (1, 2)),
    _case((1, 4, 41, 39), 4, 1, 1, (3, 3), (2, 2), auto_pad="same_upper"),
    _case((1, 4, 41, 39), 4, 1, 1, (4, 4), (2, 2), auto_pad="same_lower"),
    _case((1, 4, 41, 39), 4, 1, 1, (3, 3), (1, 1), auto_pad="valid"),
    # depthwise, channels last (small outputs, many channels)
    _case((1, 70, 14, 14), 70, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 96, 7, 7), 96, 1, 1, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 80, 14, 14), 80, 1, 1, (7, 7), (1, 1), (3, 3), (3, 3)),
    _case((1, 72, 15, 15), 72, 1, 1, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2)),
    _case((1, 64, 9, 9), 64, 1, 1, (1, 1), (2, 2), (1, 1), (0, 0)),
    # grouped (several input channels per group)
    _case((1, 12, 30, 30), 3, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 16, 29, 31), 2, 8, 8, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 24, 14, 14), 6, 2, 4, (5, 5), (1, 1), (2, 2), (2, 2), (2, 2)),
    _case((1, 8, 20, 20), 4, 3, 2, (7, 7), (3, 3), (3, 3), (0, 0)),
    _case((1, 16, 9, 9), 8, 2, 2, (1, 1), (1, 1)),
    _case((1, 16, 12, 12), 4, 4, 4, (3, 3), (2, 2), auto_pad="same_upper"),
    # ordinary filters with twice the input channels as output ones
    _case((1, 64, 20, 20), 1, 16, 64, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 48, 17, 19), 1, 24, 48, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2)),
    _case((1, 32, 12, 12), 1, 8, 32, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 64, 10, 10), 1, 16, 64, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    # ordinary filters, wide outputs: one GEMM per tap (conv_taps)
    _case((1, 16, 24, 24), 1, 16, 16, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 20, 45, 47), 1, 32, 20, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 24, 30, 30), 1, 24, 24, (5, 5), (1, 1), (2, 2), (2, 2), (2, 2)),
    _case((1, 16, 26, 44), 1, 8, 16, (3, 1), (1, 2), (0, 1), (2, 0), auto_pad="same_upper"),
    _case((1, 16, 24, 24), 1, 16, 16, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    _case((1, 16, 22, 22), 1, 20, 16, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float64),
    # a channel multiplier: one input channel per group, several outputs (plain path)
    _case((1, 6, 16, 16), 6, 3, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    # 1-D
    _case((2, 9, 50), 9, 1, 1, (5,), (2,), (2,), (1,)),
    _case((1, 80, 30), 80, 1, 1, (3,), (1,), (1,), (1,), (2,)),
    _case((1, 12, 33), 3, 2, 4, (3,), (1,), (1,), (1,)),
    # f16
    _case((1, 8, 30, 30), 8, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    _case((1, 96, 10, 10), 96, 1, 1, (5, 5), (2, 2), (2, 2), (2, 2), dtype=np.float16),
    _case((1, 16, 20, 20), 4, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
]


def _inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(case.shape).astype(case.dtype)
    w = rng.standard_normal((case.groups, case.co, case.ci, *case.kernel)).astype(case.dtype)
    return x, w


def _attrs(case):
    return SimpleNamespace(strides=case.strides, dilations=case.dilations,
                           pads_begin=case.pads_begin, pads_end=case.pads_end,
                           auto_pad=case.auto_pad)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.shape}-g{c.groups}-k{c.kernel}"
                         f"-s{c.strides}-d{c.dilations}-{c.auto_pad}-{np.dtype(c.dtype).name}")
def test_matches_the_plugin(case, tmp_path):
    x, w = _inputs(case)
    geometry = (case.strides, case.pads_begin, case.pads_end, case.dilations, case.auto_pad)
    got, want = run_both(
        lambda p: opset1.group_convolution(p, opset1.constant(w), *geometry), [x], tmp_path)
    tol = {np.float16: F16_TOL, np.float64: F64_TOL}.get(case.dtype, F32_TOL)
    assert_close(got, want, **tol, scaled_atol=True, what=str(vars(case)))


def test_the_cases_take_the_fast_paths(monkeypatch):
    """Every case but the channel multiplier and the pointwise ones (1x1 at stride 1
    without pads: one product with the input as it lies) goes through conv_depthwise,
    every layout, or conv_taps."""
    seen = []
    for module, name in ((conv_depthwise, "_flat"), (conv_depthwise, "_channels_last"),
                         (conv_depthwise, "grouped"), (conv_taps, "convolve")):  # fmt: skip
        real = getattr(module, name)

        def spy(*args, real=real, name=name):
            seen.append(name)
            return real(*args)

        monkeypatch.setattr(module, name, spy)
    for case in CASES:
        seen.clear()
        x, w = _inputs(case)
        convolve(x, w, _attrs(case))
        multiplier = case.ci == 1 and case.co > 1
        pointwise = convolution._pointwise(_attrs(case), case.kernel)
        assert bool(seen) != (multiplier or pointwise), vars(case)
    assert {"_flat", "_channels_last", "grouped", "taps"} <= set(_all_paths())


def _all_paths():
    paths = set()
    for case in CASES:
        x, _ = _inputs(case)
        win = convolution.Windows.of(x.shape[2:], convolution._geometry(_attrs(case),
                                                                         case.kernel))
        if conv_taps.takes(x, case.groups, case.co, case.ci, win, np.float32):
            paths.add("taps")
        elif case.co == case.ci == 1:
            small = np.prod(win.out) <= conv_depthwise._NHWC_POSITIONS
            paths.add("_channels_last" if small else "_flat")
        elif case.ci > 1:
            paths.add("grouped")
    return paths


@pytest.mark.parametrize("case", [c for c in CASES if not (c.ci == 1 and c.co > 1)][::2],
                         ids=lambda c: f"{c.shape}-g{c.groups}-k{c.kernel}-s{c.strides}")
def test_the_same_bits_for_any_thread_count(case, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "_THREAD_WORK", 1)  # these small cases split too
    x, w = _inputs(case, seed=3)
    a = _attrs(case)
    outs = []
    for n in (1, 2, 3):
        with threads.using(n):
            outs.append(convolve(x, w, a))
    for out in outs[1:]:
        assert out.dtype == outs[0].dtype
        assert np.array_equal(out, outs[0])


def test_blocks_of_a_few_planes_give_the_same_bits(monkeypatch):
    """Many small blocks (a block of one plane, rows one by one) on three threads change
    nothing."""
    splits = []
    real = threads.map_blocks
    monkeypatch.setattr(threads, "map_blocks", lambda fn, n, min_block=1: (
        splits.append((threads.current(), n // min_block)), real(fn, n, min_block))[1])  # fmt: skip
    rng = np.random.default_rng(5)
    for shape, w_shape in [((2, 20, 66, 67), (20, 1, 1, 3, 3)),
                           ((2, 96, 9, 9), (96, 1, 1, 5, 5)),
                           ((2, 12, 31, 29), (3, 4, 4, 3, 3))]:  # fmt: skip
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        for strides in [(1, 1), (2, 2)]:
            a = SimpleNamespace(strides=strides, dilations=(1, 1), pads_begin=(1, 1),
                                pads_end=(1, 1), auto_pad="explicit")  # fmt: skip
            whole = convolve(x, w, a)
            with monkeypatch.context() as m:
                m.setattr(conv_depthwise, "_BLOCK_BYTES", 1)
                m.setattr(conv_depthwise, "_BLOCK_BYTES_LAST", 1)
                m.setattr(conv_depthwise, "_THREAD_WORK", 1)
                with threads.using(3):
                    small = convolve(x, w, a)
            assert np.array_equal(whole, small), (shape, strides)
    # Every call on three threads was free to give a block to each of them.
    assert len(splits) >= 6 and all(most >= 3 for n, most in splits if n == 3)


def test_depthwise_gives_the_plain_loop_s_bits(monkeypatch):
    """Same products added in the same order as the tap loop it replaces."""
    rng = np.random.default_rng(11)
    for (h, w_), k, s, d, pads in itertools.product([(13, 17), (40, 36)], [1, 3, 5], [1, 2],
                                                    [1, 2], [(0, 0), (2, 1)]):  # fmt: skip
        for channels in (5, 70):
            x = rng.standard_normal((2, channels, h, w_)).astype(np.float32)
            w = rng.standard_normal((channels, 1, 1, k, k)).astype(np.float32)
            a = SimpleNamespace(strides=(s, s), dilations=(d, d), pads_begin=(pads[0],) * 2,
                                pads_end=(pads[1],) * 2, auto_pad="explicit")  # fmt: skip
            fast = convolve(x, w, a)
            with monkeypatch.context() as m:
                m.setattr(conv_depthwise, "applies", lambda *args: False)
                plain = convolve(x, w, a)
            assert np.array_equal(fast, plain), (h, w_, k, s, d, pads, channels)


def test_hand_computed_depthwise():
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    w = np.zeros((2, 1, 1, 3, 3), np.float32)
    w[0, 0, 0, 1, 1] = 2  # channel 0: doubles the centre
    w[1, 0, 0] = 1  # channel 1: the sum of each 3x3 window
    a = SimpleNamespace(strides=(2, 2), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    got = convolve(x, w, a)
    assert got[0, 0].tolist() == [[0.0, 4.0], [16.0, 20.0]]
    c = x[0, 1]
    assert got[0, 1].tolist() == [
        [c[0:2, 0:2].sum(), c[0:2, 1:4].sum()],
        [c[1:4, 0:2].sum(), c[1:4, 1:4].sum()],
    ]


def test_where_the_fast_paths_do_not_apply(monkeypatch):
    called = []
    for name in ("depthwise", "grouped"):
        real = getattr(conv_depthwise, name)
        monkeypatch.setattr(conv_depthwise, name,
                            lambda *args, real=real: called.append(1) or real(*args))
    rng = np.random.default_rng(2)
    # 3-D planes, ordinary filters with as many outputs as inputs or 1x1, a channel
    # multiplier: the plain paths.
    for x_shape, w_shape, n in [((1, 4, 5, 6, 7), (4, 1, 1, 3, 3, 3), 3),
                                ((1, 4, 9, 9), (1, 6, 4, 3, 3), 2),
                                ((1, 64, 9, 9), (1, 64, 64, 3, 3), 2),
                                ((1, 64, 9, 9), (1, 16, 64, 1, 1), 2),
                                ((1, 4, 9, 9), (4, 2, 1, 3, 3), 2)]:  # fmt: skip
        x = rng.standard_normal(x_shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        a = SimpleNamespace(strides=(1,) * n, dilations=(1,) * n, pads_begin=(1,) * n,
                            pads_end=(1,) * n, auto_pad="explicit")  # fmt: skip
        convolve(x, w, a)
    assert not called
    # Pads far beyond the input: the gathering path, with the right values.
    big = 2**31
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 1, 2, 2), np.float32)
    a = SimpleNamespace(strides=(big, big), dilations=(1, 1), pads_begin=(1, 1),
                        pads_end=(big, big), auto_pad="explicit")  # fmt: skip
    got = convolve(x, w, a)
    assert not called
    assert got.shape == (1, 1, 2, 2)
    assert got[0, 0].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # Strides far beyond the input: their phases would be millions of zeros.
    x = np.arange(2 * 81, dtype=np.float32).reshape(1, 2, 9, 9)
    w = np.ones((2, 1, 1, 3, 3), np.float32)
    a = SimpleNamespace(strides=(1000, 1000), dilations=(1, 1), pads_begin=(0, 0),
                        pads_end=(0, 0), auto_pad="explicit")  # fmt: skip
    got = convolve(x, w, a)
    assert not called
    assert got.reshape(2).tolist() == [x[0, c, :3, :3].sum() for c in range(2)]


def test_a_model_run_on_two_threads_gives_the_same_bits(tmp_path):
    """Through a loaded model: depthwise then grouped, threads=1 and threads=2."""
    import openvino as ov

    rng = np.random.default_rng(9)
    dw = rng.standard_normal((16, 1, 1, 3, 3)).astype(np.float32)
    gw = rng.standard_normal((4, 8, 4, 3, 3)).astype(np.float32)
    p = opset1.parameter([2, 16, 33, 33], ov.Type.f32, name="x")
    a = opset1.group_convolution(p, opset1.constant(dw), [1, 1], [1, 1], [1, 1], [1, 1])
    b = opset1.group_convolution(a, opset1.constant(gw), [2, 2], [1, 1], [1, 1], [1, 1])
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([b], [p], "m"), path, compress_to_fp16=False)
    x = rng.standard_normal((2, 16, 33, 33)).astype(np.float32)
    one = next(iter(irrun.load(path, threads=1).run({"x": x}).values()))
    two = next(iter(irrun.load(path, threads=2).run({"x": x}).values()))
    assert np.array_equal(one, two)


# Pointwise filters (1x1..., stride 1, no pads): one product with the input as it lies.
POINTWISE = [
    # shape, groups, co, ci, pads (explicit) or auto_pad, dtype
    ((1, 16, 9, 11), 1, 24, 16, "explicit", np.float32),
    ((2, 12, 7, 5), 3, 2, 4, "explicit", np.float32),  # grouped
    ((1, 8, 6, 6), 8, 1, 1, "same_upper", np.float32),  # depthwise 1x1: a scale per channel
    ((1, 8, 6, 6), 1, 4, 8, "valid", np.float16),
    ((2, 6, 13), 1, 5, 6, "explicit", np.float32),  # 1-D
    ((1, 4, 3, 4, 5), 2, 3, 2, "same_lower", np.float32),  # 3-D
]


@pytest.mark.parametrize(("shape", "groups", "co", "ci", "auto_pad", "dtype"), POINTWISE)
def test_pointwise_filters_match_the_plugin_and_a_product(shape, groups, co, ci, auto_pad,
                                                         dtype, tmp_path):  # fmt: skip
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((groups, co, ci) + (1,) * (len(shape) - 2)).astype(dtype)
    n = len(shape) - 2
    geometry = ((1,) * n, (0,) * n, (0,) * n, (2,) * n, auto_pad)  # dilations do not matter
    a = SimpleNamespace(strides=(1,) * n, dilations=(2,) * n, pads_begin=(0,) * n,
                        pads_end=(0,) * n, auto_pad=auto_pad)  # fmt: skip
    assert convolution._pointwise(a, (1,) * n)
    got, want = run_both(
        lambda p: opset1.group_convolution(p, opset1.constant(w), *geometry), [x], tmp_path)
    assert_close(got, want, **(F16_TOL if dtype == np.float16 else F32_TOL), scaled_atol=True)
    # By hand: each group's [Co, Ci] filter times its channels at every position, in f64.
    xs = x.astype(np.float64).reshape(shape[0], groups, ci, -1)
    by_hand = np.einsum("goc,ngcp->ngop", w.reshape(groups, co, ci).astype(np.float64), xs)
    np.testing.assert_allclose(got.astype(np.float64).reshape(by_hand.shape), by_hand,
                               rtol=2e-3 if dtype == np.float16 else 1e-5, atol=1e-2)


def test_pointwise_needs_stride_1_and_no_pads():
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0),
                        auto_pad="explicit")  # fmt: skip
    assert convolution._pointwise(a, (1, 1))
    assert not convolution._pointwise(a, (1, 3))
    assert not convolution._pointwise(SimpleNamespace(**{**vars(a), "strides": (2, 1)}), (1, 1))
    assert not convolution._pointwise(SimpleNamespace(**{**vars(a), "pads_end": (0, 1)}), (1, 1))
    # a 1x1 filter with pads reads zeros around the input: the general path, values checked
    x = np.ones((1, 1, 2, 2), np.float32)
    w = np.full((1, 1, 1, 1, 1), 3, np.float32)
    padded = convolve(x, w, SimpleNamespace(**{**vars(a), "pads_begin": (1, 0)}))
    assert padded.tolist() == [[[[0.0, 0.0], [3.0, 3.0], [3.0, 3.0]]]]
    empty = convolve(np.ones((0, 2, 3, 3), np.float32), np.ones((1, 4, 2, 1, 1), np.float32), a)
    assert empty.shape == (0, 4, 3, 3)


def test_without_a_known_blas_the_column_matrix_gives_the_same_values(monkeypatch):
    """Where NumPy's BLAS has no CBLAS GEMM of known interface, conv_taps steps aside."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 16, 24, 24)).astype(np.float32)
    w = rng.standard_normal((1, 16, 16, 3, 3)).astype(np.float32)
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    fast = convolve(x, w, a)
    monkeypatch.setattr(conv_taps.blas, "available", lambda dtype: False)
    called = []
    monkeypatch.setattr(conv_taps, "convolve", lambda *args: called.append(1))
    plain = convolve(x, w, a)
    assert not called
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * float(np.abs(plain).max()))


def test_f64_taps_match_an_f64_sum_by_hand(monkeypatch):
    """The plugin computes f64 in f32; by hand in f64, conv_taps' dgemm agrees to 1e-12."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 16, 22, 24))
    w = rng.standard_normal((1, 20, 16, 3, 3))
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    seen = []
    real = conv_taps.convolve
    monkeypatch.setattr(conv_taps, "convolve", lambda *args: (seen.append(1), real(*args))[1])
    got = convolve(x, w, a)
    assert bool(seen) == conv_taps.blas.available(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("oc,nchw->nohw", w[0, :, :, i, j], xp[:, :, i:i + 22, j:j + 24])
               for i in range(3) for j in range(3))  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
