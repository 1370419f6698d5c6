"""Regenerate the bundled IR models, their inputs and their expected outputs.

    python models/make_models.py        # needs: pip install openvino

Each model is written by OpenVINO itself (``ov.save_model``) as ``NAME.xml`` +
``NAME.bin``, with ``NAME.inputs.npz`` (keyed by input name) and
``NAME.expected.npz`` (keyed by output name).  Expected values are the
documents' examples with their errors corrected by hand (see
``../shared/notes/openvino-semantics.md`` section 6); before anything is
written, every one is checked against OpenVINO's CPU plugin, so a wrong
hand value stops the script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as op1
import openvino.opset6 as op6
import openvino.opset8 as op8
import openvino.opset14 as op14

HERE = Path(__file__).resolve().parent
F32 = np.float32


def _named(output, name: str):
    output.get_tensor().set_names({name})
    return output


def _param(name: str, shape, dtype=ov.Type.f32):
    p = op1.parameter(list(shape), dtype, name=name)
    _named(p.output(0), name)
    return p


def maxpool_example(ex: int, x, expected_values, expected_indices, version=8, **attrs):
    """One of the MaxPool examples of pooling-shape-rules.rst / MaxPool-8.rst."""
    x = np.array(x, F32)
    p = _param("input", x.shape)
    kw = dict(
        strides=attrs.get("strides", [1] * (x.ndim - 2)),
        dilations=attrs.get("dilations", [1] * (x.ndim - 2)),
        pads_begin=attrs.get("pads_begin", [0] * (x.ndim - 2)),
        pads_end=attrs.get("pads_end", [0] * (x.ndim - 2)),
        kernel_shape=attrs["kernel"],
        rounding_type=attrs.get("rounding_type", "floor"),
        auto_pad=attrs.get("auto_pad", "explicit"),
        index_element_type="i32",
        axis=attrs.get("axis", 0),
        name=f"maxpool_example{ex}",
    )
    node = (op14 if version == 14 else op8).max_pool(p, **kw)
    outs = [_named(node.output(0), "values"), _named(node.output(1), "indices")]
    model = ov.Model(outs, [p], f"maxpool_example{ex}")
    return (
        f"maxpool_example{ex}",
        model,
        {"input": x},
        {"values": np.array(expected_values, F32), "indices": np.array(expected_indices, np.int32)},
    )


def avgpool_example():
    """AvgPool-ngraph.rst: k 2x2, stride 1, pads 1; exclude-pad true and false side by side."""
    x = np.array([[[[1, 3, 5], [7, 11, 13], [17, 19, 23]]]], F32)
    p = _param("input", x.shape)
    common = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel_shape=[2, 2])
    excl = op1.avg_pool(p, exclude_pad=True, name="avg_exclude_pad", **common)
    incl = op1.avg_pool(p, exclude_pad=False, name="avg_include_pad", **common)
    model = ov.Model(
        [_named(excl.output(0), "exclude_pad"), _named(incl.output(0), "include_pad")],
        [p], "avgpool_example",
    )  # fmt: skip
    expected = {
        "exclude_pad": [[1, 2, 4, 5], [4, 5.5, 8, 9], [12, 13.5, 16.5, 18], [17, 18, 21, 23]],
        "include_pad": [[0.25, 1, 2, 1.25], [2, 5.5, 8, 4.5], [6, 13.5, 16.5, 9],
                        [4.25, 9, 10.5, 5.75]],
    }  # fmt: skip
    return (
        "avgpool_example",
        model,
        {"input": x},
        {k: np.array(v, F32).reshape(1, 1, 4, 4) for k, v in expected.items()},
    )


def adaptive_example():
    """adaptive-pooling-rfc.md: 1..8 pooled to 3 -> windows [0,3) [2,6) [5,8)."""
    x = np.arange(1, 9, dtype=F32).reshape(1, 1, 8)
    p = _param("input", x.shape)
    size = op1.constant(np.array([3], np.int64), name="output_shape")
    avg = op8.adaptive_avg_pool(p, size, name="adaptive_avg")
    mx = op8.adaptive_max_pool(p, size, index_element_type="i32", name="adaptive_max")
    model = ov.Model(
        [_named(avg.output(0), "average"), _named(mx.output(0), "maximum"),
         _named(mx.output(1), "indices")],
        [p], "adaptive_example",
    )  # fmt: skip
    return (
        "adaptive_example",
        model,
        {"input": x},
        {
            "average": np.array([[[2, 4.5, 7]]], F32),
            "maximum": np.array([[[3, 6, 8]]], F32),
            "indices": np.array([[[2, 5, 7]]], np.int32),
        },
    )


def pooling_chain():
    """Three pooling layers of different kinds in a chain (the validate examples' model)."""
    p = _param("image", (1, 3, 16, 16))
    mp = op8.max_pool(p, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], name="stem_pool",
                      index_element_type="i32")  # fmt: skip
    ap = op14.avg_pool(mp.output(0), [2, 2], [0, 0], [0, 0], [2, 2], exclude_pad=True,
                       rounding_type="ceil_torch", name="avg_pool")  # fmt: skip
    size = op1.constant(np.array([2, 2], np.int64), name="head_size")
    head = op8.adaptive_max_pool(ap, size, index_element_type="i32", name="head_pool")
    model = ov.Model(
        [_named(head.output(0), "pooled"), _named(head.output(1), "indices")], [p],
        "pooling_chain",
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(F32)
    return "pooling_chain", model, {"image": x}, None


def demo():
    """The README's demo: a small CNN (convolutions, ReLU, max and average pooling, a
    global adaptive average, a linear layer and softmax), weights stored as f16 the way
    ``ov.save_model`` compresses them by default."""
    rng = np.random.default_rng(7)

    def weights(*shape):
        fan_in = int(np.prod(shape[1:]))
        return op1.constant((rng.standard_normal(shape) * np.sqrt(2 / fan_in)).astype(F32))

    p = _param("image", (1, 3, 32, 32))
    y = op1.relu(op1.convolution(p, weights(16, 3, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1],
                                 name="conv1"))  # fmt: skip
    y = op1.max_pool(y, [2, 2], [1, 1], [1, 1], [3, 3], name="pool1")
    y = op1.relu(op1.convolution(y, weights(32, 16, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1],
                                 name="conv2"))  # fmt: skip
    y = op14.avg_pool(y, [2, 2], [0, 0], [0, 0], [2, 2], exclude_pad=True,
                      rounding_type="ceil_torch", name="pool2")  # fmt: skip
    y = op8.adaptive_avg_pool(y, op1.constant(np.array([1, 1], np.int64)), name="global_pool")
    y = op1.reshape(y, op1.constant(np.array([0, -1], np.int64)), special_zero=True)
    bias = op1.constant(rng.standard_normal(10).astype(F32) * F32(0.1))
    y = op1.add(op1.matmul(y, weights(10, 32), False, True), bias, name="fc")
    y = op8.softmax(y, -1, name="softmax")
    model = ov.Model([_named(y.output(0), "probabilities")], [p], "demo")
    x = rng.standard_normal((1, 3, 32, 32)).astype(F32)
    return "demo", model, {"image": x}, None


def running_sum():
    """A stateful model: variable ``total`` (ReadValue-6 / Assign-6) adds up its input ``x``
    over the runs of a request; ``sum`` is the new total.  Run statelessly it gives ``x``."""
    from openvino.op.util import Variable, VariableInfo

    p = _param("x", (1, 4))
    info = VariableInfo()
    info.variable_id, info.data_type = "total", ov.Type.f32
    info.data_shape = ov.PartialShape([1, 4])
    total = Variable(info)
    previous = op6.read_value(op1.constant(np.zeros((1, 4), F32), name="zeros"), total,
                              name="previous")
    new = op1.add(previous, p, name="new_total")
    assign = op6.assign(new, total)
    assign.set_friendly_name("keep_total")  # its factory drops the name
    model = ov.Model([_named(new.output(0), "sum")], [assign], [p], "running_sum")
    x = np.arange(4, dtype=F32).reshape(1, 4)
    return "running_sum", model, {"x": x}, None


def examples():
    m = [[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]
    yield maxpool_example(
        1, [[m]],
        [[[[-1, 2, 3, 3], [4, 5, 5, 3], [4, 8, 9, 9], [-7, 8, 9, 9]]]],  # the docs say -6, 5
        [[[[0, 1, 2, 2], [3, 4, 4, 2], [3, 7, 8, 8], [6, 7, 8, 8]]]],
        kernel=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
    )  # fmt: skip
    yield maxpool_example(
        2, [[[-1, 2, 3, 5, -7, 9, 1]]], [[[3, 5, 5, 9, 9]]], [[[2, 3, 3, 5, 5]]],
        kernel=[3], auto_pad="valid",
    )  # fmt: skip
    yield maxpool_example(
        3, [[m]], [[[[-1, 2, 3], [4, 5, 5], [4, 8, 9]]]], [[[[0, 1, 2], [3, 4, 4], [3, 7, 8]]]],
        kernel=[2, 2], auto_pad="same_lower",
    )  # fmt: skip
    yield maxpool_example(
        4, [[m, [[2, -1, 5], [6, -7, 1], [8, 2, -3]]]],
        [[[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]]],
        [[[[4, 4, 2], [7, 8, 8], [7, 8, 8]], [[12, 11, 11], [15, 16, 14], [15, 16, 17]]]],
        kernel=[2, 2], auto_pad="same_upper",
    )  # fmt: skip
    nine = [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]
    yield maxpool_example(
        5, nine, [[[[1, 3], [7, 9]]]], [[[[0, 2], [6, 8]]]], version=14,
        kernel=[2, 2], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
        rounding_type="ceil_torch",
    )  # fmt: skip
    yield maxpool_example(
        6, [[m]], [[[[5, 3], [8, 9]]]], [[[[4, 2], [7, 8]]]],
        kernel=[2, 2], strides=[2, 2], rounding_type="ceil", auto_pad="valid",
    )  # fmt: skip
    yield maxpool_example(
        7, nine, [[[[5, 6, 5], [8, 9, 8], [5, 6, 5]]]], [[[[4, 5, 4], [7, 8, 7], [4, 5, 4]]]],
        kernel=[2, 2], dilations=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
    )  # fmt: skip
    yield maxpool_example(
        8, [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[10, 11, 12], [13, 14, 15], [16, 17, 18]]]],
        [[[[5, 6], [8, 9]], [[14, 15], [17, 18]]]], [[[[4, 5], [7, 8]], [[4, 5], [7, 8]]]],
        kernel=[2, 2], axis=2,
    )  # fmt: skip
    yield avgpool_example()
    yield adaptive_example()
    yield pooling_chain()
    yield demo()
    yield running_sum()


def main() -> int:
    core = ov.Core()
    failures = 0
    for name, model, inputs, expected in examples():
        xml = HERE / f"{name}.xml"
        for result in model.get_results():  # stable names instead of a process-wide counter
            tensor = sorted(result.input_value(0).get_names())[0]
            result.set_friendly_name(f"{tensor}_result")
        ov.save_model(model, xml, compress_to_fp16=name == "demo")
        # Run the saved file, not the in-memory model: its weights may be f16 now.
        compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        result = compiled(inputs)
        got = {next(iter(o.get_names())): result[o] for o in compiled.outputs}
        if expected is not None:
            for key, want in expected.items():
                if not np.array_equal(got[key], want):
                    print(f"{name}: OpenVINO gives {key}={got[key].tolist()}, "
                          f"the script says {want.tolist()}", file=sys.stderr)  # fmt: skip
                    failures += 1
        np.savez(HERE / f"{name}.inputs.npz", **inputs)
        np.savez(HERE / f"{name}.expected.npz", **(expected if expected is not None else got))
        print(f"wrote {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
