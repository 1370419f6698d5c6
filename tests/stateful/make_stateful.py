"""Regenerate the stateful corpus: tiny causal LMs as optimum-intel exports them.

    /work/genvenv/bin/python tests/stateful/make_stateful.py [NAME ...]

Needs torch, transformers, optimum-intel, nncf, tokenizers and openvino (the tests need only
the committed files, openvino and numpy).  Every model is randomly initialised from a fixed
torch seed with a tiny configuration (hidden 32, 2 layers, 4 heads, 2 KV heads where the
family has grouped-query attention, vocabulary 256-512, 256 positions), saved with
``save_pretrained``, exported with ``OVModelForCausalLM.from_pretrained(export=True)``
(stateful: the KV cache lives in ReadValue/Assign variables, ``beam_idx`` reorders it) and
saved with ``save_pretrained``.  Per NAME the script writes ``NAME/``:

- ``openvino_model.xml`` / ``.bin``: optimum's IR, read back and written again with
  ``ov.save_model(compress_to_fp16=False)`` after renumbering auto-numbered node names
  (``ReadValue_16150``: a process-wide counter) in graph order, so a rerun writes the same
  bytes; everything else (variables, rt_info with optimum's ``runtime_options``) is as optimum
  wrote it;
- ``config.json``, ``generation_config.json`` (``eos_token_id`` set to an id that greedy
  decoding of the prompt does not reach in 16 steps, so 16 tokens come out);
- ``llama`` also has ``tokenizer.json`` (a byte-level BPE trained here on ``TEXT``, its
  vocabulary exactly the model's, ``</s>`` = eos) and ``tokenizer_config.json``; its prompt is
  ``PROMPT`` encoded by it;
- ``expected.npz``: ``prompt_ids``, ``tokens`` (16 greedy ids), ``logits`` ([16, vocab] f32,
  the last position's logits of each call), from ``tests/support/ov_stateful.openvino_greedy``: the CPU
  plugin with ``F32_CONFIG`` (f32 inference, 1 thread, f32 KV cache, no dynamic quantization);
- ``beams.npz`` (models without weight compression): batch 2 (the prompt and its reverse)
  with ``beam_idx`` reordering the KV cache at a few calls, from
  ``tests/support/ov_stateful.openvino_beams``: ``prompt_ids`` [2, n], ``beam_idx`` [16, 2] (i32),
  ``tokens`` [16, 2], ``logits`` [16, 2, vocab];
- an entry of ``manifest.json``.

Dropped from optimum's output: ``openvino_config.json`` of the compressed models (the
quantization settings, recorded in the manifest instead); optimum writes nothing else here (no
tokenizer is given to it, so no openvino_tokenizer/detokenizer IR), and the torch checkpoint
(``model.safetensors``) stays in a temporary directory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import openvino as ov
from openvino._offline_transformations import stateful_to_stateless_transformation

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from support.ov_stateful import F32_CONFIG, _feeds, openvino_beams, openvino_greedy  # noqa: E402

STEPS = 16
PROMPT = "The quick brown fox jumps over"
TEXT = """\
The quick brown fox jumps over the lazy dog. A stateful model keeps its key and value
cache between calls, so each new token needs only one step through the network. The cache
grows by one position per token, and the attention mask grows with it. When the request is
reset, every variable starts again from its initial value. Greedy decoding picks the token
with the largest logit at every step, and stops at the end of the sequence or after a fixed
number of new tokens. Small models with random weights say nothing sensible, but they say
it the same way every time, which is all a test needs. The brown dog sleeps in the sun while
the quick fox runs over the hill and back again to the river, where the water is cold.
"""

BASE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=256, initializer_range=0.2)  # fmt: skip
FAMILIES = {
    "llama": ("LlamaConfig", {**BASE, "num_key_value_heads": 2, "vocab_size": 512}),
    "qwen2": ("Qwen2Config", {**BASE, "num_key_value_heads": 2, "vocab_size": 256,
                              "max_window_layers": 2, "use_sliding_window": False}),
    "gpt2": ("GPT2Config", dict(n_embd=32, n_inner=64, n_layer=2, n_head=4, n_positions=256,
                                vocab_size=256, initializer_range=0.2)),
}  # fmt: skip
INT8 = {"bits": 8}
INT4 = {"bits": 4, "sym": False, "group_size": 16, "ratio": 1.0}
# name: (family, torch seed, weight quantization or None, prompt ids or None for PROMPT)
MODELS = {
    "llama": ("llama", 1, None, None),
    "llama_int8": ("llama", 1, INT8, None),
    "llama_int4": ("llama", 1, INT4, None),
    "gpt2": ("gpt2", 2, None, [3, 17, 42, 99, 123, 200]),
    "gpt2_int8": ("gpt2", 2, INT8, [3, 17, 42, 99, 123, 200]),
    "gpt2_int4": ("gpt2", 2, INT4, [3, 17, 42, 99, 123, 200]),
    "qwen2": ("qwen2", 3, None, [3, 17, 42, 99, 123, 200]),
}
EOS_CANDIDATES = (2, 0, 1)  # the first one greedy decoding does not produce

# Scale-relative tolerances: max|got - expected| <= tol * max|expected| over all steps' logits.
PLUGIN_TOL = 1e-5
PLUGIN_WHY = (
    "the same plugin and configuration: 1 vs 2 threads gave identical logits here; another CPU "
    "family may pick other f32 kernels (sum order), which the op-by-op reference run shows to "
    "move logits by ~1e-6 of their scale; the smallest top-1/top-2 gap is ~1e-3 of the scale, "
    "so tokens must match exactly"
)
REF_TOL = 1e-5
REF_WHY = (
    "f32 throughout; the plugin's fused kernels sum in another order than the reference "
    "kernels (measured ~1e-6 of the logits' scale over 16 steps)"
)
COMPRESSED_TOL = 5e-3
COMPRESSED_WHY = (
    "NNCF writes the weight decompression in f16 (u8/u4 to f16, minus the zero point, times "
    "the f16 scale); the reference kernels round that product to f16, the plugin keeps f32: "
    "measured ~1e-3 of the logits' scale after 16 steps; irrun, following the reference, "
    "should match reference_logits to ~1e-5"
)

KEPT = ("openvino_model.xml", "openvino_model.bin", "config.json", "generation_config.json")


def _tokenizer(vocab_size: int):
    """A byte-level BPE over ``TEXT`` with exactly ``vocab_size`` entries; <unk>, <s>, </s>
    are ids 0, 1, 2."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TEXT], trainer)
    assert tok.get_vocab_size() == vocab_size, tok.get_vocab_size()
    assert tok.token_to_id("</s>") == 2
    return tok


_COUNTED = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Za-z0-9]*)_(\d+)(?![0-9])")


def _stable_names(model: ov.Model) -> None:
    """Renumber auto-generated names (``ReadValue_16150``, ``Constant_123``) in graph order."""
    numbers: dict[str, str] = {}

    def renumber(match: re.Match) -> str:
        return numbers.setdefault(match.group(0), f"{match.group(1)}_{len(numbers)}")

    for node in model.get_ordered_ops():
        node.set_friendly_name(_COUNTED.sub(renumber, node.get_friendly_name()))


def _export(name: str, out: Path) -> dict:
    from importlib.metadata import version

    import nncf
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    family, seed, quant, _ = MODELS[name]
    cfg_name, config = FAMILIES[family]
    cfg = getattr(transformers, cfg_name)(**config)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    note = None
    if family == "qwen2":
        # transformers initialises biases to zero, and OpenVINO folds an Add of zeros away:
        # without this the q/k/v projection biases (qwen2's difference from llama) vanish.
        with torch.no_grad():
            for module_name, module in model.named_modules():
                if module_name.endswith(("q_proj", "k_proj", "v_proj")):
                    module.bias.normal_(0.0, 0.2)
        note = "q/k/v projection biases drawn from N(0, 0.2) after init (zero biases fold away)"
    kwargs = {}
    if quant is not None:
        kwargs["quantization_config"] = OVWeightQuantizationConfig(**quant)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(f"{tmp}/torch")
        ov_model = OVModelForCausalLM.from_pretrained(
            f"{tmp}/torch", export=True, compile=False, stateful=True, **kwargs
        )
        ov_model.save_pretrained(f"{tmp}/ov")
        written = sorted(p.name for p in Path(f"{tmp}/ov").iterdir())
        saved = ov.Core().read_model(f"{tmp}/ov/openvino_model.xml")
        _stable_names(saved)
        saved.set_friendly_name(name)
        ov.save_model(saved, out / "openvino_model.xml", compress_to_fp16=False)
        for f in ("config.json", "generation_config.json"):
            shutil.copy(f"{tmp}/ov/{f}", out / f)
    return {
        "family": family,
        "class": type(model).__name__,
        "config": {"class": cfg_name, **config},
        "seed": seed,
        **({"note": note} if note else {}),
        "weight_quantization": (None if quant is None else {"OVWeightQuantizationConfig": quant}),
        "libraries": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "optimum-intel": version("optimum-intel"),
            "nncf": nncf.__version__,
            "openvino": ov.get_version(),
        },
        "optimum_wrote": written,
        "dropped": [f for f in written if f not in KEPT],
    }


def _ir_facts(xml: Path) -> dict:
    root = ElementTree.parse(xml).getroot()
    layers = list(root.iter("layer"))
    ops = sorted({f"{lay.get('type')}-{lay.get('version')}" for lay in layers})
    inputs = {}
    for lay in layers:
        if lay.get("type") == "Parameter":
            data = lay.find("data")
            inputs[lay.get("name")] = {
                "element_type": data.get("element_type"),
                "partial_shape": data.get("shape"),
            }
    variables = {}
    for lay in layers:
        if lay.get("type") in ("ReadValue", "Assign"):
            data = lay.find("data").attrib
            entry = variables.setdefault(data["variable_id"], {})
            entry[lay.get("type")] = {"version": lay.get("version"), **data}
            entry[lay.get("type")].pop("variable_id")
    weights = Counter(
        lay.find("data").get("element_type")
        for lay in layers
        if lay.get("type") == "Const"
        and int(lay.find("data").get("size", 0)) >= 64  # weights, not shape constants
    )
    rt = root.find("rt_info")
    options = rt.find("runtime_options") if rt is not None else None
    return {
        "inputs": inputs,
        "variables": {
            "count": len(variables),
            "id_pattern": "past_key_values.{layer}.{key|value}present.{layer}.{key|value}",
            "ids": sorted(variables),
            "attributes": {k: variables[k] for k in sorted(variables)},
        },
        "ops": ops,
        "weight_constants_by_element_type": dict(sorted(weights.items())),
        "rt_info_runtime_options": (
            {o.tag: o.get("value") for o in options} if options is not None else {}
        ),
    }


def _alone_on_cpu(model, index, args):
    """make_corpus.py's: node ``index`` of ``model`` alone in the CPU plugin (f32, 1 thread)."""
    spec = importlib.util.spec_from_file_location("make_corpus", HERE.parent / "corpus" / "make_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    return corpus._alone_on_cpu(model, index, args)


def _keep(t):
    """Packed sub-byte tensors (u4 weights) stay OpenVINO tensors: numpy cannot hold them."""
    if t.element_type.bitwidth < 8:
        return t
    return np.array(t.data, copy=True).reshape(tuple(t.shape))


def _layerwise(model, feeds):
    model = model.clone()
    model.reshape({k: list(v.shape) for k, v in feeds.items()})
    values, plugin_ops = {}, set()
    for index, node in enumerate(model.get_ordered_ops()):
        kind = node.get_type_name()
        if kind == "Result":
            continue
        if kind == "Parameter":
            values[node.get_friendly_name(), 0] = feeds[node.output(0).get_any_name()]
            continue
        args = [
            values[v.get_node().get_friendly_name(), v.get_index()] for v in node.input_values()
        ]
        if kind == "BitwiseAnd" and args[0].dtype == bool:
            got = [np.logical_and(*args)]  # core has no boolean BitwiseAnd evaluate
        else:
            outs = [ov.Tensor(o.get_element_type(), o.get_shape()) for o in node.outputs()]
            if node.evaluate(
                outs,
                [
                    a if isinstance(a, ov.Tensor) else ov.Tensor(np.array(a, copy=True, order="C"))
                    for a in args
                ],
            ):
                got = [_keep(t) for t in outs]
            else:
                plugin_ops.add(kind)
                got = _alone_on_cpu(model, index, args)
        for k, g in enumerate(got):
            values[node.get_friendly_name(), k] = g
    out = {}
    for result in model.get_results():
        v = result.input_value(0)
        for n in result.output(0).get_names() or v.get_names():
            out[n] = values[v.get_node().get_friendly_name(), v.get_index()]
    return out, plugin_ops


def reference_greedy(xml, prompt_ids, steps):
    model = ov.Core().read_model(str(xml))
    stateful_to_stateless_transformation(model)
    names = {p.get_any_name(): p.get_element_type().to_dtype() for p in model.inputs}
    pasts = {
        n: n.replace("past_key_values", "present") for n in names if n.startswith("past_key_values")
    }
    state = {}
    for n in pasts:
        ps = model.input(n).get_partial_shape()
        state[n] = np.zeros(
            [1 if i == 0 else (0 if d.is_dynamic else d.get_length()) for i, d in enumerate(ps)],
            names[n],
        )
    plugin_ops = set()
    ids = np.asarray(prompt_ids, np.int64).reshape(1, -1)
    past = 0
    tokens, logits = [], []
    for _ in range(steps):
        feeds = _feeds({k: v for k, v in names.items() if k not in pasts}, ids, past)
        out, ops = _layerwise(model, {**feeds, **state})
        plugin_ops |= ops
        state = {n: out[p] for n, p in pasts.items()}
        last = out["logits"][0, -1].astype(np.float32)
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        past += ids.shape[1]
        ids = np.array([[tokens[-1]]], np.int64)
    return np.array(tokens), np.stack(logits), sorted(plugin_ops)


def _as_compiled(xml: Path, config: dict) -> dict[str, str]:
    """The settings read back from the compiled model (with F32_CONFIG: the plugin took every
    key; KEY/VALUE_CACHE_PRECISION follow KV_CACHE_PRECISION)."""
    compiled = ov.Core().compile_model(str(xml), "CPU", config)
    keys = [*F32_CONFIG, "KEY_CACHE_PRECISION", "VALUE_CACHE_PRECISION"]
    return {key: str(compiled.get_property(key)) for key in keys}


def _scaled(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b)) / np.max(np.abs(b)))


def _margin(logits: np.ndarray) -> float:
    """The smallest gap between the largest and the second largest logit over the steps."""
    top = np.sort(logits, axis=1)
    return float(np.min(top[:, -1] - top[:, -2]))


def make(name: str) -> dict:
    family, _, quant, prompt_ids = MODELS[name]
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    source = _export(name, out)
    files = list(KEPT)
    prompt = {}
    if prompt_ids is None:
        tok = _tokenizer(FAMILIES[family][1]["vocab_size"])
        if name == "llama":
            tok.save(str(out / "tokenizer.json"))
            (out / "tokenizer_config.json").write_text(json.dumps({
                "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
                "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": False,
            }, indent=1) + "\n")  # fmt: skip
            files += ["tokenizer.json", "tokenizer_config.json"]
        prompt_ids = tok.encode(PROMPT).ids
        prompt = {"text": PROMPT, "tokenizer": "llama/tokenizer.json"}
    xml = out / "openvino_model.xml"
    tokens, logits = openvino_greedy(xml, prompt_ids, STEPS)
    eos = next(e for e in EOS_CANDIDATES if e not in tokens)
    gen_path = out / "generation_config.json"
    gen = json.loads(gen_path.read_text())
    gen.update(eos_token_id=eos, bos_token_id=gen.get("bos_token_id", 1), pad_token_id=eos)
    gen_path.write_text(json.dumps(gen, indent=2, sort_keys=True) + "\n")
    ref_tokens, ref_logits, plugin_ops = reference_greedy(xml, prompt_ids, STEPS)
    np.savez(
        out / "expected.npz",
        prompt_ids=np.array(prompt_ids, np.int64),
        tokens=tokens,
        logits=logits.astype(np.float32),
        reference_tokens=ref_tokens.astype(np.int64),
        reference_logits=ref_logits.astype(np.float32),
    )
    files.append("expected.npz")
    beams = {}
    if quant is None:
        # two rows (the prompt and its reverse); the cache rows swap at calls 3 and 9, and
        # row 0's history replaces row 1's at call 13: beam_idx's Gather is not the identity
        schedule = np.tile(np.arange(2, dtype=np.int32), (STEPS, 1))
        schedule[[3, 9]] = [1, 0]
        schedule[13] = [0, 0]
        two = np.array([prompt_ids, prompt_ids[::-1]], np.int64)
        beam_tokens, beam_logits = openvino_beams(xml, two, schedule)
        np.savez(
            out / "beams.npz",
            prompt_ids=two,
            beam_idx=schedule,
            tokens=beam_tokens,
            logits=beam_logits.astype(np.float32),
        )
        files.append("beams.npz")
        beams = {
            "beams": {
                "method": "tests/support/ov_stateful.openvino_beams, same config; file beams.npz",
                "prompt_ids": two.tolist(),
                "beam_idx": schedule.tolist(),
                "tokens": beam_tokens.tolist(),
            }
        }
    # How much the configuration matters: the same loop with other plugin settings.
    variants = {
        "2_threads": {**F32_CONFIG, "INFERENCE_NUM_THREADS": 2},
        "default_config": {},
        "f32_but_kv_cache_u8": {**F32_CONFIG, "KV_CACHE_PRECISION": "u8"},
        "f32_but_kv_cache_f16": {**F32_CONFIG, "KV_CACHE_PRECISION": "f16"},
    }
    if quant is not None:
        variants["f32_but_dynamic_quantization"] = {
            k: v for k, v in F32_CONFIG.items() if k != "DYNAMIC_QUANTIZATION_GROUP_SIZE"
        }
    compared = {}
    for label, config in variants.items():
        t, lg = openvino_greedy(xml, prompt_ids, STEPS, config=config)
        same = int(np.argmax(t != tokens)) if (t != tokens).any() else STEPS
        compared[label] = {
            "config": config,
            "same_tokens": bool((t == tokens).all()),
            "steps_before_first_different_token": same,
            "logits_scaled_error_over_those_steps": _scaled(lg[: max(same, 1)], logits[: max(same, 1)]),
        }  # fmt: skip
    sizes = {f: (out / f).stat().st_size for f in files}
    return {
        "source": source,
        "prompt": {"ids": [int(i) for i in prompt_ids], **prompt},
        "generation": {
            "eos_token_id": eos,
            "steps": STEPS,
            "tokens": [int(t) for t in tokens],
        },
        **_ir_facts(xml),
        "files": {
            f: {"bytes": sizes[f], "sha256": hashlib.sha256((out / f).read_bytes()).hexdigest()}
            for f in files
        },
        "expected": {
            "method": "cpu plugin, one infer request, reset_state(), greedy (tests/support/ov_stateful.py)",
            "openvino": ov.get_version(),
            "config": F32_CONFIG,
            "config_as_compiled": _as_compiled(xml, F32_CONFIG),
            "default_config_as_compiled_here": _as_compiled(xml, {}),
            "logits_shape": list(logits.shape),
            "logits_max_abs": float(np.max(np.abs(logits))),
            "smallest_top1_top2_gap": _margin(logits),
            "other_configs": compared,
        },
        **beams,
        "reference": {
            "method": (
                "stateful_to_stateless_transformation (the variables become past_key_values.* "
                "inputs and present.* outputs; beam_idx's Gather goes), then every op evaluated "
                "alone with Node.evaluate (OpenVINO's reference kernels) on static shapes, the "
                "KV cache carried by this script; npz keys reference_tokens, reference_logits"
            ),
            "ops_run_alone_in_cpu_plugin": plugin_ops,
            "boolean_BitwiseAnd": "numpy logical_and (core has no boolean evaluate for it)",
            "same_tokens_as_plugin": bool((ref_tokens == tokens).all()),
            "plugin_scaled_error": _scaled(logits, ref_logits),
        },
        "tolerance": {
            "plugin_rerun": PLUGIN_TOL,
            "plugin_rerun_reason": PLUGIN_WHY,
            "vs_reference": REF_TOL if quant is None else COMPRESSED_TOL,
            "vs_reference_reason": REF_WHY if quant is None else COMPRESSED_WHY,
        },
    }


def main(names: list[str]) -> None:
    import torch

    torch.set_num_threads(1)
    path = HERE / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else {}
    for name in names or list(MODELS):
        manifest[name] = make(name)
        print(name, manifest[name]["generation"], flush=True)
    manifest = {k: manifest[k] for k in MODELS if k in manifest}
    path.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
