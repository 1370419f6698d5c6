"""Whole networks for the benchmark, built with OpenVINO's opset API.

ResNet-18 as torchvision defines it, in the form OpenVINO's converter leaves it:
batch norms folded into each convolution's weights and a bias Add, then ReLU.
Weights are seeded random values; speed does not depend on them.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset1 as op1
import openvino.opset8 as op8


def resnet18(x: ov.Output, seed: int = 0) -> ov.Output:
    """ResNet-18's layers on ``x`` (N, 3, H, W); returns the logits."""
    rng = np.random.default_rng(seed)
    channels = x.get_partial_shape()[1].get_length()

    def conv(x, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True):
        w = rng.standard_normal((cout, cin, k, k)).astype(np.float32)
        w *= np.float32(np.sqrt(2.0 / (cin * k * k)))
        pad = k // 2
        y = op1.convolution(x, op1.constant(w), [stride] * 2, [pad] * 2, [pad] * 2, [1, 1])
        bias = rng.uniform(-0.1, 0.1, (1, cout, 1, 1)).astype(np.float32)
        y = op1.add(y, op1.constant(bias))
        return op1.relu(y) if relu else y

    y = conv(x, channels, 64, 7, stride=2)
    y = op8.max_pool(y, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3]).output(0)
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            h = conv(conv(y, cin, cout, 3, s), cout, cout, 3, relu=False)
            skip = y if (s == 1 and cin == cout) else conv(y, cin, cout, 1, s, relu=False)
            y = op1.relu(op1.add(h, skip))
            cin = cout
    y = op8.adaptive_avg_pool(y, op1.constant(np.array([1, 1], np.int64)))
    y = op1.reshape(y, op1.constant(np.array([0, -1], np.int64)), special_zero=True)
    fc = rng.standard_normal((1000, 512)).astype(np.float32) * np.float32(0.04)
    y = op1.add(op1.matmul(y, op1.constant(fc), False, True),
                op1.constant(np.zeros(1000, np.float32)))  # fmt: skip
    return y.output(0)
