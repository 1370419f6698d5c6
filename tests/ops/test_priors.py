"""PriorBox-1/8 and PriorBoxClustered-1 against OpenVINO, by hand, and folded from ShapeOf.

The layers are built with OpenVINO's node factory (its Python wrappers refuse some
attribute values the op takes, such as ``step=-1``).  ``Model.evaluate`` crashes on
these ops' models with Parameter inputs, so the reference kernels run through the
node's own ``evaluate`` with an output of the size irrun gives.  The CPU plugin cannot
compile PriorBox-8 with ``min_max_aspect_ratios_order=false`` on non-constant inputs
("Unexpected op type in PriorBox shape inference factory"); those cases are compared
with the reference only.  Values are compared exactly: the kernels compute in f32 in
the same order.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset3
from openvino.utils.node_factory import NodeFactory
from support.ov_oneop import CORE, assert_close, one_op_model, run_cpu
from support.ov_shapes import from_ov_shape

import irrun
from irrun.ir import element_types
from irrun.ir.dims import DYNAMIC
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES


def node(version, a, b, attrs):
    kind = "PriorBoxClustered" if version == 0 else "PriorBox"
    opset = "opset1" if version in (0, 1) else "opset8"
    return NodeFactory(opset).create(kind, [a.output(0), b.output(0)], attrs)


def compare(version, attrs, inputs, tmp_path, cpu=True):
    """irrun against the reference kernel, and the CPU plugin where it compiles, all on
    the model read back from the saved IR (OpenVINO writes float lists to 6 significant
    digits: the IR's attributes are not the built ones)."""
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(lambda a, b: node(version, a, b, attrs), inputs), path,
                  compress_to_fp16=False)  # fmt: skip
    got = next(iter(irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)}).values()))
    model = CORE.read_model(path)
    (op,) = [n for n in model.get_ops() if n.get_type_name().startswith("PriorBox")]
    out = [ov.Tensor(ov.Type.f32, [2, got.shape[1]])]
    assert op.evaluate(out, [ov.Tensor(x) for x in inputs])
    assert_close(got, np.array(out[0].data, copy=True), what="reference")
    if cpu:
        assert_close(got, run_cpu(model, inputs)[0], what="plugin")
    return got


def sizes(h, w, ih, iw, dtype=np.int64):
    return [np.array([h, w], dtype), np.array([ih, iw], dtype)]


PRIOR_BOX_CASES = {
    "ssd": dict(min_size=[2.0, 5.0], max_size=[4.0, 9.0], aspect_ratio=[2.0, 3.0], flip=True,
                offset=0.5, variance=[0.1, 0.2, 0.3, 0.4]),
    "clip-step": dict(min_size=[20.0], max_size=[40.0], aspect_ratio=[2.0], clip=True,
                      step=8.0, offset=0.5, variance=[0.2]),
    "duplicate-ratios": dict(min_size=[3.0], aspect_ratio=[2.0, 0.5, 2.0, 1.0], flip=True,
                             offset=0.25),
    "mxnet": dict(min_size=[0.2, 0.5], aspect_ratio=[2.0, 0.5], flip=True, offset=0.5,
                  scale_all_sizes=False, step=-1.0),
    "mxnet-step": dict(min_size=[0.2], aspect_ratio=[2.0], offset=0.3, scale_all_sizes=False,
                       step=0.1),
    "fixed-density": dict(fixed_size=[8.0, 16.5], density=[2.0, 3.0], aspect_ratio=[2.0],
                          flip=True, offset=0.5),
    "fixed-ratio": dict(fixed_size=[8.0, 16.5], density=[2.0, 3.0], fixed_ratio=[2.0],
                        offset=0.5),
    "fixed-clip": dict(fixed_size=[8.0], density=[2.0], aspect_ratio=[3.0], clip=True,
                       step=4.0, offset=0.5),
}  # fmt: skip


@pytest.mark.parametrize("case", PRIOR_BOX_CASES)
@pytest.mark.parametrize(("version", "order"), [(1, True), (8, True), (8, False)])
def test_prior_box_matches_openvino(case, version, order, tmp_path):
    attrs = dict(PRIOR_BOX_CASES[case])
    if version == 8:
        attrs["min_max_aspect_ratios_order"] = order
    for inputs in (sizes(3, 4, 30, 41), sizes(5, 2, 300, 200, np.int32), sizes(1, 1, 7, 9)):
        compare(version, attrs, inputs, tmp_path, cpu=order)


CLUSTERED_CASES = {
    "default-step": dict(width=[2.0, 3.0], height=[1.0, 2.0], offset=0.5),
    "step": dict(width=[2.0, 30.0], height=[10.0, 2.0], offset=0.2, clip=False, step=3.0,
                 variance=[0.1, 0.2, 0.3, 0.4]),
    "step-w-h": dict(width=[2.0, 30.0], height=[10.0, 2.0], offset=0.2, step_w=3.0,
                     step_h=5.0, variance=[0.5]),
    "step-w-only": dict(width=[7.5], height=[3.25], offset=0.0, step_w=3.0, clip=False),
}  # fmt: skip


@pytest.mark.parametrize("case", CLUSTERED_CASES)
def test_prior_box_clustered_matches_openvino(case, tmp_path):
    for inputs in (sizes(3, 4, 30, 41), sizes(5, 2, 300, 200, np.int32)):
        compare(0, CLUSTERED_CASES[case], inputs, tmp_path)


ratios = st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 1.5, 0.25]), max_size=3)


@settings(max_examples=25, deadline=None)
@given(
    version=st.sampled_from([1, 8]),
    min_size=st.lists(st.floats(1, 40, width=32), min_size=1, max_size=3),
    max_extra=st.lists(st.floats(1, 40, width=32), max_size=3),
    aspect_ratio=ratios,
    flip=st.booleans(), clip=st.booleans(),
    step=st.sampled_from([0.0, 4.0, 7.5]), offset=st.sampled_from([0.0, 0.5, 0.3]),
    variance=st.sampled_from([[], [0.1], [0.1, 0.1, 0.2, 0.2]]),
    order=st.booleans(),
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 500),
                    st.integers(1, 500)),
)  # fmt: skip
def test_prior_box_sweep(version, min_size, max_extra, aspect_ratio, flip, clip, step, offset,
                         variance, order, shape, tmp_path_factory):  # fmt: skip
    attrs = dict(min_size=min_size, max_size=max_extra[: len(min_size)], aspect_ratio=aspect_ratio,
                 flip=flip, clip=clip, step=step, offset=offset, variance=variance)  # fmt: skip
    if version == 8:
        attrs["min_max_aspect_ratios_order"] = order
    compare(version, attrs, sizes(*shape), tmp_path_factory.mktemp("pb"), cpu=version == 1 or order)


@settings(max_examples=15, deadline=None)
@given(
    boxes=st.lists(st.tuples(st.floats(0.5, 60, width=32), st.floats(0.5, 60, width=32)),
                   min_size=1, max_size=4),
    clip=st.booleans(),
    steps=st.tuples(st.sampled_from([0.0, 8.0]), st.sampled_from([0.0, 3.0]),
                    st.sampled_from([0.0, 5.5])),
    offset=st.sampled_from([0.0, 0.5]),
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 500),
                    st.integers(1, 500)),
)  # fmt: skip
def test_prior_box_clustered_sweep(boxes, clip, steps, offset, shape, tmp_path_factory):
    attrs = dict(width=[w for w, _ in boxes], height=[h for _, h in boxes], clip=clip,
                 step=steps[0], step_w=steps[1], step_h=steps[2], offset=offset)  # fmt: skip
    compare(0, attrs, sizes(*shape), tmp_path_factory.mktemp("pbc"))


def test_prior_box_by_hand(tmp_path):
    """A 1x2 map of a 10x20 image, min size 4, step 0: centres (5, 5) and (15, 5)."""
    got = compare(1, dict(min_size=[4.0], offset=0.5, variance=[0.1, 0.2, 0.3, 0.4]),
                  sizes(1, 2, 10, 20), tmp_path)  # fmt: skip
    np.testing.assert_allclose(got[0], [3 / 20, 3 / 10, 7 / 20, 7 / 10,
                                        13 / 20, 3 / 10, 17 / 20, 7 / 10], rtol=1e-6)  # fmt: skip
    assert got[1].tolist() == np.array([0.1, 0.2, 0.3, 0.4] * 2, np.float32).tolist()


def test_prior_box_clustered_by_hand(tmp_path):
    got = compare(0, dict(width=[4.0], height=[2.0], offset=0.5, clip=False, step=10.0),
                  sizes(1, 1, 10, 20), tmp_path)  # fmt: skip
    np.testing.assert_allclose(got[0], [3 / 20, 4 / 10, 7 / 20, 6 / 10], rtol=1e-6)
    assert got[1].tolist() == [np.float32(0.1)] * 4


def test_prior_box_folded_from_shape_of(tmp_path):
    """As converted SSDs compute it: the sizes sliced from ShapeOf, known before the run;
    the output is a constant of static shape."""
    feature = opset1.parameter([1, 8, 3, 5], np.float32, name="in0")
    image = opset1.parameter([1, 3, 30, 50], np.float32, name="in1")

    def hw(x):
        return opset1.strided_slice(opset3.shape_of(x), opset1.constant(np.array([2])),
                                    opset1.constant(np.array([4])),
                                    opset1.constant(np.array([1])), [0], [0])  # fmt: skip

    prior = node(8, hw(feature), hw(image), dict(min_size=[6.0], max_size=[12.0],
                                                 aspect_ratio=[2.0], flip=True, offset=0.5))  # fmt: skip
    prior.output(0).get_tensor().set_names({"out"})
    model = ov.Model([prior.output(0)], [feature, image])
    assert model.output(0).get_partial_shape() == ov.PartialShape([2, 3 * 5 * 4 * 4])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    assert [tuple(o.shape) for o in loaded.outputs] == [(2, 240)]
    x = [np.zeros((1, 8, 3, 5), np.float32), np.zeros((1, 3, 30, 50), np.float32)]
    got = next(iter(loaded.run({"in0": x[0], "in1": x[1]}).values()))
    assert_close(got, run_cpu(model, x)[0])


def infer(version, attrs, shapes, value=None):
    op = resolve("PriorBoxClustered" if version == 0 else "PriorBox", f"opset{max(version, 1)}")
    infos = [TensorInfo(shapes[0], ET["i64"], value), TensorInfo(shapes[1], ET["i64"])]
    return op.infer(SimpleNamespace(**attrs), infos)[0]


BASE = dict(min_size=(2.0,), max_size=(4.0,), aspect_ratio=(2.0,), density=(), fixed_ratio=(),
            fixed_size=(), clip=False, flip=True, step=0.0, offset=0.5, variance=(),
            scale_all_sizes=True, min_max_aspect_ratios_order=True)  # fmt: skip


@pytest.mark.parametrize(("shapes", "value", "want"), [
    (([2], [2]), np.array([3, 5]), (2, 3 * 5 * 4 * 4)),
    (([2], [2]), None, (2, DYNAMIC)),
    (([-1], [-1]), None, (2, DYNAMIC)),
    ((None, None), None, (2, DYNAMIC)),
    (([2], [2]), np.array([0, 5]), (2, 0)),
])  # fmt: skip
def test_prior_box_shape_rule_matches_openvino(shapes, value, want):
    got = infer(8, BASE, shapes, value)
    assert (got.shape, got.element_type.name) == (want, "f32")

    def param(shape):
        return opset1.parameter(ov.PartialShape.dynamic() if shape is None else shape, ov.Type.i64)

    first = param(shapes[0]) if value is None else opset1.constant(value.astype(np.int64))
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in BASE.items()}
    ov_node = node(8, first, param(shapes[1]), attrs)
    assert from_ov_shape(ov_node.get_output_partial_shape(0)) == want


@pytest.mark.parametrize(("shapes", "value", "says"), [
    (([2, 1], [2]), None, "output_size must be 1-D"),
    (([2], []), None, "image_size must be 1-D"),
    (([3], [2]), np.array([3, 5, 1]), "must hold 2 values"),
])  # fmt: skip
def test_prior_box_shape_rule_errors(shapes, value, says):
    with pytest.raises(ShapeError, match=says):
        infer(8, BASE, shapes, value)
    clustered = dict(width=(1.0,), height=(2.0,), clip=True, step=0.0, step_w=0.0, step_h=0.0,
                     offset=0.5, variance=())  # fmt: skip
    with pytest.raises(ShapeError, match=says):
        infer(0, clustered, shapes, value)


@pytest.mark.parametrize(("change", "says"), [
    (dict(variance=(0.1, 0.2)), "variance must hold 0, 1 or 4"),
    (dict(scale_all_sizes=False), "make 4 priors per point, but OpenVINO sizes the output for 3"),
    (dict(max_size=(4.0, 5.0)), "make 4 priors per point, but OpenVINO sizes the output for 5"),
    (dict(fixed_size=(8.0,)), "fixed_size has 1 values but density only 0"),
    (dict(fixed_size=(8.0,), density=(2.0,), fixed_ratio=(1.0, 2.0), min_size=(), max_size=()),
     "make 8 priors per point, but OpenVINO sizes the output for 9"),
    (dict(aspect_ratio=(-2.0,)), "aspect_ratio must be positive"),
])  # fmt: skip
def test_prior_box_refuses_what_openvino_cannot_compute(change, says):
    op = resolve("PriorBox", "opset8")
    with pytest.raises(irrun.errors.KernelError, match=says):
        op.check(SimpleNamespace(**{**BASE, **change}))


def test_validate_reports_bad_priors(tmp_path):
    inputs = sizes(2, 3, 30, 40)
    attrs = dict(min_size=[2.0], max_size=[4.0], aspect_ratio=[2.0], offset=0.5)
    model = one_op_model(lambda a, b: node(1, a, b, attrs), inputs)
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    text = path.read_text()
    path.write_text(text.replace('scale_all_sizes="true"', 'scale_all_sizes="false"'))
    found = [d for d in irrun.validate(path) if d.layer is not None and d.layer.type == "PriorBox"]
    assert [d.code for d in found] == ["bad-attribute"] and "priors per point" in found[0].message
    path.write_text(text.replace('variance=""', 'variance="0.1,x"'))
    found = [d for d in irrun.validate(path) if d.layer is not None and d.layer.type == "PriorBox"]
    assert [d.code for d in found] == ["bad-attribute"] and "variance" in found[0].message
    model = one_op_model(lambda a, b: node(0, a, b, dict(width=[1.0, 2.0], height=[1.0, 2.0],
                                                         offset=0.5)), inputs)  # fmt: skip
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(path.read_text().replace('height="1, 2"', 'height="1"'))
    found = [d for d in irrun.validate(path)
             if d.layer is not None and d.layer.type == "PriorBoxClustered"]  # fmt: skip
    assert [d.code for d in found] == ["bad-attribute"] and "as many values" in found[0].message
