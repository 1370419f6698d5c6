"""Whole CNNs built with OpenVINO's opset API run in irrun as on OpenVINO's CPU plugin.

Each network is small (random weights, small inputs) but has the layer mix of its
namesake: the convolutions, activations, pools, concatenations and heads that real
IR files converted from PyTorch or ONNX contain.  Outputs must agree within 1e-4
of the output's scale (the summation order of convolutions differs from oneDNN's).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import openvino as ov
import openvino.opset1 as op1
import openvino.opset4 as op4
import openvino.opset8 as op8
import openvino.opset14 as op14
import pytest
from support.ov_oneop import CPU_CONFIG as CPU

import irrun


class Net:
    """Builds a network with seeded random weights."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def weights(self, *shape: int) -> ov.Node:
        fan_in = int(np.prod(shape[1:])) or 1
        w = self.rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2 / fan_in))
        return op1.constant(w)

    def conv(self, x, cin, cout, k, stride=1, pad=None, rank=2, relu=True):
        pad = k // 2 if pad is None else pad
        y = op1.convolution(x, self.weights(cout, cin, *([k] * rank)), [stride] * rank,
                            [pad] * rank, [pad] * rank, [1] * rank)  # fmt: skip
        y = self.batch_norm(y, cout, rank)
        return op1.relu(y) if relu else y

    def batch_norm(self, x, c, rank=2):
        gamma = op1.constant(self.rng.uniform(0.5, 1.5, c).astype(np.float32))
        beta = op1.constant(self.rng.uniform(-0.2, 0.2, c).astype(np.float32))
        mean = op1.constant(self.rng.uniform(-0.2, 0.2, c).astype(np.float32))
        var = op1.constant(self.rng.uniform(0.5, 1.5, c).astype(np.float32))
        return op8.batch_norm_inference(x, gamma, beta, mean, var, 1e-5)

    def linear(self, x, cin, cout):
        y = op1.matmul(x, self.weights(cout, cin), False, True)
        return op1.add(y, op1.constant(self.rng.standard_normal(cout).astype(np.float32)))

    def flatten(self, x):
        return op1.reshape(x, op1.constant(np.array([0, -1], np.int64)), special_zero=True)


def resnet(net: Net, x):
    """Conv stem, max pool, two residual blocks (one downsampling), global average, linear."""
    y = net.conv(x, 3, 16, 7, stride=2, pad=3)
    y = op8.max_pool(y, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3]).output(0)
    for cin, cout, stride in ((16, 16, 1), (16, 32, 2)):
        h = net.conv(y, cin, cout, 3, stride)
        h = net.conv(h, cout, cout, 3, relu=False)
        skip = y if stride == 1 else net.conv(y, cin, cout, 1, stride, pad=0, relu=False)
        y = op1.relu(op1.add(h, skip))
    y = op1.reduce_mean(y, op1.constant(np.array([2, 3], np.int64)), keep_dims=True)
    return net.linear(net.flatten(y), 32, 10)


def squeezenet(net: Net, x):
    """Ceil-mode max pools between fire modules (squeeze 1x1, expand 1x1 + 3x3, concat)."""
    y = net.conv(x, 3, 16, 3, stride=2, pad=0)
    y = op1.max_pool(y, [2, 2], [0, 0], [0, 0], [3, 3], rounding_type="ceil")
    for cin, squeeze, expand in ((16, 8, 16), (32, 8, 16)):
        s = net.conv(y, cin, squeeze, 1, pad=0)
        y = op1.concat([net.conv(s, squeeze, expand, 1, pad=0), net.conv(s, squeeze, expand, 3)], 1)
        y = op1.max_pool(y, [2, 2], [0, 0], [0, 0], [3, 3], rounding_type="ceil")
    y = net.conv(y, 32, 10, 1, pad=0)
    return op8.adaptive_avg_pool(y, op1.constant(np.array([1, 1], np.int64)))


def inception(net: Net, x):
    """Four branches (1x1, 3x3, 5x5, 3x3 average pool with exclude-pad) concatenated."""
    y = net.conv(x, 3, 16, 3)
    branches = [
        net.conv(y, 16, 8, 1, pad=0),
        net.conv(net.conv(y, 16, 8, 1, pad=0), 8, 8, 3),
        net.conv(net.conv(y, 16, 4, 1, pad=0), 4, 8, 5),
        net.conv(op1.avg_pool(y, [1, 1], [1, 1], [1, 1], [3, 3], exclude_pad=True), 16, 8, 1,
                 pad=0),
    ]  # fmt: skip
    y = op1.concat(branches, 1)
    y = op14.max_pool(y, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3],
                      rounding_type="ceil_torch").output(0)  # fmt: skip
    return op1.softmax(net.linear(net.flatten(op1.reduce_mean(
        y, op1.constant(np.array([2, 3], np.int64)), keep_dims=False)), 32, 10), 1)  # fmt: skip


def vgg(net: Net, x):
    """Conv-conv-pool stages ending in adaptive average pooling to 2x2 and a linear head."""
    y = x
    for cin, cout in ((3, 8), (8, 16)):
        y = net.conv(net.conv(y, cin, cout, 3), cout, cout, 3)
        y = op1.max_pool(y, [2, 2], [0, 0], [0, 0], [2, 2])
    y = op8.adaptive_avg_pool(y, op1.constant(np.array([2, 2], np.int64)))
    return net.linear(net.flatten(y), 64, 10)


def mobilenet(net: Net, x):
    """Depthwise-separable blocks with HSwish, a squeeze-excite gate with HSigmoid."""
    y = op4.hswish(net.conv(x, 3, 16, 3, stride=2, relu=False))
    for c, stride in ((16, 1), (16, 2)):
        dw = op1.group_convolution(y, net.weights(c, 1, 1, 3, 3), [stride] * 2, [1, 1], [1, 1],
                                   [1, 1])  # fmt: skip
        dw = op4.hswish(net.batch_norm(dw, c))
        gate = op1.reduce_mean(dw, op1.constant(np.array([2, 3], np.int64)), keep_dims=True)
        gate = op1.convolution(gate, net.weights(c, c, 1, 1), [1, 1], [0, 0], [0, 0], [1, 1])
        dw = op1.multiply(dw, op8.hsigmoid(gate) if hasattr(op8, "hsigmoid")
                          else ov.opset5.hsigmoid(gate))  # fmt: skip
        y = net.conv(dw, c, c, 1, pad=0, relu=False)
    y = op8.adaptive_avg_pool(y, op1.constant(np.array([1, 1], np.int64)))
    return net.linear(net.flatten(y), 16, 10)


def cnn3d(net: Net, x):
    """3D convolutions, a 5D max pool and a 5D average pool."""
    y = net.conv(x, 2, 8, 3, rank=3)
    y = op8.max_pool(y, [2, 2, 2], [1, 1, 1], [0, 0, 0], [0, 0, 0], [2, 2, 2]).output(0)
    y = net.conv(y, 8, 8, 3, rank=3)
    y = op1.avg_pool(y, [2, 2, 2], [0, 0, 0], [0, 0, 0], [2, 2, 2], exclude_pad=True)
    return net.linear(net.flatten(y), 8 * 3 * 3 * 3, 4)


def cnn1d(net: Net, x):
    """1D convolutions with stride and padding, max pool with indices, tanh and sigmoid."""
    y = net.conv(x, 4, 8, 5, rank=1)
    pool = op8.max_pool(y, [2], [1], [0], [0], [2], index_element_type="i32")
    y = op1.tanh(net.conv(pool.output(0), 8, 8, 3, stride=2, rank=1, relu=False))
    y = op1.sigmoid(op1.reduce_max(y, op1.constant(np.array([2], np.int64)), keep_dims=False))
    return net.linear(y, 8, 3)


NETWORKS: dict[str, tuple[Callable, tuple[int, ...]]] = {
    "resnet": (resnet, (1, 3, 32, 32)),
    "squeezenet": (squeezenet, (1, 3, 33, 33)),
    "inception": (inception, (1, 3, 15, 15)),
    "vgg": (vgg, (2, 3, 16, 16)),
    "mobilenet": (mobilenet, (1, 3, 24, 24)),
    "cnn3d": (cnn3d, (1, 2, 12, 12, 12)),
    "cnn1d": (cnn1d, (2, 4, 40)),
}


@pytest.mark.parametrize("compress", [False, True], ids=["f32-weights", "f16-weights"])
@pytest.mark.parametrize("name", NETWORKS)
def test_network_matches_openvino(tmp_path, core, name, compress):
    build, shape = NETWORKS[name]
    p = op1.parameter(list(shape), ov.Type.f32, name="input")
    p.output(0).get_tensor().set_names({"input"})
    out = build(Net(seed=sum(map(ord, name))), p)
    out.output(0).get_tensor().set_names({"logits"})
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.Model([out.output(0)], [p], name), path, compress_to_fp16=compress)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = core.compile_model(path, "CPU", CPU)({"input": x})[0]
    model = irrun.load(path)
    assert [d for d in model.validate() if d.level == "error"] == []
    got = model.run({"input": x})["logits"]
    assert got.shape == want.shape and got.dtype == np.float32
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)
