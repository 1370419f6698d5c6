"""DepthToSpace, SpaceToDepth, ShuffleChannels and ConvertLike against OpenVINO and by hand.

The layout ops move elements without arithmetic, so every comparison is exact.  ConvertLike
sits here too: it is Convert with the target type taken from a tensor (ONNX's LpPool
converts to it).
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_both, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "boolean": np.bool_}  # fmt: skip


def with_dtypes(cases: list) -> list:
    """Each case in f32, every third also in every other type (layout ignores the type;
    the sweep only checks that none is refused or reinterpreted)."""
    return [(*case, dtype) for i, case in enumerate(cases) for dtype in DTYPES
            if dtype == "f32" or i % 3 == 0]  # fmt: skip


def values(shape, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "boolean":
        return rng.random(shape) < 0.5
    # Distinct values where the type holds them, so any misplaced element shows.
    return (np.arange(int(np.prod(shape))) % 251).astype(DTYPES[dtype]).reshape(shape)


def test_versions():
    for n in range(1, 17):
        assert resolve("DepthToSpace", f"opset{n}").label == "DepthToSpace-v0"
        assert resolve("SpaceToDepth", f"opset{n}").label == "SpaceToDepth-v0"
        assert resolve("ConvertLike", f"opset{n}").label == "ConvertLike-v1"
        # OpenVINO reads it in opset1 and from opset3 on, not in opset2; irrun alike.
        if n == 2:
            with pytest.raises(LookupError, match="opset2 has no op ShuffleChannels"):
                resolve("ShuffleChannels", "opset2")
        else:
            assert resolve("ShuffleChannels", f"opset{n}").label == "ShuffleChannels-v0"


def test_shuffle_channels_is_written_as_opset1(tmp_path):
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(lambda p: opset3.shuffle_channels(p, 1, 2),
                               [np.zeros((1, 4), np.float32)]), path)  # fmt: skip
    assert 'type="ShuffleChannels" version="opset1"' in path.read_text()


# --------------------------------------------------------------------------- DepthToSpace


D2S_SHAPES = [(1, 8, 2, 3), (2, 4, 3), (1, 16, 2, 1, 2), (2, 12, 1, 1), (1, 4, 0, 2)]
D2S_CASES = [
    (shape, mode, bs)
    for shape in D2S_SHAPES
    for mode in ("blocks_first", "depth_first")
    for bs in (1, 2)
] + [((1, 27, 2, 2), "blocks_first", 3), ((1, 18, 2, 2), "depth_first", 3)]


@pytest.mark.parametrize(("shape", "mode", "bs", "dtype"), with_dtypes(D2S_CASES), ids=str)
def test_depth_to_space_matches_cpu(shape, mode, bs, dtype, tmp_path):
    x = values(shape, dtype)
    got, want = run_both(lambda p: opset1.depth_to_space(p, mode, bs), [x], tmp_path)
    assert_close(got, want, what=f"{shape} {mode} {bs}")


S2D_SHAPES = [(1, 2, 4, 6), (2, 3, 4), (1, 1, 2, 4, 2), (1, 3, 6, 6), (2, 1, 0, 2)]
S2D_CASES = [
    (shape, mode, bs)
    for shape in S2D_SHAPES
    for mode in ("blocks_first", "depth_first")
    for bs in (1, 2)
] + [((1, 2, 3, 6), "blocks_first", 3), ((1, 2, 6, 3), "depth_first", 3)]


@pytest.mark.parametrize(("shape", "mode", "bs", "dtype"), with_dtypes(S2D_CASES), ids=str)
def test_space_to_depth_matches_cpu(shape, mode, bs, dtype, tmp_path):
    x = values(shape, dtype)
    got, want = run_both(lambda p: opset1.space_to_depth(p, mode, bs), [x], tmp_path)
    assert_close(got, want, what=f"{shape} {mode} {bs}")


def test_depth_to_space_by_hand(tmp_path):
    # Channels 0..3 of one pixel each: blocks_first reads them as [bs, bs, C'=1].
    x = np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1)
    for mode in ("blocks_first", "depth_first"):
        got = run_saved(one_op_model(lambda p, m=mode: opset1.depth_to_space(p, m, 2), [x]),
                        [x], tmp_path)[0]  # fmt: skip
        assert got.tolist() == [[[[0, 1], [2, 3]]]]  # one output channel: the modes agree
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    got = run_saved(one_op_model(lambda p: opset1.depth_to_space(p, "blocks_first", 2), [x]),
                    [x], tmp_path)[0]  # fmt: skip
    # blocks_first: channel = (b1 * 2 + b2) * 2 + c'.
    assert got.tolist() == [[[[0, 2], [4, 6]], [[1, 3], [5, 7]]]]
    got = run_saved(one_op_model(lambda p: opset1.depth_to_space(p, "depth_first", 2), [x]),
                    [x], tmp_path)[0]  # fmt: skip
    # depth_first: channel = c' * 4 + b1 * 2 + b2.
    assert got.tolist() == [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]]
    back = run_saved(one_op_model(lambda p: opset1.space_to_depth(p, "depth_first", 2), [got]),
                     [got], tmp_path)[0]  # fmt: skip
    assert back.tolist() == x.tolist()


def _infer(op_type: str, opset: int, attrs: dict, shape):
    op = resolve(op_type, f"opset{opset}")
    (out,) = op.infer(SimpleNamespace(**attrs), [TensorInfo(shape, ELEMENT_TYPES["f32"])])
    return out.shape


SHAPE_CASES = [
    (1, 8, 2, 3), (1, Interval(4, 16), 2, 3), (Interval(0, None), 8, Interval(1, 5), 3),
    (1, Interval(0, None), 2, 4), (1, Interval(5, 7), 4, 4), None,
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPE_CASES, ids=str)
@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_shapes_agree_with_openvino(op, shape):
    factory = opset1.depth_to_space if op == "DepthToSpace" else opset1.space_to_depth
    p = opset1.parameter(to_ov_shape(shape), np.float32)
    attrs = {"mode": "blocks_first", "block_size": 2}
    try:
        want = from_ov_shape(factory(p, "blocks_first", 2).get_output_partial_shape(0))
    except RuntimeError:
        with pytest.raises(ShapeError):
            _infer(op, 1, attrs, shape)
        return
    assert _infer(op, 1, attrs, shape) == want


def test_shape_errors():
    d2s = {"mode": "blocks_first", "block_size": 2}
    with pytest.raises(ShapeError, match="rank 3 or more"):
        _infer("DepthToSpace", 1, d2s, (1, 8))
    with pytest.raises(ShapeError, match=r"channels .* 6 is not a multiple of 4"):
        _infer("DepthToSpace", 1, d2s, (1, 6, 2, 2))
    with pytest.raises(ShapeError, match="spatial dim 3: 3 is not a multiple of 2"):
        _infer("SpaceToDepth", 1, d2s, (1, 6, 2, 3))
    with pytest.raises(ShapeError, match=r"holds no multiple of 4"):
        _infer("DepthToSpace", 1, d2s, (1, Interval(5, 7), 2, 2))
    shuffle = {"axis": 1, "group": 3}
    with pytest.raises(ShapeError, match=r"dim 1 \(axis 1\): 4 is not a multiple of 3"):
        _infer("ShuffleChannels", 3, shuffle, (6, 4))
    with pytest.raises(ShapeError, match="axis 1 is out of range for rank 1"):
        _infer("ShuffleChannels", 3, shuffle, (6,))
    with pytest.raises(ShapeError, match="scalar"):
        _infer("ShuffleChannels", 3, shuffle, ())


# --------------------------------------------------------------------------- ShuffleChannels


SHUFFLE_CASES = [((1, 6, 2, 2), 1, 3), ((1, 6, 2, 2), 1, 2), ((1, 6, 2, 2), -3, 6),
                 ((2, 4), 1, 2), ((12,), 0, 4), ((2, 3, 8), -1, 4), ((2, 3, 8), 2, 1),
                 ((1, 0, 4), 2, 2)]  # fmt: skip


@pytest.mark.parametrize(("shape", "axis", "group", "dtype"), with_dtypes(SHUFFLE_CASES), ids=str)
def test_shuffle_channels_matches_cpu(shape, axis, group, dtype, tmp_path):
    x = values(shape, dtype)
    got, want = run_both(lambda p: opset3.shuffle_channels(p, axis, group), [x], tmp_path)
    assert_close(got, want, what=f"{shape} axis {axis} group {group}")


def test_shuffle_channels_by_hand(tmp_path):
    x = np.arange(6, dtype=np.int32).reshape(1, 6)
    got = run_saved(one_op_model(lambda p: opset3.shuffle_channels(p, 1, 2), [x]), [x],
                    tmp_path)[0]  # fmt: skip
    assert got.tolist() == [[0, 3, 1, 4, 2, 5]]  # [[0,1,2],[3,4,5]] transposed
    assert _infer("ShuffleChannels", 3, {"axis": -1, "group": 2},
                  (2, Interval(1, 9))) == (2, Interval(1, 9))  # fmt: skip


# --------------------------------------------------------------------------- validate


def _edited(tmp_path, build, x, old: str, new: str):
    path = tmp_path / "bad.xml"
    ov.save_model(one_op_model(build, [x]), path)
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))
    return [d for d in irrun.validate(path) if d.level == "error"]


def test_validate_findings(tmp_path):
    x = np.zeros((1, 8, 2, 2), np.float32)
    found = _edited(tmp_path, lambda p: opset1.depth_to_space(p, "blocks_first", 2), x,
                    'block_size="2"', 'block_size="3"')  # fmt: skip
    assert any(d.code == "shape-error" and "not a multiple of 9" in d.message
               and "(DepthToSpace-v0)" in str(d) for d in found), found  # fmt: skip
    found = _edited(tmp_path, lambda p: opset1.depth_to_space(p, "blocks_first", 2), x,
                    'mode="blocks_first"', 'mode="blocks_last"')  # fmt: skip
    assert any(d.code == "bad-attribute" and "blocks_first, depth_first" in d.message
               for d in found), found  # fmt: skip
    found = _edited(tmp_path, lambda p: opset1.space_to_depth(p, "depth_first", 2), x,
                    'block_size="2"', 'block_size="0"')  # fmt: skip
    assert any("block_size must be at least 1" in d.message for d in found), found
    found = _edited(tmp_path, lambda p: opset3.shuffle_channels(p, 1, 2), x,
                    'group="2"', 'group="0"')  # fmt: skip
    assert any("group must be at least 1" in d.message for d in found), found
    found = _edited(tmp_path, lambda p: opset3.shuffle_channels(p, 1, 2), x,
                    'names="out">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>8</dim>',
                    'names="out">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>9</dim>')  # fmt: skip
    assert any(d.code == "shape-mismatch" and "declared [1,9,2,2], inferred [1,8,2,2]"
               in d.message and "(ShuffleChannels-v0)" in str(d) for d in found), found  # fmt: skip


# --------------------------------------------------------------------------- ConvertLike


CONVERT_TYPES = ["f32", "f16", "i32", "i64", "u8", "boolean"]


def _convert_input(src: str) -> tuple[np.ndarray, np.ndarray]:
    """Ordinary values of ``src``, and the same with NaN, infinities and huge values."""
    if src in ("f32", "f16"):
        plain = np.array([0.0, -0.0, 1.5, -2.7, 3.9, 255.5, -1.0, 300.25], DTYPES[src])
        return plain, np.concatenate([plain, np.array([np.nan, np.inf, -np.inf, 6e4],
                                                      DTYPES[src])])  # fmt: skip
    if src == "boolean":
        plain = np.array([True, False, True])
        return plain, plain
    plain = np.array([0, 1, 2, 127, 200, 255, 3, 4], DTYPES[src])
    return plain, plain


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(CONVERT_TYPES, CONVERT_TYPES)))
def test_convert_like_matches_cpu(src, dst, tmp_path):
    plain, special = _convert_input(src)
    like = np.zeros((2, 1), DTYPES[dst])
    got, want = run_both(opset1.convert_like, [plain, like], tmp_path)
    assert_close(got, want, what=f"{src}->{dst}")
    # On NaN, infinities and values past a type's range it converts as Convert does
    # (Convert's tests hold those against the plugin).
    got = run_saved(one_op_model(opset1.convert_like, [special, like]), [special, like],
                    tmp_path)[0]  # fmt: skip
    as_convert = run_saved(one_op_model(lambda p: opset1.convert(p, dst), [special]),
                           [special], tmp_path)[0]  # fmt: skip
    np.testing.assert_array_equal(got, as_convert)
    assert got.dtype == as_convert.dtype


def test_convert_like_by_hand(tmp_path):
    x = np.array([2.7, -2.7, 300.0], np.float32)
    like = np.zeros((), np.uint8)
    got = run_saved(one_op_model(lambda p, q: opset1.convert_like(p, q), [x, like]),
                    [x, like], tmp_path)[0]  # fmt: skip
    assert got.dtype == np.uint8 and got.tolist() == [2, 254, 44]  # truncated, then wrapped
    op = resolve("ConvertLike", "opset1")
    (out,) = op.infer(SimpleNamespace(), [TensorInfo((Interval(1, 4), 3), ELEMENT_TYPES["f32"]),
                             TensorInfo(None, ELEMENT_TYPES["i8"])])  # fmt: skip
    assert out.shape == (Interval(1, 4), 3) and out.element_type.name == "i8"


def test_lp_pool_pattern_matches_cpu(tmp_path):
    """ONNX's LpPool as OpenVINO's ONNX frontend writes it: the exponent, a constant of
    another type, is brought to the data's type by ConvertLike around an AvgPool."""
    x = np.random.default_rng(3).standard_normal((1, 2, 6, 6)).astype(np.float32)

    def build(p):
        exponent = opset1.convert_like(const_of(3, np.int64), p)
        powered = opset1.power(opset1.abs(p), exponent)
        pooled = opset1.avg_pool(powered, [2, 2], [0, 0], [0, 0], [2, 2], True)
        summed = opset1.multiply(pooled, opset1.convert_like(const_of(4, np.int32), p))
        root = opset1.convert_like(const_of(1 / 3, np.float64), p)
        return opset1.power(summed, root)

    path = tmp_path / "lp.xml"
    ov.save_model(one_op_model(build, [x]), path)
    assert path.read_text().count('type="ConvertLike"') == 3
    got, want = run_both(build, [x], tmp_path)
    # Power in f32 in a different order: a few units in the last place.
    assert_close(got, want, rtol=1e-6, what="LpPool")


def const_of(value, dtype):
    return opset1.constant(np.array(value, dtype))


def test_absent_attributes_as_openvino_reads_them(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(1, 8, 1, 2)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(lambda p: opset1.depth_to_space(p, "blocks_first", 2), [x]), path)
    text = path.read_text()
    path.write_text(text.replace('mode="blocks_first"', ""))
    found = irrun.validate(path)
    assert [(d.level, d.code) for d in found] == [("warning", "absent-attribute")]
    assert "OpenVINO uses blocks_first" in found[0].message
    want = np.asarray(ov.Core().compile_model(path, "CPU")([x])[0])
    assert_close(irrun.load(path).run({"in0": x})["out"], want)
    path.write_text(text.replace('block_size="2"', ""))  # OpenVINO reads 0 and refuses it
    found = [d for d in irrun.validate(path) if d.level == "error"]
    assert [d.code for d in found] == ["missing-attribute"], found


# --------------------------------------------------------------------------- element types

from support.typed import Case  # noqa: E402

from irrun.ir.element_types import ANY  # noqa: E402

TYPE_CASES = {
    "DepthToSpace-1": Case(lambda x: opset1.depth_to_space(x, "depth_first", 2), (1, 4, 2, 1)),
    "DepthToSpace-1/blocks_first": Case(lambda x: opset1.depth_to_space(x, "blocks_first", 2),
                                        (1, 8, 1, 1, 1)),
    "SpaceToDepth-1": Case(lambda x: opset1.space_to_depth(x, "blocks_first", 2), (1, 1, 2, 4)),
    "SpaceToDepth-1/depth_first": Case(lambda x: opset1.space_to_depth(x, "depth_first", 2),
                                       (1, 2, 2, 2)),
    "ShuffleChannels-1": Case(lambda x: opset3.shuffle_channels(x, 1, 2), (1, 4, 2, 1)),
}  # fmt: skip


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("op", TYPE_CASES)
def test_every_data_type(op, t, tmp_path):
    """Data of every element type (the ops take any), strings and packed types included, as
    OpenVINO moves it (support.typed)."""
    TYPE_CASES[op].check_data_type(t, tmp_path)


def test_the_layout_ops_take_any_type():
    for name in ("DepthToSpace", "SpaceToDepth", "ShuffleChannels"):
        assert resolve(name, "opset16").input_types == (ANY,)
