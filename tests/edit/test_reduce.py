"""irrun reduce: models with an injected fault shrink to the faulty layer.

The faults are injected the way a wrong plugin shows one: the copy of each candidate
that OpenVINO runs has one layer changed (a Clamp's max, an Add made a Subtract, an
MVN's eps) while irrun runs the candidate as written; or a ``--check`` script fails when
a given op type or layer is present.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from irrun import load
from irrun.edit.reduce import reduce
from tests.edit.support import CPU, ROOT, TORCH, model_inputs, ov_values
from tests.support.cli import run_cli
from tests.support.docs import assert_same_output, page_commands


def _ov_run(core, xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ovm = core.read_model(str(xml), str(xml.with_suffix(".bin")))
    arrays = []
    for param in ovm.get_parameters():
        keys = [param.get_friendly_name(), *param.output(0).get_names()]
        arrays.append(next(feeds[k] for k in keys if k in feeds))
    ovm.reshape({i: list(a.shape) for i, a in enumerate(arrays)})
    compiled = core.compile_model(ovm, "CPU", CPU)
    got = compiled(arrays)
    return [np.array(got[out]) for out in compiled.outputs]


def faulty_openvino(core, layer: str, change: dict[str, str]):
    """A check comparing irrun with OpenVINO, where OpenVINO runs each candidate with
    ``layer`` changed (``change``: the layer's attribute or ``data`` attribute -> value)."""
    calls = []

    def check(xml: Path, npz: Path) -> bool:
        calls.append(xml)
        root = etree.parse(str(xml)).getroot()
        found = root.find(f".//layers/layer[@name='{layer}']")
        ov_xml = xml
        if found is not None:
            for key, value in change.items():
                (found if key == "type" else found.find("data")).set(key, value)
            ov_xml = xml.with_name(xml.stem + ".faulty.xml")
            ov_xml.write_bytes(etree.tostring(root))
            ov_xml.with_suffix(".bin").write_bytes(xml.with_suffix(".bin").read_bytes())
        with np.load(npz) as f:
            feeds = {k: f[k] for k in f.files}
        ours = load(xml, reference=True).run(feeds)
        theirs = _ov_run(core, ov_xml, feeds)
        return not all(np.allclose(a, b, rtol=1e-4, atol=1e-4)
                       for a, b in zip(ours.values(), theirs, strict=True))  # fmt: skip

    check.calls = calls
    return check


FAULTS = [
    (TORCH / "mobilenet_block.xml", "aten::relu6/Clamp", {"max": "0.05"}),
    (TORCH / "resnet_stem.xml", "__module.c2/aten::_convolution/Add", {"type": "Subtract"}),
    (TORCH / "attention.xml", "__module.ln/aten::layer_norm/MVN", {"eps": "0.5"}),
    (TORCH / "convnext_block.xml", "Multiply_22046", {"type": "Add"}),
]


@pytest.mark.parametrize("mode", ["bisect", "linear"])
@pytest.mark.parametrize(("xml", "layer", "change"), FAULTS, ids=[f[0].stem for f in FAULTS])
def test_reduce_finds_the_layer_openvino_runs_differently(core, tmp_path, xml, layer, change, mode):
    model = load(xml)
    check = faulty_openvino(core, layer, change)
    steps = []
    found = reduce(model, check, model_inputs(xml), mode=mode, progress=steps.append)
    assert found is not None
    names = [name for name, _ in found.layers]
    assert layer in names
    assert len(names) <= 2, names
    assert steps[0].bad  # the full model fails first
    assert len(steps) == len(found.steps) == len(check.calls)
    xml_out, bin_out, npz = found.save(tmp_path / "repro.xml")
    assert [p.name for p in (xml_out, bin_out, npz)] == ["repro.xml", "repro.bin",
                                                         "repro.inputs.npz"]  # fmt: skip
    assert check(xml_out, npz)  # the reproducer fails the check on its own
    assert sorted(np.load(npz).files) == sorted(s.name for s in load(xml_out).inputs)


def test_a_model_without_the_fault_is_not_reduced(core):
    xml = TORCH / "resnet_stem.xml"
    check = faulty_openvino(core, "no such layer", {"type": "Subtract"})
    assert reduce(load(xml), check, model_inputs(xml)) is None
    assert len(check.calls) == 1  # the full model only


HAS = """import sys
text = open(sys.argv[1]).read()
sys.exit(1 if {what!r} in text else 0)
"""


@pytest.mark.parametrize(
    ("xml", "what", "shape", "expected"),
    [
        (TORCH / "attention.xml", 'type="SoftMax"', "[2,5,8]", ("aten::softmax/Softmax", "SoftMax")),
        (TORCH / "mobilenet_block.xml", 'name="aten::hardsigmoid/HSigmoid"', "[2,3,32,32]",
         ("aten::hardsigmoid/HSigmoid", "HSigmoid")),
        (TORCH / "unet.xml", 'type="Concat"', "[1,3,16,16]", None),
    ],
)  # fmt: skip
def test_the_command_with_a_check_script(core, capsys, tmp_path, xml, what, shape, expected):
    script = tmp_path / "check.py"
    script.write_text(HAS.format(what=what))
    out = tmp_path / "out" / "repro.xml"
    out.parent.mkdir()
    rc, stdout, stderr = run_cli(
        capsys, "reduce", str(xml), "--shape", shape, "-o", str(out),
        "--check", f"{sys.executable} {script} {{model}}",
    )  # fmt: skip
    assert rc == 0, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[0].startswith("irrun reduce:  1. the full model (")
    assert lines[0].endswith(" layers): fails")
    assert lines[-2].startswith("irrun reduce: tried ")
    assert lines[-1] == (f"irrun: wrote the reproducer to {out}, {out.with_suffix('.bin')} and "
                         f"{out.with_name('repro.inputs.npz')}")  # fmt: skip
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "repro.bin",
        "repro.inputs.npz",
        "repro.xml",
    ]
    ovm = core.read_model(str(out))
    ops = [(op.get_friendly_name(), op.get_type_name()) for op in ovm.get_ordered_ops()
           if op.get_type_name() not in ("Parameter", "Constant", "Result")]  # fmt: skip
    if expected is not None:
        assert ops == [(expected[0], "Softmax" if expected[1] == "SoftMax" else expected[1])]
    else:
        assert [t for _, t in ops] == ["Concat"]
    with np.load(out.with_name("repro.inputs.npz")) as f:  # the inputs, by tensor name
        assert sorted(f.files) == sorted(s.name for s in load(out).inputs)
        names = {n for p in ovm.get_parameters() for n in p.output(0).get_names()}
        assert set(f.files) <= names


def test_the_command_writes_nothing_when_the_model_passes(capsys, tmp_path):
    out = tmp_path / "repro.xml"
    rc, stdout, stderr = run_cli(capsys, "reduce", str(TORCH / "resnet_stem.xml"), "--shape",
                                 "[1,3,64,64]", "-q", "-o", str(out))  # fmt: skip
    assert (rc, stdout) == (1, "")
    assert stderr.startswith(f"irrun reduce: {TORCH / 'resnet_stem.xml'} passes the check: "
                             "nothing to reduce, nothing written (")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_the_command_with_a_passing_check_script(capsys, tmp_path):
    out = tmp_path / "repro.xml"
    rc, _, stderr = run_cli(capsys, "reduce", str(TORCH / "resnet_stem.xml"), "--shape",
                            "[1,3,64,64]", "-o", str(out), "--check",
                            f"{sys.executable} -c pass")  # fmt: skip
    assert rc == 1
    assert stderr.splitlines()[0] == "irrun reduce:  1. the full model (11 layers): passes"
    assert list(tmp_path.iterdir()) == []


def test_the_worked_example_of_docs_reduce_md(core, capsys, monkeypatch, tmp_path):
    page = (ROOT / "docs" / "reduce.md").read_text()
    make_model, has_op = re.findall(r"```python\n(?!>>>)(.*?)```", page, re.S)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    (tmp_path / "has_op.py").write_text(has_op)
    monkeypatch.chdir(tmp_path)
    exec(compile(make_model, "docs/reduce.md", "exec"), {})
    commands = page_commands(page)
    assert [c.split()[2] for c, _ in commands] == [
        "lrn_bias.xml",
        "tests/torch_models/attention.xml",
    ]
    for command, shown in commands:
        args = shlex.split(command)[1:]
        args = [a.replace("python ", f"{sys.executable} ", 1) for a in args]
        rc, stdout, stderr = run_cli(capsys, *args)
        assert (rc, stdout) == (0, "")
        assert_same_output(stderr.rstrip("\n"), shown)
    # The reproducer shows the difference on its own, in irrun compare, and OpenVINO reads it.
    rc, stdout, _ = run_cli(capsys, "compare", "repro.xml", "--ref-backend", "openvino",
                            "--input", "repro.inputs.npz")  # fmt: skip
    assert rc == 1
    assert stdout.startswith("FAILED | norm1 | layer 5 'norm1' (LRN-v0) | [1, 8, 16, 16] float32 |")
    ovm = core.read_model("repro.xml")
    assert [op.get_type_name() for op in ovm.get_ordered_ops()] == [
        "Parameter", "Constant", "LRN", "Result"]  # fmt: skip
    assert [p.get_friendly_name() for p in ovm.get_parameters()] == ["relu1"]


def test_the_extract_example_of_docs_cli_md(capsys, monkeypatch, tmp_path):
    (tmp_path / "models").symlink_to(ROOT / "models")
    monkeypatch.chdir(tmp_path)
    [(command, shown)] = [(c, s) for c, s in page_commands((ROOT / "docs" / "cli.md").read_text())
                          if c.startswith("irrun extract")]  # fmt: skip
    rc, stdout, stderr = run_cli(capsys, *shlex.split(command)[1:])
    assert (rc, stdout, stderr.rstrip("\n")) == (0, "", shown)
    sub = load("sub.xml")
    x = np.arange(192, dtype=np.float32).reshape(1, 3, 8, 8)
    # avg_pool: 2x2 windows of stride 2, by hand: the mean of x[.., 2i:2i+2, 2j:2j+2]
    want = x.reshape(1, 3, 4, 2, 4, 2).mean(axis=(3, 5))
    np.testing.assert_array_equal(sub.run({"stem_pool:1": x})["avg_pool"], want)


CHECK_INPUTS = """import sys
import numpy as np
from lxml import etree
xml, npz, log = sys.argv[1:]
root = etree.parse(xml)
params = [layer.find("output/port").get("names", "").split(",")[0]
          for layer in root.iter("layer") if layer.get("type") == "Parameter"]
with np.load(npz) as f:
    shapes = {k: f[k].shape for k in f.files}
with open(log, "a") as out:
    out.write(f"{sorted(shapes) == sorted(params)}\\n")
sys.exit("MVN" in {layer.get("type") for layer in root.iter("layer")})
"""


def test_a_check_command_gets_the_inputs_of_each_candidate(core, capsys, tmp_path):
    script, log = tmp_path / "check.py", tmp_path / "log.txt"
    script.write_text(CHECK_INPUTS)
    rc, _, stderr = run_cli(
        capsys, "reduce", str(TORCH / "convnext_block.xml"), "--shape", "[2,8,16,16]", "-q",
        "-o", str(tmp_path / "repro.xml"),
        "--check", f"{sys.executable} {script} {{model}} {{inputs}} {log}",
    )  # fmt: skip
    assert rc == 0, stderr
    calls = log.read_text().split()
    assert len(calls) == int(stderr.split("tried ")[1].split()[0])
    assert set(calls) == {"True"}
    repro = load(tmp_path / "repro.xml")
    assert [ref.type for ref, _, _ in repro.layers()] == ["Parameter", "Const", "MVN", "Result"]
    # The MVN's input holds what OpenVINO's full model computes there, on the same inputs.
    full = load(TORCH / "convnext_block.xml")
    full.reshape("[2,8,16,16]")
    tensor = "aten::permute/Transpose"
    want = ov_values(core, TORCH / "convnext_block.xml", full.random_inputs(0), [tensor], full)
    with np.load(tmp_path / "repro.inputs.npz") as f:
        assert f.files == [repro.inputs[0].name] == [full.tensor_names[_port(full, tensor)]]
        np.testing.assert_allclose(f[f.files[0]], want[tensor], rtol=1e-5, atol=1e-5)


def _port(model, layer_name):
    lid = next(lid for lid, layer in model._graph.layers.items() if layer.name == layer_name)
    return (lid, model._graph.layers[lid].outputs[0].id)


@pytest.mark.parametrize(
    ("args", "rc", "message"),
    [
        (["-o", "{tmp}/repro.txt"], 2, "irrun: error: -o {tmp}/repro.txt: expected a file name "
         "ending in .xml"),
        (["-o", "{tmp}/no/repro.xml"], 1, "irrun: error: {tmp}/no/repro.xml: the output's "
         "directory does not exist"),
        (["--check", "", "-o", "{tmp}/repro.xml"], 2, "irrun: error: --check: an empty command"),
        (["--check", "true {model}", "--atol", "1", "-o", "{tmp}/repro.xml"], 2,
         "irrun: error: --atol is the default check's: a --check command has its own"),
        (["--check", "{tmp}/no-such-program {model}", "-o", "{tmp}/repro.xml"], 1,
         "irrun: error: --check: cannot run {tmp}/no-such-program: No such file or directory"),
        (["--mode", "binary"], 2, "irrun reduce: error: argument --mode: invalid choice: 'binary'"),
    ],
)  # fmt: skip
def test_the_command_refuses_bad_arguments_and_writes_nothing(capsys, tmp_path, args, rc, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    got, stdout, stderr = run_cli(capsys, "reduce", str(TORCH / "resnet_stem.xml"), "--shape",
                                  "[1,3,64,64]", "-q", *args)  # fmt: skip
    assert (got, stdout) == (rc, "")
    assert stderr.startswith(message.replace("{tmp}", str(tmp_path))), stderr
    assert list(tmp_path.iterdir()) == []
