"""Generation: a causal LM's next tokens, one run per token.

:func:`generate` takes a model (or an optimum-intel folder: ``openvino_model.xml``,
``config.json``, ``generation_config.json``) and the prompt's token ids: each step feeds
the tokens not yet seen and appends a token picked from the logits at the last
position, until ``max_new_tokens`` or the end-of-sequence id.  The pick is greedy (the
largest logit) unless ``do_sample``: then, as Hugging Face's ``generate`` does, the
logits are divided by ``temperature``, cut to the ``top_k`` largest, then to the
smallest set whose probability reaches ``top_p`` (never fewer than one token), and a
token is drawn from their softmax with a NumPy ``Generator`` seeded by ``seed``
(:func:`token_probabilities`, :func:`pick_token`).

What each step feeds, by input name, as optimum-intel's ``OVModelForCausalLM`` feeds
them (:func:`step_inputs`): ``input_ids``; ``attention_mask`` (ones over every token so
far); ``position_ids`` and ``cache_position`` (the new tokens' positions); ``beam_idx``
(``0..batch-1``: one sequence stays in place); ``token_type_ids`` (zeros).  A Mamba
export (``config.json``'s ``model_type`` names mamba) is fed as optimum's
``OVMambaForCausalLM`` feeds it: the mask covers only the new tokens, and the prompt's
``cache_position`` is ``0..conv_kernel-1``.  A stateful model keeps its cache in
variables, in one :class:`~irrun.core.state.Request` from the prompt to the last
token; a model that takes its cache as inputs (``past_key_values.N.key``,
``cache_params.past.ssm.N`` ...) is fed the ``present`` outputs of the step before; a
model with neither reruns the whole sequence at each step.  An input the model demands
that is none of these is refused before anything runs, as is a token id outside the
vocabulary.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IrrunError, Location, UsageError
from ..ir.element_types import ELEMENT_TYPES
from .model import Model, TensorSpec, load

# The inputs a step knows how to fill.
_FILLED = ("input_ids", "attention_mask", "position_ids", "beam_idx", "cache_position",
           "token_type_ids")  # fmt: skip

# Where a cache given as inputs comes back among the outputs, by the names optimum gives
# them: a transformer's keys and values, a Mamba's convolution and SSM states.
_CACHE_PREFIXES = (("past_key_values", "present"), ("cache_params.past", "cache_params.present"))

# Hugging Face's GenerationConfig defaults, for sampling that generation_config.json
# does not configure.
SAMPLING_DEFAULTS = {"temperature": 1.0, "top_k": 50, "top_p": 1.0}


@dataclass
class Generation:
    """What :func:`generate` made: the new tokens and how long they took.

    ``stopped`` is ``"eos"`` when the end-of-sequence id came (it is the last of
    ``tokens``) and ``"length"`` after ``max_new_tokens``.  ``logits`` holds each
    step's last-position logits when asked for.
    """

    prompt: list[int]
    tokens: list[int]
    stopped: str
    time_to_first_token: float  # seconds from the start to the first new token
    seconds: float  # the whole generation
    step_seconds: list[float] = field(default_factory=list)  # each step's run, in order
    logits: list[np.ndarray] | None = None
    # How tokens were picked: None for greedy, else temperature, top_k, top_p and seed
    # (the seed drawn when none was given, to rerun the same tokens).
    sampling: dict[str, Any] | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """The decoding rate after the first token (None with fewer than two tokens)."""
        later = self.seconds - self.time_to_first_token
        if len(self.tokens) < 2 or later <= 0:
            return None
        return (len(self.tokens) - 1) / later


@dataclass
class LanguageModel:
    """A model with what generation needs to know about it: where it came from, its
    vocabulary size and end-of-sequence ids (from the folder's config files, if any)."""

    model: Model
    folder: Path | None = None
    vocab_size: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    max_new_tokens: int | None = None  # generation_config.json's, if it says
    # Sampling's temperature, top_k, top_p: generation_config.json's, else Hugging Face's.
    sampling: dict[str, Any] = field(default_factory=lambda: dict(SAMPLING_DEFAULTS))
    conv_kernel: int | None = None  # a Mamba's (config.json), which its first step feeds


def open_language_model(source: str | Path | Model, **load_args: Any) -> LanguageModel:
    """A :class:`LanguageModel` from a Model, an ``.xml`` file, or an optimum-intel folder.

    A folder must hold ``openvino_model.xml``; ``config.json`` and
    ``generation_config.json``, when there, give the vocabulary size and the
    end-of-sequence ids.  ``load_args`` go to :func:`irrun.load`.
    """
    if isinstance(source, Model):
        model, folder = source, None
    else:
        path = Path(source)
        if path.is_dir():
            folder, xml = path, path / "openvino_model.xml"
            if not xml.is_file():
                found = sorted(p.name for p in path.glob("*.xml"))
                hint = f" (it has {', '.join(found)}: name one)" if found else ""
                raise IrrunError(f"no openvino_model.xml in this folder{hint}",
                                 Location(str(path)))  # fmt: skip
        elif path.suffix == ".xml" or path.is_file():
            folder, xml = None, path
            if (path.parent / "config.json").is_file() and path.name == "openvino_model.xml":
                folder = path.parent
        else:
            raise IrrunError("no such file or folder", Location(str(path)))
        model = load(xml, **load_args)
    lm = LanguageModel(model, folder)
    if folder is not None:
        config = _read_json(folder / "config.json")
        gen = _read_json(folder / "generation_config.json")
        vocab = config.get("vocab_size")
        lm.vocab_size = vocab if isinstance(vocab, int) and vocab > 0 else None
        eos = gen.get("eos_token_id", config.get("eos_token_id"))
        ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise IrrunError(f"eos_token_id must be an id or a list of ids, not {eos!r}",
                             Location(str(folder / "generation_config.json")))  # fmt: skip
        lm.eos_token_ids = tuple(ids)
        n = gen.get("max_new_tokens")
        lm.max_new_tokens = n if isinstance(n, int) and n > 0 else None
        for key in SAMPLING_DEFAULTS:
            value = gen.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                lm.sampling[key] = value
        kernel = config.get("conv_kernel")
        if "mamba" in str(config.get("model_type", "")) and isinstance(kernel, int):
            lm.conv_kernel = kernel
    if lm.vocab_size is None:  # the logits' last dim, where the IR fixes it
        shape = _logits(model).shape
        if shape and isinstance(shape[-1], int):
            lm.vocab_size = shape[-1]
    return lm


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IrrunError(f"cannot read it as JSON ({exc})", Location(str(path))) from None
    if not isinstance(data, dict):
        raise IrrunError("expected a JSON object", Location(str(path)))
    return data


def _logits(model: Model) -> TensorSpec:
    for spec in model.outputs:
        if spec.name == "logits" or "logits" in spec.names:
            return spec
    if len(model.outputs) == 1:
        return model.outputs[0]
    names = ", ".join(s.name for s in model.outputs)
    raise IrrunError(f"no output named 'logits' to pick tokens from (outputs: {names})",
                     Location(str(model.path)))  # fmt: skip


def _cache_inputs(model: Model) -> dict[str, str]:
    """The cache a stateless export takes as inputs: input name -> the output that gives
    its next value (``past_key_values.0.key`` -> ``present.0.key``,
    ``cache_params.past.ssm.0`` -> ``cache_params.present.ssm.0``)."""
    outputs = {n for s in model.outputs for n in (s.name, *s.names)}
    pairs = {}
    for spec in model.inputs:
        for past, present in _CACHE_PREFIXES:
            if spec.name.startswith(past):
                out = present + spec.name[len(past) :]
                if out not in outputs:
                    raise IrrunError(f"input '{spec.name}' is a cache, but no output '{out}' "
                                     "gives its next value", Location(str(model.path)))  # fmt: skip
                pairs[spec.name] = out
    return pairs


def _dtype(spec: TensorSpec) -> np.dtype:
    et = ELEMENT_TYPES.get(spec.element_type)
    return np.dtype(np.int64) if et is None else et.dtype


def _empty_cache(model: Model, spec: TensorSpec, batch: int) -> np.ndarray:
    """A cache input before the first token: batch ``batch``, its sequence dim 0."""
    if spec.shape is None:
        raise IrrunError(f"cache input '{spec.name}' has no known rank", Location(str(model.path)))
    dims = [batch if i == 0 else (d if isinstance(d, int) else 0)
            for i, d in enumerate(spec.shape)]  # fmt: skip
    return np.zeros(dims, _dtype(spec))


def step_inputs(
    specs: dict[str, TensorSpec],
    fresh: Sequence[int],
    past: int,
    conv_kernel: int | None = None,
) -> dict[str, np.ndarray]:
    """What one step feeds, besides a cache given as inputs: the inputs of ``specs`` that
    optimum-intel fills, for the token ids ``fresh`` after ``past`` tokens already fed.

    ``conv_kernel`` (a Mamba's) feeds as optimum's ``OVMambaForCausalLM`` does.

    >>> specs = {n: TensorSpec(n, None, "i64") for n in
    ...          ("input_ids", "attention_mask", "position_ids", "cache_position")}
    >>> for name, value in step_inputs(specs, [7], 3).items():
    ...     print(name, value.tolist())
    input_ids [[7]]
    attention_mask [[1, 1, 1, 1]]
    position_ids [[3]]
    cache_position [3]
    >>> for name, value in step_inputs(specs, [5, 6], 0, conv_kernel=4).items():
    ...     print(name, value.tolist())
    input_ids [[5, 6]]
    attention_mask [[1, 1]]
    position_ids [[0, 1]]
    cache_position [0, 1, 2, 3]
    """
    n = len(fresh)
    positions = np.arange(past, past + n)
    feeds = {"input_ids": np.array([list(fresh)], _dtype(specs["input_ids"]))}
    if "attention_mask" in specs:
        # A Mamba multiplies the new tokens' states by the mask: it covers those alone.
        width = n if conv_kernel is not None else past + n
        feeds["attention_mask"] = np.ones((1, width), _dtype(specs["attention_mask"]))
    if "position_ids" in specs:
        feeds["position_ids"] = positions.astype(_dtype(specs["position_ids"]))[None]
    if "cache_position" in specs:
        # optimum's Mamba fills the whole convolution window at the first step.
        cache = np.arange(conv_kernel) if conv_kernel is not None and past == 0 else positions
        feeds["cache_position"] = cache.astype(_dtype(specs["cache_position"]))
    if "beam_idx" in specs:
        feeds["beam_idx"] = np.zeros(1, _dtype(specs["beam_idx"]))
    if "token_type_ids" in specs:
        feeds["token_type_ids"] = np.zeros((1, n), _dtype(specs["token_type_ids"]))
    return feeds


def token_probabilities(
    logits: np.ndarray,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float = 1.0,
) -> np.ndarray:
    """The probability of each token that sampling draws from, as Hugging Face's
    ``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` make it:
    the logits divided by ``temperature``; all but the ``top_k`` largest dropped (ties
    with the k-th kept; None or 0 keeps all); then, from the least likely up, the tokens
    whose probabilities add up to at most ``1 - top_p`` dropped, the most likely always
    kept; the softmax of what is left (float64).

    >>> token_probabilities(np.array([1.0, 3.0, 2.0]), top_k=2).round(3).tolist()
    [0.0, 0.731, 0.269]
    >>> token_probabilities(np.array([1.0, 3.0, 2.0]), top_p=0.5).tolist()
    [0.0, 1.0, 0.0]
    """
    scores = np.asarray(logits, np.float64).reshape(-1) / temperature
    if top_k:
        k = min(top_k, scores.size)
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        scores = np.where(scores < kth, -np.inf, scores)
    if top_p < 1.0:
        order = np.argsort(scores, kind="stable")  # ascending, as the warper sorts
        cumulative = np.cumsum(_softmax(scores[order]))
        drop = cumulative <= 1 - top_p
        drop[-1] = False
        scores = scores.copy()
        scores[order[drop]] = -np.inf
    return _softmax(scores)


def _softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max())
    return e / e.sum()


def pick_token(probabilities: np.ndarray, rng: np.random.Generator) -> int:
    """A token drawn from ``probabilities`` with one ``rng.random()``: the first whose
    cumulative probability exceeds it (a token of probability 0 is never drawn)."""
    cumulative = np.cumsum(probabilities)
    index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return min(index, int(np.flatnonzero(probabilities)[-1]))


def sampling_settings(
    lm: LanguageModel,
    do_sample: bool,
    temperature: float | None,
    top_k: int | None,
    top_p: float | None,
    seed: int | None,
) -> dict[str, Any] | None:
    """How :func:`generate` picks tokens: None for greedy, else the temperature, top_k,
    top_p and seed it samples with (the defaults filled in, a seed drawn if none is
    given); a setting out of range, or one given without ``do_sample``, is a UsageError."""
    given = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "seed": seed}
    if not do_sample:
        named = [k for k, v in given.items() if v is not None]
        if named:
            verb = "applies" if len(named) == 1 else "apply"
            raise UsageError(f"{', '.join(named)} only {verb} when sampling: add do_sample "
                             "(--do-sample)")  # fmt: skip
        return None
    chosen = {k: given[k] if given[k] is not None else lm.sampling[k] for k in SAMPLING_DEFAULTS}
    if not chosen["temperature"] > 0:
        raise UsageError(f"temperature must be above 0, not {chosen['temperature']} "
                         "(greedy decoding is without do_sample)")  # fmt: skip
    if not 0 <= chosen["top_p"] <= 1:
        raise UsageError(f"top_p must be between 0 and 1, not {chosen['top_p']}")
    if int(chosen["top_k"]) != chosen["top_k"] or chosen["top_k"] < 0:
        raise UsageError(f"top_k must be a whole number, 0 or more, not {chosen['top_k']}")
    chosen["top_k"] = int(chosen["top_k"])
    chosen["seed"] = secrets.randbits(32) if seed is None else int(seed)
    return chosen


def generate(
    source: str | Path | Model | LanguageModel,
    input_ids: Sequence[int],
    max_new_tokens: int | None = None,
    eos_token_id: int | Sequence[int] | None = None,
    *,
    ignore_eos: bool = False,
    keep_logits: bool = False,
    on_token: Callable[[int], None] | None = None,
    do_sample: bool = False,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
) -> Generation:
    """Decode from the prompt ``input_ids``; see the module's docstring.

    ``source`` is a model, an ``.xml`` file or an optimum-intel folder.
    ``max_new_tokens`` defaults to the folder's ``generation_config.json``, else 16;
    ``eos_token_id`` to its end-of-sequence ids (``ignore_eos`` decodes on past them).
    ``on_token`` is called with each new id as it comes.  Decoding is greedy unless
    ``do_sample``; ``temperature``, ``top_k`` and ``top_p`` then default to
    ``generation_config.json``'s, else to Hugging Face's (1.0, 50, 1.0), and ``seed``
    to a random one (kept in :attr:`Generation.sampling`).  Giving any of them without
    ``do_sample`` is an error, not silently ignored.

    >>> g = generate("tests/stateful/llama", [293, 360, 361, 354, 500, 344], max_new_tokens=4)
    >>> g.tokens, g.stopped  # OpenVINO's tokens (tests/stateful/manifest.json)
    ([487, 426, 343, 28], 'length')
    >>> round(g.time_to_first_token, 1) >= 0 and g.tokens_per_second > 0
    True
    >>> g = generate("tests/stateful/llama", [293, 360], 4, do_sample=True, top_k=1)
    >>> g.tokens == generate("tests/stateful/llama", [293, 360], 4).tokens  # top_k=1 is greedy
    True
    """
    lm = source if isinstance(source, LanguageModel) else open_language_model(source)
    model = lm.model
    where = Location(str(model.path))
    prompt = [int(i) for i in input_ids]
    if not prompt:
        raise UsageError("the prompt has no token ids")
    if lm.vocab_size is not None:
        bad = [i for i in prompt if not 0 <= i < lm.vocab_size]
        if bad:
            raise IrrunError(f"token id {bad[0]} is outside the vocabulary "
                             f"(0..{lm.vocab_size - 1})", where)  # fmt: skip
    if max_new_tokens is None:
        max_new_tokens = lm.max_new_tokens or 16
    if max_new_tokens < 1:
        raise UsageError(f"max_new_tokens must be at least 1, not {max_new_tokens}")
    sampling = sampling_settings(lm, do_sample, temperature, top_k, top_p, seed)
    rng = np.random.default_rng(sampling["seed"]) if sampling is not None else None
    if eos_token_id is None:
        eos = set(lm.eos_token_ids)
    else:
        eos = {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id)
    if ignore_eos:
        eos = set()
    specs = {s.name: s for s in model.inputs}
    cache = _cache_inputs(model)
    unknown = [n for n in specs if n not in _FILLED and n not in cache]
    if unknown or "input_ids" not in specs:
        what = (f"input{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}" if unknown
                else "no input 'input_ids'")  # fmt: skip
        raise IrrunError(f"generate cannot feed this model: it has {what} (a causal LM's "
                         f"inputs are {', '.join(_FILLED)}, and past_key_values.* or "
                         "cache_params.past.* for a cache given as inputs)", where)  # fmt: skip
    logits_name = _logits(model).name
    stateful = bool(model.variables)
    request = model.create_request() if stateful else None
    feeds_cache: dict[str, np.ndarray] = {n: _empty_cache(model, specs[n], 1) for n in cache}
    incremental = stateful or bool(cache)

    sequence = list(prompt)
    new: list[int] = []
    kept: list[np.ndarray] | None = [] if keep_logits else None
    steps: list[float] = []
    start = time.perf_counter()
    first = 0.0
    stopped = "length"
    seen = 0  # tokens the model has been fed (its cache holds them)
    while len(new) < max_new_tokens:
        fresh = sequence[seen:] if incremental else sequence
        offset = seen if incremental else 0
        feeds = step_inputs(specs, fresh, offset, lm.conv_kernel)
        feeds.update(feeds_cache)
        wanted = [logits_name, *cache.values()]
        t0 = time.perf_counter()
        outs = (request.run(feeds, wanted) if request is not None
                else model.run(feeds, wanted))  # fmt: skip
        seen = len(sequence)
        logits = outs[logits_name]
        if logits.ndim < 2 or logits.shape[0] != 1:
            raise IrrunError(f"output '{logits_name}' has shape {list(logits.shape)}, expected "
                             "[1, tokens, vocabulary]", where)  # fmt: skip
        last = logits.reshape(1, -1, logits.shape[-1])[0, -1]
        if sampling is None or rng is None:
            token = int(np.argmax(last))
        else:
            probabilities = token_probabilities(last, sampling["temperature"],
                                                sampling["top_k"], sampling["top_p"])  # fmt: skip
            token = pick_token(probabilities, rng)
        steps.append(time.perf_counter() - t0)
        if kept is not None:
            kept.append(last.copy())
        for name, out in cache.items():
            feeds_cache[name] = outs[out]
        if not new:
            first = time.perf_counter() - start
        new.append(token)
        sequence.append(token)
        if on_token is not None:
            on_token(token)
        if token in eos:
            stopped = "eos"
            break
    return Generation(prompt, new, stopped, first, time.perf_counter() - start, steps, kept,
                      sampling)  # fmt: skip
