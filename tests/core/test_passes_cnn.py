"""A CNN's activations run into the convolution's result (irrun.core.passes.inplace).

Convolution and GroupConvolution head in-place chains; ReLU, Clamp and Swish (and a
residual Add) after them work in the convolution's own array.  The fused run must give the bits
of the layer-by-layer run (``intermediate=True``, each op's own kernel), NaN, infinities
and signed zeros included, on one thread and on two; and values close to the plugin's.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset4

import irrun
from irrun.core.passes.inplace import InPlaceChain, _Activation

CONV = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1]}


def _net(tmp_path, dtype, act, residual, depthwise, name):
    """x -> 3x3 convolution (depthwise or not) -> [Add x] -> ``act``."""
    rng = np.random.default_rng(0)
    x = opset1.parameter([2, 8, 12, 12], dtype, name="x")
    if depthwise:
        w = opset1.constant(rng.standard_normal((8, 1, 1, 3, 3)).astype(dtype))
        y = opset1.group_convolution(x, w, **CONV)
    else:
        w = opset1.constant(rng.standard_normal((8, 8, 3, 3)).astype(dtype))
        y = opset1.convolution(x, w, **CONV)
    if residual:
        y = opset1.add(y, x)
    y = act(y)
    y.output(0).get_tensor().set_names({"y"})
    model = ov.Model([y.output(0)], [x])
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return model, irrun.load(path)


def _chain(model) -> InPlaceChain | None:
    schedule = model._plan.schedule((model._slot_of("y"),))
    found = [s.kernel for s, _ in schedule if isinstance(s.kernel, InPlaceChain)]
    return found[0] if found else None


def _input(dtype):
    x = np.random.default_rng(1).standard_normal((2, 8, 12, 12)).astype(dtype)
    # NaN, infinities and zeros of both signs go through the convolution: their
    # neighbourhoods give NaN, infinities and (with the zero weights' sums) signed zeros.
    x[0, 0, 2, 2], x[0, 1, 5, 5], x[1, 2, 8, 8], x[1, 3, 0, 0] = np.nan, np.inf, -np.inf, -0.0
    return x


ACTS = {
    "relu": opset1.relu,
    "relu6": lambda y: opset1.clamp(y, 0.0, 6.0),
    "clamp": lambda y: opset1.clamp(y, -0.5, 0.75),
    "swish": opset4.swish,
}


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_activations_run_into_the_convolution_s_result(tmp_path, act, residual, depthwise,
                                                        threads):  # fmt: skip
    ov_model, model = _net(tmp_path, np.float32, ACTS[act], residual, depthwise, "n")
    model.threads = threads
    x = _input(np.float32)
    got = model.run({"x": x})["y"]
    each = model.run({"x": x}, intermediate=True)["y"]
    np.testing.assert_array_equal(got, each)  # NaN where NaN, same bits elsewhere
    assert np.array_equal(np.signbit(got), np.signbit(each))
    chain = _chain(model)
    assert chain is not None and chain.head.node.op.type.endswith("Convolution")
    assert isinstance(chain.tails[-1][1], _Activation)
    # The plugin on finite values (its NaN and infinities depend on its JIT target).
    finite = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    compiled = ov.Core().compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    want = compiled({"x": finite})[0]
    np.testing.assert_allclose(model.run({"x": finite})["y"], want, rtol=1e-5, atol=1e-5)


def test_hand_checked_relu6_on_a_1x1_convolution(tmp_path):
    """y = clamp(2 x, 0, 6) by a 1x1 filter of 2: NaN gives 0 (the plugin's Clamp), -0.0
    gives +0.0."""
    x = opset1.parameter([1, 1, 1, 6], np.float32, name="x")
    y = opset1.clamp(opset1.convolution(x, opset1.constant(np.full((1, 1, 1, 1), 2, np.float32)),
                                        [1, 1], [0, 0], [0, 0], [1, 1]), 0.0, 6.0)  # fmt: skip
    y.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "c.xml"
    ov.save_model(ov.Model([y.output(0)], [x]), path, compress_to_fp16=False)
    model = irrun.load(path)
    got = model.run({"x": np.float32([[[[-1, -0.0, 1, 4, np.nan, np.inf]]]])})["y"]
    assert got.reshape(-1).tolist() == [0, 0, 2, 6, 0, 6]
    assert not np.signbit(got).any()
    assert isinstance(_chain(model).tails[-1][1], _Activation)


def test_f16_activations_run_their_own_kernels(tmp_path):
    """f16 sums in f32 and rounds: the activation runs its kernel on the rounded result."""
    _, model = _net(tmp_path, np.float16, ACTS["relu6"], True, True, "h")
    x = _input(np.float16)
    np.testing.assert_array_equal(model.run({"x": x})["y"],
                                  model.run({"x": x}, intermediate=True)["y"])  # fmt: skip


def test_a_result_read_twice_is_not_changed_in_place(tmp_path):
    """The convolution's result feeds the ReLU and the output too: no chain takes it."""
    rng = np.random.default_rng(3)
    x = opset1.parameter([1, 4, 6, 6], np.float32, name="x")
    c = opset1.convolution(x, opset1.constant(rng.standard_normal((4, 4, 3, 3)).astype(np.float32)),
                           [1, 1], [1, 1], [1, 1], [1, 1])  # fmt: skip
    c.output(0).get_tensor().set_names({"c"})
    y = opset1.relu(c)
    y.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "t.xml"
    ov.save_model(ov.Model([y.output(0), c.output(0)], [x]), path, compress_to_fp16=False)
    model = irrun.load(path)
    out = model.run({"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)})
    assert (out["c"] < 0).any()
    np.testing.assert_array_equal(out["y"], np.maximum(out["c"], 0))


@pytest.mark.parametrize("act", ["relu", "relu6", "clamp", "swish"])
@pytest.mark.parametrize("reference", [True, False])
def test_activations_of_strided_views_are_their_values(act, reference):
    """Kernels given a non-contiguous view (a transposed or sliced input) compute its
    values, not those of a copy they then drop."""
    from types import SimpleNamespace

    from irrun.fast import kernel_for
    from irrun.ir.registry import resolve

    base = np.random.default_rng(4).standard_normal((6, 10)).astype(np.float32) * 4
    x = base.T[::2]  # [5, 6], strides of a transposed, sliced view
    op, attrs, want = {
        "relu": ("ReLU", SimpleNamespace(), np.maximum(x, 0)),
        "relu6": ("Clamp", SimpleNamespace(min=0.0, max=6.0), np.clip(x, 0, 6)),
        "clamp": ("Clamp", SimpleNamespace(min=-0.5, max=0.75), np.clip(x, -0.5, 0.75)),
        "swish": ("Swish", SimpleNamespace(), x / (1 + np.exp(-x))),
    }[act]
    (got,) = kernel_for(resolve(op, "opset4"), reference)(attrs, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
