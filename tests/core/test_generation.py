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
        (["generate", "models/running_sum.xml", "--input-ids", "1"], "error: models/running_sum.xml: generate cannot feed this model: it has input 'x' (a causal LM's inputs are input_ids, attention_mask, position_ids, beam_idx, cache_position, token_type_ids, and past_key_values.* or cache_params.past.* for a cache given as inputs)"),
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


# ------------------------------------------------------------------------------- sampling

LLAMA_PROMPT = MANIFEST["llama"]["prompt"]["ids"]


def _greedy(n: int = 8) -> list[int]:
    return _expected("llama")["tokens"][:n].tolist()  # OpenVINO's greedy tokens


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampling_from_the_top_token_alone_is_greedy(seed):
    """top_k=1 keeps one token; a tiny top_p keeps only the most likely one (at least one
    is always kept): either way each draw is the argmax, whatever the seed."""
    for cut in ({"top_k": 1}, {"top_p": 1e-9, "top_k": 0}, {"top_p": 0.0, "top_k": 0}):
        got = irrun.generate(HERE / "llama", LLAMA_PROMPT, 8, ignore_eos=True, do_sample=True,
                             seed=seed, temperature=5.0, **cut)  # fmt: skip
        assert got.tokens == _greedy(), cut


def test_the_same_seed_draws_the_same_tokens():
    def draw(seed):
        return irrun.generate(HERE / "llama", LLAMA_PROMPT, 8, ignore_eos=True, do_sample=True,
                              top_k=0, temperature=2.0, seed=seed)  # fmt: skip

    first = draw(7)
    assert first.sampling == {"temperature": 2.0, "top_k": 0, "top_p": 1.0, "seed": 7}
    assert draw(7).tokens == first.tokens
    # At temperature 2 over 512 tokens, eight draws repeat by chance with negligible odds.
    assert draw(8).tokens != first.tokens != _greedy()
    # Without a seed one is drawn, and kept so that it draws the same tokens again.
    free = irrun.generate(HERE / "llama", LLAMA_PROMPT, 8, ignore_eos=True, do_sample=True)
    assert free.sampling["top_k"] == 50 and isinstance(free.sampling["seed"], int)
    again = irrun.generate(HERE / "llama", LLAMA_PROMPT, 8, ignore_eos=True, do_sample=True,
                           seed=free.sampling["seed"])  # fmt: skip
    assert again.tokens == free.tokens


def test_token_probabilities_follow_hugging_faces_warpers():
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    p = irrun.core.generation.token_probabilities
    assert np.allclose(p(logits), [0.5, 0.3, 0.2])
    # Temperature T: softmax(logits / T), so p_i proportional to p_i ** (1 / T).
    want = np.array([0.5, 0.3, 0.2]) ** 0.5
    assert np.allclose(p(logits, temperature=2.0), want / want.sum())
    assert p(logits, temperature=1e-3)[0] > 1 - 1e-12  # toward greedy
    assert np.allclose(p(logits, temperature=1e6), 1 / 3, atol=1e-6)  # toward uniform
    # top_k keeps the k largest, and ties with the k-th.
    assert np.allclose(p(logits, top_k=2), [0.5 / 0.8, 0.3 / 0.8, 0])
    assert np.allclose(p(np.array([1.0, 2.0, 2.0, 0.0]), top_k=2), [0, 0.5, 0.5, 0])
    # top_p drops, from the least likely up, the tokens whose sum stays within 1 - top_p:
    # 0.75 drops 0.2 (0.2 <= 0.25), 0.45 drops 0.2 and 0.3 (0.5 <= 0.55).
    assert np.allclose(p(logits, top_p=0.75), [0.5 / 0.8, 0.3 / 0.8, 0])
    assert np.allclose(p(logits, top_p=0.45), [1, 0, 0])
    # Temperature first, then top-k, then top-p: at T=1e6 all three are nearly 1/3, so
    # top_p 0.5 keeps two of the three (the ascending sums are 1/3, 2/3, 1).
    assert np.count_nonzero(p(logits, temperature=1e6, top_p=0.5)) == 2


def test_draws_follow_the_probabilities():
    """20000 draws: each token's frequency within 4 standard deviations of its
    probability, and a token of probability 0 never drawn."""
    rng = np.random.default_rng(0)
    probs = irrun.core.generation.token_probabilities(np.log([0.1, 0.6, 0.05, 0.25]), top_k=3)
    n = 20000
    counts = np.bincount([irrun.core.generation.pick_token(probs, rng) for _ in range(n)],
                         minlength=4)  # fmt: skip
    assert counts[2] == 0
    sigma = np.sqrt(n * probs * (1 - probs))
    assert np.all(np.abs(counts - n * probs) <= 4 * sigma + 1e-9), (counts, probs)


def test_temperature_spreads_the_generated_tokens():
    """Over 12 tokens: near 0 the draws are the greedy tokens; at a high temperature
    (all 512 tokens nearly equally likely) they are not."""
    cold = irrun.generate(HERE / "llama", LLAMA_PROMPT, 12, ignore_eos=True, do_sample=True,
                          temperature=1e-4, top_k=0, seed=3)  # fmt: skip
    hot = irrun.generate(HERE / "llama", LLAMA_PROMPT, 12, ignore_eos=True, do_sample=True,
                         temperature=1e4, top_k=0, seed=3)  # fmt: skip
    assert cold.tokens == _greedy(12)
    assert sum(a == b for a, b in zip(hot.tokens, _greedy(12), strict=True)) <= 2


def test_sampling_defaults_come_from_generation_config(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(HERE / "llama", folder)
    config = json.loads((folder / "generation_config.json").read_text())
    config.update(do_sample=True, temperature=0.5, top_k=1, top_p=0.9)
    (folder / "generation_config.json").write_text(json.dumps(config))
    greedy = irrun.generate(folder, LLAMA_PROMPT, 6, ignore_eos=True)
    assert greedy.sampling is None and greedy.tokens == _greedy(6)  # greedy stays the default
    got = irrun.generate(folder, LLAMA_PROMPT, 6, ignore_eos=True, do_sample=True, seed=1)
    assert got.sampling == {"temperature": 0.5, "top_k": 1, "top_p": 0.9, "seed": 1}
    assert got.tokens == _greedy(6)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"top_k": 3}, "top_k only applies when sampling: add do_sample"),
        ({"temperature": 0.7, "seed": 1}, "temperature, seed only apply when sampling"),
        ({"do_sample": True, "temperature": 0.0}, "temperature must be above 0, not 0.0"),
        ({"do_sample": True, "top_p": 1.5}, "top_p must be between 0 and 1, not 1.5"),
        ({"do_sample": True, "top_k": -1}, "top_k must be a whole number, 0 or more, not -1"),
    ],
)  # fmt: skip
def test_sampling_settings_are_checked(settings, message):
    with pytest.raises(irrun.errors.UsageError, match=message):
        irrun.generate(HERE / "llama", LLAMA_PROMPT, 2, **settings)


# ------------------------------------------------------ inputs beyond a transformer's own


def _tiny_lm(tmp_path: Path, stateful: bool) -> Path:
    """A 16-token "LM" whose logits are the one-hot of (input_ids + cache_position +
    token_type_ids + sum(attention_mask) - tokens fed so far) mod 16, built with
    OpenVINO's API.  Fed as optimum feeds it (positions, zeros, a mask over every token),
    the next token is (last token + its position) mod 16.  Its count of tokens fed is a
    variable (read through beam_idx), or ``stateful=False`` a Mamba-named cache input
    ``cache_params.past.ssm.0`` whose next value is the ``cache_params.present.ssm.0``
    output."""
    import openvino as ov
    from openvino import opset1, opset6, opset8
    from openvino.op.util import Variable, VariableInfo

    def param(name, shape, dtype):
        p = opset1.parameter(shape, dtype, name=name)
        p.output(0).get_tensor().set_names({name})
        return p

    def const(value):
        return opset1.constant(np.array(value, np.int64))

    ids = param("input_ids", [1, -1], np.int64)
    mask = param("attention_mask", [1, -1], np.int64)
    positions = param("cache_position", [-1], np.int64)
    types = param("token_type_ids", [1, -1], np.int64)
    params = [ids, mask, positions, types]
    n = opset8.gather(opset8.shape_of(ids), const([1]), const(0))
    if stateful:
        beams = param("beam_idx", [-1], np.int32)
        info = VariableInfo()
        info.variable_id, info.data_type, info.data_shape = (
            "seen",
            ov.Type.i64,
            ov.PartialShape([1]),
        )
        var = Variable(info)
        past = opset8.gather(opset6.read_value(const([0]), var), beams, const(0))
        params.append(beams)
    else:
        past = param("cache_params.past.ssm.0", [1], np.int64)
        params.append(past)
    seen = opset1.add(past, n)
    gap = opset1.subtract(opset1.reduce_sum(mask, const([1])), seen)
    index = opset1.add(opset1.add(ids, opset1.unsqueeze(positions, const(0))), types)
    index = opset1.floor_mod(opset1.add(index, gap), const(16))
    logits = opset1.one_hot(index, const(16), opset1.constant(np.float32(1)),
                            opset1.constant(np.float32(0)), -1)  # fmt: skip
    logits.output(0).get_tensor().set_names({"logits"})
    if stateful:
        model = ov.Model([opset1.result(logits)], [opset6.assign(seen, var)], params, "tiny")
    else:
        seen.output(0).get_tensor().set_names({"cache_params.present.ssm.0"})
        model = ov.Model([opset1.result(logits), opset1.result(seen)], params, "tiny")
    path = tmp_path / f"tiny_{'stateful' if stateful else 'past'}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path


@pytest.mark.parametrize("stateful", [True, False])
def test_cache_position_and_token_type_ids_are_fed(tmp_path, stateful):
    xml = _tiny_lm(tmp_path, stateful)
    assert {s.name for s in irrun.load(xml).inputs} >= {"cache_position", "token_type_ids"}
    sequence = [1, 2]
    for _ in range(6):  # by hand: the next token is (last + its position) mod 16
        sequence.append((sequence[-1] + len(sequence) - 1) % 16)
    got = irrun.generate(xml, [1, 2], 6)
    assert got.tokens == sequence[2:] == [3, 5, 8, 12, 1, 7]


def test_a_mamba_export_is_fed_as_optimum_feeds_it():
    """optimum-intel's OVMambaForCausalLM: at the prompt, cache_position is
    0..conv_kernel-1 (the whole convolution window) and after it the new token's
    position; the attention mask covers only the tokens fed (the model multiplies them
    by it)."""
    from irrun.core.generation import step_inputs
    from irrun.core.model import TensorSpec

    names = ("input_ids", "attention_mask", "cache_position", "position_ids")
    specs = {n: TensorSpec(n, None, "i64") for n in names}
    first = step_inputs(specs, [5, 6, 7], 0, conv_kernel=4)
    assert first["cache_position"].tolist() == [0, 1, 2, 3]
    assert first["attention_mask"].tolist() == [[1, 1, 1]]
    later = step_inputs(specs, [9], 3, conv_kernel=4)
    assert later["cache_position"].tolist() == [3] and later["attention_mask"].tolist() == [[1]]
    # A transformer: positions of the tokens fed, a mask over every token so far.
    plain = step_inputs(specs, [9], 3)
    assert plain["cache_position"].tolist() == [3] and plain["position_ids"].tolist() == [[3]]
    assert plain["attention_mask"].tolist() == [[1, 1, 1, 1]]
    specs["cache_position"] = TensorSpec("cache_position", None, "i32")
    assert step_inputs(specs, [9], 3)["cache_position"].dtype == np.int32


def test_a_mamba_config_is_read(tmp_path):
    folder = tmp_path / "mamba"
    shutil.copytree(HERE / "llama", folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="falcon_mamba", conv_kernel=4)
    (folder / "config.json").write_text(json.dumps(config))
    assert irrun.core.generation.open_language_model(folder).conv_kernel == 4
    assert irrun.core.generation.open_language_model(HERE / "llama").conv_kernel is None


def test_a_mamba_folder_decodes_with_optimums_inputs(tmp_path):
    """A stateful 16-token "Mamba" (config.json: model_type mamba, conv_kernel 4) whose
    logits are the one-hot of (input_ids + max(cache_position) + sum(attention_mask)) mod
    16.  Fed as OVMambaForCausalLM feeds it, by hand from the prompt [1, 2]: the prompt's
    positions are 0..3 and its mask 2 ones, so 2 + 3 + 2 = 7; then the new token's
    position and a mask of one: 7 + 2 + 1 = 10, 10 + 3 + 1 = 14, 14 + 4 + 1 = 19 = 3."""
    import openvino as ov
    from openvino import opset1, opset6
    from openvino.op.util import Variable, VariableInfo

    def param(name, shape):
        p = opset1.parameter(shape, np.int64, name=name)
        p.output(0).get_tensor().set_names({name})
        return p

    def const(value):
        return opset1.constant(np.array(value, np.int64))

    ids, mask, positions = (param("input_ids", [1, -1]), param("attention_mask", [1, -1]),
                            param("cache_position", [-1]))  # fmt: skip
    info = VariableInfo()
    info.variable_id, info.data_type, info.data_shape = "conv", ov.Type.i64, ov.PartialShape([1])
    var = Variable(info)
    steps = opset1.add(opset6.read_value(const([0]), var), const([1]))
    shift = opset1.add(opset1.reduce_max(positions, const([0])),
                       opset1.reduce_sum(mask, const([1])))  # fmt: skip
    index = opset1.floor_mod(opset1.add(ids, shift), const(16))
    logits = opset1.one_hot(index, const(16), opset1.constant(np.float32(1)),
                            opset1.constant(np.float32(0)), -1)  # fmt: skip
    logits.output(0).get_tensor().set_names({"logits"})
    model = ov.Model([opset1.result(logits)], [opset6.assign(steps, var)],
                     [ids, mask, positions], "mamba")  # fmt: skip
    folder = tmp_path / "mamba"
    folder.mkdir()
    ov.save_model(model, folder / "openvino_model.xml", compress_to_fp16=False)
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "mamba", "conv_kernel": 4, "vocab_size": 16}))  # fmt: skip
    assert irrun.generate(folder, [1, 2], 4).tokens == [7, 10, 14, 3]
    # The same IR without the config is fed as a transformer: (2 + 1 + 2) = 5 first.
    ov.save_model(model, tmp_path / "plain.xml", compress_to_fp16=False)
    assert irrun.generate(tmp_path / "plain.xml", [1, 2], 1).tokens == [5]
