"""CTCGreedyDecoder, CTCGreedyDecoderSeqLen and CTCLoss against OpenVINO's CPU plugin
(``evaluate`` has no kernel for them) over their attributes and index types; CTCLoss
also against a brute-force sum over every alignment (written here from the definition),
where the plugin differs (labels equal to the blank, empty labels, which crash it, and
large logits, where it overflows); the shape rules against OpenVINO's own, dynamic dims
included; validate's findings.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset4, opset6  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    one_op_model,
    run_cpu,
    run_irrun,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

ET = ELEMENT_TYPES

# --------------------------------------------------------------------------- greedy decoders


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_ctc_greedy_decoder_matches_cpu(merge, dtype, tmp_path):
    rng = np.random.default_rng(merge)
    for t, n, c in ((7, 3, 4), (1, 1, 2), (10, 2, 6), (5, 4, 1)):
        # Small integers: ties and repeats are common.
        data = rng.integers(0, 3, (t, n, c)).astype(dtype)
        mask = (rng.random((t, n)) < 0.85).astype(dtype)
        mask[0, 0] = 1
        model = one_op_model(lambda d, m: opset1.ctc_greedy_decoder(d, m, merge), [data, mask])
        got = run_saved(model, [data, mask], tmp_path)[0]
        assert_close(got, run_cpu(model, [data, mask])[0], what=str((t, n, c)))


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("types", [("i32", "i32", "i32"), ("i64", "i64", "i32"),
                                   ("i32", "i32", "i64")])  # fmt: skip
@pytest.mark.parametrize("blank", [None, 0, 2, 9])
def test_ctc_greedy_decoder_seq_len_matches_cpu(merge, types, blank, tmp_path):
    rng = np.random.default_rng(len(str(types)) + (blank or 0))
    index, classes_type, length_type = types
    index = ET[index].dtype
    for n, t, c in ((3, 8, 4), (1, 1, 3), (4, 6, 5)):
        data = rng.integers(0, 3, (n, t, c)).astype(np.float32)
        lengths = rng.integers(0, t + 1, n).astype(index)
        inputs = [data, lengths]
        if blank is not None:
            inputs.append(np.array(blank, index) if blank != 9 else np.array([1], index))

        def build(*p):
            return opset6.ctc_greedy_decoder_seq_len(
                *p, merge_repeated=merge, classes_index_type=classes_type,
                sequence_length_type=length_type)  # fmt: skip

        model = one_op_model(build, inputs, 2)
        got, want = run_saved(model, inputs, tmp_path), run_cpu(model, inputs)
        for g, w in zip(got, want, strict=True):
            assert_close(g, w)


def test_ctc_greedy_decoders_by_hand(tmp_path):
    # Best classes per step: 1 1 3(blank) 1 2 2 0 | mask ends after 6 steps.
    best = [1, 1, 3, 1, 2, 2, 0]
    data = np.eye(4, dtype=np.float32)[best][:, None, :]  # [T=7, N=1, C=4]
    mask = np.array([[1], [1], [1], [1], [1], [1], [0]], np.float32)
    got = run_irrun(lambda d, m: opset1.ctc_greedy_decoder(d, m, True), [data, mask], tmp_path)
    assert got.ravel().tolist() == [1, 1, 2, -1, -1, -1, -1]
    got = run_irrun(lambda d, m: opset1.ctc_greedy_decoder(d, m, False), [data, mask], tmp_path)
    assert got.ravel().tolist() == [1, 1, 1, 2, 2, -1, -1]
    data = np.ascontiguousarray(data.transpose(1, 0, 2))
    # Blank 1: 3 is a class; the two 2s merge; the run ends after 7 steps.
    inputs = [data, np.array([7], np.int32), np.array(1, np.int32)]
    model = one_op_model(lambda *p: opset6.ctc_greedy_decoder_seq_len(*p), inputs, 2)
    classes, count = run_saved(model, inputs, tmp_path)
    assert classes.tolist() == [[3, 2, 0, -1, -1, -1, -1]] and count.tolist() == [3]


def test_ctc_greedy_decoders_refuse(tmp_path):
    data = np.zeros((2, 3, 4), np.float32)
    inputs = [data, np.array([1, 4], np.int32)]
    model = one_op_model(lambda *p: opset6.ctc_greedy_decoder_seq_len(*p), inputs, 2)
    with pytest.raises(irrun.IrrunError, match=r"must lie in 0\.\.3"):
        run_saved(model, inputs, tmp_path)


# --------------------------------------------------------------------------- CTCLoss


def brute_force_loss(logits, steps, labels, blank, merge):
    """-log of the sum over every alignment (a class per step) that decodes to ``labels``:
    with ``merge``, repeats are merged and then blanks dropped; without it only blanks
    are dropped and each label takes exactly one step (OpenVINO's definition)."""
    x = logits[:steps].astype(np.float64)
    log_probs = x - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - x.max(1, keepdims=True)  # fmt: skip
    total = -math.inf
    c = logits.shape[1]
    for path in itertools.product(range(c), repeat=steps):
        # Alignments, not class sequences: a label equal to the blank counts as a label.
        for roles in _roles(path, labels, blank, merge):
            del roles
            total = np.logaddexp(total, sum(log_probs[t, k] for t, k in enumerate(path)))
    return -total


def _roles(path, labels, blank, merge):
    """Each way of reading ``path`` as blanks and runs (or single steps) of the labels."""
    out = []

    def walk(t, k, prev_label_run):
        if t == len(path):
            if k == len(labels):
                out.append(True)
            return
        cls = path[t]
        # The step is a blank, unless it continues the previous label's run.
        if cls == blank:
            walk(t + 1, k, False)
        if merge and prev_label_run and k > 0 and cls == labels[k - 1]:
            walk(t + 1, k, True)
        # A new label: with merge, after a run of the same label a blank is needed.
        merged = merge and prev_label_run and k > 0 and labels[k - 1] == cls
        if k < len(labels) and cls == labels[k] and not merged:
            walk(t + 1, k + 1, True)

    walk(0, 0, False)
    return out


def _loss_model(inputs, collapse=False, merge=True, unique=False):
    return one_op_model(lambda *p: opset4.ctc_loss(
        *p, preprocess_collapse_repeated=collapse, ctc_merge_repeated=merge, unique=unique),
        inputs)  # fmt: skip


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("unique", [False, True])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_ctc_loss_matches_cpu(merge, collapse, unique, index, tmp_path):
    rng = np.random.default_rng(merge + 2 * collapse + 4 * unique)
    for n, t, c, blank in ((4, 6, 5, None), (2, 10, 3, 0), (3, 4, 6, 2), (1, 1, 2, None)):
        logits = rng.normal(0, 2, (n, t, c)).astype(np.float32)
        steps = rng.integers(1, t + 1, n).astype(index)
        count = np.minimum(rng.integers(1, t + 1, n), steps).astype(index)
        b = c - 1 if blank is None else blank
        # Labels other than the blank (the plugin reads a blank label otherwise: below).
        choices = np.array([k for k in range(c) if k != b])
        labels = choices[rng.integers(0, len(choices), (n, t))].astype(index)
        inputs = [logits, steps, labels, count] + ([] if blank is None else
                                                   [np.array(blank, index)])  # fmt: skip
        model = _loss_model(inputs, collapse, merge, unique)
        got, want = run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0]
        assert_close(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 3), t=st.integers(1, 12), c=st.integers(2, 5), merge=st.booleans(),
       collapse=st.booleans(), unique=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_ctc_loss_hypothesis(n, t, c, merge, collapse, unique, seed, tmp_path_factory):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (n, t, c)).astype(np.float32)
    steps = rng.integers(1, t + 1, n).astype(np.int32)
    count = np.minimum(rng.integers(1, t + 1, n), steps).astype(np.int32)
    labels = rng.integers(0, c - 1, (n, t)).astype(np.int32)
    inputs = [logits, steps, labels, count]
    model = _loss_model(inputs, collapse, merge, unique)
    got = run_saved(model, inputs, tmp_path_factory.mktemp("ctc"))[0]
    assert_close(got, run_cpu(model, inputs)[0], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("merge", [True, False])
def test_ctc_loss_against_every_alignment(merge, tmp_path):
    """Including labels equal to the blank, where the plugin gives other values, and
    empty label sequences, which crash it."""
    rng = np.random.default_rng(7)
    logits = rng.normal(0, 1, (5, 5, 3)).astype(np.float32)
    steps = np.array([5, 4, 5, 3, 5], np.int32)
    labels = np.array([[1, 1, 0, 0, 0], [0, 1, 0, 0, 0], [2, 1, 2, 0, 0], [1, 0, 0, 0, 0],
                       [0, 0, 0, 0, 0]], np.int32)  # fmt: skip
    count = np.array([2, 3, 3, 1, 0], np.int32)
    for blank in (2, 0):
        inputs = [logits, steps, labels, count, np.array(blank, np.int32)]
        got = run_saved(_loss_model(inputs, merge=merge), inputs, tmp_path)[0]
        want = [brute_force_loss(logits[i], steps[i], labels[i, :count[i]].tolist(), blank,
                                 merge) for i in range(5)]  # fmt: skip
        np.testing.assert_allclose(got, np.array(want, np.float32), rtol=1e-5)


def test_ctc_loss_by_hand(tmp_path):
    # Two steps, one label 0, blank 1, uniform probabilities 1/2: alignments "0 -", "- 0",
    # "0 0" (merged) give 3/4; without merging "0 0" is two labels: 1/2.
    logits = np.zeros((1, 2, 2), np.float32)
    inputs = [logits, np.array([2], np.int32), np.array([[0, 0]], np.int32),
              np.array([1], np.int32)]  # fmt: skip
    got = run_saved(_loss_model(inputs), inputs, tmp_path)[0]
    assert got.tolist() == pytest.approx([-math.log(0.75)])
    got = run_saved(_loss_model(inputs, merge=False), inputs, tmp_path)[0]
    assert got.tolist() == pytest.approx([-math.log(0.5)])
    # Labels 0 0 in two steps: merged, they need a blank between: impossible.
    inputs[3] = np.array([2], np.int32)
    assert run_saved(_loss_model(inputs), inputs, tmp_path)[0].tolist() == [math.inf]
    # ... unless collapsed to one label first.
    got = run_saved(_loss_model(inputs, collapse=True), inputs, tmp_path)[0]
    assert got.tolist() == pytest.approx([-math.log(0.75)])
    # Large logits: the plugin's exp overflows (inf); irrun's log-softmax does not.
    logits = np.array([[[200.0, 0.0], [0.0, 200.0]]], np.float32)
    inputs = [logits, np.array([2], np.int32), np.array([[0, 0]], np.int32),
              np.array([1], np.int32)]  # fmt: skip
    got = run_saved(_loss_model(inputs), inputs, tmp_path)[0]
    assert got.tolist() == pytest.approx([0.0], abs=1e-6)


def test_ctc_loss_refuses(tmp_path):
    logits = np.zeros((2, 3, 4), np.float32)
    labels = np.zeros((2, 3), np.int32)
    for steps, count, message in (([3, 4], [1, 1], r"must lie in 0\.\.3"),
                                  ([2, 3], [3, 1], "exceeds its logit_length")):  # fmt: skip
        inputs = [logits, np.array(steps, np.int32), labels, np.array(count, np.int32)]
        with pytest.raises(irrun.IrrunError, match=message):
            run_saved(_loss_model(inputs), inputs, tmp_path)
    inputs = [logits, np.array([3, 3], np.int32), labels + 4, np.array([1, 1], np.int32)]
    with pytest.raises(irrun.IrrunError, match=r"labels must lie in 0\.\.3"):
        run_saved(_loss_model(inputs), inputs, tmp_path)


# --------------------------------------------------------------------------- shapes


def _params(shapes, types):
    return [opset1.parameter(to_ov_shape(s), ov.Type(ET[t].dtype))
            for s, t in zip(shapes, types, strict=True)]


def _check(rule, attrs, shapes, types, make, outputs=1):
    want = make(*_params(shapes, types))
    got = rule.infer(attrs, [TensorInfo(s, ET[t]) for s, t in zip(shapes, types, strict=True)])
    for k in range(outputs):
        assert got[k].shape == from_ov_shape(want.get_output_partial_shape(k)), shapes
        assert got[k].element_type.name == want.get_output_element_type(k).get_type_name()


def test_ctc_shape_rules():
    rule = resolve("CTCGreedyDecoder", "opset1")
    attrs = attrs_namespace({"ctc_merge_repeated": True})
    for shapes in (((7, 3, 4), (7, 3)), ((DYNAMIC, 3, 4), (7, DYNAMIC)), (None, (7, 3)),
                   ((Interval(2, 9), 3, 4), (Interval(5, 12), 3)), (None, None)):  # fmt: skip
        _check(rule, attrs, shapes, ("f32", "f32"), opset1.ctc_greedy_decoder)
    with pytest.raises(ShapeError, match="time steps"):
        rule.infer(attrs, [TensorInfo((7, 3, 4), ET["f32"]), TensorInfo((6, 3), ET["f32"])])
    with pytest.raises(ShapeError, match="2-D"):
        rule.infer(attrs, [TensorInfo((7, 3, 4), ET["f32"]), TensorInfo((7,), ET["f32"])])

    rule = resolve("CTCGreedyDecoderSeqLen", "opset6")
    attrs = attrs_namespace({"merge_repeated": True, "classes_index_type": ET["i64"],
                             "sequence_length_type": ET["i32"]})  # fmt: skip
    for shapes in (((2, 7, 4), (2,), ()), ((DYNAMIC, 7, 4), (3,), (1,)), (None, (3,)),
                   ((Interval(1, 4), DYNAMIC, 4), (Interval(3, 6),)), (None, None)):
        types = ("f32", "i32", "i32")[:len(shapes)]
        _check(rule, attrs, shapes, types, lambda *p: opset6.ctc_greedy_decoder_seq_len(
            *p, classes_index_type="i64"), 2)  # fmt: skip
    for shapes, message in ((((2, 7, 4), (3,)), "same batch"),
                            (((2, 7, 4), (2,), (2,)), "one value"),
                            (((2, 7), (2,)), "3-D")):  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(s, ET[t]) for s, t in zip(shapes, ("f32", "i32", "i32"),
                                                                    strict=False)])
    with pytest.raises(ValueError, match="classes_index_type"):
        rule.check(attrs_namespace({"merge_repeated": True, "classes_index_type": ET["f32"],
                                    "sequence_length_type": ET["i32"]}))  # fmt: skip

    rule = resolve("CTCLoss", "opset4")
    attrs = attrs_namespace({"preprocess_collapse_repeated": False, "ctc_merge_repeated": True,
                             "unique": False})  # fmt: skip
    for shapes in (((2, 7, 4), (2,), (2, 7), (2,)), ((2, 7, 4), (2,), (2, 7), (2,), ()),
                   ((DYNAMIC, 7, 4), (DYNAMIC,), (3, DYNAMIC), (DYNAMIC,)),
                   (None, None, None, (5,)), (None, None, None, None)):  # fmt: skip
        _check(rule, attrs, shapes, ("f32", "i64", "i64", "i64", "i64")[:len(shapes)],
               opset4.ctc_loss)  # fmt: skip
    f32, i32 = ET["f32"], ET["i32"]
    for shapes, message in ((((2, 7, 4), (3,), (2, 7), (2,)), "logit_length must have"),
                            (((2, 7, 4), (2,), (2, 6), (2,)), "time steps"),
                            (((2, 7, 4), (2,), (2, 7), (2,), (1,)), "scalar"),
                            (((2, 7, 4), (2, 1), (2, 7), (2,)), "1-D")):  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(s, f32 if k == 0 else i32) for k, s in enumerate(shapes)])
    with pytest.raises(ShapeError, match="one element type"):
        rule.infer(attrs, [TensorInfo((2, 7, 4), f32), TensorInfo((2,), i32),
                           TensorInfo((2, 7), ET["i64"]), TensorInfo((2,), i32)])  # fmt: skip


def test_ctc_validate(tmp_path):
    inputs = [np.zeros((2, 3, 4), np.float32), np.array([3, 3], np.int32)]
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(lambda *p: opset6.ctc_greedy_decoder_seq_len(*p), inputs, 2),
                  path, compress_to_fp16=False)  # fmt: skip
    assert irrun.validate(path) == []
    text = path.read_text()
    path.write_text(text.replace('classes_index_type="i32"', 'classes_index_type="f16"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert [d.code for d in found] == ["bad-attribute"]
    assert "classes_index_type" in found[0].message
    path.write_text(text.replace('merge_repeated="true"', 'merge_repeated="maybe"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert found and "merge_repeated" in found[0].message
