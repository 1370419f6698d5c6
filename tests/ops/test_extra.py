"""Reverse, ReverseSequence, BatchToSpace, SpaceToBatch, Eye, Bucketize, SearchSorted,
GRN and Unique against OpenVINO.

Differential sweeps run one-op models (saved as IR) in irrun and in the CPU plugin
(f32, one thread) from seeded generators, and in OpenVINO's reference kernels where
``Model.evaluate`` has one (Reverse, BatchToSpace, SpaceToBatch with i64 blocks, Eye;
ExtractImagePatches's reference kernel was read instead: it pads as the plugin does).  Every op here but GRN moves or counts values, so those comparisons are exact.
GRN sums squares along axis 1 in an order of the plugin's choosing: 4 f32 ulp
(rtol 5e-7) for the sum's rounding and the division, one f16 ulp (1e-3) for f16.
Shape rules are compared with OpenVINO's own on static, interval and dynamic dims.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset2, opset3, opset9, opset10, opset15  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    assert_versions_follow_factories,
    one_op_model,
    run_both,
    run_cpu,
    run_reference,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

FACTORIES = {
    "ReverseSequence": "reverse_sequence", "BatchToSpace": "batch_to_space",
    "SpaceToBatch": "space_to_batch", "Eye": "eye", "Bucketize": "bucketize",
    "SearchSorted": "search_sorted", "GRN": "grn", "Unique": "unique",
}  # fmt: skip
ET = {name: ELEMENT_TYPES[name] for name in ("f32", "f16", "i32", "i64", "u8", "i8", "boolean")}


def _const(v, dtype=np.int64):
    return opset1.constant(np.array(v, dtype))


def _reverse(p, axes, mode):
    return NodeFactory("opset1").create("Reverse", [p.output(0), axes.output(0)], {"mode": mode})


def _data(rng, shape, et="f32"):
    dtype = ET[et].dtype
    if dtype.kind == "f":
        return rng.normal(0, 3, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)


def _all_three(build, inputs, tmp_path, outputs=1, reference=True):
    """irrun's outputs against the plugin's and the reference kernels'."""
    model = one_op_model(build, inputs, outputs)
    got = run_saved(model, inputs, tmp_path)
    wants = [run_cpu(model, inputs)] + ([run_reference(model, inputs)] if reference else [])
    for want in wants:
        for g, w in zip(got, want, strict=True):
            assert_close(g, w)
    return got


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    assert_versions_follow_factories(op_type, FACTORIES[op_type])


def test_reverse_is_in_opset1_only():
    assert resolve("Reverse", "opset1").label == "Reverse-v1"
    for n in (2, 8, 16):
        with pytest.raises(LookupError):
            resolve("Reverse", f"opset{n}")


# --------------------------------------------------------------------------- Reverse


@pytest.mark.parametrize("et", ["f32", "f16", "i32", "u8", "boolean"])
def test_reverse_matches_openvino(et, tmp_path):
    rng = np.random.default_rng(len(et))
    for shape in ([2, 3, 4], [5], [1, 0, 3], [3, 1, 2, 2]):
        x = _data(rng, shape, et)
        rank = len(shape)
        axes = sorted(set(rng.integers(-rank, rank, size=int(rng.integers(1, rank + 1)))))
        for itype in (np.int64, np.int32, np.uint8):
            if itype == np.uint8:
                axes = [a % rank for a in axes]
            _all_three(lambda p, ax=axes, t=itype: _reverse(p, _const(ax, t), "index"), [x],
                       tmp_path)  # fmt: skip
        mask = rng.random(rank) < 0.5
        _all_three(lambda p, m=mask: _reverse(p, _const(m, bool), "mask"), [x], tmp_path)


def test_reverse_by_hand(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    run = lambda b: run_saved(one_op_model(b, [x]), [x], tmp_path)[0].tolist()  # noqa: E731
    assert run(lambda p: _reverse(p, _const([-1, 1]), "index")) == [[2, 1, 0], [5, 4, 3]]
    assert run(lambda p: _reverse(p, _const([True, True], bool), "mask")) == [[5, 4, 3],
                                                                              [2, 1, 0]]
    # The axes may come from a tensor computed at run time.
    a = np.array([0], np.int64)
    got = run_saved(one_op_model(lambda p, q: _reverse(p, q, "index"), [x, a]), [x, a],
                    tmp_path)[0]  # fmt: skip
    assert got.tolist() == [[3, 4, 5], [0, 1, 2]]


def test_reverse_shape_rule():
    rule = resolve("Reverse", "opset1")
    f32, i64, b = ET["f32"], ET["i64"], ET["boolean"]
    shape = (Interval(1, 4), DYNAMIC)
    (out,) = rule.infer(attrs_namespace({"mode": "index"}),
                        [TensorInfo(shape, f32), TensorInfo((1,), i64, np.array([1]))])  # fmt: skip
    assert out.shape == shape
    with pytest.raises(ShapeError, match="reversed axis 2 is out of range for rank 2"):
        rule.infer(attrs_namespace({"mode": "index"}),
                   [TensorInfo(shape, f32), TensorInfo((1,), i64, np.array([2]))])  # fmt: skip
    with pytest.raises(ShapeError, match="mask has 3 values"):
        rule.infer(attrs_namespace({"mode": "mask"}), [TensorInfo(shape, f32),
                                                       TensorInfo((3,), b)])  # fmt: skip
    with pytest.raises(ShapeError, match="must be boolean"):
        rule.infer(attrs_namespace({"mode": "mask"}), [TensorInfo(shape, f32),
                                                       TensorInfo((2,), i64)])  # fmt: skip
    with pytest.raises(ShapeError, match="must be 1-D"):
        rule.infer(attrs_namespace({"mode": "index"}), [TensorInfo(shape, f32),
                                                        TensorInfo((), i64)])  # fmt: skip
    # OpenVINO refuses the same.
    for axes, mode in (([2], "index"), ([True], "mask"), ([1, 0], "mask")):
        dtype = bool if isinstance(axes[0], bool) else np.int64
        with pytest.raises(RuntimeError):
            _reverse(opset1.parameter([2, 3]), _const(axes, dtype), mode)


# --------------------------------------------------------------------------- ReverseSequence


@pytest.mark.parametrize("et", ["f32", "i32", "u8", "f16"])
def test_reverse_sequence_matches_openvino(et, tmp_path):
    rng = np.random.default_rng(len(et) + 40)
    for shape, batch, seq in (([3, 5], 0, 1), ([4, 2, 3], 1, 0), ([2, 3, 4], -1, 1),
                              ([3, 4, 2, 2], 0, -2), ([2, 6, 1], 2, 1)):  # fmt: skip
        x = _data(rng, shape, et)
        n, b = shape[seq], shape[batch]
        for ltype in (np.int32, np.int64, np.float32, np.int8):
            lengths = rng.integers(0, n + 1, b).astype(ltype)
            _all_three(lambda p, q, bt=batch, sq=seq: opset1.reverse_sequence(p, q, bt, sq),
                       [x, lengths], tmp_path, reference=False)  # fmt: skip


def test_reverse_sequence_by_hand(tmp_path):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    lengths = np.array([4, 0, 2], np.int32)
    model = one_op_model(lambda p, q: opset1.reverse_sequence(p, q, 0, 1), [x, lengths])
    got = run_saved(model, [x, lengths], tmp_path)[0]
    # A length of 0 flips nothing, as 1 does.
    assert got.tolist() == [[3, 2, 1, 0], [4, 5, 6, 7], [9, 8, 10, 11]]
    with pytest.raises(irrun.IrrunError, match=r"must lie in 0\.\.4"):
        run_saved(model, [x, np.array([1, 5, 1], np.int32)], tmp_path)


def test_reverse_sequence_shape_rule_matches_openvino():
    rule = resolve("ReverseSequence", "opset1")
    cases = [((Interval(2, 6), 4), (3,), 0, 1), ((DYNAMIC, 3, 2), (DYNAMIC,), 0, 2),
             (None, (3,), 0, 1), ((2, DYNAMIC), (2,), 0, 1)]  # fmt: skip
    for data, lengths, batch, seq in cases:
        p = opset1.parameter(to_ov_shape(data), ov.Type.f32)
        q = opset1.parameter(to_ov_shape(lengths), ov.Type.i32)
        want = from_ov_shape(opset1.reverse_sequence(p, q, batch, seq).get_output_partial_shape(0))
        (got,) = rule.infer(attrs_namespace({"batch_axis": batch, "seq_axis": seq}),
                            [TensorInfo(data, ET["f32"]), TensorInfo(lengths, ET["i32"])])
        assert got.shape == want, (data, lengths)
    for data, lengths, batch, seq, match in (((3,), (3,), 0, 0, "rank 2 or more"),
                                             ((3, 4), (4,), 0, 1, "3"),
                                             ((3, 4), (3,), 2, 1, "batch_axis 2")):  # fmt: skip
        with pytest.raises(ShapeError, match=match):
            rule.infer(attrs_namespace({"batch_axis": batch, "seq_axis": seq}),
                       [TensorInfo(data, ET["f32"]), TensorInfo(lengths, ET["i32"])])
        with pytest.raises(RuntimeError):
            opset1.reverse_sequence(opset1.parameter(list(data)), opset1.parameter(
                list(lengths), ov.Type.i32), batch, seq)  # fmt: skip


# --------------------------------------------------------------------------- BatchToSpace, SpaceToBatch


S2B_CASES = [
    # data shape, block, pads_begin, pads_end
    ([1, 2, 4, 6], [1, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0]),
    ([2, 3, 5], [1, 3, 2], [0, 1, 0], [0, 2, 1]),
    ([3, 4], [1, 2], [0, 1], [0, 1]),
    ([2, 1, 3, 2, 2], [1, 1, 3, 2, 1], [0, 0, 2, 1, 0], [0, 0, 1, 1, 1]),
]


@pytest.mark.parametrize("itype", [np.int64, np.int32])
@pytest.mark.parametrize("et", ["f32", "i32", "u8"])
@pytest.mark.parametrize("case", range(len(S2B_CASES)))
def test_space_to_batch_and_back_match_openvino(case, et, itype, tmp_path):
    shape, block, begin, end = S2B_CASES[case]
    rng = np.random.default_rng(case)
    x = _data(rng, shape, et)
    c = lambda v: _const(v, itype)  # noqa: E731
    # The reference kernels read the block values as i64 whatever their type (i32 ones
    # crash the process with a division by zero), so only i64 goes there; they do not
    # evaluate 2-D data.
    ref = itype == np.int64 and len(shape) > 2
    (y,) = _all_three(lambda p: opset2.space_to_batch(p, c(block), c(begin), c(end)), [x],
                      tmp_path, reference=ref)  # fmt: skip
    (back,) = _all_three(lambda p: opset2.batch_to_space(p, c(block), c(begin), c(end)), [y],
                         tmp_path, reference=ref)  # fmt: skip
    assert_close(back, x)


def test_empty_batch(tmp_path):
    """The plugin cannot compile an empty BatchToSpace, so by hand: no elements, any shape."""
    x = np.zeros((0, 2, 2), np.float32)
    c = _const
    s2b = one_op_model(lambda p: opset2.space_to_batch(p, c([1, 2, 1]), c([0, 0, 0]),
                                                       c([0, 0, 0])), [x])  # fmt: skip
    assert run_saved(s2b, [x], tmp_path)[0].shape == (0, 1, 2)
    b2s = one_op_model(lambda p: opset2.batch_to_space(p, c([1, 1, 2]), c([0, 0, 0]),
                                                       c([0, 0, 1])), [x])  # fmt: skip
    assert run_saved(b2s, [x], tmp_path)[0].shape == (0, 2, 3)


def test_batch_to_space_by_hand(tmp_path):
    # Four images of 1x1 become one 2x2 image: batch index = row block * 2 + column block.
    x = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)
    c = _const
    model = one_op_model(lambda p: opset2.batch_to_space(p, c([1, 1, 2, 2]), c([0] * 4),
                                                         c([0] * 4)), [x])  # fmt: skip
    assert run_saved(model, [x], tmp_path)[0].reshape(2, 2).tolist() == [[0, 1], [2, 3]]
    model = one_op_model(lambda p: opset2.batch_to_space(p, c([1, 1, 2, 2]), c([0, 0, 1, 0]),
                                                         c([0, 0, 0, 1])), [x])  # fmt: skip
    assert run_saved(model, [x], tmp_path)[0].reshape(-1).tolist() == [2]


def _block_rule(op, data, block, begin, end):
    infos = [TensorInfo(data, ET["f32"])] + [
        TensorInfo((len(v),), ET["i64"], np.array(v)) for v in (block, begin, end)]
    return resolve(op, "opset2").infer(attrs_namespace({}), infos)[0].shape


@pytest.mark.parametrize("op", ["BatchToSpace", "SpaceToBatch"])
def test_block_shape_rules_match_openvino(op):
    factory = opset2.batch_to_space if op == "BatchToSpace" else opset2.space_to_batch
    cases = [((DYNAMIC, Interval(2, 6), 5), [1, 3, 2], [0, 1, 0], [0, 0, 1]),
             ((Interval(6, 12), Interval(2, 6), 5), [1, 3, 1], [0, 1, 0], [0, 0, 1]),
             ((12, 4, 6), [1, 2, 3], [0, 1, 0], [0, 1, 0])]  # fmt: skip
    for data, block, begin, end in cases:
        p = opset1.parameter(to_ov_shape(data), ov.Type.f32)
        node = factory(p, _const(block), _const(begin), _const(end))
        want = from_ov_shape(node.get_output_partial_shape(0))
        assert _block_rule(op, data, block, begin, end) == want, (op, data)


@pytest.mark.parametrize("op, data, block, begin, end, match", [
    ("BatchToSpace", (6, 4), [1, 4], [0, 0], [0, 0], "batch 6 is not a multiple of 4"),
    ("SpaceToBatch", (2, 5), [1, 2], [0, 0], [0, 0], "padded axis 1 5 is not a multiple"),
    ("BatchToSpace", (4, 2), [1, 2], [0, 3], [0, 2], "exceed"),
    ("SpaceToBatch", (2, 4), [1, 0], [0, 0], [0, 0], "1 or more"),
    ("SpaceToBatch", (2, 4, 1), [1, 2], [0, 0], [0, 0], "one value per axis"),
    ("BatchToSpace", (4,), [1], [0], [0], "rank 2 or more"),
])  # fmt: skip
def test_block_shape_rules_refuse_what_openvino_refuses(op, data, block, begin, end, match):
    with pytest.raises(ShapeError, match=match):
        _block_rule(op, data, block, begin, end)
    factory = opset2.batch_to_space if op == "BatchToSpace" else opset2.space_to_batch
    # OpenVINO 2026.4 refuses these too, but not always: given fewer block values than axes
    # its check reads past them, and about one build in 300 passes (measured).  Refused in
    # one of five builds is what holds on every run.
    refused = 0
    for _ in range(5):
        try:
            factory(opset1.parameter(list(data)), _const(block), _const(begin), _const(end))
        except RuntimeError:
            refused += 1
    assert refused >= 1


def test_block_zero_must_be_one():
    """OpenVINO's shape rule ignores block_shape[0] where its kernels use it."""
    with pytest.raises(ShapeError, match=r"block_shape\[0\] must be 1"):
        _block_rule("SpaceToBatch", (2, 4), [2, 2], [0, 0], [0, 0])
    with pytest.raises(ShapeError, match=r"block_shape\[0\] must be 1"):
        _block_rule("BatchToSpace", (4, 4), [1, 2], [1, 0], [0, 0])


# --------------------------------------------------------------------------- Eye


@pytest.mark.parametrize("out_type", ["f32", "f16", "i32", "i64", "u8", "boolean"])
def test_eye_matches_openvino(out_type, tmp_path):
    for rows, cols, diag, batch in ((3, 4, 0, None), (4, 3, 1, [2]), (3, 3, -2, [2, 1]),
                                    (2, 5, 7, None), (3, 2, -5, [1]), (0, 3, 0, [2]),
                                    (1, 1, 0, [0, 2])):  # fmt: skip
        for itype in (np.int64, np.int32):
            extra = [] if batch is None else [np.array(batch, itype)]
            inputs = [np.array(rows, itype), np.array([cols], itype), np.array(diag, itype),
                      *extra]  # fmt: skip
            # The reference kernel has no boolean Eye.
            _all_three(lambda *ps, t=out_type: opset9.eye(*ps[:3], t, *ps[3:]), inputs,
                       tmp_path, reference=out_type != "boolean")  # fmt: skip


def test_eye_by_hand(tmp_path):
    model = one_op_model(lambda: opset9.eye(_const(2), _const(3), _const(1), "i32"), [])
    assert run_saved(model, [], tmp_path)[0].tolist() == [[0, 1, 0], [0, 0, 1]]


def test_eye_shape_rule_matches_openvino():
    rule = resolve("Eye", "opset9")
    i64 = ET["i64"]
    known = lambda v: TensorInfo((), i64, np.array(v))  # noqa: E731
    attrs = attrs_namespace({"output_type": ET["f32"]})
    (out,) = rule.infer(attrs, [known(3), TensorInfo((), i64), known(0),
                                TensorInfo((2,), i64)])  # fmt: skip
    p = opset1.parameter([], ov.Type.i64)
    b = opset1.parameter([2], ov.Type.i64)
    want = opset9.eye(_const(3), p, _const(0), "f32", b).get_output_partial_shape(0)
    assert out.shape == from_ov_shape(want) == (DYNAMIC, DYNAMIC, 3, DYNAMIC)
    (out,) = rule.infer(attrs, [known(3), known(2), known(0), TensorInfo((2,), i64,
                                                                       np.array([4, 1]))])
    assert out.shape == (4, 1, 3, 2)
    with pytest.raises(ShapeError, match="num_rows must not be negative, got -1"):
        rule.infer(attrs, [known(-1), known(2), known(0)])
    with pytest.raises(RuntimeError):
        opset9.eye(_const(-1), _const(2), _const(0), "f32")
    with pytest.raises(ShapeError, match="input 0 is f32"):
        rule.infer(attrs, [TensorInfo((), ET["f32"]), known(2), known(0)])


# --------------------------------------------------------------------------- Bucketize


@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("et, bt", [("f32", "f32"), ("f16", "f16"), ("i32", "i32"),
                                    ("i64", "f32"), ("f32", "i32"), ("u8", "i64")])  # fmt: skip
def test_bucketize_matches_cpu(et, bt, right, tmp_path):
    rng = np.random.default_rng(len(et + bt) + right)
    x = _data(rng, (3, 41), et)
    if ET[et].dtype.kind == "f":
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    for nb in (0, 1, 7):
        buckets = np.sort(_data(rng, (nb,), bt))
        if nb:
            x.flat[4 : 4 + nb] = buckets  # on the bounds
        for out in ("i32", "i64"):
            got, want = run_both(lambda p, q, o=out: opset3.bucketize(p, q, o, right),
                                 [x, buckets], tmp_path)  # fmt: skip
            assert_close(got, want, what=f"{nb} {out}")


def test_bucketize_by_hand(tmp_path):
    x = np.array([-1, 0, 0.5, 1, 2, 3, np.nan], np.float32)
    b = np.array([0, 1, 2], np.float32)
    for right, want in ((True, [0, 0, 1, 1, 2, 3, 0]), (False, [0, 1, 1, 2, 3, 3, 3])):
        model = one_op_model(lambda p, q, r=right: opset3.bucketize(p, q, "i64", r), [x, b])
        assert run_saved(model, [x, b], tmp_path)[0].tolist() == want


def test_bucketize_shape_rule():
    rule = resolve("Bucketize", "opset3")
    attrs = attrs_namespace({"output_type": ET["i32"], "with_right_bound": True})
    (out,) = rule.infer(attrs, [TensorInfo((Interval(1, 3), 4), ET["f32"]),
                                TensorInfo((5,), ET["f32"])])  # fmt: skip
    assert out.shape == (Interval(1, 3), 4) and out.element_type.name == "i32"
    with pytest.raises(ShapeError, match="buckets must be 1-D"):
        rule.infer(attrs, [TensorInfo((2,), ET["f32"]), TensorInfo((2, 2), ET["f32"])])
    with pytest.raises(RuntimeError):
        opset3.bucketize(opset1.parameter([2]), opset1.parameter([2, 2]))


# --------------------------------------------------------------------------- SearchSorted


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("et", ["f32", "i32", "f16", "i64"])
def test_search_sorted_matches_cpu(et, right, tmp_path):
    rng = np.random.default_rng(len(et) + 3 * right)
    for seq_shape, val_shape in (((9,), (4, 5)), ((2, 3, 7), (2, 3, 4)), ((4, 6), (4, 1)),
                                 ((5,), ()), ((3, 1), (3, 6)), ((2, 4), (2, 0))):  # fmt: skip
        seq = np.sort(_data(rng, seq_shape, et), axis=-1)
        seq = np.round(seq) if seq.dtype.kind == "f" else seq // 300  # ties
        values = _data(rng, val_shape, et)
        values = np.round(values) if values.dtype.kind == "f" else values // 300
        if values.dtype.kind == "f" and values.size > 2:
            values.flat[:2] = [np.nan, -np.inf]
        for out in ("i64", "i32"):
            got, want = run_both(lambda p, q, o=out: opset15.search_sorted(p, q, right, o),
                                 [seq, values], tmp_path)  # fmt: skip
            assert_close(got, want, what=f"{seq_shape} {val_shape} {out}")


def test_search_sorted_by_hand(tmp_path):
    s = np.array([[0, 1, 2, 2, 3], [1, 1, 1, 5, 9]], np.float32)
    v = np.array([[2, -1, 4], [1, 10, 5]], np.float32)
    for right, want in ((False, [[2, 0, 5], [0, 5, 3]]), (True, [[4, 0, 5], [3, 5, 4]])):
        model = one_op_model(lambda p, q, r=right: opset15.search_sorted(p, q, r), [s, v])
        assert run_saved(model, [s, v], tmp_path)[0].tolist() == want
    # Empty rows: every value has 0 entries below it (the plugin returns whatever its
    # output buffer held).
    s, v = np.zeros((2, 0), np.float32), np.ones((2, 3), np.float32)
    model = one_op_model(lambda p, q: opset15.search_sorted(p, q, True), [s, v])
    assert run_saved(model, [s, v], tmp_path)[0].tolist() == [[0, 0, 0], [0, 0, 0]]


def test_search_sorted_shape_rule_matches_openvino():
    rule = resolve("SearchSorted", "opset15")
    attrs = attrs_namespace({"right_mode": False, "output_type": ET["i64"]})
    for seq, val in (((DYNAMIC, 5), (2, DYNAMIC)), ((5,), ()), ((5,), (2, 3, 4)),
                     ((Interval(1, 4), 3), (Interval(2, 8), 7)), (None, (2, 3))):  # fmt: skip
        p = opset1.parameter(to_ov_shape(seq), ov.Type.f32)
        q = opset1.parameter(to_ov_shape(val), ov.Type.f32)
        want = from_ov_shape(opset15.search_sorted(p, q).get_output_partial_shape(0))
        (got,) = rule.infer(attrs, [TensorInfo(seq, ET["f32"]), TensorInfo(val, ET["f32"])])
        assert got.shape == want, (seq, val)
    for seq, val, match in (((2, 5), (3, 4), "differ on axis 0"), ((2, 5), (2,), "one rank")):
        with pytest.raises(ShapeError, match=match):
            rule.infer(attrs, [TensorInfo(seq, ET["f32"]), TensorInfo(val, ET["f32"])])
        with pytest.raises(RuntimeError):
            opset15.search_sorted(opset1.parameter(list(seq)), opset1.parameter(list(val)))
    with pytest.raises(ShapeError, match="one type"):
        rule.infer(attrs, [TensorInfo((5,), ET["f32"]), TensorInfo((2,), ET["i32"])])


# --------------------------------------------------------------------------- GRN


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("bias", [1e-6, 0.5, 3.0])
def test_grn_matches_cpu(bias, et, tmp_path):
    rng = np.random.default_rng(int(bias * 10) + len(et))
    for shape in ((2, 3, 4), (3, 7), (1, 16, 3, 5), (2, 1, 3)):
        x = _data(rng, shape, et)
        got, want = run_both(lambda p: opset1.grn(p, bias), [x], tmp_path)
        tol = 1e-3 if et == "f16" else 5e-7
        assert_close(got, want, rtol=tol, atol=tol, what=f"{shape}")


def test_grn_by_hand(tmp_path):
    x = np.array([[3, 4], [0, 0]], np.float32).reshape(2, 2)
    model = one_op_model(lambda p: opset1.grn(p, 0.0), [x])
    got = run_saved(model, [x], tmp_path)[0]
    assert np.allclose(got[0], [0.6, 0.8])
    with pytest.raises(ShapeError, match="rank 2, 3 or 4"):
        resolve("GRN", "opset1").infer(attrs_namespace({"bias": 1.0}),
                                       [TensorInfo((1, 2, 3, 4, 5), ET["f32"])])  # fmt: skip


# --------------------------------------------------------------------------- Unique


def _unique(p, sorted_, axis=None, it="i64", ct="i64"):
    return opset10.unique(p, None if axis is None else _const(axis), sorted_, it, ct)


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("et", ["f32", "i32", "u8", "i64", "f16"])
def test_unique_matches_cpu(et, sorted_, tmp_path):
    """Along an axis other than 0 the plugin leaves duplicates (and with u8 data along any
    axis its indices are garbage), so slices along axis k are checked against the
    plugin's answer along axis 0 of the data with axis k moved to the front."""
    rng = np.random.default_rng(len(et) + sorted_)
    for shape, axis in (((17,), None), ((3, 4), None), ((5, 3), 0), ((2, 6), 1),
                        ((3, 4, 2), -1), ((4, 2, 3), 1), ((1,), None), ((), None),
                        ((6, 2, 2), 0)):  # fmt: skip
        x = np.abs(_data(rng, shape, et)).astype(ET[et].dtype)
        if x.ndim:
            x = np.take(x, rng.integers(0, x.shape[0], x.shape[0]), axis=0)  # repeats
        x = (x % 3 if x.dtype.kind != "f" else np.round(x) % 3 + 0).astype(x.dtype)
        if et == "f32" and x.size > 3:
            x.flat[:2] = [-0.0, 0.0]  # one value
        for it, ct in (("i64", "i64"), ("i32", "i64"), ("i64", "i32")):
            model = one_op_model(lambda p, a=axis, i=it, c=ct: _unique(p, sorted_, a, i, c), [x], 4)
            got = run_saved(model, [x], tmp_path)
            if axis is None:
                want = run_cpu(model, [x])
            elif et == "u8":
                continue
            else:
                front = np.ascontiguousarray(np.moveaxis(x, axis, 0))
                front_model = one_op_model(
                    lambda p, i=it, c=ct: _unique(p, sorted_, 0, i, c), [front], 4)
                want = run_cpu(front_model, [front])
                want[0] = np.moveaxis(want[0], 0, axis)
            for k, (g, w) in enumerate(zip(got, want, strict=True)):
                assert_close(g, w, what=f"{shape} {axis} output {k}")


def test_unique_nan_and_zeros(tmp_path):
    x = np.array([3, 1, np.nan, 1, -0.0, 0.0, np.nan, 2, 3], np.float32)
    got, want = run_both(lambda p: _unique(p, False), [x], tmp_path, outputs=4)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert np.signbit(got[0][3])  # -0.0 came first
    # Sorted, each NaN is its own value and they come last (the plugin's output has
    # duplicates here, so the expectation is by hand).
    model = one_op_model(lambda p: _unique(p, True), [x], 4)
    values, first, inverse, counts = run_saved(model, [x], tmp_path)
    np.testing.assert_array_equal(values, [-0.0, 1, 2, 3, np.nan, np.nan])
    assert first.tolist() == [4, 1, 7, 0, 2, 6]
    assert inverse.tolist() == [3, 1, 4, 1, 0, 0, 5, 2, 3]
    assert counts.tolist() == [2, 2, 1, 2, 1, 1]
    # Slices compare as numbers too.
    y = np.array([[-0.0, 0.0, 1.0]], np.float32)
    model = one_op_model(lambda p: _unique(p, False, 1), [y], 4)
    values, first, inverse, counts = run_saved(model, [y], tmp_path)
    assert values.tolist() == [[0.0, 1.0]] and np.signbit(values[0, 0])
    assert first.tolist() == [0, 2] and inverse.tolist() == [0, 0, 1]
    assert counts.tolist() == [2, 1]


def test_unique_by_hand(tmp_path):
    x = np.array([[3, 2], [1, 5], [3, 1], [1, 5]], np.int32)
    model = one_op_model(lambda p: _unique(p, True, 0), [x], 4)
    values, first, inverse, counts = run_saved(model, [x], tmp_path)
    assert values.tolist() == [[1, 5], [3, 1], [3, 2]]
    assert first.tolist() == [1, 2, 0] and inverse.tolist() == [2, 0, 1, 0]
    assert counts.tolist() == [2, 1, 1]


def test_unique_shape_rule_matches_openvino():
    rule = resolve("Unique", "opset10")
    attrs = attrs_namespace({"sorted": True, "index_element_type": ET["i64"],
                             "count_element_type": ET["i32"]})  # fmt: skip
    for shape, axis in (((2, 3), None), ((2, 3), 1), ((2, DYNAMIC, 4), 1), ((), None),
                        ((0, 3), None), ((0, 3), 1), ((Interval(1, 4), 3), None),
                        ((2, 3), -2)):  # fmt: skip
        p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
        node = _unique(p, True, axis, "i64", "i32")
        # OpenVINO's empty-input case reports a lower bound of -1: a dynamic dim.
        want = [tuple(DYNAMIC if isinstance(d, Interval) and d.lo < 0 else d for d in shape)
                for shape in (from_ov_shape(node.get_output_partial_shape(k))
                              for k in range(4))]  # fmt: skip
        infos = [TensorInfo(shape, ET["f32"])]
        if axis is not None:
            infos.append(TensorInfo((), ET["i64"], np.array(axis)))
        got = rule.infer(attrs, infos)
        assert [g.shape for g in got] == want, (shape, axis)
        assert [g.element_type.name for g in got] == ["f32", "i64", "i64", "i32"]
    # A constant input gives exact shapes, as OpenVINO's constant folding does.
    const = TensorInfo((3,), ET["i64"], np.array([1, 2, 2]))
    node = _unique(_const([1, 2, 2]), True)
    want = [from_ov_shape(node.get_output_partial_shape(k)) for k in range(4)]
    assert [g.shape for g in rule.infer(attrs, [const])] == want
    with pytest.raises(ShapeError, match="axis 2 is out of range"):
        rule.infer(attrs, [TensorInfo((2, 3), ET["f32"]), TensorInfo((), ET["i64"],
                                                                     np.array(2))])


def test_unique_rejects_bad_index_types():
    op = resolve("Unique", "opset10")
    with pytest.raises(ValueError, match="i32 or i64"):
        op.check(attrs_namespace({"sorted": True, "index_element_type": ET["f32"],
                                  "count_element_type": ET["i64"]}))  # fmt: skip


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    p = opset1.parameter([4, 2, 3], ov.Type.f32, name="in0")
    node = opset2.batch_to_space(p, _const([1, 2, 1]), _const([0, 1, 0]), _const([0, 0, 0]))
    node.set_friendly_name("b2s")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert irrun.validate(path) == []
    # The output is [2, 3, 3]; declare 4 for its middle dim.
    head, tail = text.split('type="BatchToSpace"')
    out = tail.index("<output>")
    tail = tail[:out] + tail[out:].replace("<dim>3</dim>", "<dim>4</dim>", 1)
    path.write_text(head + 'type="BatchToSpace"' + tail)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'b2s' (BatchToSpace-v2)" in m for m in found), found
    u = opset10.unique(p, None, True, "i64", "i64")
    u.set_friendly_name("uniq")
    ov.save_model(ov.Model(u.outputs(), [p]), path)
    text = path.read_text()
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    path.write_text(text.replace('index_element_type="i64"', 'index_element_type="f32"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'uniq' (Unique-v10)" in m and "i32 or i64" in m for m in found), found


# --------------------------------------------------------------------------- ExtractImagePatches


@pytest.mark.parametrize("pad", ["valid", "same_upper", "same_lower"])
@pytest.mark.parametrize("et", ["f32", "i32", "u8"])
def test_extract_image_patches_matches_openvino(pad, et, tmp_path):
    from openvino import opset3

    rng = np.random.default_rng(len(pad) + len(et))
    for shape, sizes, strides, rates in (
        ((1, 2, 5, 5), [2, 2], [2, 2], [1, 1]), ((2, 3, 7, 6), [3, 2], [1, 2], [2, 1]),
        ((1, 1, 10, 10), [3, 3], [5, 5], [1, 1]), ((1, 2, 4, 9), [1, 4], [3, 2], [1, 2]),
        ((1, 1, 2, 3), [3, 3], [2, 4], [1, 1]), ((2, 1, 6, 6), [2, 3], [4, 3], [3, 2]),
        ((1, 2, 0, 3), [2, 2], [1, 1], [1, 1]), ((1, 1, 1, 1), [2, 2], [2, 2], [1, 1]),
    ):  # fmt: skip
        x = _data(rng, shape, et)
        _all_three(lambda p, a=(sizes, strides, rates): opset3.extract_image_patches(p, *a, pad),
                   [x], tmp_path, reference=False)  # fmt: skip


def test_extract_image_patches_by_hand(tmp_path):
    from openvino import opset3

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


# --------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=0, max_size=40), st.booleans())
def test_unique_reconstructs_its_input(values, sorted_):
    from irrun.ops.sorting import unique_rows

    x = np.array(values, np.int64).reshape(-1, 1)
    first, inverse, counts = unique_rows(x, sorted_)
    uniq = x[first, 0]
    assert uniq[inverse].tolist() == values
    assert counts.tolist() == [values.count(v) for v in uniq.tolist()]
    assert first.tolist() == [values.index(v) for v in uniq.tolist()]
    assert uniq.tolist() == (sorted(set(values)) if sorted_ else list(dict.fromkeys(values)))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(0, 6), st.integers(0, 6), st.booleans(), st.data())
def test_row_search_is_searchsorted_per_row(rows, n, m, right, data):
    from irrun.ops.sorting import search_rows

    ints = st.integers(-3, 3)
    s = np.sort(np.array(data.draw(st.lists(ints, min_size=rows * n, max_size=rows * n)),
                         np.float32).reshape(rows, n), axis=1)  # fmt: skip
    v = np.array(data.draw(st.lists(ints, min_size=rows * m, max_size=rows * m)),
                 np.float32).reshape(rows, m)  # fmt: skip
    side = "right" if right else "left"
    want = [np.searchsorted(s[r], v[r], side=side).tolist() for r in range(rows)]
    assert search_rows(s, v, right).tolist() == want
