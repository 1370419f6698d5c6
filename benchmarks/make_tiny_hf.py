"""Tiny randomly initialised Hugging Face models as static OpenVINO IRs, for
benchmarks/tiny_transformers.py (issue 28's "tiny transformers" class).

    python -m venv /work/hfvenv
    /work/hfvenv/bin/pip install torch==2.14.1 "transformers>=5.2,<5.3" openvino==2026.4.1
    CI=true /work/hfvenv/bin/python benchmarks/make_tiny_hf.py            # every architecture
    CI=true /work/hfvenv/bin/python benchmarks/make_tiny_hf.py bert t5    # some

Each architecture of ``ARCHS`` is built from its configuration alone (hidden 32, 2
layers, 4 heads of 8, a vocabulary of 128; vision models on 32x32 or 64x64 images,
audio on short clips), its weights drawn with a fixed seed, and converted by
``ov.convert_model`` from example inputs (batch 1, sequence 16), the shapes then made
static.  Written to ``benchmarks/models/tiny_hf/NAME.xml`` (gitignored) with the
inputs in ``NAME.inputs.npz``.  An architecture that fails to build or convert is
skipped with the reason printed; the run ends with the count of each.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("CI", "true")  # no OpenVINO telemetry

import numpy as np

OUT = Path(__file__).resolve().parent / "models" / "tiny_hf"
SEQ = 16
VOCAB = 128

# The same tiny sizes under every name a configuration may use for them; a configuration
# keeps a name it does not know as an unused attribute.
TEXT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=8, intermediate_size=64, max_position_embeddings=64,
            type_vocab_size=2, embedding_size=32, use_cache=False, pad_token_id=0,
            bos_token_id=1, eos_token_id=2, initializer_range=0.2)  # fmt: skip
SEQ2SEQ = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
               encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
               decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False, pad_token_id=0,
               bos_token_id=1, eos_token_id=2, decoder_start_token_id=0, init_std=0.2)  # fmt: skip
T5 = dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
          num_heads=4, relative_attention_num_buckets=8, use_cache=False,
          decoder_start_token_id=0)  # fmt: skip
VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           image_size=32, patch_size=4, num_channels=3)  # fmt: skip
WAV = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           conv_dim=(32, 32), conv_kernel=(10, 3), conv_stride=(5, 2),
           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, vocab_size=VOCAB,
           do_stable_layer_norm=False, mask_time_prob=0.0)  # fmt: skip
HIER = dict(embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4, image_size=32,
            patch_size=4, num_channels=3)  # fmt: skip
CONV = dict(hidden_sizes=[16, 32], depths=[1, 1], num_channels=3, embedding_size=16)


# name: (model_type, config keywords, inputs)
# inputs: "text" (input_ids, attention_mask), "ids" (input_ids only), "seq2seq" (and
# decoder_input_ids), ("image", size), ("audio", samples), ("features", (mel, frames)).
ARCHS: dict[str, tuple[str, dict, object]] = {
    # encoders
    "bert": ("bert", TEXT, "text"),
    "roberta": ("roberta", TEXT, "text"),
    "distilbert": ("distilbert", dict(TEXT, dim=32, n_layers=2, n_heads=4, hidden_dim=64), "text"),
    "albert": ("albert", TEXT, "text"),
    "electra": ("electra", TEXT, "text"),
    "deberta": ("deberta", TEXT, "text"),
    "deberta_v2": ("deberta-v2", TEXT, "text"),
    "mpnet": ("mpnet", TEXT, "text"),
    "xlm_roberta": ("xlm-roberta", TEXT, "text"),
    "camembert": ("camembert", TEXT, "text"),
    "convbert": ("convbert", TEXT, "text"),
    "squeezebert": ("squeezebert", TEXT, "text"),
    "mobilebert": ("mobilebert", dict(TEXT, embedding_size=16, intra_bottleneck_size=32,
                                      num_feedforward_networks=1), "text"),
    "ernie": ("ernie", TEXT, "text"),
    "megatron_bert": ("megatron-bert", TEXT, "text"),
    "roformer": ("roformer", TEXT, "text"),
    "rembert": ("rembert", dict(TEXT, input_embedding_size=32, output_embedding_size=32), "text"),
    "esm": ("esm", dict(TEXT, position_embedding_type="rotary", mask_token_id=3), "text"),
    "data2vec_text": ("data2vec-text", TEXT, "text"),
    "big_bird": ("big_bird", dict(TEXT, attention_type="original_full"), "text"),
    "nystromformer": ("nystromformer", dict(TEXT, num_landmarks=4, segment_means_seq_len=SEQ),
                      "text"),
    "fnet": ("fnet", dict(TEXT, use_tpu_fourier_optimizations=False), "ids"),
    "xlm": ("xlm", dict(TEXT, emb_dim=32, n_layers=2, n_heads=4), "text"),
    "modernbert": ("modernbert", dict(TEXT, global_attn_every_n_layers=1, local_attention=16),
                   "text"),
    "canine": ("canine", dict(TEXT, num_hash_buckets=64, downsampling_rate=4), "text"),
    # decoders
    "gpt2": ("gpt2", dict(TEXT, n_embd=32, n_layer=2, n_head=4, n_positions=64), "text"),
    "gpt_neo": ("gpt_neo", dict(TEXT, num_layers=2, attention_types=[[["global", "local"], 1]],
                                window_size=8),
                "text"),
    "gpt_neox": ("gpt_neox", TEXT, "text"),
    "gptj": ("gptj", dict(TEXT, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64),
             "text"),
    "codegen": ("codegen", dict(TEXT, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                                n_positions=64, n_ctx=64), "text"),
    "opt": ("opt", dict(TEXT, ffn_dim=64, word_embed_proj_dim=32), "text"),
    "bloom": ("bloom", dict(TEXT, n_layer=2, n_head=4), "text"),
    "llama": ("llama", TEXT, "text"),
    "mistral": ("mistral", TEXT, "text"),
    "qwen2": ("qwen2", TEXT, "text"),
    "qwen3": ("qwen3", TEXT, "text"),
    "phi": ("phi", TEXT, "text"),
    "phi3": ("phi3", TEXT, "text"),
    "gemma": ("gemma", TEXT, "text"),
    "gemma2": ("gemma2", dict(TEXT, sliding_window=8), "text"),
    "gemma3_text": ("gemma3_text", dict(TEXT, sliding_window=8), "text"),
    "falcon": ("falcon", dict({k: v for k, v in TEXT.items() if k != "head_dim"},
                              new_decoder_architecture=True, num_kv_heads=2), "text"),
    "stablelm": ("stablelm", TEXT, "text"),
    "starcoder2": ("starcoder2", TEXT, "text"),
    "olmo": ("olmo", TEXT, "text"),
    "olmo2": ("olmo2", TEXT, "text"),
    "cohere": ("cohere", TEXT, "text"),
    "granite": ("granite", TEXT, "text"),
    "biogpt": ("biogpt", TEXT, "text"),
    "xglm": ("xglm", dict(TEXT, d_model=32, num_layers=2, ffn_dim=64), "text"),
    "mpt": ("mpt", dict(TEXT, d_model=32, n_layers=2, n_heads=4, expansion_ratio=2), "text"),
    "persimmon": ("persimmon", TEXT, "text"),
    "nemotron": ("nemotron", TEXT, "text"),
    "helium": ("helium", TEXT, "text"),
    "glm": ("glm", TEXT, "text"),
    "mixtral": ("mixtral", dict(TEXT, num_local_experts=4, num_experts_per_tok=2), "text"),
    "qwen2_moe": ("qwen2_moe", dict(TEXT, num_experts=4, num_experts_per_tok=2,
                                    moe_intermediate_size=32,
                                    shared_expert_intermediate_size=32), "text"),
    "olmoe": ("olmoe", dict(TEXT, num_experts=4, num_experts_per_tok=2), "text"),
    # encoder-decoders
    "t5": ("t5", T5, "seq2seq"),
    "mt5": ("mt5", T5, "seq2seq"),
    "umt5": ("umt5", T5, "seq2seq"),
    "bart": ("bart", SEQ2SEQ, "seq2seq"),
    "mbart": ("mbart", SEQ2SEQ, "seq2seq"),
    "pegasus": ("pegasus", SEQ2SEQ, "seq2seq"),
    "marian": ("marian", SEQ2SEQ, "seq2seq"),
    "blenderbot": ("blenderbot", SEQ2SEQ, "seq2seq"),
    "blenderbot_small": ("blenderbot-small", SEQ2SEQ, "seq2seq"),
    "m2m_100": ("m2m_100", SEQ2SEQ, "seq2seq"),
    "plbart": ("plbart", SEQ2SEQ, "seq2seq"),
    "led": ("led", dict(SEQ2SEQ, max_encoder_position_embeddings=64,
                        max_decoder_position_embeddings=64, attention_window=[16, 16]),
            "seq2seq"),
    # vision
    "vit": ("vit", VIT, ("image", 32)),
    "deit": ("deit", VIT, ("image", 32)),
    "beit": ("beit", dict(VIT, use_relative_position_bias=True), ("image", 32)),
    "data2vec_vision": ("data2vec-vision", VIT, ("image", 32)),
    "dinov2": ("dinov2", VIT, ("image", 32)),
    "vit_msn": ("vit_msn", VIT, ("image", 32)),
    "yolos": ("yolos", dict(VIT, image_size=[32, 32], num_detection_tokens=4), ("image", 32)),
    "swin": ("swin", HIER, ("image", 32)),
    "swinv2": ("swinv2", HIER, ("image", 32)),
    "convnext": ("convnext", dict(CONV, num_stages=2), ("image", 32)),
    "convnextv2": ("convnextv2", dict(CONV, num_stages=2), ("image", 32)),
    "resnet": ("resnet", CONV, ("image", 32)),
    "regnet": ("regnet", dict(CONV, groups_width=8), ("image", 32)),
    "mobilevit": ("mobilevit", dict(image_size=32, patch_size=2, hidden_sizes=[16, 24, 32],
                                    neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 48],
                                    num_attention_heads=2), ("image", 32)),
    "levit": ("levit", dict(image_size=32, hidden_sizes=[32, 48, 64], num_attention_heads=[2, 2, 2],
                            depths=[1, 1, 1], key_dim=[8, 8, 8]), ("image", 32)),
    "poolformer": ("poolformer", dict(hidden_sizes=[16, 16, 32, 32], depths=[1, 1, 1, 1]),
                   ("image", 32)),
    "segformer": ("segformer", dict(hidden_sizes=[16, 16, 32, 32], depths=[1, 1, 1, 1],
                                    num_attention_heads=[1, 1, 2, 2], decoder_hidden_size=32),
                  ("image", 32)),
    "pvt_v2": ("pvt_v2", dict(hidden_sizes=[16, 16, 32, 32], depths=[1, 1, 1, 1],
                              num_attention_heads=[1, 1, 2, 2]), ("image", 32)),
    "focalnet": ("focalnet", dict(embed_dim=16, depths=[1, 1], image_size=32, patch_size=4),
                 ("image", 32)),
    "efficientnet": ("efficientnet", dict(image_size=32, width_coefficient=0.25,
                                          depth_coefficient=0.25, hidden_dim=64), ("image", 32)),
    "bit": ("bit", dict(CONV, layer_type="bottleneck", num_groups=8), ("image", 32)),
    "hiera": ("hiera", dict(embed_dim=16, image_size=[64, 64], patch_size=[7, 7],
                            patch_stride=[4, 4], patch_padding=[3, 3], depths=[1, 1],
                            num_heads=[1, 2], masked_unit_size=[8, 8], num_query_pool=1),
              ("image", 64)),
    # audio
    "wav2vec2": ("wav2vec2", WAV, ("audio", 800)),
    "hubert": ("hubert", WAV, ("audio", 800)),
    "wavlm": ("wavlm", dict(WAV, num_buckets=16, max_bucket_distance=32), ("audio", 800)),
    "data2vec_audio": ("data2vec-audio", dict(WAV, conv_pos_kernel_size=5,
                                              num_conv_pos_embeddings=5), ("audio", 800)),
    "unispeech": ("unispeech", WAV, ("audio", 800)),
    "unispeech_sat": ("unispeech-sat", WAV, ("audio", 800)),
    "sew": ("sew", dict(WAV, squeeze_factor=2), ("audio", 800)),
    "wav2vec2_conformer": ("wav2vec2-conformer", dict(WAV, conv_depthwise_kernel_size=3),
                           ("audio", 800)),
    "whisper": ("whisper", dict(SEQ2SEQ, num_mel_bins=16, max_source_positions=16,
                                max_target_positions=64), ("features", (16, 32))),
    "speech_to_text": ("speech_to_text", dict(SEQ2SEQ, input_feat_per_channel=16,
                                              num_conv_layers=2, conv_channels=32,
                                              max_source_positions=64),
                       ("speech", (32, 16))),
    "audio_spectrogram_transformer": ("audio-spectrogram-transformer",
                                      dict(VIT, num_mel_bins=16, max_length=32, patch_size=8,
                                           frequency_stride=8, time_stride=8),
                                      ("spectrogram", (32, 16))),
}


def _inputs(kind, rng) -> dict[str, np.ndarray]:
    ids = rng.integers(3, VOCAB, size=(1, SEQ), dtype=np.int64)
    mask = np.ones((1, SEQ), np.int64)
    if kind == "ids":
        return {"input_ids": ids}
    if kind == "text":
        return {"input_ids": ids, "attention_mask": mask}
    if kind == "seq2seq":
        dec = rng.integers(3, VOCAB, size=(1, SEQ), dtype=np.int64)
        return {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": dec}
    what, size = kind
    if what == "image":
        return {"pixel_values": rng.standard_normal((1, 3, size, size)).astype(np.float32)}
    if what == "audio":
        return {"input_values": rng.standard_normal((1, size)).astype(np.float32)}
    if what == "features":  # whisper: mel bins x frames, and a decoder prompt with its mask
        dec = rng.integers(3, VOCAB, size=(1, 4), dtype=np.int64)
        return {"input_features": rng.standard_normal((1, *size)).astype(np.float32),
                "decoder_input_ids": dec, "decoder_attention_mask": np.ones_like(dec)}
    if what == "speech":  # speech_to_text: frames x features
        dec = rng.integers(3, VOCAB, size=(1, 4), dtype=np.int64)
        return {"input_features": rng.standard_normal((1, *size)).astype(np.float32),
                "attention_mask": np.ones((1, size[0]), np.int64), "decoder_input_ids": dec}
    if what == "spectrogram":
        return {"input_values": rng.standard_normal((1, *size)).astype(np.float32)}
    raise ValueError(kind)


def _moe(config) -> dict:
    """Keywords that make a mixture of experts traceable: the batched expert products
    instead of the loop over the experts a token picked (whose trip count is data)."""
    names = ("num_local_experts", "num_experts")
    return {"experts_implementation": "batched_mm"} if any(
        getattr(config, n, 0) for n in names) else {}


def _name_inputs(converted, model, feeds: dict) -> None:
    """Give the IR's inputs the names of the feeds they take.  The converter names an
    input after its argument only where it can see the argument's name (a decorated
    ``forward`` hides some); the inputs come in the order of ``forward``'s parameters."""
    import inspect

    ports = list(converted.inputs)
    if len(ports) != len(feeds):
        raise RuntimeError(f"the IR has {len(ports)} inputs for {len(feeds)} feeds")
    order = [p for p in inspect.signature(model.forward).parameters if p in feeds]
    order += [n for n in feeds if n not in order]
    known = {p.get_any_name() for p in ports if p.get_names()} & set(feeds)
    rest = iter(n for n in order if n not in known)
    for port in ports:
        if not (port.get_names() and port.get_any_name() in feeds):
            port.get_tensor().set_names({next(rest)})


def convert(name: str, model_type: str, kwargs: dict, kind) -> Path:
    import openvino as ov
    import torch
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(0)
    config = AutoConfig.for_model(model_type, **kwargs)
    extra = _moe(config)
    try:
        model = AutoModel.from_config(config, attn_implementation="eager", **extra)
    except (TypeError, ValueError):
        model = AutoModel.from_config(config, **extra)
    model.eval()
    feeds = _inputs(kind, np.random.default_rng(0))
    example = {k: torch.from_numpy(v) for k, v in feeds.items()}
    with torch.no_grad():
        converted = ov.convert_model(model, example_input=example)
    _name_inputs(converted, model, feeds)
    names = [port.get_any_name() for port in converted.inputs]
    converted.reshape({n: list(feeds[n].shape) for n in names})
    path = OUT / f"{name}.xml"
    ov.save_model(converted, path, compress_to_fp16=False)
    np.savez(path.with_suffix(".inputs.npz"), **feeds)
    return path


def _reason(e: BaseException) -> str:
    """The first line of ``e`` and of the error that caused it (the converter wraps the
    tracer's error in its own)."""
    lines = []
    while e is not None and len(lines) < 2:
        text = str(e).strip().splitlines()
        lines.append(f"{type(e).__name__}: {text[0][:160] if text else ''}")
        e = e.__cause__ or e.__context__
    return " <- ".join(lines)


def main(argv: list[str]) -> int:
    import openvino as ov
    import torch
    import transformers

    torch.set_num_threads(1)
    wanted = argv or list(ARCHS)
    unknown = [n for n in wanted if n not in ARCHS]
    if unknown:
        sys.exit(f"unknown architectures {unknown}; known: {' '.join(ARCHS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"openvino {ov.get_version().split('-')[0]}; writing {OUT}")
    made, skipped = [], []
    for name in wanted:
        model_type, kwargs, kind = ARCHS[name]
        start = time.perf_counter()
        try:
            path = convert(name, model_type, kwargs, kind)
        except Exception as e:
            reason = _reason(e)
            skipped.append(name)
            print(f"  skip {name:30s} {reason}", flush=True)
            if os.environ.get("TINY_HF_TRACE"):
                traceback.print_exc()
            continue
        made.append(name)
        size = path.with_suffix(".bin").stat().st_size
        print(f"  made {name:30s} {size / 1024:7.0f} KiB  {time.perf_counter() - start:5.1f} s",
              flush=True)
    print(f"{len(made)} made, {len(skipped)} skipped: {' '.join(skipped) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
