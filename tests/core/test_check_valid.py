"""Valid IR gives no error: the bundled models, hand-edited variants OpenVINO reads, and IR
saved by OpenVINO itself with a layer of every op version irrun supports.

Warnings are allowed only where the file really has what they describe (an output port
nothing reads: OpenVINO writes MaxPool's indices port whether or not it is used).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.ir import registry

ov = pytest.importorskip("openvino")
import openvino.opset1 as o1  # noqa: E402
import openvino.opset2 as o2  # noqa: E402
import openvino.opset3 as o3  # noqa: E402
import openvino.opset4 as o4  # noqa: E402
import openvino.opset5 as o5  # noqa: E402
import openvino.opset6 as o6  # noqa: E402
import openvino.opset7 as o7  # noqa: E402
import openvino.opset8 as o8  # noqa: E402
import openvino.opset9 as o9  # noqa: E402
import openvino.opset10 as o10  # noqa: E402
import openvino.opset11 as o11  # noqa: E402
import openvino.opset12 as o12  # noqa: E402
import openvino.opset13 as o13  # noqa: E402
import openvino.opset14 as o14  # noqa: E402
import openvino.opset15 as o15  # noqa: E402
import openvino.opset16 as o16  # noqa: E402
import openvino.opset17 as o17  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO_XML = (MODELS / "pooling_chain.xml").read_text()
DEMO_BIN = (MODELS / "pooling_chain.bin").read_bytes()


def errors(found) -> list[str]:
    return [str(d) for d in found if d.level == "error"]


# --- the bundled models and hand-edited variants --------------------------------------------


@pytest.mark.parametrize("xml", sorted(MODELS.glob("*.xml")), ids=lambda p: p.stem)
def test_bundled_models_have_no_error(xml: Path):
    found = irrun.validate(xml)
    assert errors(found) == []
    assert irrun.load(xml).validate() == found


# avg_pool's input port, the only one whose first three dims are 1, 3, 8.
AVG_INPUT = "\n\t\t\t\t\t".join(('<port id="0" precision="FP32">', "<dim>1</dim>", "<dim>3</dim>",
                                   "<dim>8"))

VARIANTS = {
    # OpenVINO writes -1 for a dynamic dim; a range is irrun's own, read as written.
    "dynamic-input": [('shape="1,3,16,16"', 'shape="1,3,?,?"')],
    "interval-input": [('shape="1,3,16,16"', 'shape="1,3,16..32,16"')],
    "declared-minus-one": [("<dim>8</dim>", "<dim>-1</dim>")],
    "declared-range": [("<dim>16</dim>", "<dim>1..16</dim>")],
    # OpenVINO ignores an input port's precision (and its serializer writes the producer's).
    "input-precision-ignored": [(AVG_INPUT, AVG_INPUT.replace('"FP32"', '"I8"'))],
    "ir-v10": [('version="11"', 'version="10"')],
    # OpenVINO reads ids as unsigned numbers: blanks and a plus sign before the digits.
    "ids-as-numbers": [('<layer id="1" ', '<layer id="01" '),
                       ('to-layer="1" to-port="0"', 'to-layer=" +1" to-port="0"')],
    "lower-case-precisions": [('precision="FP32"', 'precision="f32"')],
}  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS)
def test_valid_variants_of_demo(variant, tmp_path):
    text = DEMO_XML
    for old, new in VARIANTS[variant]:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "m.xml"
    path.write_text(text)
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    found = irrun.validate(path)
    assert errors(found) == []
    assert {d.code for d in found} == {"unused-output"}  # stem_pool's indices
    assert ov.Core().read_model(str(path)) is not None


# --- IR written by OpenVINO, one model per op version ---------------------------------------

F32 = np.float32


def param(shape, et=F32, name="x"):
    return o1.parameter(shape, et, name=name)


def const(values, dtype=np.int64):
    return o1.constant(np.array(values, dtype))


def _image(shape=(1, 3, 8, 8)):
    return param(list(shape))


def _unary(make):
    def build():
        x = _image()
        return [make(x)], [x]

    return build


def _outputs(make):
    """Every output of a layer with several."""

    def build():
        x = _image()
        return list(make(x).outputs()), [x]

    return build


def _strings(make):
    """Layers of a string input [2, 3]."""

    def build():
        s = param([2, 3], ov.Type.string, name="s")
        return list(make(s)), [s]

    return build


def _logical(make):
    return _binary(lambda x, y: make(o1.convert(x, "boolean"), o1.convert(y, "boolean")))


def _binary(make):
    def build():
        x, y = _image(), param([1, 3, 1, 8], name="y")
        return [make(x, y)], [x, y]

    return build


def _pool(make):
    def build():
        x = _image()
        return [make(x)], [x]

    return build


def _max_pool_with_indices(module):
    def build():
        x = _image()
        pool = module.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3], "ceil", "explicit",
                               "i32")  # fmt: skip
        return [pool.output(0), pool.output(1)], [x]

    return build


def _conv():
    x = _image()
    w = o1.constant(np.full((4, 3, 3, 3), 0.25, F32))
    return [o1.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])], [x]


def _group_conv():
    x = _image()
    w = o1.constant(np.full((3, 1, 1, 3, 3), 0.5, F32))
    return [o1.group_convolution(x, w, [2, 2], [0, 0], [0, 0], [1, 1])], [x]


def _deconv():
    x = _image()
    w = o1.constant(np.full((3, 2, 3, 3), 0.25, F32))
    return [o1.convolution_backprop_data(x, w, [2, 2], pads_begin=[1, 1], pads_end=[0, 1],
                                         output_padding=[1, 0])], [x]  # fmt: skip


def _group_deconv():
    x = _image()
    w = o1.constant(np.full((3, 1, 2, 2, 2), 0.5, F32))
    shape = o1.constant(np.int64([15, 17]))
    return [o1.group_convolution_backprop_data(x, w, [2, 2], shape, auto_pad="same_upper")], [x]


def _matmul():
    a, b = param([2, 3], name="a"), param([4, 3], name="b")
    return [o1.matmul(a, b, False, True)], [a, b]


def _batch_norm(module):
    def build():
        x = _image()
        c = [o1.constant(np.full(3, v, F32)) for v in (1.0, 0.5, 0.1, 2.0)]
        return [module.batch_norm_inference(x, *c, 1e-5)], [x]

    return build


def _adaptive(make):
    def build():
        x = _image()
        node = make(x, const([3, 2]))
        return [node.output(i) for i in range(node.get_output_size())], [x]

    return build


def _shape_of(module):
    def build():
        x = _image()
        return [module.shape_of(x)], [x]

    return build


def _reshape():
    x = _image()
    return [o1.reshape(x, const([1, -1]), False)], [x]


def _transpose():
    x = _image()
    return [o1.transpose(x, const([0, 2, 3, 1]))], [x]


def _concat():
    x, y = _image(), param([1, 2, 8, 8], name="y")
    return [o1.concat([x, y], 1)], [x, y]


def _squeeze(module):
    def build():
        x = param([1, 3, 1, 8])
        return [module.squeeze(x, const([2]))], [x]

    return build


def _unsqueeze():
    x = param([3, 8])
    return [o1.unsqueeze(x, const([0]))], [x]


def _gather(module):
    def build():
        x = _image()
        return [module.gather(x, const([2, 0]), const(1))], [x]

    return build


def _broadcast(module):
    def build():
        x = param([3, 1])
        return [module.broadcast(x, const([2, 3, 4]))], [x]

    return build


def _pad(module):
    def build():
        x = _image()
        return [module.pad(x, const([0, 0, 1, 2]), const([0, 0, 2, 1]), "constant")], [x]

    return build


def _strided_slice():
    x = _image()
    node = o1.strided_slice(x, const([0, 0, 1, 0]), const([1, 3, 7, 8]), const([1, 1, 2, 1]),
                            [0, 0, 0, 0], [0, 0, 0, 0])  # fmt: skip
    return [node], [x]


def _reduce(make):
    def build():
        x = _image()
        return [make(x, const([2, 3]), True)], [x]

    return build


def _interpolate_0():
    x = _image()
    attrs = {"axes": [2, 3], "mode": "nearest", "align_corners": False, "antialias": False,
             "pads_begin": [0, 0, 0, 0], "pads_end": [0, 0, 0, 0]}  # fmt: skip
    return [o1.interpolate(x, const([16, 16]), attrs)], [x]


def _interpolate_4():
    x = _image()
    # opset10's Python function builds Interpolate-4 (opset4 re-exports opset1's).
    node = o10.interpolate(x, const([16, 16]), o1.constant(np.array([2, 2], F32)), "linear",
                           "sizes", axes=const([2, 3]))  # fmt: skip
    return [node], [x]


def _interpolate_11():
    x = _image()
    return [o11.interpolate(x, o1.constant(np.array([2, 2], F32)), "nearest", "scales",
                            axes=const([2, 3]))], [x]  # fmt: skip


def _convert():
    x = _image()
    return [o1.convert(x, "i32")], [x]


def _clamp():
    x = _image()
    return [o1.clamp(x, -1.0, 2.5)], [x]


def _power():
    x = _image()
    return [o1.power(x, o1.constant(np.array(2.0, F32)))], [x]


def _gather_elements_6():
    x = _image()
    return [o6.gather_elements(x, const(np.zeros((1, 3, 2, 8)), np.int32), -2)], [x]


def _gather_nd(make):
    def build():
        x = _image()
        return [make(x, const(np.zeros((1, 3, 5, 1)), np.int32), 2)], [x]

    return build


def _scatter_update_3():
    x, u = _image(), param([1, 3, 2, 8], name="u")
    return [o3.scatter_update(x, const([1, 7]), u, const(2))], [x, u]


def _scatter_elements_update(make, *extra):
    def build():
        x, u = _image(), param([1, 3, 8, 4], name="u")
        idx = const(np.zeros((1, 3, 8, 4)), np.int32)
        return [make(x, idx, u, const(-1), *extra)], [x, u]

    return build


def _scatter_nd_update(make, *extra):
    def build():
        x, u = _image(), param([2, 8, 8], name="u")
        return [make(x, const([[0, 1], [0, -1]]), u, *extra)], [x, u]

    return build


def _sdpa_13():
    q, k, v = (param([1, 2, 3, 4], name=n) for n in "qkv")
    return [o13.scaled_dot_product_attention(q, k, v, causal=True)], [q, k, v]


def _einsum_7():
    a, b = param([2, 3], name="a"), param([3, 4], name="b")
    return [o7.einsum([a, b], "ab,bc->ac")], [a, b]


def _nms(opset):
    def build():
        boxes = o1.parameter([2, 6, 4], np.float32, name="boxes")
        scores = o1.parameter([2, 3, 6], np.float32, name="scores")
        nms = opset.non_max_suppression(
            boxes, scores, o1.constant(np.int64(4)), o1.constant(np.float32(0.5)),
            o1.constant(np.float32(0.1)), o1.constant(np.float32(0.0)),
        )  # fmt: skip
        return list(nms.outputs()), [boxes, scores]

    return build


def _multiclass_nms(version):
    def build():
        if version == 8:
            boxes = o1.parameter([2, 6, 4], np.float32, name="boxes")
            scores = o1.parameter([2, 3, 6], np.float32, name="scores")
            nms = o8.multiclass_nms(boxes, scores, iou_threshold=0.5, keep_top_k=5)
            return list(nms.outputs()), [boxes, scores]
        boxes = o1.parameter([3, 6, 4], np.float32, name="boxes")
        scores = o1.parameter([3, 6], np.float32, name="scores")
        rois = o1.parameter([2], np.int32, name="roisnum")
        nms = o9.multiclass_nms(boxes, scores, rois, iou_threshold=0.5, sort_result_type="score")
        return list(nms.outputs()), [boxes, scores, rois]

    return build


def _matrix_nms():
    boxes = o1.parameter([2, 6, 4], np.float32, name="boxes")
    scores = o1.parameter([2, 3, 6], np.float32, name="scores")
    nms = o8.matrix_nms(boxes, scores, decay_function="gaussian", post_threshold=0.1)
    return list(nms.outputs()), [boxes, scores]


def _nms_rotated():
    boxes = o1.parameter([2, 6, 5], np.float32, name="boxes")
    scores = o1.parameter([2, 3, 6], np.float32, name="scores")
    nms = o13.nms_rotated(boxes, scores, o1.constant(np.int64(4)),
                          o1.constant(np.float32(0.5)), o1.constant(np.float32(0.1)))
    return list(nms.outputs()), [boxes, scores]


def _old_nms(opset):
    def build():
        boxes = o1.parameter([2, 6, 4], np.float32, name="boxes")
        scores = o1.parameter([2, 3, 6], np.float32, name="scores")
        nms = opset.non_max_suppression(boxes, scores, o1.constant(np.int64(4)),
                                        o1.constant(np.float32(0.5)),
                                        o1.constant(np.float32(0.1)))  # fmt: skip
        return [nms.output(0)], [boxes, scores]

    return build


def _prior_box(version):
    def build():
        x, image = _image(), param([1, 3, 64, 64], name="image")

        def hw(t):
            return o1.strided_slice(o3.shape_of(t), o1.constant(np.array([2])),
                                    o1.constant(np.array([4])), o1.constant(np.array([1])),
                                    [0], [0])  # fmt: skip

        if version == 0:
            attrs = {"width": [2.0, 4.0], "height": [3.0, 1.0], "offset": 0.5}
            return [o1.prior_box_clustered(hw(x), hw(image), attrs)], [x, image]
        attrs = {"min_size": [4.0], "max_size": [9.0], "aspect_ratio": [2.0], "flip": True,
                 "offset": 0.5}  # fmt: skip
        opset = o1 if version == 1 else o8
        return [opset.prior_box(hw(x), hw(image), attrs)], [x, image]

    return build


def _region_yolo():
    x = param([1, 2 * (4 + 3 + 1), 5, 5])
    return [o1.region_yolo(x, 4, 3, 2, True, [], 1, 3)], [x]


def _reorg_yolo():
    x = param([1, 8, 4, 6])
    return [o2.reorg_yolo(x, [2])], [x]


def _roi_pooling():
    x, rois = _image(), param([5, 5], name="rois")
    return [o2.roi_pooling(x, rois, output_roi=[2, 3], spatial_scale=0.5, method="max")], [
        x, rois]


def _psroi_pooling():
    x, rois = param([1, 18, 8, 8]), param([5, 5], name="rois")
    return [o1.psroi_pooling(x, rois, 2, 3, 0.5, 1, 1, "average")], [x, rois]


def _detection_output(version):
    def build():
        loc = o1.parameter([2, 16], np.float32, name="loc")
        conf = o1.parameter([2, 12], np.float32, name="conf")
        priors = o1.parameter([1, 2, 20], np.float32, name="priors")
        attrs = {"keep_top_k": [5], "nms_threshold": 0.5, "top_k": 3,
                 "code_type": "caffe.PriorBoxParameter.CENTER_SIZE"}  # fmt: skip
        if version == 1:
            out = o1.detection_output(loc, conf, priors, {**attrs, "num_classes": 3})
        else:
            out = o8.detection_output(loc, conf, priors, attrs)
        return [out], [loc, conf, priors]

    return build


def _proposal(opset):
    def build():
        probs = o1.parameter([1, 12, 4, 5], np.float32, name="probs")
        deltas = o1.parameter([1, 24, 4, 5], np.float32, name="deltas")
        image = o1.parameter([3], np.float32, name="image_info")
        u = np.uint32
        attrs = {"base_size": u(16), "pre_nms_topn": u(20), "post_nms_topn": u(10),
                 "nms_thresh": 0.7, "feat_stride": u(16), "min_size": u(4),
                 "ratio": [0.5, 1.0, 2.0], "scale": [8.0, 16.0]}  # fmt: skip
        return list(opset.proposal(probs, deltas, image, attrs).outputs()), [probs, deltas, image]

    return build


def _roi_align(opset, *aligned):
    def build():
        x = _image()
        rois = o1.parameter([5, 4], np.float32, name="rois")
        indices = o1.parameter([5], np.int32, name="batch_indices")
        out = opset.roi_align(x, rois, indices, 2, 3, 0, 0.5, "avg", *aligned)
        return [out], [x, rois, indices]

    return build


def _detectron(op, shapes, **attrs):
    """An ExperimentalDetectron op of f32 parameters of ``shapes``."""

    def build():
        params = [o1.parameter(shape, np.float32, name=f"in{i}") for i, shape in enumerate(shapes)]
        node = NodeFactory("opset6").create(f"ExperimentalDetectron{op}",
                                            [p.output(0) for p in params], attrs)  # fmt: skip
        return [node.output(k) for k in range(node.get_output_size())], params

    return build


def _generate_proposals():
    params = [o1.parameter(shape, np.float32, name=f"in{i}")
              for i, shape in enumerate([[2, 3], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]])]  # fmt: skip
    node = o9.generate_proposals(*params, 0.0, 0.7, 30, 10, roi_num_type="i32")
    return [node.output(k) for k in range(3)], params


def _roi_align_rotated():
    x = _image()
    rois = o1.parameter([5, 5], np.float32, name="rois")
    indices = o1.parameter([5], np.int32, name="batch_indices")
    out = o15.roi_align_rotated(x, rois, indices, 2, 3, 0, 0.5, True)
    return [out], [x, rois, indices]


def _fft(make, shape, sizes=None):
    def build():
        x = o1.parameter(shape, np.float32, name="x")
        extra = [] if sizes is None else [o1.constant(np.int64(sizes))]
        return [make(x, o1.constant(np.int64([0, -1])), *extra)], [x]

    return build


def _images_op(make, *shapes):
    """An op of the image and further f32 parameters of ``shapes`` (in1, in2, ...)."""

    def build():
        x = _image()
        more = [o1.parameter(list(shape), np.float32, name=f"in{i + 1}")
                for i, shape in enumerate(shapes)]  # fmt: skip
        return [make(x, *more)], [x, *more]

    return build


def _recurrent(kind: str):
    """A cell or sequence (irrun/ops/recurrent.py) over inputs of batch 2, hidden size 3."""

    def w(*shape):
        return o1.constant(np.full(shape, 0.1, F32))

    def build():
        if "Cell" in kind:
            x, h, c = param([2, 4]), param([2, 3], name="h"), param([2, 3], name="c")
            if kind == "RNNCell":
                return [o3.rnn_cell(x, h, w(3, 4), w(3, 3), w(3), 3, ["tanh"], [], [])], [x, h]
            if kind == "GRUCell":
                return [o3.gru_cell(x, h, w(9, 4), w(9, 3), w(12), 3,
                                    linear_before_reset=True)], [x, h]  # fmt: skip
            factory = o1.lstm_cell if kind == "LSTMCell1" else o4.lstm_cell
            return list(factory(x, h, c, w(12, 4), w(12, 3), w(12), 3).outputs()), [x, h, c]
        x, h, c = param([2, 5, 4]), param([2, 2, 3], name="h"), param([2, 2, 3], name="c")
        lengths = const([5, 2], np.int32)
        if kind == "RNNSequence":
            node = o5.rnn_sequence(x, h, lengths, w(2, 3, 4), w(2, 3, 3), w(2, 3), 3,
                                   "bidirectional")  # fmt: skip
        elif kind == "GRUSequence":
            node = o5.gru_sequence(x, h, lengths, w(2, 9, 4), w(2, 9, 3), w(2, 9), 3,
                                   "bidirectional")  # fmt: skip
        else:
            node = o5.lstm_sequence(x, h, c, lengths, w(2, 12, 4), w(2, 12, 3), w(2, 12), 3,
                                    "bidirectional")  # fmt: skip
            return list(node.outputs()), [x, h, c]
        return list(node.outputs()), [x, h]

    return build


def _stft():
    signal = o1.parameter([2, 40], np.float32, name="signal")
    window = o1.parameter([8], np.float32, name="window")
    out = o15.stft(signal, window, o1.constant(np.int64(10)), o1.constant(np.int64(4)), True)
    return [out], [signal, window]


def _istft():
    data = o1.parameter([2, 6, 9, 2], np.float32, name="data")
    window = o1.parameter([8], np.float32, name="window")
    out = o16.istft(data, window, o1.constant(np.int64(10)), o1.constant(np.int64(4)),
                    True, False, o1.constant(np.int64(30)))  # fmt: skip
    return [out], [data, window]


def _gather_tree():
    ids = param([4, 2, 3], np.int32, "ids")
    parents = o1.convert(o1.floor_mod(ids, const(3, np.int32)), "i32")
    return [o1.gather_tree(ids, parents, const([4, 3], np.int32), const(9, np.int32))], [ids]


# (irrun op type, version) -> a function returning (outputs, parameters) of an OpenVINO model
# that holds that op.  Every op version in irrun's registry needs one (see the test below).
def _if():
    """An If on a runtime condition whose else_body leaves the second input unused."""
    cond, x = param([], np.bool_, "cond"), _image()
    tx, ty, ex = (param([1, 3, 8, 8], name=f"b{i}") for i in range(3))
    node = o8.if_op(cond)
    node.set_then_body(ov.Model([o1.result(o1.add(tx, ty))], [tx, ty]))
    node.set_else_body(ov.Model([o1.result(o1.relu(ex))], [ex]))
    then_body, else_body = node.get_then_body(), node.get_else_body()
    node.set_input(x.output(0), tx, ex)
    node.set_input(x.output(0), ty, None)
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    return [out], [cond, x]


def _loop():
    """A Loop over x's channels (sliced), summing them through a back edge."""
    x = _image()
    it, part, acc = param([], np.int64, "i"), param([1, 1, 8, 8], name="p"), \
        param([1, 1, 8, 8], name="a")  # fmt: skip
    total = o1.add(part, acc)
    body = ov.Model([o1.result(total), o1.result(o1.constant(np.bool_(True))),
                     o1.result(o1.convert(it, "f32"))], [it, part, acc])  # fmt: skip
    loop = o5.loop(const(3), o1.constant(np.bool_(True)))
    loop.set_function(body)
    loop.set_special_body_ports([0, 1])
    results = body.get_results()
    loop.set_sliced_input(part, x.output(0), 0, 1, 1, -1, 1)
    loop.set_merged_input(acc, o1.constant(np.zeros((1, 1, 8, 8), F32)).output(0),
                          results[0].output(0))  # fmt: skip
    return [loop.get_iter_value(results[0].output(0), -1),
            loop.get_concatenated_slices(results[2].output(0), 0, 1, 1, -1, 0)], [x]


def _variable(version: int):
    """A running sum kept in a variable: ReadValue -> Add -> Assign (and a Result)."""

    def build():
        x = _image()
        if version == 3:
            read = o3.read_value(o1.constant(np.zeros((1, 3, 8, 8), F32)), "total")
            total = o1.add(read, x)
            return [total], [x], [o3.assign(total, "total")]
        from openvino.op.util import Variable, VariableInfo

        info = VariableInfo()
        info.variable_id, info.data_type = "total", ov.Type.f32
        info.data_shape = ov.PartialShape([-1, 3, 8, 8])
        var = Variable(info)
        total = o1.add(o6.read_value(o1.constant(np.zeros((1, 3, 8, 8), F32)), var), x)
        return [total], [x], [o6.assign(total, var)]

    return build


def _tensor_iterator():
    """A TensorIterator over x's channels, carrying their running sum around a back edge."""
    x = _image()
    part, acc = param([1, 1, 8, 8], name="p"), param([1, 1, 8, 8], name="a")
    total = o1.add(part, acc)
    ti = o8.tensor_iterator()
    ti.set_body(ov.Model([o1.result(total)], [part, acc]))
    ti.set_sliced_input(part, x.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(acc, o1.constant(np.zeros((1, 1, 8, 8), F32)).output(0),
                        total.output(0))  # fmt: skip
    return [ti.get_iter_value(total.output(0), -1),
            ti.get_concatenated_slices(total.output(0), 0, 1, 1, -1, 1)], [x]


BUILDERS: dict[tuple[str, int], Callable] = {
    ("ReadValue", 3): _variable(3),
    ("Assign", 3): _variable(3),
    ("ReadValue", 6): _variable(6),
    ("Assign", 6): _variable(6),
    ("TensorIterator", 0): _tensor_iterator,
    ("If", 8): _if,
    ("Loop", 5): _loop,
    ("Parameter", 1): _unary(o1.relu),
    ("Result", 1): _unary(o1.relu),
    ("Const", 1): _power,
    ("Convert", 1): _convert,
    ("MaxPool", 1): _pool(lambda x: o1.max_pool(x, [2, 2], [0, 0], [1, 1], [3, 3], "floor")),
    ("MaxPool", 8): _max_pool_with_indices(o8),
    ("MaxPool", 14): _max_pool_with_indices(o14),
    ("AvgPool", 1): _pool(lambda x: o1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], False)),
    ("AvgPool", 14): _pool(lambda x: o14.avg_pool(x, [2, 2], [1, 1], [1, 1], [2, 2], True,
                                                  "ceil_torch")),
    ("AvgPool", 16): _pool(lambda x: o16.avg_pool(x, [1, 1], [0, 0], [0, 0], [2, 2], True,
                                                  dilations=[2, 2])),
    ("AdaptiveAvgPool", 8): _adaptive(o8.adaptive_avg_pool),
    ("AdaptiveMaxPool", 8): _adaptive(lambda x, s: o8.adaptive_max_pool(x, s, "i32")),
    ("Convolution", 1): _conv,
    ("GroupConvolution", 1): _group_conv,
    ("ConvolutionBackpropData", 1): _deconv,
    ("GroupConvolutionBackpropData", 1): _group_deconv,
    ("MatMul", 1): _matmul,
    ("BatchNormInference", 1): _batch_norm(o1),
    ("BatchNormInference", 5): _batch_norm(o5),
    ("Add", 1): _binary(o1.add),
    ("Subtract", 1): _binary(o1.subtract),
    ("Multiply", 1): _binary(o1.multiply),
    ("Divide", 1): _binary(o1.divide),
    ("Maximum", 1): _binary(o1.maximum),
    ("Minimum", 1): _binary(o1.minimum),
    ("Power", 1): _power,
    ("Abs", 1): _unary(o1.abs),
    ("Exp", 1): _unary(o1.exp),
    ("Sqrt", 1): _unary(lambda x: o1.sqrt(o1.abs(x))),
    ("Tanh", 1): _unary(o1.tanh),
    ("Sigmoid", 1): _unary(o1.sigmoid),
    ("ReLU", 1): _unary(o1.relu),
    ("Clamp", 1): _clamp,
    ("HSwish", 4): _unary(o4.hswish),
    ("HSigmoid", 5): _unary(o5.hsigmoid),
    ("Swish", 4): _unary(o4.swish),
    ("Gelu", 2): _unary(o2.gelu),
    ("Gelu", 7): _unary(lambda x: o7.gelu(x, "tanh")),
    ("Negative", 1): _unary(o1.negative),
    ("Sign", 1): _unary(o1.sign),
    ("Floor", 1): _unary(o1.floor),
    ("Ceiling", 1): _unary(o1.ceiling),
    ("Log", 1): _unary(lambda x: o1.log(o1.abs(x))),
    ("Erf", 1): _unary(o1.erf),
    ("Sin", 1): _unary(o1.sin),
    ("Cos", 1): _unary(o1.cos),
    ("Elu", 1): _unary(lambda x: o1.elu(x, 0.3)),
    ("SoftPlus", 4): _unary(o4.softplus),
    ("Mish", 4): _unary(o4.mish),
    ("SoftSign", 9): _unary(o9.softsign),
    ("Split", 1): _outputs(lambda x: o1.split(x, o1.constant(np.int64(2)), 2)),
    ("VariadicSplit", 1): _outputs(lambda x: o1.variadic_split(
        x, o1.constant(np.int64(-1)), o1.constant(np.int64([5, -1])))),
    ("Mod", 1): _binary(o1.mod),
    ("FloorMod", 1): _binary(o1.floor_mod),
    **{(name, 1): _binary(getattr(o1, factory)) for name, factory in (
        ("Equal", "equal"), ("NotEqual", "not_equal"), ("Less", "less"),
        ("LessEqual", "less_equal"), ("Greater", "greater"), ("GreaterEqual", "greater_equal"))},
    **{(name, 1): _logical(factory) for name, factory in (
        ("LogicalAnd", o1.logical_and), ("LogicalOr", o1.logical_or),
        ("LogicalXor", o1.logical_xor))},
    ("LogicalNot", 1): _unary(lambda x: o1.logical_not(o1.convert(x, "boolean"))),
    ("Select", 1): _binary(lambda x, y: o1.select(o1.greater(x, y), x, y)),
    ("LogSoftmax", 5): _unary(lambda x: o5.log_softmax(x, -1)),
    ("TopK", 1): _outputs(lambda x: o1.topk(x, o1.constant(np.int64(3)), 2, "max", "value")),
    ("TopK", 3): _outputs(lambda x: o3.topk(x, o1.constant(np.int64(3)), -1, "min", "index",
                                            "i64")),
    ("TopK", 11): _outputs(lambda x: o11.topk(x, o1.constant(np.int32(2)), 1, "max", "value",
                                              "i32", True)),
    ("MVN", 6): _unary(lambda x: o6.mvn(x, o1.constant(np.int64([2, 3])), True, 1e-5,
                                        "inside_sqrt")),
    ("MVN", 0): _unary(lambda x: o2.mvn(x, True, True, 1e-9)),
    ("NormalizeL2", 0): _unary(lambda x: o1.normalize_l2(x, o1.constant(np.int64([1])), 1e-6,
                                                         "add")),
    ("LRN", 0): _unary(lambda x: o1.lrn(x, o1.constant(np.int64([1])), 1e-4, 0.75, 1.0, 5)),
    ("GroupNormalization", 12): _unary(lambda x: o12.group_normalization(
        x, o1.constant(np.float32([1, 2, 3])), o1.constant(np.float32([0, 1, 0])), 3, 1e-5)),
    ("PRelu", 1): _unary(lambda x: o1.prelu(x, o1.constant(np.float32([0.1, 0.2, 0.3])))),
    ("SoftMax", 1): _unary(lambda x: o1.softmax(x, 1)),
    ("SoftMax", 8): _unary(lambda x: o8.softmax(x, -1)),
    ("ReduceMax", 1): _reduce(o1.reduce_max),
    ("ReduceMean", 1): _reduce(o1.reduce_mean),
    ("ReduceSum", 1): _reduce(o1.reduce_sum),
    ("Reshape", 1): _reshape,
    ("Transpose", 1): _transpose,
    ("Concat", 0): _concat,
    ("Squeeze", 0): _squeeze(o1),
    ("Squeeze", 15): _squeeze(o15),
    ("Unsqueeze", 0): _unsqueeze,
    ("ShapeOf", 0): _shape_of(o1),
    ("ShapeOf", 3): _shape_of(o3),
    ("Gather", 1): _gather(o1),
    ("Gather", 7): _gather(o7),
    ("Gather", 8): _gather(o8),
    ("Broadcast", 1): _broadcast(o1),
    ("Broadcast", 3): _broadcast(o3),
    ("Pad", 1): _pad(o1),
    ("Pad", 12): _pad(o12),
    ("StridedSlice", 1): _strided_slice,
    ("Interpolate", 0): _interpolate_0,
    ("Interpolate", 4): _interpolate_4,
    ("Interpolate", 11): _interpolate_11,
    ("GatherElements", 6): _gather_elements_6,
    ("GatherND", 5): _gather_nd(o5.gather_nd),
    ("GatherND", 8): _gather_nd(o8.gather_nd),
    ("ScatterUpdate", 3): _scatter_update_3,
    ("ScatterElementsUpdate", 3): _scatter_elements_update(o3.scatter_elements_update),
    ("ScatterElementsUpdate", 12): _scatter_elements_update(
        o12.scatter_elements_update, "mean", False
    ),
    ("ScatterNDUpdate", 4): _scatter_nd_update(o4.scatter_nd_update),
    ("ScatterNDUpdate", 15): _scatter_nd_update(o15.scatter_nd_update, "sub"),
    ("ScaledDotProductAttention", 13): _sdpa_13,
    ("Einsum", 7): _einsum_7,
    ("ReduceProd", 1): _reduce(o1.reduce_prod),
    ("ReduceMin", 1): _reduce(o1.reduce_min),
    ("ReduceL1", 4): _reduce(o4.reduce_l1),
    ("ReduceL2", 4): _reduce(o4.reduce_l2),
    ("ReduceLogicalAnd", 1): _reduce(
        lambda x, a, k: o1.reduce_logical_and(o1.convert(x, "boolean"), a, k)
    ),
    ("ReduceLogicalOr", 1): _reduce(
        lambda x, a, k: o1.reduce_logical_or(o1.convert(x, "boolean"), a, k)
    ),
    ("CumSum", 3): _unary(lambda x: o3.cumsum(x, const(-1, np.int32), True, True)),
    **{
        (name, 13): _binary(lambda x, y, f=f: f(o1.convert(x, "i32"), o1.convert(y, "i32")))
        for name, f in (
            ("BitwiseAnd", o13.bitwise_and),
            ("BitwiseOr", o13.bitwise_or),
            ("BitwiseXor", o13.bitwise_xor),
        )
    },
    ("BitwiseNot", 13): _unary(lambda x: o13.bitwise_not(o1.convert(x, "u8"))),
    **{
        (name, 15): _binary(lambda x, y, f=f: f(o1.convert(x, "i64"), o1.convert(y, "i64")))
        for name, f in (
            ("BitwiseLeftShift", o15.bitwise_left_shift),
            ("BitwiseRightShift", o15.bitwise_right_shift),
        )
    },
    ("NonMaxSuppression", 1): _old_nms(o1),
    ("NonMaxSuppression", 3): _old_nms(o3),
    ("NonMaxSuppression", 4): _old_nms(o4),
    ("NonMaxSuppression", 5): _nms(o5),
    ("NonMaxSuppression", 9): _nms(o9),
    ("MulticlassNms", 8): _multiclass_nms(8),
    ("MulticlassNms", 9): _multiclass_nms(9),
    ("MatrixNms", 8): _matrix_nms,
    ("NMSRotated", 13): _nms_rotated,
    ("PriorBox", 1): _prior_box(1),
    ("PriorBox", 8): _prior_box(8),
    ("PriorBoxClustered", 1): _prior_box(0),
    ("DetectionOutput", 1): _detection_output(1),
    ("DetectionOutput", 8): _detection_output(8),
    ("Proposal", 1): _proposal(o1),
    ("Proposal", 4): _proposal(o4),
    ("RegionYolo", 1): _region_yolo,
    ("ReorgYolo", 2): _reorg_yolo,
    ("ROIPooling", 2): _roi_pooling,
    ("PSROIPooling", 1): _psroi_pooling,
    ("ROIAlign", 3): _roi_align(o3),
    ("ROIAlign", 9): _roi_align(o9, "half_pixel"),
    ("ROIAlignRotated", 15): _roi_align_rotated,
    ("ExperimentalDetectronPriorGridGenerator", 6): _detectron(
        "PriorGridGenerator", [[3, 4], [1, 3, 4, 5], [1, 3, 32, 40]], flatten=False, h=2,
        stride_x=8.0),
    ("ExperimentalDetectronTopKROIs", 6): _detectron("TopKROIs", [[20, 4], [20]], max_rois=7),
    ("ExperimentalDetectronROIFeatureExtractor", 6): _detectron(
        "ROIFeatureExtractor", [[20, 4], [1, 3, 16, 16], [1, 3, 8, 8]], output_size=2,
        sampling_ratio=0, pyramid_scales=[4, 8], aligned=True),
    ("ExperimentalDetectronGenerateProposalsSingleImage", 6): _detectron(
        "GenerateProposalsSingleImage", [[3], [60, 4], [12, 4, 5], [3, 4, 5]], min_size=0.0,
        nms_threshold=0.7, post_nms_count=10, pre_nms_count=30),
    ("ExperimentalDetectronDetectionOutput", 6): _detectron(
        "DetectionOutput", [[30, 4], [30, 20], [30, 5], [1, 3]], score_threshold=0.05,
        nms_threshold=0.5, max_delta_log_wh=1.5, num_classes=5, post_nms_count=10,
        max_detections_per_image=20, class_agnostic_box_regression=False,
        deltas_weights=[10.0, 10.0, 5.0, 5.0]),
    ("GenerateProposals", 9): _generate_proposals,
    ("DFT", 7): _fft(o7.dft, [3, 4, 5, 2], [6, -1]),
    ("IDFT", 7): _fft(o7.idft, [3, 4, 5, 2]),
    ("RDFT", 9): _fft(o9.rdft, [3, 4, 5], [-1, 6]),
    ("IRDFT", 9): _fft(o9.irdft, [3, 4, 5, 2], [2, 7]),
    ("STFT", 15): _stft,
    ("ISTFT", 16): _istft,
    **{(name, v): _unary(f) for name, v, f in (
        ("Acos", 1, lambda x: o1.acos(o1.clamp(x, -1, 1))),
        ("Asin", 1, lambda x: o1.asin(o1.clamp(x, -1, 1))),
        ("Atan", 1, o1.atan), ("Cosh", 1, o1.cosh), ("Sinh", 1, o1.sinh), ("Tan", 1, o1.tan),
        ("Acosh", 3, lambda x: o4.acosh(o1.add(o1.abs(x), const(1.0, F32)))),
        ("Asinh", 3, o4.asinh),
        ("Atanh", 3, lambda x: o4.atanh(o1.clamp(x, -0.5, 0.5))),
        ("Round", 5, lambda x: o5.round(x, "half_away_from_zero")),
        ("Selu", 1, lambda x: o1.selu(x, const([1.67], F32), const([1.05], F32))),
        ("HardSigmoid", 1, lambda x: o1.hard_sigmoid(x, const(0.2, F32), const(0.5, F32))),
        ("IsFinite", 10, o10.is_finite), ("IsNaN", 10, o10.is_nan),
        ("IsInf", 10, lambda x: o10.is_inf(x, {"detect_negative": False})),
        ("Identity", 16, o16.identity),
    )},
    ("SquaredDifference", 1): _binary(o1.squared_difference),
    ("ConvertPromoteTypes", 14): _outputs(lambda x: o14.convert_promote_types(
        x, const([1, 2], np.int8), True, False, "f32")),
    ("Reverse", 1): _unary(lambda x: NodeFactory("opset1").create(
        "Reverse", [x.output(0), const([1, 3]).output(0)], {"mode": "index"})),
    ("ReverseSequence", 1): _unary(lambda x: o1.reverse_sequence(x, const([2, 8, 1]), 1, 3)),
    ("BatchToSpace", 2): _unary(lambda x: o2.batch_to_space(
        o2.space_to_batch(x, const([1, 1, 2, 4]), const([0, 0, 0, 0]), const([0, 0, 0, 0])),
        const([1, 1, 2, 4]), const([0, 0, 1, 0]), const([0, 0, 0, 2]))),
    ("SpaceToBatch", 2): _unary(lambda x: o2.space_to_batch(
        x, const([1, 1, 2, 4]), const([0, 0, 1, 0]), const([0, 0, 1, 0]))),
    ("Eye", 9): _unary(lambda x: o1.add(x, o9.eye(const(8), const(8), const(-1), "f32",
                                                 const([1, 3])))),
    ("Bucketize", 3): _unary(lambda x: o3.bucketize(x, const([-1, 0, 1], F32), "i32", False)),
    ("SearchSorted", 15): _unary(lambda x: o15.search_sorted(const([-1, 0, 1], F32), x, True)),
    ("GRN", 1): _unary(lambda x: o1.grn(x, 0.1)),
    ("ExtractImagePatches", 3): _unary(lambda x: o3.extract_image_patches(
        x, [3, 2], [2, 3], [1, 2], "same_lower")),
    # irrun/ops/binary_convolution.py: a u1 filter of 4x3x3x3 bits
    ("BinaryConvolution", 1): _unary(lambda x: o1.binary_convolution(
        x, o1.constant((np.arange(108).reshape(4, 3, 3, 3) % 3 == 0).astype(np.uint8),
                       dtype=ov.Type.u1),
        [1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", 1.0)),
    # irrun/ops/deformable.py: a 3x3 filter, pads 1, on the 1x3x8x8 image
    ("DeformableConvolution", 1): _images_op(lambda x, o: o1.deformable_convolution(
        x, o, const(np.ones((4, 3, 3, 3)), F32), [1, 1], [1, 1], [1, 1], [1, 1]),
        (1, 18, 8, 8)),
    ("DeformableConvolution", 8): _images_op(lambda x, o, m: o8.deformable_convolution(
        x, o, const(np.ones((6, 1, 3, 3)), F32), [2, 2], [1, 1], [1, 1], [1, 1], mask=m,
        group=3, deformable_group=3, bilinear_interpolation_pad=True),
        (1, 54, 4, 4), (1, 27, 4, 4)),
    ("DeformablePSROIPooling", 1): _images_op(lambda x, r, o: o1.deformable_psroi_pooling(
        o1.concat([x, x, x], 1), r, 1, 0.5, 3, spatial_bins_x=2, spatial_bins_y=2,
        trans_std=0.1, part_size=2, offsets=o), (4, 5), (4, 2, 2, 2)),
    # irrun/ops/grid_sample.py, col2im.py, color.py, ctc.py
    ("GridSample", 9): _images_op(lambda x, g: o9.grid_sample(
        x, g, {"mode": "bicubic", "padding_mode": "reflection", "align_corners": True}),
        (1, 4, 5, 2)),
    **{(name, 8): _unary(lambda x, f=f: f(o1.reshape(x, const([1, 12, 16, 1]), False)))
       for name, f in (("NV12toRGB", o8.nv12_to_rgb), ("NV12toBGR", o8.nv12_to_bgr),
                       ("I420toRGB", o8.i420_to_rgb), ("I420toBGR", o8.i420_to_bgr))},
    **{(name, 17): _outputs(lambda x, name=name: NodeFactory("opset17").create(
        name, [o1.reshape(x, const([1, 8, 8, 3]), False).output(0)],
        {"single_plane": name == "RGBtoNV12"})) for name in ("RGBtoNV12", "BGRtoNV12")},
    # irrun/ops/strings.py: a string input unpacked and packed again
    ("StringTensorUnpack", 15): _strings(lambda s: o15.string_tensor_unpack(s).outputs()),
    ("StringTensorPack", 15): _strings(
        lambda s: [o15.string_tensor_pack(*o15.string_tensor_unpack(s).outputs())]),
    ("CTCGreedyDecoder", 1): _unary(lambda x: o1.ctc_greedy_decoder(
        o1.reshape(x, const([8, 6, 4]), False), const(np.ones((8, 6)), F32), True)),
    ("CTCGreedyDecoderSeqLen", 6): _outputs(lambda x: o6.ctc_greedy_decoder_seq_len(
        o1.reshape(x, const([6, 8, 4]), False), const([8, 3, 0, 1, 2, 8], np.int32),
        const(2, np.int32), classes_index_type="i64")),
    ("CTCLoss", 4): _unary(lambda x: o4.ctc_loss(
        o1.reshape(x, const([6, 8, 4]), False), const([8, 3, 1, 1, 2, 8], np.int32),
        const(np.ones((6, 8)), np.int32), const([3, 3, 1, 0, 1, 8], np.int32),
        unique=True)),
    ("Col2Im", 15): _unary(lambda x: o15.col2im(
        o1.reshape(x, const([1, 12, 16]), False), const([5, 5]), const([2, 2]), [1, 1], [1, 1],
        [0, 0], [0, 0])),
    ("Unique", 10): _outputs(lambda x: o10.unique(x, const(1), False, "i32", "i64")),
    ("FakeQuantize", 1): _unary(
        lambda x: o1.fake_quantize(x, *(o1.constant(np.array(v, F32)) for v in (-1, 1, 0, 2)), 256)
    ),
    ("FakeConvert", 13): _unary(lambda x: o13.fake_convert(
        x, o1.constant(np.array(2.0, F32)), o1.constant(np.array(0.5, F32)), "f8e5m2")),
    # irrun/ops/slicing.py, creation.py, movement.py (Tile, Roll), non_zero.py, layout.py
    # and ConvertLike
    ("Slice", 8): _unary(lambda x: o8.slice(x, const([1, -1]), const([2**63 - 1, -(2**63)]),
                                            const([1, -2]), const([1, -1]))),
    ("SliceScatter", 15): _unary(lambda x: o15.slice_scatter(
        x, const(np.ones((1, 3, 4, 8)), F32), const([-1]), const([-(2**63)]), const([-2]),
        const([2]))),
    ("RandomUniform", 8): _unary(lambda x: o1.add(x, o8.random_uniform(
        const([1, 3, 8, 8]), const(-1.0, F32), const(1.0, F32), "f32", 3, 4))),
    ("Multinomial", 13): _unary(lambda x: o13.multinomial(
        o1.reshape(o1.abs(x), const([3, 64]), False), const(5), "i64", True, False, 3, 4)),
    ("Range", 0): _unary(lambda x: o1.add(x, o1.range(const(0.0, F32), const(8.0, F32),
                                                      const(1.0, F32)))),
    ("Range", 4): _unary(lambda x: o1.add(x, o12.range(const(0), const(8), const(1), "f32"))),
    ("Tile", 0): _unary(lambda x: o1.tile(x, const([1, 2, 1, 1]))),
    ("Roll", 7): _unary(lambda x: o7.roll(x, const([1, -2]), const([1, 3]))),
    ("OneHot", 1): _unary(lambda x: o1.one_hot(o1.convert(x, "i64"), const(4),
                                               const(1.0, F32), const(0.0, F32), -1)),
    ("OneHot", 16): _unary(lambda x: o16.one_hot(o1.convert(x, "i32"), const(4, np.int32),
                                                 const(1.0, F32), const(0.0, F32), 1,
                                                 "normalize")),
    ("NonZero", 3): _unary(lambda x: o3.non_zero(x, "i32")),
    ("DepthToSpace", 0): _unary(lambda x: o1.depth_to_space(
        o1.concat([x, x, x, x], 1), "depth_first", 2)),
    ("SpaceToDepth", 0): _unary(lambda x: o1.space_to_depth(x, "blocks_first", 2)),
    ("ShuffleChannels", 0): _unary(lambda x: o3.shuffle_channels(x, -3, 3)),
    ("ConvertLike", 1): _unary(lambda x: o1.convert_like(x, const([1], np.int32))),
    # irrun/ops/logical.py (Xor: OpenVINO's Python API has no factory for v0::Xor)
    ("Xor", 0): _unary(lambda x: NodeFactory("opset1").create("Xor", [
        o1.greater(x, const(0.0, F32)).output(0), o1.less(x, const(0.5, F32)).output(0)],
        {"auto_broadcast": "numpy"})),
    ("Inverse", 14): _unary(lambda x: o14.inverse(x, True)),
    # opset17 (irrun/ops/unary.py, grouped_matmul.py)
    ("ErfInv", 17): _unary(o17.erfinv),
    ("GroupedMatMul", 17): _unary(lambda x: o17.grouped_matmul(
        o1.reshape(x, const([24, 8]), False), const(np.ones((3, 5, 8)), F32),
        const(np.array([4, 4, 20], np.int32)))),
    # irrun/ops/recurrent.py
    ("RNNCell", 1): _recurrent("RNNCell"),
    ("GRUCell", 3): _recurrent("GRUCell"),
    ("LSTMCell", 1): _recurrent("LSTMCell1"),
    ("LSTMCell", 4): _recurrent("LSTMCell4"),
    ("RNNSequence", 5): _recurrent("RNNSequence"),
    ("GRUSequence", 5): _recurrent("GRUSequence"),
    ("LSTMSequence", 5): _recurrent("LSTMSequence"),
    ("GatherTree", 1): _gather_tree,
    # irrun/ops/embedding.py: the table is x seen as 24 rows of 8
    ("EmbeddingBagOffsetsSum", 3): _unary(lambda x: o3.embedding_bag_offsets_sum(
        o1.reshape(x, const([24, 8]), False), const([0, 5, 23]), const([0, 2]), const(-1),
        const([0.5, 1, 2], F32))),
    ("EmbeddingBagOffsets", 15): _unary(lambda x: o15.embedding_bag_offsets(
        o1.reshape(x, const([24, 8]), False), const([0, 5, 23]), const([0, 2]), const(1),
        None, "mean")),
    ("EmbeddingBagPackedSum", 3): _unary(lambda x: o3.embedding_bag_packed_sum(
        o1.reshape(x, const([24, 8]), False), const([[0, 5], [23, 1]]),
        const([[0.5, 1], [2, 3]], F32))),
    ("EmbeddingBagPacked", 15): _unary(lambda x: o15.embedding_bag_packed(
        o1.reshape(x, const([24, 8]), False), const([[0, 5], [23, 1]]), None, "mean")),
    ("EmbeddingSegmentsSum", 3): _unary(lambda x: o3.embedding_segments_sum(
        o1.reshape(x, const([24, 8]), False), const([0, 5, 23]), const([0, 0, 2]), const(3),
        const(1), const([0.5, 1, 2], F32))),
    # irrun/ops/segments.py
    ("SegmentMax", 16): _unary(lambda x: o16.segment_max(
        o1.reshape(x, const([24, 8]), False), const(np.repeat([0, 2, 5], 8), np.int32),
        const(7), "LOWEST")),
    ("SparseFillEmptyRows", 16): _outputs(lambda x: o16.sparse_fill_empty_rows(
        o1.reshape(x, const([192]), False), const([300, 2]),
        o1.concat([o1.reshape(o12.range(const(0), const(192), const(1), "i64"),
                              const([192, 1]), False), const(np.zeros((192, 1)))], 1),
        const(0.5, F32))),
}


def test_every_supported_op_has_an_openvino_model():
    """A new op in the registry needs a builder here, so that valid IR of it is checked."""
    registered = {(op.type, op.version) for op in registry.supported_ops()}
    missing = sorted(registered - set(BUILDERS))
    assert missing == [], f"no OpenVINO model for {missing}: add a builder to BUILDERS"


def _save(key, tmp_path: Path, compress: bool = False) -> Path:
    outputs, params, *sinks = BUILDERS[key]()  # sinks: the Assigns of a stateful model
    results = [o1.result(out) for out in outputs]
    path = tmp_path / f"{key[0]}-{key[1]}.xml"
    model = ov.Model(results, sinks[0], params, f"{key[0]}_{key[1]}") if sinks else \
        ov.Model(results, params, f"{key[0]}_{key[1]}")  # fmt: skip
    ov.save_model(model, str(path),
                  compress_to_fp16=compress)  # fmt: skip
    return path


def _ops_in(path: Path) -> set[tuple[str, int]]:
    """The (op type, version) of every layer in an IR file, as irrun resolves them."""
    found = set()
    for type_name, opset in re.findall(r'<layer [^>]*type="([^"]+)" version="([^"]+)"',
                                       path.read_text()):  # fmt: skip
        op = registry.resolve(type_name, opset)
        found.add((op.type, op.version))
    return found


@pytest.mark.parametrize("key", sorted(BUILDERS), ids=lambda k: f"{k[0]}-v{k[1]}")
def test_ir_saved_by_openvino_has_no_error(key, tmp_path):
    if key not in {(op.type, op.version) for op in registry.supported_ops()}:
        pytest.skip(f"{key[0]}-v{key[1]} is not registered")
    path = _save(key, tmp_path)
    assert key in _ops_in(path)
    found = irrun.validate(path)
    assert errors(found) == []
    if key == ("LSTMCell", 1):
        # OpenVINO's writer leaves out LSTMCell-1's seventh input (the peepholes) but
        # writes its Const, which then reaches nothing.
        assert [(d.level, d.code, d.layer.type) for d in found] == \
            [("warning", "dead-layer", "Const")]  # fmt: skip
    else:
        # OpenVINO writes every attribute and uses every output of these models.
        assert [str(d) for d in found] == []
    model = irrun.load(path)
    assert model.validate() == found


@pytest.mark.parametrize("key", [("Convolution", 1), ("GroupConvolution", 1),
                                 ("BatchNormInference", 5)],
                         ids=lambda k: f"{k[0]}-v{k[1]}")  # fmt: skip
def test_f16_compressed_weights_have_no_error(key, tmp_path):
    """ov.save_model stores f32 constants as f16 with a decompressing Convert."""
    path = _save(key, tmp_path, compress=True)
    text = path.read_text()
    assert 'element_type="f16"' in text and "decompression" in text
    assert errors(irrun.validate(path)) == []


def test_unused_indices_are_the_only_finding(tmp_path):
    """MaxPool-8's indices port is written even when nothing reads it: what OpenVINO's own
    serializer writes is info, not a warning."""
    x = _image()
    pool = o8.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2])
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([o1.result(pool.output(0))], [x]), str(path))
    found = irrun.validate(path)
    assert [(d.level, d.code, d.port) for d in found] == [("info", "unused-output", 2)]
