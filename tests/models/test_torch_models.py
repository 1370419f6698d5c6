"""IR files as OpenVINO's PyTorch frontend writes them run in irrun as in its CPU plugin.

The files in ``tests/torch_models`` (made by ``make_torch_models.py`` there) are
small modules converted with ``ov.convert_model`` and an example input: dynamic
batch and spatial dims, the shape arithmetic of ``view``, ``chunk`` and
``flatten`` left in the graph, and the ops PyTorch's layers become (LayerNorm as
MVN, LeakyReLU as PRelu, ConvTranspose2d, argmax as TopK, ...).  Each runs on
seeded inputs of its example's shape; outputs must agree within 1e-5 of their
scale (convolutions and matrix products sum in another order than oneDNN).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG as CPU

import irrun

ov = pytest.importorskip("openvino")

HERE = Path(__file__).resolve().parents[1] / "torch_models"
SHAPES = json.loads((HERE / "shapes.json").read_text())


def test_every_file_has_a_shape():
    assert sorted(SHAPES) == sorted(p.stem for p in HERE.glob("*.xml"))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_torch_model_matches_openvino(name):
    path = HERE / f"{name}.xml"
    x = np.random.default_rng(len(name)).standard_normal(SHAPES[name]).astype(np.float32)
    model = irrun.load(path)
    assert not all(isinstance(d, int) for d in model.inputs[0].shape), "converted as dynamic"
    got = model.run({model.inputs[0].name: x})
    compiled = ov.Core().compile_model(ov.Core().read_model(path), "CPU", CPU)
    want = [compiled(x)[out] for out in compiled.outputs]
    assert len(got) == len(want)
    for (key, g), w in zip(got.items(), want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, key
        if g.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=key)
        else:
            scale = float(np.max(np.abs(w))) or 1.0
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale, err_msg=key)
