"""FakeQuantize spelled out in ordinary ops, so the CPU plugin computes it as written.

The CPU plugin fuses a FakeQuantize into the convolution before it or after it and
runs INT8 kernels (u8/i8 activations and weights, int32 accumulation, requantized
outputs): a different computation, not an f32 one that rounds differently.
``without_fake_quantize(model)`` returns a copy of ``model`` in which every
FakeQuantize is replaced by the elementwise formula of OpenVINO's reference kernel::

    x <= min(il, ih) ? ol : x > max(il, ih) ? oh
        : round_half_even((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol

so the plugin on the copy answers "what does this network compute in f32", the same
question irrun and ``ov.Model.evaluate`` answer.  The replacement keeps the
FakeQuantize's friendly name and output tensor names, so per-layer comparisons still
find it.  Only for tests and scratch experiments; irrun never needs it.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset1, opset5


def _formula(fq: ov.Node) -> ov.Output:
    x, il, ih, ol, oh = (fq.input_value(i) for i in range(5))
    attrs = fq.get_attributes()
    mode = str(attrs["auto_broadcast"]).lower()
    if mode == "pdpd":
        # Select has no pdpd broadcasting, and OpenVINO's own kernels do not honour it.
        raise NotImplementedError(f"{fq.get_friendly_name()}: pdpd FakeQuantize")
    et = x.get_element_type()
    if et in (ov.Type.f16, ov.Type.bf16):
        # OpenVINO evaluates a 16-bit FakeQuantize in f32 and rounds once.
        x, il, ih, ol, oh = (opset1.convert(v, "f32").output(0) for v in (x, il, ih, ol, oh))
    steps = opset1.constant(np.array(attrs["levels"] - 1, x.get_element_type().to_dtype()))
    # The reference kernel's order of operations, each rounded to X's type.
    scaled = opset1.divide(opset1.subtract(x, il, mode), opset1.subtract(ih, il), mode)
    level = opset5.round(opset1.multiply(scaled, steps), "half_to_even")
    span = opset1.subtract(oh, ol)
    y = opset1.add(opset1.multiply(opset1.divide(level, steps), span, mode), ol, mode)
    lo, hi = opset1.minimum(il, ih), opset1.maximum(il, ih)
    inner = opset1.select(opset1.greater(x, hi, mode), oh, y)
    out = opset1.select(opset1.less_equal(x, lo, mode), ol, inner)
    if out.get_output_partial_shape(0) != x.get_partial_shape():
        # A range wider than X: OpenVINO's kernels read it in a way no broadcast spells.
        raise NotImplementedError(f"{fq.get_friendly_name()}: a range does not fit X's shape")
    if et != x.get_element_type():
        out = opset1.convert(out, et)
    out.set_friendly_name(fq.get_friendly_name())
    return out.output(0)


def without_fake_quantize(model: ov.Model) -> ov.Model:
    """A copy of ``model`` with every FakeQuantize replaced by its formula in plain ops."""
    copy = model.clone()
    for node in copy.get_ordered_ops():
        if node.get_type_name() == "FakeQuantize":
            names = node.output(0).get_names()
            new = _formula(node)
            node.output(0).replace(new)
            new.get_tensor().set_names(names)
    copy.validate_nodes_and_infer_types()
    return copy


def count_fake_quantize(model: ov.Model) -> int:
    return sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops())
