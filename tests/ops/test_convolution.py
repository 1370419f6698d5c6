"""Convolution and GroupConvolution: a seeded sweep against the CPU plugin and by hand (at
the end: rtol 1e-4, atol 1e-5 of the output's largest magnitude, for a different summation
order), and convolutions whose pads, strides or dilations dwarf their input (issue 15).

A padded copy of the input would grow with the pads: the reference convolution reads
only the input positions each tap reaches (the fast kernels give way to it there), and
transposed convolutions make only the window of their full output. The values are the
CPU plugin's where it computes them, by a run and by the reference kernel alone.
"""

from __future__ import annotations

import itertools
import random
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG as CONFIG

import irrun
from irrun.fast import convolution as fast
from irrun.ir.registry import resolve
from irrun.ops.convolution import convolve
from irrun.ops.convolution_backprop import convolve_transposed

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.ov_oneop import assert_close, run_both, run_irrun  # noqa: E402

CPU = ov.Core()


def _both(node_of, x: np.ndarray, tmp_path) -> tuple[np.ndarray, np.ndarray]:
    p = opset1.parameter(list(x.shape), ov.Type.f32, name="x")
    model = ov.Model([node_of(p)], [p])
    want = CPU.compile_model(model, "CPU", CONFIG)([x])[0]
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({"x": x})
    return next(iter(got.values())), np.asarray(want)


CASES = [  # strides, pads_begin, pads_end, dilations: padded copies of 40,000 to 10^6 zeros
    ((50, 50), (100, 100), (100, 100), (1, 1)),
    ((97, 3), (150, 2), (151, 0), (1, 2)),
    ((1, 1), (400, 0), (400, 1), (400, 1)),
    ((300, 300), (299, 301), (600, 0), (250, 250)),
]


@pytest.mark.parametrize(("strides", "pads_begin", "pads_end", "dilations"), CASES)
@pytest.mark.parametrize("grouped", [False, True])
def test_far_pads_match_the_plugin(strides, pads_begin, pads_end, dilations, grouped, tmp_path):
    rng = np.random.default_rng(sum(strides) + sum(pads_begin) + grouped)
    x = rng.standard_normal((1, 4, 5, 7)).astype(np.float32)
    if grouped:  # depthwise: four groups of one channel
        w = opset1.constant(rng.standard_normal((4, 1, 1, 3, 2)).astype(np.float32))
        node = lambda p: opset1.group_convolution(p, w, strides, pads_begin, pads_end, dilations)  # noqa: E731
    else:
        w = opset1.constant(rng.standard_normal((3, 4, 3, 2)).astype(np.float32))
        node = lambda p: opset1.convolution(p, w, strides, pads_begin, pads_end, dilations)  # noqa: E731
    got, want = _both(node, x, tmp_path)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    a = SimpleNamespace(strides=strides, dilations=dilations, pads_begin=pads_begin,
                        pads_end=pads_end, auto_pad="explicit")  # fmt: skip
    weights = w.get_data()
    alone = convolve(x, weights if grouped else weights[None], a)
    np.testing.assert_allclose(alone, want, rtol=1e-5, atol=1e-6)


def test_pads_of_2_to_the_31_take_the_input_s_memory(tmp_path):
    # With pads and strides of 2^31 the middle window of each axis starts at the input's
    # first element, the others lie wholly in the padding: by hand, the output is zero but
    # at [1, 1], whose 2x2 window covers x[0:2, 0:2] = [[1, 2], [4, 5]].
    big = 2**31
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.array([[[[2.0, 3.0], [5.0, 7.0]]]], np.float32)
    a = SimpleNamespace(strides=(big, big), dilations=(1, 1), pads_begin=(big, big),
                        pads_end=(big, big), auto_pad="explicit")  # fmt: skip
    got = convolve(x, w[None], a)
    want = np.zeros((1, 1, 3, 3), np.float32)
    want[0, 0, 1, 1] = 1 * 2 + 2 * 3 + 4 * 5 + 5 * 7
    assert got.tolist() == want.tolist()


def test_the_kernels_give_a_padded_sum_by_hand():
    """The reference (no padded copy) and the fast kernel (a padded copy, where it
    applies) against the definition: the input padded with zeros, each tap's strided
    slice times its weight, summed in f64."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 6, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 2, 3)).astype(np.float32)  # two groups
    for strides, pads, dilations in itertools.product([(1, 1), (2, 3)], [(0, 0), (2, 1)],
                                                      [(1, 1), (2, 1)]):  # fmt: skip
        a = SimpleNamespace(strides=strides, dilations=dilations, pads_begin=pads,
                            pads_end=pads[::-1], auto_pad="explicit")  # fmt: skip
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[1], pads[0])))
        ho = (xp.shape[2] - dilations[0] * 1 - 1) // strides[0] + 1
        wo = (xp.shape[3] - dilations[1] * 2 - 1) // strides[1] + 1
        want = np.zeros((2, 2, 3, ho, wo))
        for i, j in itertools.product(range(2), range(3)):
            r, c = i * dilations[0], j * dilations[1]
            seen = xp[:, :, r:r + (ho - 1) * strides[0] + 1:strides[0],
                      c:c + (wo - 1) * strides[1] + 1:strides[1]].reshape(2, 2, 3, ho, wo)
            want += np.einsum("goc,ngchw->ngohw", w[:, :, :, i, j].astype(np.float64), seen)
        want = want.reshape(2, 6, ho, wo)
        fast_out = fast.convolve(x, w, a)
        for got in (convolve(x, w, a), fast_out):
            if got is not NotImplemented:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(a))


def test_a_transposed_convolution_makes_only_its_window():
    # Strides of 2^31 spread the input's 3 positions 2^31 apart; an output_shape of 2
    # keeps the first two positions of the full output: x[0] times the filter's taps.
    big = 2**31
    x = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 1, 3)
    w = np.array([10.0, 100.0], np.float32).reshape(1, 1, 1, 2)
    a = SimpleNamespace(strides=(big,), dilations=(1,), pads_begin=(0,), pads_end=(0,),
                        auto_pad="explicit", output_padding=())  # fmt: skip
    assert convolve_transposed(x, w, a, requested=[2]).tolist() == [[[10.0, 100.0]]]
    # A window that begins past the first input's reach holds the second input's taps.
    a.pads_begin = (big,)
    assert convolve_transposed(x, w, a, requested=[3]).tolist() == [[[20.0, 200.0, 0.0]]]


@pytest.mark.parametrize(("strides", "pads", "dilation", "out_pad"), [
    (5, (7, 3), 4, 2), (1, (0, 0), 9, 0), (40, (30, 60), 1, 39), (3, (0, 0), 1, 0),
])  # fmt: skip
def test_transposed_matches_the_plugin(strides, pads, dilation, out_pad, tmp_path):
    rng = np.random.default_rng(strides + dilation)
    x = rng.standard_normal((1, 2, 4, 3)).astype(np.float32)
    w = opset1.constant(rng.standard_normal((2, 3, 3, 2)).astype(np.float32))
    got, want = _both(lambda p: opset1.convolution_backprop_data(
        p, w, [strides, strides], [pads[0]] * 2, [pads[1]] * 2, [dilation] * 2,
        output_padding=[out_pad] * 2), x, tmp_path)  # fmt: skip
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_transposed_convolution_holds_its_declared_scratch():
    import tracemalloc

    from irrun.ir.element_types import of_array
    from irrun.ir.registry import TensorInfo, resolve

    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float16):
        x = rng.standard_normal((2, 6, 9, 7)).astype(dtype)
        w = rng.standard_normal((3, 6 // 3, 4, 3, 3)).astype(dtype)  # 3 groups, 2 -> 4
        a = SimpleNamespace(strides=(2, 2), dilations=(1, 1), pads_begin=(1, 1),
                            pads_end=(0, 0), auto_pad="explicit", output_padding=())  # fmt: skip
        op = resolve("GroupConvolutionBackpropData", "opset1")
        infos = [TensorInfo(x.shape, of_array(x)), TensorInfo(w.shape, of_array(w))]
        (out_info,) = op.infer(a, infos)
        declared = op.scratch(a, infos, [out_info])
        tracemalloc.start()
        try:
            (out,) = op.kernel(a, x, w)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert out.shape == out_info.shape
        assert peak - out.nbytes <= declared + 64 * 1024


# --------------------------------------------------------------------------- convolution


def _conv_case(rng: random.Random, grouped: bool):
    n = rng.choice((1, 2, 2, 3))
    spatial = [rng.randint(3, 9 if n < 3 else 6) for _ in range(n)]
    groups = rng.choice((1, 2, 3)) if grouped else 1
    depthwise = grouped and rng.random() < 0.4
    ci = 1 if depthwise else rng.randint(1, 3)
    co = 1 if depthwise else rng.randint(1, 4)
    kernel = [rng.randint(1, 3) for _ in range(n)]
    strides = [rng.choice((1, 1, 2, 3)) for _ in range(n)]
    dilations = [rng.choice((1, 1, 2)) for _ in range(n)]
    auto_pad = rng.choice(("explicit", "explicit", "valid", "same_upper", "same_lower"))
    pads_begin = [rng.randint(0, 2) for _ in range(n)]
    pads_end = [rng.randint(0, 2) for _ in range(n)]
    for i in range(n):  # the dilated kernel must fit the (unpadded for valid) input
        while dilations[i] * (kernel[i] - 1) + 1 > spatial[i]:
            kernel[i] -= 1
    return SimpleNamespace(
        n=n, batch=rng.randint(1, 2), spatial=spatial, groups=groups, ci=ci, co=co,
        kernel=kernel, strides=strides, dilations=dilations, auto_pad=auto_pad,
        pads_begin=pads_begin, pads_end=pads_end, grouped=grouped,
    )  # fmt: skip


CONV_CASES = [_conv_case(random.Random(s), grouped=s % 2 == 1) for s in range(60)]


CONV_IDS = [
    f"{'g' if c.grouped else ''}conv{c.n}d-{c.auto_pad}-{i}" for i, c in enumerate(CONV_CASES)
]


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_convolution_matches_cpu(case, tmp_path):
    rng = np.random.default_rng(zlib.crc32(str(vars(case)).encode()))
    x = rng.standard_normal((case.batch, case.groups * case.ci, *case.spatial)).astype(np.float32)
    if case.grouped:
        w_shape = (case.groups, case.co, case.ci, *case.kernel)
    else:
        w_shape = (case.co, case.ci, *case.kernel)
    w = rng.standard_normal(w_shape).astype(np.float32)
    geometry = (case.strides, case.pads_begin, case.pads_end, case.dilations, case.auto_pad)
    factory = opset1.group_convolution if case.grouped else opset1.convolution
    got, want = run_both(lambda p: factory(p, opset1.constant(w), *geometry), [x], tmp_path)
    assert_close(got, want, rtol=1e-4, atol=1e-5, scaled_atol=True, what=str(vars(case)))
    # The reference kernel alone (a run may take a fast kernel): the same tolerance.
    op = resolve("GroupConvolution" if case.grouped else "Convolution", "opset1")
    a = SimpleNamespace(strides=case.strides, dilations=case.dilations, auto_pad=case.auto_pad,
                        pads_begin=case.pads_begin, pads_end=case.pads_end)  # fmt: skip
    (alone,) = op.kernel(a, x, w)
    assert_close(alone, want, rtol=1e-4, atol=1e-5, scaled_atol=True, what=str(vars(case)))


def test_convolution_cases_cover_the_attributes():
    assert {c.n for c in CONV_CASES} == {1, 2, 3}
    assert {c.auto_pad for c in CONV_CASES} == {"explicit", "valid", "same_upper", "same_lower"}
    assert any(c.grouped and c.ci == c.co == 1 for c in CONV_CASES)
    assert any(c.grouped and c.ci > 1 and c.groups > 1 for c in CONV_CASES)
    assert any(max(c.strides) > 1 and max(c.dilations) > 1 for c in CONV_CASES)


def test_convolution_by_hand(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.array([[1, 0], [0, -1]], np.float32).reshape(1, 1, 2, 2)
    got = run_irrun(
        lambda p: opset1.convolution(p, opset1.constant(w), [2, 2], [0, 0], [0, 0], [1, 1]),
        [x], tmp_path,
    )  # fmt: skip
    assert got.tolist() == [[[[-5.0, -5.0], [-5.0, -5.0]]]]  # x[i,j] - x[i+1,j+1] = -5
    # Depthwise with same_upper: each channel summed over its 3x3 neighbourhood.
    x = np.ones((1, 2, 3, 3), np.float32)
    w = np.stack([np.ones((1, 1, 3, 3)), 2 * np.ones((1, 1, 3, 3))]).astype(np.float32)
    got = run_irrun(
        lambda p: opset1.group_convolution(p, opset1.constant(w), [1, 1], [0, 0], [0, 0],
                                           [1, 1], "same_upper"),
        [x], tmp_path,
    )  # fmt: skip
    counts = np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]], np.float32)
    assert np.array_equal(got[0, 0], counts) and np.array_equal(got[0, 1], 2 * counts)


# --------------------------------------------------------------------------- element types
# Every type Convolution and GroupConvolution declare (data and filter alike), against
# OpenVINO's reference kernels, or the convolution in f32 rounded once to the type for
# the f8 floats it has no kernel for; a type they do not take is named by validate.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.convolution import CONV_TYPES  # noqa: E402


@pytest.mark.parametrize("et", CONV_TYPES)
@pytest.mark.parametrize("grouped", [False, True])
def test_element_types(et, grouped, tmp_path):
    x = convertible(et, (1, 2, 4, 4), seed=1, low=-2, high=2)
    w = convertible(et, (2, 1, 1, 2, 2) if grouped else (3, 2, 2, 2), seed=2, low=-2, high=2)
    make = opset1.group_convolution if grouped else opset1.convolution
    got, want = typed_runs(lambda p, q: make(p, q, [1, 1], [1, 0], [0, 1], [1, 1]), [x, w],
                           [et, et], tmp_path)  # fmt: skip
    assert_typed_close(got, want)


@pytest.mark.parametrize("et", ["boolean", "u4", "i4", "f8e8m0", "nf4"])
@pytest.mark.parametrize("grouped", [False, True])
def test_validate_names_a_type_it_does_not_take(et, grouped, tmp_path):
    x = np.zeros((1, 2, 3, 3), np.float32)
    w = np.zeros((2, 1, 1, 1, 1) if grouped else (2, 2, 1, 1), np.float32)
    make = opset1.group_convolution if grouped else opset1.convolution
    assert_refused(lambda p, q: make(p, q, [1, 1], [0, 0], [0, 0], [1, 1]), [x, w], 0, et,
                   tmp_path, "GroupConvolution-v1" if grouped else "Convolution-v1")
