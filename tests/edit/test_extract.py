"""irrun extract: subgraphs of real models, run by OpenVINO and by irrun on the values
OpenVINO's full model computes at the cut tensors, against what it computes at the
outputs."""

from __future__ import annotations

import numpy as np
import pytest

from irrun import UsageError, load
from irrun.edit.extract import extract
from irrun.ir.writer import write_ir
from tests.edit.support import CORPUS, ROOT, SEQUENCE, TORCH, model_inputs, ov_values
from tests.support.cli import run_cli

# (model, cut tensors, outputs, the layer types the subgraph has and no other)
CASES = [
    (TORCH / "resnet_stem.xml", ["aten::relu/Relu"], ["aten::add/Add"],
     {"MaxPool", "Convolution", "Add", "ReLU"}),
    # A skip connection cut at one end, and an output of a layer with two outputs.
    (TORCH / "resnet_stem.xml", ["aten::max_pool2d/MaxPool"], ["aten::relu/Relu_1"],
     {"Convolution", "Add", "ReLU"}),
    # Two cuts; the output needs nothing else of the model.
    (TORCH / "attention.xml", ["__module.q/aten::linear/Add", "__module.k/aten::linear/Add"],
     ["aten::softmax/Softmax"], {"MatMul", "Divide", "SoftMax"}),
    # One cut, and the original input x, which the other branch still needs.
    (TORCH / "attention.xml", ["aten::softmax/Softmax"], ["aten::matmul/MatMul_1"],
     {"MatMul", "Add", "MVN"}),
    # The second output of a VariadicSplit, named LAYER:PORT, and a shape subgraph kept.
    (TORCH / "attention.xml", ["__module.ln/aten::layer_norm/MVN"],
     ["prim::ListUnpack/VariadicSplit:4"],
     {"ShapeOf", "Gather", "Divide", "Mod", "Greater", "Convert", "Add", "Concat",
      "VariadicSplit"}),
    # The squeeze-excite branch starts before the cut: the original input stays.
    (TORCH / "mobilenet_block.xml", ["aten::relu6/Clamp"], ["aten::mul/Multiply", "Result_3543"],
     {"HSwish", "ReduceMean", "MatMul", "Add", "ReLU", "HSigmoid", "Unsqueeze", "Multiply", "Convolution",
      "AdaptiveAvgPool", "Reshape", "SoftMax"}),
    # Between two Loops: the second kept whole, with its body, and the zeros its state
    # starts from, which the model's input's shape sizes.
    (SEQUENCE / "keras_rnn.xml", ["sequential_1/lstm_1/while:8"], ["sequential_1/gru_1/while:7"],
     {"Loop", "ShapeOf", "Gather", "Concat", "Broadcast"}),
]  # fmt: skip


@pytest.mark.parametrize(("xml", "cuts", "outputs", "types"), CASES,
                         ids=[f"{c[0].stem}-{i}" for i, c in enumerate(CASES)])  # fmt: skip
def test_extracted_subgraph_computes_what_the_full_model_does(core, tmp_path, xml, cuts,
                                                              outputs, types):  # fmt: skip
    m = load(xml)
    feeds = model_inputs(xml)
    expected = ov_values(core, xml, feeds, cuts + outputs, m)
    sub = tmp_path / "sub.xml"
    write_ir(extract(m, cuts, outputs), sub, m.weights)

    small = load(sub)
    kept = {t for t, _, _ in _types(small)} - {"Parameter", "Const", "Result"}
    assert kept == types
    sub_feeds = {small.input_spec(name).name: expected[name] for name in cuts}
    for key, value in feeds.items():  # the original inputs the output still needs
        if small.input_spec(key) is not None:
            sub_feeds[small.input_spec(key).name] = value
    assert len(small.inputs) == len(sub_feeds)
    assert len(small.outputs) == len(outputs)
    ovm = core.read_model(str(sub))
    arrays = [sub_feeds[small.input_spec(p.get_friendly_name()).name]
              for p in ovm.get_parameters()]  # fmt: skip
    # The CPU plugin's MoveEltwiseUpThroughDataMovScalar fails on the attention cut's
    # dynamic dims: the inputs' shapes, as irrun compare gives it.
    ovm.reshape({i: list(a.shape) for i, a in enumerate(arrays)})
    compiled = core.compile_model(ovm, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled(arrays)
    ours = small.run(sub_feeds, outputs=outputs)
    for i, name in enumerate(outputs):
        np.testing.assert_allclose(got[compiled.outputs[i]], expected[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-4, atol=1e-5)


def _types(model):
    return [(ref.type, ref.name, line) for ref, line, _ in model.layers()]


def test_bert_middle(core, tmp_path):
    xml = CORPUS / "bert.xml"
    m = load(xml)
    names = m.tensor_names
    order = [lid for lid in m._graph.order if m._graph.layers[lid].type not in
             ("Parameter", "Const", "Result")]  # fmt: skip
    # The tensors of the first MVN (a LayerNorm) and of the last Add before the second one.
    mvns = [lid for lid in order if m._graph.layers[lid].type == "MVN"]
    cut = names[(mvns[0], m._graph.layers[mvns[0]].outputs[0].id)]
    out = names[(mvns[2], m._graph.layers[mvns[2]].outputs[0].id)]
    feeds = model_inputs(xml)
    expected = ov_values(core, xml, feeds, [cut, out], m)
    sub = tmp_path / "bert_block.xml"
    write_ir(extract(m, [cut], [out]), sub, m.weights)
    small = load(sub)
    sub_feeds = {small.input_spec(cut).name: expected[cut]}
    for key, value in feeds.items():  # the original inputs the output still needs
        if small.input_spec(key) is not None:
            sub_feeds[small.input_spec(key).name] = value
    ovm = core.read_model(str(sub))
    arrays = [sub_feeds[small.input_spec(p.get_friendly_name()).name]
              for p in ovm.get_parameters()]  # fmt: skip
    ovm.reshape({i: list(a.shape) for i, a in enumerate(arrays)})  # as above, for the plugin
    compiled = core.compile_model(ovm, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled(arrays)
    np.testing.assert_allclose(got[compiled.outputs[0]], expected[out], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(small.run(sub_feeds)[out], expected[out], rtol=1e-4, atol=1e-4)
    assert len(small.layers()) < len(m.layers())


@pytest.mark.parametrize(
    ("inputs", "outputs", "message"),
    [
        ([], ["aten::relu/Relo"], "output 'aten::relu/Relo': no tensor or layer of that name in "
         "resnet_stem.xml (did you mean 'aten::relu/Relu', 'aten::relu/Relu_1', 'aten::relu/Relu:1'?)"),
        (["nothing"], ["aten::add/Add"], "input 'nothing': no tensor or layer"),
        (["aten::relu/Relu_1"], ["aten::relu/Relu"], "input 'aten::relu/Relu_1' is not needed by "
         "the outputs ('aten::relu/Relu')"),
        (["aten::relu/Relu"], ["aten::relu/Relu"], "'aten::relu/Relu' is both an input and an "
         "output"),
        (["x"], [], "no outputs given"),
    ],
)  # fmt: skip
def test_bad_names_are_usage_errors(inputs, outputs, message):
    m = load(TORCH / "resnet_stem.xml")
    with pytest.raises(UsageError) as info:
        extract(m, inputs, outputs)
    assert str(info.value).startswith(message)


def test_the_command_writes_the_subgraph_and_says_what_it_kept(core, capsys, tmp_path):
    out = tmp_path / "sub.xml"
    rc, stdout, stderr = run_cli(
        capsys, "extract", str(TORCH / "resnet_stem.xml"), "--inputs", "aten::relu/Relu",
        "--outputs", "aten::add/Add", "-o", str(out),
    )  # fmt: skip
    assert (rc, stdout) == (0, "")
    assert stderr == ("irrun: wrote the subgraph (5 layers; inputs aten::relu/Relu; outputs "
                      f"aten::add/Add) to {out} and {out.with_suffix('.bin').name}\n")  # fmt: skip
    ovm = core.read_model(str(out))
    assert [p.get_friendly_name() for p in ovm.get_parameters()] == ["aten::relu/Relu"]
    assert ovm.outputs[0].get_names() == {"26", "input.11"}  # the tensor's names, kept


@pytest.mark.parametrize(
    ("args", "rc", "message"),
    [
        (["--outputs", "nope", "-o", "{tmp}/s.xml"], 2, "irrun: error: --outputs 'nope': no tensor"),
        (["--outputs", "aten::add/Add", "-o", "{tmp}/s.txt"], 2, "irrun: error: -o {tmp}/s.txt: "
         "expected an .xml file name (its .bin goes beside it)"),
        (["--outputs", "aten::add/Add", "-o", "{tmp}/no/s.xml"], 1, "irrun: error: {tmp}/no/s.xml: "
         "the output's directory does not exist"),
        (["--outputs", "a,,b", "-o", "{tmp}/s.xml"], 2, "irrun extract: error: argument --outputs: "
         "an empty name in 'a,,b'"),
    ],
)  # fmt: skip
def test_the_command_refuses_bad_arguments_and_writes_nothing(capsys, tmp_path, args, rc, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    got, _, stderr = run_cli(capsys, "extract", str(TORCH / "resnet_stem.xml"), *args)
    assert got == rc
    assert stderr.startswith(message.replace("{tmp}", str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_a_stateful_subgraph_keeps_its_variable(core, tmp_path):
    m = load(ROOT / "models" / "running_sum.xml")
    write_ir(extract(m, [], ["new_total"]), tmp_path / "sum.xml", m.weights)
    write_ir(extract(m, ["previous"], ["new_total"]), tmp_path / "add.xml", m.weights)
    x = np.array([[1, 2, 3, 4]], np.float32)
    for name, variables, runs in [("sum", ["total"], [x, 2 * x, 3 * x]), ("add", [], [x, x, x])]:
        ovm = core.read_model(str(tmp_path / f"{name}.xml"))
        assert [v.get_info().variable_id for v in ovm.get_variables()] == variables
        request = core.compile_model(ovm, "CPU").create_infer_request()
        feeds = {"x": x, "previous": np.zeros_like(x)} if name == "add" else {"x": x}
        got = [np.array(request.infer(feeds)[0]) for _ in runs]
        np.testing.assert_array_equal(got, runs)  # the full model's sums, by hand
        ours = load(tmp_path / f"{name}.xml")
        assert [v.name for v in ours.variables] == variables
        mine = ours.create_request()
        np.testing.assert_array_equal([mine.run(feeds)[0] for _ in runs], runs)
