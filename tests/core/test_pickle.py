"""A Model pickles by path: small, reloaded on the other side, reshapes kept, across processes."""

from __future__ import annotations

import pickle
import shutil
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pytest

import irrun

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def demo_input() -> np.ndarray:
    with np.load(MODELS / "demo.inputs.npz") as f:
        return f["image"]


def test_a_pickle_is_small_and_holds_no_weights():
    model = irrun.load(MODELS / "demo.xml")
    data = pickle.dumps(model)
    assert len(data) < 1024
    weights = (MODELS / "demo.bin").read_bytes()
    assert len(weights) > 10 * len(data)
    assert weights[:64] not in data


def test_a_model_round_trips_and_runs():
    model = irrun.load(MODELS / "demo.xml")
    copy = pickle.loads(pickle.dumps(model))
    assert (copy.path, copy.inputs, copy.outputs) == (model.path, model.inputs, model.outputs)
    x = demo_input()
    np.testing.assert_array_equal(copy.run(x)["probabilities"], model.run(x)["probabilities"])


def test_reshape_survives_pickling():
    model = irrun.load(MODELS / "pooling_chain.xml")
    model.reshape("image[4,3,32,32]")
    copy = pickle.loads(pickle.dumps(model))
    assert copy.inputs[0].shape == (4, 3, 32, 32)
    assert copy.outputs[0].shape == (4, 3, 2, 2)
    x = np.random.default_rng(0).standard_normal((4, 3, 32, 32)).astype(np.float32)
    for key, value in model.run(x).items():
        np.testing.assert_array_equal(copy.run(x)[key], value)
    with pytest.raises(irrun.IrrunError, match=r"has shape \[1,3,16,16\], expected \[4,3,32,32\]"):
        copy.run(np.zeros((1, 3, 16, 16), np.float32))


def test_reshape_to_dynamic_dims_survives_pickling():
    model = irrun.load(MODELS / "pooling_chain.xml")
    model.reshape({"image": ["1..8", 3, "?", -1]})
    copy = pickle.loads(pickle.dumps(model))
    assert str(copy.inputs[0]) == str(model.inputs[0])
    x = np.arange(2 * 3 * 8 * 8, dtype=np.float32).reshape(2, 3, 8, 8)
    np.testing.assert_array_equal(copy.run(x)["pooled"], model.run(x)["pooled"])


def test_reshape_of_an_input_named_like_the_shape_syntax(tmp_path):
    # Pickles carry shapes by layer id: the text "in[0],x[2,3,32,32]" would not parse back.
    text = (MODELS / "pooling_chain.xml").read_text()
    (tmp_path / "odd.xml").write_text(text.replace('"image"', '"in[0],x"'))
    shutil.copy(MODELS / "pooling_chain.bin", tmp_path / "odd.bin")
    model = irrun.load(tmp_path / "odd.xml")
    model.reshape({model.inputs[0].name: [2, 3, 32, 32]})
    copy = pickle.loads(pickle.dumps(model))
    assert copy.inputs[0].shape == (2, 3, 32, 32)


def test_unpickled_in_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    model = irrun.load("models/demo.xml", weights="models/demo.bin")
    data = pickle.dumps(model)
    assert pickle.loads(data).path == Path("models/demo.xml")  # named as given, where it works
    monkeypatch.chdir(tmp_path)
    copy = pickle.loads(data)
    assert copy.path == MODELS / "demo.xml"  # else by its absolute path
    assert copy.weights.path == MODELS / "demo.bin"
    x = demo_input()
    np.testing.assert_array_equal(copy.run(x)["probabilities"], model.run(x)["probabilities"])


def _in_worker(model: irrun.Model, x: np.ndarray) -> tuple[str, bool, dict[str, np.ndarray]]:
    outputs = model.run(x)
    return irrun.__file__, isinstance(model.weights._bytes(), np.memmap), outputs


def test_a_model_runs_in_a_spawned_process():
    model = irrun.load(MODELS / "demo.xml")
    model.reshape({"image": [1, 3, 32, 32]})
    x = demo_input()
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        where, mapped, outputs = pool.submit(_in_worker, model, x).result(timeout=120)
    assert Path(where).resolve() == Path(irrun.__file__).resolve()  # this checkout's irrun
    assert mapped  # the worker mapped the .bin itself
    np.testing.assert_array_equal(outputs["probabilities"], model.run(x)["probabilities"])
