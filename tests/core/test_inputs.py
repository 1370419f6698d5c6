"""Random inputs that fit what each input is, as optimum and benchmark_app make them:
attention masks of ones, position ids 0..n-1 (after a stateless model's past), beam_idx
0..batch-1, token ids within the vocabulary, indices within the data they index.

Vocabulary sizes come from the exports' config.json (transformers' own), index ranges from
the models built here; that the values are right for the model is checked against OpenVINO.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.core.inputs import input_roles

ROOT = Path(__file__).resolve().parents[2]
GPT2 = ROOT / "tests" / "stateful" / "gpt2" / "openvino_model.xml"
GPT2_PAST = ROOT / "tests" / "stateless" / "gpt2_past" / "openvino_model.xml"


def vocab_size(xml: Path) -> int:
    return int(json.loads((xml.parent / "config.json").read_text())["vocab_size"])


def test_an_llm_gets_ones_positions_beams_and_ids_in_the_vocabulary():
    model = irrun.load(GPT2)
    feeds = model.random_inputs(seed=0)
    assert {k: v.shape for k, v in feeds.items()} == {
        "input_ids": (1, 1), "attention_mask": (1, 1), "position_ids": (1, 1), "beam_idx": (1,)
    }  # fmt: skip
    assert feeds["attention_mask"].tolist() == [[1]]
    assert feeds["position_ids"].tolist() == [[0]]
    assert feeds["beam_idx"].tolist() == [0] and feeds["beam_idx"].dtype == np.int32
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < vocab_size(GPT2)


def test_the_other_inputs_follow_the_token_ids_shape():
    model = irrun.load(GPT2)
    model.reshape("input_ids[2,5]")
    feeds = model.random_inputs(seed=3)
    assert feeds["attention_mask"].tolist() == [[1] * 5] * 2
    assert feeds["position_ids"].tolist() == [[0, 1, 2, 3, 4]] * 2
    assert feeds["beam_idx"].tolist() == [0, 1]
    ids = feeds["input_ids"]
    assert ids.shape == (2, 5) and ids.min() >= 0 and ids.max() < vocab_size(GPT2)
    assert len(set(ids.ravel().tolist())) > 1  # drawn, not a constant


def test_a_stateless_models_positions_continue_after_its_past():
    model = irrun.load(GPT2_PAST)
    feeds = model.random_inputs(seed=0)
    # past_key_values.* [B, H, past, D] with past made up as 1: the mask covers past + 1.
    assert feeds["past_key_values.0.key"].shape == (1, 4, 1, 8)
    assert feeds["attention_mask"].tolist() == [[1, 1]]
    assert feeds["position_ids"].tolist() == [[1]]
    assert feeds["input_ids"].max() < vocab_size(GPT2_PAST)


def test_an_index_input_stays_within_the_axis_it_gathers(tmp_path):
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    table = np.arange(7 * 3, dtype=np.float32).reshape(7, 3)
    rows = ops.parameter(ov.PartialShape([-1, 50]), np.int64, name="rows")
    cols = ops.parameter(ov.PartialShape([40]), np.int32, name="cols")
    other = ops.parameter(ov.PartialShape([6]), np.int64, name="other")
    by_row = ops.gather(ops.constant(table), ops.convert(rows, "i32"), 0)  # 7 rows
    by_col = ops.gather(ops.constant(table), cols, 1)  # 3 columns
    path = tmp_path / "gathers.xml"
    outs = [by_row, by_col, ops.add(other, other)]
    ov.save_model(ov.Model(outs, [rows, cols, other], "gathers"), path)
    model = irrun.load(path)
    roles = input_roles(model._graph, model._nodes, model._infos)
    assert sorted((r.kind, r.high) for r in roles.values()) == [("ids", 3), ("ids", 7)]
    feeds = model.random_inputs(seed=0)
    assert feeds["rows"].min() >= 0 and feeds["rows"].max() == 6  # 50 draws of 7: all seen
    assert feeds["cols"].min() == 0 and feeds["cols"].max() == 2
    assert feeds["other"].min() < 0  # not an index: the usual [-10, 10]
    compiled = ov.Core().compile_model(str(path), "CPU")
    want = compiled(feeds)
    got = model.run(feeds)
    for i, name in enumerate(got):
        np.testing.assert_array_equal(got[name], want[i])


def test_compare_of_a_stateful_llm_with_openvino_passes_on_random_inputs():
    # The case: with beam_idx [-5] and attention_mask [[3]] it failed by 6.3e-4.
    pytest.importorskip("openvino")
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "irrun", "compare", str(GPT2), "--ref-backend", "openvino"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASSED | logits | ")
    assert (
        "note: the model asks OpenVINO for a KV cache in f16 (its runtime_options): OpenVINO "
        "ran with KV_CACHE_PRECISION f32, as irrun keeps the cache"
    ) in done.stdout


def test_inputs_after_a_cache_of_some_length_continue_its_positions():
    # As optimum feeds a stateful model whose cache holds 3 tokens: mask over 3 + S.
    from irrun.core.inputs import random_inputs

    model = irrun.load(GPT2)
    model.reshape("input_ids[1,2]")
    given = [(s.name, model._nodes[model._input_ids[s.name]], s.shape) for s in model.inputs]
    graph = (model._graph, model._nodes, model._infos)
    feeds = random_inputs(given, 0, None, model.path, lambda shapes: None, graph, past=3)
    assert feeds["attention_mask"].tolist() == [[1, 1, 1, 1, 1]]
    assert feeds["position_ids"].tolist() == [[3, 4]]
