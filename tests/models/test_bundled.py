"""Every bundled model gives its expected outputs exactly (values, indices and dtypes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import irrun

MODELS = Path(__file__).resolve().parents[2] / "models"
EXAMPLES = sorted(p.stem for p in MODELS.glob("*.xml"))
CNNS = {"demo"}  # expected values are OpenVINO's CPU results, not hand-made


def test_all_spec_examples_are_bundled():
    expected = {f"maxpool_example{i}" for i in range(1, 9)} | {
        "avgpool_example", "adaptive_example", "pooling_chain", "demo",
    }  # fmt: skip
    assert expected <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_bundled_model_matches_expected(name):
    model = irrun.load(MODELS / f"{name}.xml")
    with np.load(MODELS / f"{name}.inputs.npz") as f:
        feeds = dict(f)
    with np.load(MODELS / f"{name}.expected.npz") as f:
        expected = dict(f)
    outputs = model.run(feeds)
    assert set(outputs) == set(expected)
    for key, want in expected.items():
        got = outputs[key]
        assert got.dtype == want.dtype, key
        if name in CNNS:
            # Convolutions sum in another order than oneDNN; pooling is exact.
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, err_msg=key)


@pytest.mark.parametrize("name", EXAMPLES)
def test_bundled_model_is_valid(name):
    found = irrun.validate(MODELS / f"{name}.xml")
    # The only finding allowed: an output nothing reads (pooling_chain's unused MaxPool
    # indices), which converters write all the time: info, not a warning.
    assert [(d.level, d.code) for d in found if d.code != "unused-output"] == []
    assert all(d.level == "info" for d in found)


def test_maxpool_example1_corrects_the_documented_value():
    # The docs print -6 (index 5) at row 1, column 3; the window covers rows 0-1 of
    # column 2 plus padding, whose maximum is 3 at index 2.
    out = irrun.load(MODELS / "maxpool_example1.xml").run(
        {"input": np.array([[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]]], np.float32)}
    )
    assert out["values"][0, 0, 1, 3] == 3
    assert out["indices"][0, 0, 1, 3] == 2
