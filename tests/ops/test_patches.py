"""ExtractImagePatches against the CPU plugin (OpenVINO's reference kernel was read
instead of run: it pads as the plugin does), by hand, and its shape rule against
OpenVINO's own.  Values are moved, so comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import ET, random_data

from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3  # noqa: E402
from support.ov_oneop import all_three, one_op_model, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

# --------------------------------------------------------------------------- ExtractImagePatches


@pytest.mark.parametrize("pad", ["valid", "same_upper", "same_lower"])
@pytest.mark.parametrize("et", ["f32", "i32", "u8"])
def test_extract_image_patches_matches_openvino(pad, et, tmp_path):

    rng = np.random.default_rng(len(pad) + len(et))
    for shape, sizes, strides, rates in (
        ((1, 2, 5, 5), [2, 2], [2, 2], [1, 1]), ((2, 3, 7, 6), [3, 2], [1, 2], [2, 1]),
        ((1, 1, 10, 10), [3, 3], [5, 5], [1, 1]), ((1, 2, 4, 9), [1, 4], [3, 2], [1, 2]),
        ((1, 1, 2, 3), [3, 3], [2, 4], [1, 1]), ((2, 1, 6, 6), [2, 3], [4, 3], [3, 2]),
        ((1, 2, 0, 3), [2, 2], [1, 1], [1, 1]), ((1, 1, 1, 1), [2, 2], [2, 2], [1, 1]),
    ):  # fmt: skip
        x = random_data(rng, shape, et)
        all_three(lambda p, a=(sizes, strides, rates): opset3.extract_image_patches(p, *a, pad),
                   [x], tmp_path, reference=False)  # fmt: skip


def test_extract_image_patches_by_hand(tmp_path):

    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    model = one_op_model(lambda p: opset3.extract_image_patches(p, [2, 2], [2, 2], [1, 1],
                                                                "valid"), [x])  # fmt: skip
    got = run_saved(model, [x], tmp_path)[0]
    # Channel k holds tap (k // 2, k % 2) of each 2x2 patch.
    assert got[0, :, 0, 0].tolist() == [0, 1, 4, 5] and got[0, :, 1, 1].tolist() == [10, 11,
                                                                                      14, 15]
    rule = resolve("ExtractImagePatches", "opset3")
    attrs = attrs_namespace({"sizes": [3, 3], "strides": [2, 2], "rates": [1, 1],
                             "auto_pad": "valid"})  # fmt: skip
    for shape in ((1, 2, 8, 9), (DYNAMIC, Interval(1, 3), 8, DYNAMIC), (2, 3, 0, 4),
                  (1, 1, 2, 2)):
        p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
        want = opset3.extract_image_patches(p, [3, 3], [2, 2], [1, 1], "valid")
        (out,) = rule.infer(attrs, [TensorInfo(shape, ET["f32"])])
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), shape
    with pytest.raises(ShapeError, match="must be 4-D"):
        rule.infer(attrs, [TensorInfo((1, 2, 3), ET["f32"])])
    with pytest.raises(ValueError, match="strides"):
        rule.check(attrs_namespace({"sizes": [3, 3], "strides": [0, 2], "rates": [1, 1],
                                    "auto_pad": "valid"}))  # fmt: skip


# --------------------------------------------------------------------------- element types

from support.typed import Case  # noqa: E402

from irrun.ir.element_types import ANY  # noqa: E402

TYPE_CASES = {
    "same_upper": Case(lambda x: opset3.extract_image_patches(x, [2, 2], [1, 2], [1, 1],
                                                              "same_upper"), (1, 1, 3, 3)),
    "valid": Case(lambda x: opset3.extract_image_patches(x, [2, 2], [1, 1], [2, 1], "valid"),
                  (1, 2, 3, 3)),
}  # fmt: skip


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("pad", TYPE_CASES)
def test_every_data_type(pad, t, tmp_path):
    """Data of every element type (the op takes any), strings and packed types included, as
    OpenVINO moves it, taps outside the image read "" from strings and all bits zero from
    the others (support.typed)."""
    TYPE_CASES[pad].check_data_type(t, tmp_path)


def test_extract_image_patches_takes_any_type():
    assert resolve("ExtractImagePatches", "opset3").input_types == (ANY,)
