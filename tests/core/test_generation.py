"""Greedy decoding of optimum-intel's stateful LLM exports, and ``irrun generate``.

``tests/stateful`` holds tiny random-init Llama, GPT-2 and Qwen2 exports (plain, int8 and
int4 weights) with the tokens and per-step logits of a fixed prompt as OpenVINO computes
them run statefully: by the CPU plugin in f32 with an f32 KV cache, and by its reference
kernels op by op (``tests/support/ov_stateful.py``; ``make_stateful.py`` remakes them).  irrun must
give the same 16 greedy tokens as both, and each step's logits within, of the step's
largest logit:

- 1e-5 of the reference's for every model (measured: 1.3e-6): the same arithmetic in
  another summation order;
- 1e-5 of the plugin's for the f32 models (measured: 1e-6), and 2e-3 for the int8/int4
  ones (measured: 1.65e-3): NNCF writes the weights' decompression in f16 (u8/u4 to f16,
  minus the zero point, times the f16 scale), and the reference kernels and irrun round
  that product to f16 where the plugin keeps it in f32, so every weight may differ by half
  an f16 ulp (2.4e-4 relative); over two layers the logits move by up to 1.7e-3.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.cli import main
from irrun.ir.element_types import ELEMENT_TYPES

HERE = Path(__file__).resolve().parents[1] / "stateful"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
NAMES = sorted(MANIFEST)
MODELS = Path(__file__).resolve().parents[2] / "models"


def _tolerance(name: str) -> float:
    """Against the CPU plugin (see the module's docstring)."""
    return 1e-5 if MANIFEST[name]["source"]["weight_quantization"] is None else 2e-3


def _expected(name: str) -> dict[str, np.ndarray]:
    with np.load(HERE / name / "expected.npz") as f:
        return dict(f)


@pytest.mark.parametrize("name", NAMES)
def test_greedy_tokens_and_logits_match_openvino(name):
    want = _expected(name)
    prompt = want["prompt_ids"].tolist()
    got = irrun.generate(HERE / name, prompt, max_new_tokens=16, ignore_eos=True,
                         keep_logits=True)  # fmt: skip
    assert got.tokens == want["tokens"].tolist() == want["reference_tokens"].tolist()
    assert got.stopped == "length" and got.prompt == prompt
    logits = np.stack(got.logits)
    for ref, tolerance in (("reference_logits", 1e-5), ("logits", _tolerance(name))):
        scale = np.abs(want[ref]).max(axis=1)
        error = np.abs(logits - want[ref]).max(axis=1) / scale
        assert error.max() <= tolerance, (ref, error)


@pytest.mark.parametrize("name", ["llama", "gpt2_int4"])
def test_greedy_decoding_matches_the_openvino_installed_now(name):
    from support.ov_stateful import openvino_greedy

    want = _expected(name)
    tokens, logits = openvino_greedy(HERE / name / "openvino_model.xml",
                                     want["prompt_ids"].tolist(), 8)  # fmt: skip
    got = irrun.generate(HERE / name, want["prompt_ids"].tolist(), 8, ignore_eos=True,
                         keep_logits=True)  # fmt: skip
    assert got.tokens == list(tokens)
    error = np.abs(np.stack(got.logits) - logits).max() / np.abs(logits).max()
    assert error <= _tolerance(name)


def test_generation_stops_at_the_end_of_sequence_id():
    want = _expected("llama")
    prompt = want["prompt_ids"].tolist()
    third = int(want["tokens"][2])
    got = irrun.generate(HERE / "llama", prompt, 16, eos_token_id=third)
    first = want["tokens"].tolist().index(third)
    assert got.tokens == want["tokens"][: first + 1].tolist() and got.stopped == "eos"


def test_each_step_through_a_request_is_what_generate_does():
    """The decode loop written out with a request: the prompt, then one token a step."""
    want = _expected("gpt2")
    m = irrun.load(HERE / "gpt2" / "openvino_model.xml")
    req = m.create_request()
    ids = want["prompt_ids"].tolist()
    names = {s.name for s in m.inputs}
    fresh, seen = list(ids), 0
    tokens = []
    for _ in range(4):
        feeds = {"input_ids": np.array([fresh], np.int64),
                 "attention_mask": np.ones((1, seen + len(fresh)), np.int64),
                 "beam_idx": np.zeros(1, np.int32)}  # fmt: skip
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(seen, seen + len(fresh))[None]
        logits = req.run(feeds)["logits"]
        seen += len(fresh)
        fresh = [int(np.argmax(logits[0, -1]))]
        tokens.append(fresh[0])
    assert tokens == want["tokens"][:4].tolist()
    cache = req.query_state()
    assert len(cache) == MANIFEST["gpt2"]["variables"]["count"]
    assert all(v.shape[2] == len(ids) + 3 for v in cache.values())  # prompt + 3 fed tokens


# ------------------------------------------------------------------------------ the command


def test_generate_prints_tokens_and_timings(capsys):
    want = _expected("llama")
    ids = ",".join(map(str, want["prompt_ids"].tolist()))
    assert main(["generate", str(HERE / "llama"), "--input-ids", ids, "--max-new-tokens", "4",
                 "--ignore-eos"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"prompt              6 tokens: {ids}"
    tokens = ",".join(map(str, want["tokens"][:4].tolist()))
    assert lines[1] == f"tokens              {tokens}  (4 new; stopped at --max-new-tokens)"
    assert lines[2].startswith("first token ") and lines[2].endswith(" ms  (the prompt's run)")
    assert lines[3].startswith("each token after ") and "tokens/s over 3)" in lines[3]


def test_generate_json(capsys):
    want = _expected("qwen2")
    ids = ",".join(map(str, want["prompt_ids"].tolist()))
    assert main(["generate", str(HERE / "qwen2" / "openvino_model.xml"), "--input-ids", ids,
                 "--max-new-tokens", "5", "--json", "--ignore-eos"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["tokens"] == want["tokens"][:5].tolist()
    assert report["prompt_ids"] == want["prompt_ids"].tolist()
    assert report["stopped"] == "length" and report["text"] is None
    assert len(report["step_ms"]) == 5 and report["tokens_per_second"] > 0


def test_generate_from_a_text_prompt(capsys):
    pytest.importorskip("tokenizers", reason="--prompt uses the optional tokenizers library")
    prompt = MANIFEST["llama"]["prompt"]
    assert main(["generate", str(HERE / "llama"), "--prompt", prompt["text"],
                 "--max-new-tokens", "3", "--ignore-eos", "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["prompt_ids"] == prompt["ids"]
    assert report["tokens"] == _expected("llama")["tokens"][:3].tolist()
    assert isinstance(report["text"], str)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "{tmp}", "--input-ids", "1"], "error: {tmp}: no openvino_model.xml in this folder"),
        (["generate", "{tmp}/none", "--input-ids", "1"], "error: {tmp}/none: no such file or folder"),
        (["generate", "{llama}", "--input-ids", "1,512"], "error: {llama}/openvino_model.xml: token id 512 is outside the vocabulary (0..511)"),
        (["generate", "{llama}", "--input-ids", "-3"], "error: {llama}/openvino_model.xml: token id -3 is outside the vocabulary (0..511)"),
        (["generate", "models/running_sum.xml", "--input-ids", "1"], "error: models/running_sum.xml: generate cannot feed this model: it has input 'x' (a causal LM's inputs are input_ids, attention_mask, position_ids, beam_idx, and past_key_values.* for a cache given as inputs)"),
        (["generate", "{gpt2}", "--prompt", "hello"], "error: {gpt2}/tokenizer.json: --prompt needs the folder's tokenizer.json, which is not there (give --input-ids instead)"),
    ],
)  # fmt: skip
def test_generate_errors_are_one_line(args, message, tmp_path, capsys):
    subst = {"tmp": str(tmp_path), "llama": str(HERE / "llama"), "gpt2": str(HERE / "gpt2")}
    argv = [a.format(**subst) for a in args]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message.format(**subst) in err


@pytest.mark.parametrize("args", [["--input-ids", "1,x"], ["--input-ids", "1", "--prompt", "a"],
                                  [], ["--input-ids", "1", "--max-new-tokens", "0"]])  # fmt: skip
def test_generate_misuse_is_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["generate", str(HERE / "llama"), *args])
    assert exc.value.code == 2


def test_a_broken_config_is_named(tmp_path, capsys):
    folder = tmp_path / "m"
    shutil.copytree(HERE / "llama", folder)
    (folder / "generation_config.json").write_text("{not json")
    assert main(["generate", str(folder), "--input-ids", "1"]) == 1
    err = capsys.readouterr().err
    assert f"error: {folder / 'generation_config.json'}: cannot read it as JSON" in err


@pytest.mark.parametrize("name", ["llama", "gpt2", "qwen2"])
def test_beam_reordering_of_the_cache(name):
    """A batch of 2 whose ``beam_idx`` swaps the cache rows at calls 3 and 9 and copies row
    0 into row 1 at call 13 (``beams.npz``, from the CPU plugin): the Gather in front of
    each cache's Concat, and the in-place append starting over after it."""
    from support.ov_stateful import _feeds

    with np.load(HERE / name / "beams.npz") as f:
        want = dict(f)
    m = irrun.load(HERE / name / "openvino_model.xml")
    names = {s.name: ELEMENT_TYPES[s.element_type].dtype for s in m.inputs}
    req = m.create_request()
    ids, past, tokens, logits = want["prompt_ids"], 0, [], []
    for step, beams in enumerate(want["beam_idx"]):
        if step:
            ids = tokens[-1][beams][:, None]
        last = req.run(_feeds(names, ids, past, beams))["logits"][:, -1]
        logits.append(last)
        tokens.append(np.argmax(last, axis=1))
        past += ids.shape[1]
    assert np.array_equal(np.stack(tokens), want["tokens"])
    error = np.abs(np.stack(logits) - want["logits"]).max() / np.abs(want["logits"]).max()
    assert error <= 1e-5


# ---------------------------------------------------------------- exports without variables

STATELESS = Path(__file__).resolve().parents[1] / "stateless"


@pytest.mark.parametrize(("name", "tolerance"), [("gpt2_nocache", 1e-5), ("gpt2_past", 5e-3)])
def test_exports_without_variables_decode_the_same_tokens(name, tolerance):
    """tests/stateless holds tests/stateful/gpt2's weights exported with ``use_cache=False``
    (no cache: each step reruns the sequence) and with ``stateful=False`` (the cache as
    ``past_key_values.*`` inputs, fed back from ``present.*``).  Both give the stateful
    export's tokens (from the CPU plugin).  The logits: the same sums in the first; in the
    second, optimum rounds every cache input to bf16 and back in the graph (Convert-Convert),
    which the stateful export does not: 2^-9 relative per cached value, measured 2.1e-3 of
    the logits' scale."""
    want = _expected("gpt2")
    got = irrun.generate(STATELESS / name, want["prompt_ids"].tolist(), 16, ignore_eos=True,
                         keep_logits=True)  # fmt: skip
    assert got.tokens == want["tokens"].tolist()
    error = np.abs(np.stack(got.logits) - want["logits"]).max(axis=1)
    assert (error / np.abs(want["logits"]).max(axis=1)).max() <= tolerance


def test_a_cache_given_as_inputs_is_fed_back_as_openvino_computes_it():
    """Two steps of gpt2_past in the CPU plugin (reshaped to each step's static shapes, as
    ``irrun compare`` runs it; run with dynamic shapes, this export's logits move by 2e-3
    of their scale, as much as the bf16 rounding of its cache)."""
    import openvino as ov

    xml = STATELESS / "gpt2_past" / "openvino_model.xml"
    m = irrun.load(xml)
    ids = _expected("gpt2")["prompt_ids"].tolist()
    past = {s.name: np.zeros((1, 4, 0, 8), np.float32) for s in m.inputs
            if s.name.startswith("past_key_values")}  # fmt: skip
    feeds = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, 6), np.int64),
             "position_ids": np.arange(6)[None], **past}  # fmt: skip
    core = ov.Core()
    for _ in range(2):
        ours = m.run(feeds)
        model = core.read_model(xml)
        model.reshape({k: list(v.shape) for k, v in feeds.items()})
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                     "INFERENCE_NUM_THREADS": 1})  # fmt: skip
        theirs = compiled(feeds)
        for out in compiled.outputs:
            name = out.get_any_name()
            want = theirs[out]
            assert np.abs(ours[name] - want).max() <= 1e-5 * np.abs(want).max(), name
        token = int(np.argmax(ours["logits"][0, -1]))
        n = feeds["attention_mask"].shape[1]
        feeds = {"input_ids": np.array([[token]]), "attention_mask": np.ones((1, n + 1), np.int64),
                 "position_ids": np.array([[n]]),
                 **{k: ours[k.replace("past_key_values", "present")] for k in past}}  # fmt: skip
