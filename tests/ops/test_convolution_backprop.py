"""ConvolutionBackpropData and GroupConvolutionBackpropData against the CPU plugin and by hand.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances: rtol 1e-4 with atol 1e-5 of the output's largest magnitude in f32
(different summation order); 2e-3 (and 2e-4) in f16.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

import irrun

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG, assert_close, run_both, run_irrun  # noqa: E402


def _backprop_case(rng: random.Random, grouped: bool):
    n = rng.choice((1, 2, 2, 3))
    groups = rng.choice((1, 2, 3)) if grouped else 1
    strides = [rng.choice((1, 2, 2, 3)) for _ in range(n)]
    dilations = [rng.choice((1, 1, 2)) for _ in range(n)]
    case = SimpleNamespace(
        n=n, batch=rng.randint(1, 2), spatial=[rng.randint(1, 6 if n < 3 else 4) for _ in range(n)],
        groups=groups, ci=rng.randint(1, 3), co=rng.randint(1, 3),
        kernel=[rng.randint(1, 4) for _ in range(n)], strides=strides, dilations=dilations,
        auto_pad=rng.choice(("explicit", "explicit", "valid", "same_upper", "same_lower")),
        pads_begin=[rng.randint(0, 2) for _ in range(n)],
        pads_end=[rng.randint(0, 2) for _ in range(n)],
        output_padding=[rng.randint(0, s - 1) for s in strides],
        output_shape=None, grouped=grouped,
    )  # fmt: skip
    if rng.random() < 0.4:
        full = [s * (i - 1) + d * (k - 1) + 1 for s, i, d, k in
                zip(strides, case.spatial, dilations, case.kernel, strict=True)]  # fmt: skip
        case.output_shape = [max(1, f + rng.randint(-3, 2)) for f in full]
    return case


def _backprop_node(p, w, case):
    factory = (opset1.group_convolution_backprop_data if case.grouped
               else opset1.convolution_backprop_data)  # fmt: skip
    shape = None if case.output_shape is None else opset1.constant(np.int64(case.output_shape))
    return factory(p, opset1.constant(w), case.strides, shape, case.pads_begin, case.pads_end,
                   case.dilations, case.auto_pad, case.output_padding)  # fmt: skip


def _backprop_weights(case, rng) -> np.ndarray:
    if case.grouped:
        return rng.standard_normal((case.groups, case.ci, case.co, *case.kernel))
    return rng.standard_normal((case.ci, case.co, *case.kernel))


def _backprop_cases(count: int) -> list[SimpleNamespace]:
    """Drawn cases that OpenVINO builds and its CPU plugin compiles (oneDNN refuses
    some groupings of stride, dilation and pads that irrun runs)."""
    found, seed = [], 0
    while len(found) < count:
        case = _backprop_case(random.Random(seed), grouped=seed % 2 == 1)
        seed += 1
        p = opset1.parameter([case.batch, case.groups * case.ci, *case.spatial], ov.Type.f32)
        w = _backprop_weights(case, np.random.default_rng(0)).astype(np.float32)
        try:
            CORE.compile_model(ov.Model([_backprop_node(p, w, case)], [p]), "CPU", CPU_CONFIG)
        except RuntimeError:
            continue
        found.append(case)
    return found


BACKPROP_CASES = _backprop_cases(60)


@pytest.mark.parametrize("case", BACKPROP_CASES, ids=[
    f"{'g' if c.grouped else ''}deconv{c.n}d-{c.auto_pad}-{'shape' if c.output_shape else 'pads'}"
    f"-{i}" for i, c in enumerate(BACKPROP_CASES)])  # fmt: skip
def test_convolution_backprop_matches_cpu(case, tmp_path):
    rng = np.random.default_rng(len(str(vars(case))))
    dtype = np.float16 if case.batch == 2 and case.n == 1 else np.float32
    x = rng.standard_normal((case.batch, case.groups * case.ci, *case.spatial)).astype(dtype)
    w = _backprop_weights(case, rng).astype(dtype)
    got, want = run_both(lambda p: _backprop_node(p, w, case), [x], tmp_path)
    tol = 2e-3 if dtype == np.float16 else 1e-4
    assert_close(got, want, rtol=tol, atol=tol / 10, scaled_atol=True, what=str(vars(case)))


def test_convolution_backprop_cases_cover_the_attributes():
    cases = BACKPROP_CASES
    assert {c.n for c in cases} == {1, 2, 3}
    for shaped in (True, False):
        assert {c.auto_pad for c in cases if (c.output_shape is not None) == shaped} == {
            "explicit", "valid", "same_upper", "same_lower"}  # fmt: skip
    assert any(c.grouped and c.groups > 1 for c in cases)
    assert any(max(c.output_padding) > 0 for c in cases)
    assert any(c.batch == 2 and c.n == 1 for c in cases)  # f16


def test_convolution_backprop_by_hand(tmp_path):
    # 1-D, stride 2: each input scatters [1, 10, 100] two positions after the last.
    x = np.array([1, 2, 3], np.float32).reshape(1, 1, 3)
    w = np.array([1, 10, 100], np.float32).reshape(1, 1, 3)
    full = [1, 10, 102, 20, 203, 30, 300]

    def run(**kw):
        args = dict(strides=[2], pads_begin=[0], pads_end=[0], dilations=[1],
                    auto_pad="explicit", output_padding=[0])  # fmt: skip
        args.update(kw)
        shape = args.pop("output_shape", None)
        node = lambda p: opset1.convolution_backprop_data(  # noqa: E731
            p, opset1.constant(w), output_shape=shape and opset1.constant(np.int64(shape)),
            **args)  # fmt: skip
        return run_irrun(node, [x], tmp_path)[0, 0].tolist()

    assert run() == full
    assert run(pads_begin=[1], pads_end=[2]) == full[1:-2]
    assert run(pads_begin=[1], pads_end=[2], output_padding=[1]) == full[1:-1]
    assert run(auto_pad="valid", output_padding=[1]) == [*full, 0]
    # With output_shape, same_upper puts the larger half of the surplus first.
    assert run(auto_pad="same_upper", output_shape=[4]) == full[2:6]
    assert run(auto_pad="same_lower", output_shape=[4]) == full[1:5]
    assert run(auto_pad="same_lower", output_shape=[9]) == [*full, 0, 0]


def test_convolution_backprop_attributes_are_checked(tmp_path):
    p = opset1.parameter([1, 2, 3, 3], ov.Type.f32, name="in0")
    w = opset1.constant(np.ones((2, 1, 2, 2), np.float32))
    node = opset1.convolution_backprop_data(p, w, [2, 2], output_padding=[1, 0])
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert 'output_padding="1, 0"' in text
    for bad, says in (('output_padding="1"', "output_padding has 1 values [1] but strides has 2"),
                      ('output_padding="1, -1"', "output_padding must not be negative")):
        path.write_text(text.replace('output_padding="1, 0"', bad))
        assert any(says in d.message for d in irrun.validate(path)), bad


# --------------------------------------------------------------------------- element types
# Every type the transposed convolutions declare for data and filter (alike), and every
# integer type of output_shape, against OpenVINO's reference kernels (or the f32 result
# rounded once, for the f8 floats); types they do not take are named by validate
# (OpenVINO takes integer data too, which irrun does not compute).

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ir.element_types import INTEGERS  # noqa: E402
from irrun.ops.convolution_backprop import INPUT_TYPES  # noqa: E402


def _transposed(grouped, shape_type=None):
    make = opset1.group_convolution_backprop_data if grouped else opset1.convolution_backprop_data

    def build(p, q):
        if shape_type is None:
            return make(p, q, [2, 2])
        out = opset1.constant(np.array([5, 6]), getattr(ov.Type, shape_type))
        return make(p, q, [2, 2], out)

    return build


@pytest.mark.parametrize("et", INPUT_TYPES[0])
@pytest.mark.parametrize("grouped", [False, True])
def test_element_types(et, grouped, tmp_path):
    x = convertible(et, (1, 2, 3, 3), seed=1, low=-2, high=2)
    w = convertible(et, (2, 1, 1, 2, 2) if grouped else (2, 3, 2, 2), seed=2, low=-2, high=2)
    got, want = typed_runs(_transposed(grouped), [x, w], [et, et], tmp_path)
    assert_typed_close(got, want)


@pytest.mark.parametrize("st", INTEGERS)
def test_output_shape_types(st, tmp_path):
    x, w = np.ones((1, 2, 3, 3), np.float32), np.ones((2, 3, 2, 2), np.float32)
    got, want = typed_runs(_transposed(False, st), [x, w], ["f32", "f32"], tmp_path)
    assert got[0].shape == (1, 3, 5, 6)
    assert_typed_close(got, want)


@pytest.mark.parametrize("et", ["i32", "u8", "boolean", "f8e8m0", "u4"])
@pytest.mark.parametrize("grouped", [False, True])
def test_validate_names_a_type_it_does_not_take(et, grouped, tmp_path):
    x = np.zeros((1, 2, 3, 3), np.float32)
    w = np.zeros((2, 1, 1, 2, 2) if grouped else (2, 3, 2, 2), np.float32)
    label = "GroupConvolutionBackpropData-v1" if grouped else "ConvolutionBackpropData-v1"
    assert_refused(_transposed(grouped), [x, w], 0, et, tmp_path, label)


def test_validate_names_a_float_output_shape(tmp_path):
    x, w = np.zeros((1, 2, 3, 3), np.float32), np.zeros((2, 3, 2, 2), np.float32)
    s = np.array([5, 6], np.int64)
    assert_refused(lambda p, q, r: opset1.convolution_backprop_data(p, q, [2, 2], r),
                   [x, w, s], 2, "f32", tmp_path, "ConvolutionBackpropData-v1")
