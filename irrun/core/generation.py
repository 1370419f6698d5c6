"""Greedy generation: a causal LM's next tokens, one run per token.

:func:`generate` takes a model (or an optimum-intel folder: ``openvino_model.xml``,
``config.json``, ``generation_config.json``) and the prompt's token ids, and decodes
greedily: each step feeds the tokens not yet seen and appends the id of the largest
logit at the last position, until ``max_new_tokens`` or the end-of-sequence id.

What each step feeds, by input name, as optimum-intel's exports name them:
``input_ids``; ``attention_mask`` (ones over every token so far); ``position_ids``
(the new tokens' positions); ``beam_idx`` (``0..batch-1``: greedy keeps its one
sequence in place).  A stateful model keeps its KV cache in variables, in one
:class:`~irrun.core.state.Request` from the prompt to the last token; a model that
takes its cache as inputs (``past_key_values.N.key`` ...) is fed the ``present.N.key``
outputs of the step before; a model with neither reruns the whole sequence at each
step.  An input the model demands that is none of these is refused before anything
runs, as is a token id outside the vocabulary.
"""

from __future__ import annotations

import json
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
_FILLED = ("input_ids", "attention_mask", "position_ids", "beam_idx")


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
    """The KV cache a stateless export takes as inputs: input name -> the output that
    gives its next value (``past_key_values.0.key`` -> ``present.0.key``)."""
    outputs = {n for s in model.outputs for n in (s.name, *s.names)}
    pairs = {}
    for spec in model.inputs:
        if spec.name.startswith("past_key_values"):
            out = "present" + spec.name[len("past_key_values"):]
            if out not in outputs:
                raise IrrunError(f"input '{spec.name}' is a KV cache, but no output '{out}' "
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


def generate(
    source: str | Path | Model | LanguageModel,
    input_ids: Sequence[int],
    max_new_tokens: int | None = None,
    eos_token_id: int | Sequence[int] | None = None,
    *,
    ignore_eos: bool = False,
    keep_logits: bool = False,
    on_token: Callable[[int], None] | None = None,
) -> Generation:
    """Decode greedily from the prompt ``input_ids``; see the module's docstring.

    ``source`` is a model, an ``.xml`` file or an optimum-intel folder.
    ``max_new_tokens`` defaults to the folder's ``generation_config.json``, else 16;
    ``eos_token_id`` to its end-of-sequence ids (``ignore_eos`` decodes on past them).
    ``on_token`` is called with each new id as it comes.

    >>> g = generate("tests/stateful/llama", [293, 360, 361, 354, 500, 344], max_new_tokens=4)
    >>> g.tokens, g.stopped  # OpenVINO's tokens (tests/stateful/manifest.json)
    ([487, 426, 343, 28], 'length')
    >>> round(g.time_to_first_token, 1) >= 0 and g.tokens_per_second > 0
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
                         f"inputs are {', '.join(_FILLED)}, and past_key_values.* for a "
                         "cache given as inputs)", where)  # fmt: skip
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
        feeds: dict[str, np.ndarray] = {
            "input_ids": np.array([fresh], _dtype(specs["input_ids"]))}
        if "attention_mask" in specs:
            feeds["attention_mask"] = np.ones((1, len(sequence)), _dtype(specs["attention_mask"]))
        if "position_ids" in specs:
            positions = np.arange(offset, offset + len(fresh))
            feeds["position_ids"] = positions.astype(_dtype(specs["position_ids"]))[None]
        if "beam_idx" in specs:
            feeds["beam_idx"] = np.zeros(1, _dtype(specs["beam_idx"]))
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
        token = int(np.argmax(last))
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
    return Generation(prompt, new, stopped, first, time.perf_counter() - start, steps, kept)
