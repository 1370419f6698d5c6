"""Inputs that each model under tests/ and models/ runs on: its own where the files
beside it keep them, else made to the shapes its tests use."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1]

# Tokens of a prompt of four, for the language models (their inputs are named alike).
_LLM = {
    "input_ids": np.array([[1, 2, 3, 4]], np.int64),
    "attention_mask": np.ones((1, 4), np.int64),
    "position_ids": np.arange(4, dtype=np.int64)[None],
    "beam_idx": np.zeros(1, np.int32),
}


def model_inputs(xml: Path, ports: list[tuple[set[str], np.dtype]]) -> list[np.ndarray]:
    """Inputs for ``xml`` in the order of its Parameters, given as (tensor names, dtype)
    pairs (as OpenVINO's ``read_model`` lists them); feed them by position."""
    stem, folder = xml.stem, xml.parent
    rng = np.random.default_rng(len(stem))
    saved = folder / f"{stem}.inputs.npz"
    if saved.exists():
        with np.load(saved) as f:
            by_name = dict(f)
        return [next(by_name[n] for n in sorted(names) if n in by_name) for names, _ in ports]
    if folder.name == "torch_models":
        shape = json.loads((folder / "shapes.json").read_text())[stem]
        return [rng.standard_normal(shape).astype(np.float32)]
    if folder.name == "detection_models":
        with np.load(folder / "expected.npz") as f:
            return [f[f"{stem}.in{i}"] for i in range(len(ports))]
    if folder.name == "sequence_models":
        with np.load(folder / "expected.npz") as f:
            return [next(f[f"{stem}/in/{n}"] for n in names if f"{stem}/in/{n}" in f)
                    for names, _ in ports]  # fmt: skip
    if folder.name == "subgraph_models":
        n = 5
        xy = rng.random((n, 2)) * 12
        boxes = np.concatenate([xy, xy + 2 + rng.random((n, 2)) * 8], 1).astype(np.float32)
        return [boxes, rng.random(n).astype(np.float32), rng.integers(0, 3, n),
                rng.random((n, 1, 7, 7)).astype(np.float32)]  # fmt: skip
    if xml.name == "openvino_model.xml":  # a language model: a prompt, past keys and values
        feeds = []
        past = any(n.startswith("past") for names, _ in ports for n in names)
        for names, dtype in ports:
            name = next((n for n in names if n in _LLM), "")
            if name in _LLM:
                value = _LLM[name]
                if name == "attention_mask" and past:
                    value = np.ones((1, 6), np.int64)
                if name == "position_ids" and past:
                    value = np.arange(2, 6, dtype=np.int64)[None]
                feeds.append(value)
            else:  # past_key_values.N.key / value: [batch, heads, past, head size]
                feeds.append(rng.standard_normal((1, 4, 2, 8)).astype(dtype))
        return feeds
    raise LookupError(f"no inputs known for {xml}")
