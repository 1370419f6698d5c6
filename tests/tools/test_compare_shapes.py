"""A converted model with dynamic inputs (``[?,3,?,?]``, as ``ov.convert_model`` gives them)
against OpenVINO: irrun checks the shapes it will feed by its own shape propagation before
OpenVINO is asked, says which ``--shape`` to give, and takes ``--shape``; what OpenVINO still
refuses is reported as OpenVINO's refusal, not as a bug in irrun.

The models are built here with OpenVINO's opset API; the least fitting sizes are worked out by
hand from the layers' windows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli

import irrun
from irrun.errors import IrrunError
from irrun.tools.compare import compare
from irrun.tools.compare_references import openvino_reference

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")


def conv_net(tmp_path: Path) -> Path:
    """[?,3,?,?] -> 3x3 convolution -> 2x2 max pool of stride 1 -> ReLU: each takes 2 off
    H and W, so the least image of a power-of-two size is 4x4 (3x3 is the least of all)."""
    x = ops.parameter(ov.PartialShape([-1, 3, -1, -1]), np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv = ops.convolution(x, ops.constant(w), [1, 1], [0, 0], [0, 0], [1, 1])
    pool = ops.max_pool(conv, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2])
    path = tmp_path / "net.xml"
    ov.save_model(ov.Model([ops.relu(pool.output(0))], [x], "net"), path,
                  compress_to_fp16=False)  # fmt: skip
    return path


def test_made_up_shapes_are_refused_with_the_shape_to_give(tmp_path):
    xml = conv_net(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "irrun", "compare", str(xml), "--ref-backend", "openvino"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"irrun: error: {xml}:")
    assert "'Convolution" in line and "internal error" not in line and "Check '" not in line
    assert line.endswith(
        "on random inputs whose unknown dims were made up (x [1,3,1,1] for [?,3,?,?]): give "
        'their shapes, e.g. --shape "x[1,3,4,4]" (the least power of two that fits), or inputs '
        "with --input"
    )
    # The shape it names passes, against OpenVINO.
    done = subprocess.run(
        [sys.executable, "-m", "irrun", "compare", str(xml), "--ref-backend", "openvino",
         "--shape", "x[1,3,4,4]"], capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASSED | ")
    assert "[1, 4, 1, 1] float32" in done.stdout


def test_compare_takes_shape(tmp_path, capsys):
    xml = conv_net(tmp_path)
    rc, out, err = run_cli(capsys, "compare", str(xml), "--ref-backend", "openvino",
                           "--shape", "[2,3,9,7]")  # fmt: skip
    assert rc == 0, out + err
    # 9 - 2 - 1 = 6 and 7 - 2 - 1 = 4
    assert out.startswith("PASSED | ") and "[2, 4, 6, 4] float32" in out.splitlines()[0]


def test_given_inputs_the_model_does_not_fit_are_refused_before_openvino(tmp_path, capsys):
    xml = conv_net(tmp_path)
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 3, 2, 2), np.float32))  # too small for the 3x3 convolution
    rc, out, err = run_cli(capsys, "compare", str(xml), "--ref-backend", "openvino",
                           "--input", str(x))  # fmt: skip
    assert (rc, out) == (1, "")
    assert err.count("\n") == 1
    assert "'Convolution" in err and err.rstrip().endswith(
        "on the inputs' shapes x[1,3,2,2]: give inputs of shapes the model fits"
    )


def test_what_openvino_refuses_is_reported_as_openvinos_refusal(tmp_path):
    # Past irrun's own check (called directly), OpenVINO's reshape fails.
    model = irrun.load(conv_net(tmp_path))
    with pytest.raises(IrrunError) as info:
        openvino_reference(model, {"x": np.ones((1, 3, 1, 1), np.float32)})
    message = str(info.value)
    assert message.startswith(f"{model.path}: OpenVINO refused the inputs' shapes x[1,3,1,1]: ")
    assert "Kernel after dilation" in message and "\n" not in message


def test_the_python_api_checks_random_shapes_too(tmp_path):
    model = irrun.load(conv_net(tmp_path))
    with pytest.raises(IrrunError, match=r'--shape "x\[1,3,4,4\]"'):
        model.random_inputs()
    with pytest.raises(IrrunError, match="random inputs whose unknown dims were made up"):
        compare(model, backend="openvino")


@pytest.mark.parametrize("command", ["run", "compare", "benchmark"])
def test_every_command_that_makes_random_inputs_takes_shape(tmp_path, capsys, command):
    xml = conv_net(tmp_path)
    extra = {"compare": ["--ref-backend", "reference"], "benchmark": ["-niter", "1"]}
    rc, out, err = run_cli(capsys, command, str(xml), "--shape", "x[1,3,6,6]",
                           *extra.get(command, []))  # fmt: skip
    assert rc == 0, out + err
