"""OpenVINO's greedy decoding of a stateful LLM IR, and the committed expected values.

The models in ``tests/stateful`` are optimum-intel exports: the KV cache lives in variables
(ReadValue/Assign), so one infer request carries it from one call to the next.
``openvino_greedy`` runs the decode loop that ``make_stateful.py`` used to write
``expected.npz``, against whatever OpenVINO is installed, so tests can compare live:

- ``reset_state()`` on a fresh infer request, then one call with the whole prompt (batch 1),
  ``attention_mask`` ones, ``position_ids`` 0..n-1 and ``beam_idx`` [0];
- then one call per new token, feeding only that token, with the attention mask one longer
  and ``position_ids`` [[n + i]];
- each step's token is the argmax of the last position's logits (the lowest id on a tie, as
  ``np.argmax``); ``steps`` calls give ``steps`` tokens and ``steps`` rows of logits.

``openvino_beams`` does the same for a batch whose KV-cache rows ``beam_idx`` reorders
between calls, as beam search does (``beams.npz``).

Only the inputs the IR declares are fed, each in its declared element type.  Needs only
openvino and numpy (the generator runs it in the model-generating venv, the tests in the
test venv).

``F32_CONFIG`` makes the CPU plugin compute in f32 throughout: otherwise it keeps the KV
cache in u8 or f16 (optimum writes ``KV_CACHE_PRECISION`` f16 into the IR's
``runtime_options``, which the plugin obeys) and quantizes activations to int8 on the fly
next to u8/u4/i4 weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import openvino as ov

HERE = Path(__file__).resolve().parents[1] / "stateful"
F32_CONFIG = {
    "INFERENCE_PRECISION_HINT": "f32",
    "INFERENCE_NUM_THREADS": 1,
    "KV_CACHE_PRECISION": "f32",
    "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
}


def _feeds(
    names: dict[str, np.dtype], ids: np.ndarray, past: int, beam_idx=None
) -> dict[str, np.ndarray]:
    batch, n = ids.shape
    values = {
        "input_ids": ids,
        "attention_mask": np.ones((batch, past + n)),
        "position_ids": np.broadcast_to(np.arange(past, past + n), (batch, n)),
        "beam_idx": np.arange(batch) if beam_idx is None else np.asarray(beam_idx),
    }
    missing = set(names) - set(values)
    assert not missing, f"the IR demands inputs the decode loop does not know: {sorted(missing)}"
    return {name: values[name].astype(dtype) for name, dtype in names.items()}


def openvino_greedy(
    xml_path, prompt_ids, steps: int, config: dict | None = None, core: ov.Core | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` greedy tokens (int64) after ``prompt_ids`` and the last position's logits of
    each call (``[steps, vocab]`` f32), from the CPU plugin with ``config`` (``F32_CONFIG`` by
    default)."""
    core = core or ov.Core()
    compiled = core.compile_model(str(xml_path), "CPU", F32_CONFIG if config is None else config)
    names = {port.get_any_name(): port.get_element_type().to_dtype() for port in compiled.inputs}
    request = compiled.create_infer_request()
    request.reset_state()
    ids = np.asarray(prompt_ids, np.int64).reshape(1, -1)
    past = 0
    tokens, logits = [], []
    for _ in range(steps):
        result = request.infer(_feeds(names, ids, past))
        last = np.array(result[compiled.output("logits")][0, -1], np.float32, copy=True)
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        past += ids.shape[1]
        ids = np.array([[tokens[-1]]], np.int64)
    return np.array(tokens, np.int64), np.stack(logits)


def openvino_beams(
    xml_path, prompt_ids, beam_idx, config: dict | None = None, core: ov.Core | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Batched decoding that reorders the KV cache as beam search does.

    ``prompt_ids`` is ``[batch, n]``, ``beam_idx`` is ``[steps, batch]``: call ``s`` feeds
    ``beam_idx[s]``, so row ``r`` continues the cache of row ``beam_idx[s][r]``, and (from the
    second call on) that row's greedy token of the previous call.  Returns the tokens
    ``[steps, batch]`` (argmax per row) and the last position's logits ``[steps, batch, vocab]``.
    """
    core = core or ov.Core()
    compiled = core.compile_model(str(xml_path), "CPU", F32_CONFIG if config is None else config)
    names = {port.get_any_name(): port.get_element_type().to_dtype() for port in compiled.inputs}
    request = compiled.create_infer_request()
    request.reset_state()
    ids = np.asarray(prompt_ids, np.int64)
    beam_idx = np.asarray(beam_idx)
    past = 0
    tokens, logits = [], []
    for step, beams in enumerate(beam_idx):
        if step:
            ids = tokens[-1][beams][:, None]
        result = request.infer(_feeds(names, ids, past, beams))
        last = np.array(result[compiled.output("logits")][:, -1], np.float32, copy=True)
        logits.append(last)
        tokens.append(np.argmax(last, axis=1).astype(np.int64))
        past += ids.shape[1]
    return np.stack(tokens), np.stack(logits)


def manifest() -> dict:
    return json.loads((HERE / "manifest.json").read_text())


def load_expected(name: str) -> dict[str, np.ndarray]:
    """``prompt_ids`` [n], ``tokens`` [16] (int64) and ``logits`` [16, vocab] (f32) of model
    ``name``, as ``make_stateful.py`` wrote them."""
    with np.load(HERE / name / "expected.npz") as f:
        return dict(f)
