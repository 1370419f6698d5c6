"""``irrun generate``: greedy decoding of a causal LM, token by token.

    irrun generate tests/stateful/llama --input-ids 1,2,3 --max-new-tokens 8
    irrun generate FOLDER --prompt "Once upon a time" --json

The model is an optimum-intel folder (``openvino_model.xml`` with ``config.json`` and
``generation_config.json``, which give the vocabulary and the end-of-sequence ids) or
an ``.xml``.  ``--prompt`` needs the folder's ``tokenizer.json`` and the small
``tokenizers`` library (``pip install 'irrun[text]'``); ``--input-ids`` needs neither.
Prints the prompt's and the new tokens (and text), why decoding stopped, the time to
the first token and the tokens per second after it; ``--json`` prints the same as one
JSON object.  See :mod:`irrun.core.generation` for what each step feeds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.generation import LanguageModel, generate, open_language_model
from ..errors import IrrunError, Location, UsageError
from .batch import progress
from .common import Parents, add_threads, dump_json, memory_size, positive


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun generate`` to the command line."""
    parser = sub.add_parser(
        "generate",
        description="Greedy decoding of a causal LM (an optimum-intel folder or an .xml): "
        "prints the new tokens, the time to the first token and tokens per second.",
        epilog="examples:\n"
        '  irrun generate gpt2-ov --prompt "The capital of France is"\n'
        "  irrun generate gpt2-ov --input-ids 464,3139,286 --max-new-tokens 8\n"
        "  irrun generate gpt2-ov/openvino_model.xml --input-ids 464,3139 --json",
    )  # fmt: skip
    parser.add_argument("model", metavar="FOLDER|MODEL.xml",
                        help="an optimum-intel export folder (openvino_model.xml, config.json, "
                        "generation_config.json) or an IR .xml")  # fmt: skip
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--input-ids", type=_ids, metavar="ID,ID,...",
                        help="the prompt as token ids, such as 1,2,3")  # fmt: skip
    prompt.add_argument("--prompt", metavar="TEXT",
                        help="the prompt as text (needs tokenizer.json in the folder and the "
                        "tokenizers library: pip install 'irrun[text]')")  # fmt: skip
    parser.add_argument("--max-new-tokens", type=positive, metavar="N",
                        help="stop after N new tokens (default: generation_config.json's "
                        "max_new_tokens, else 16)")  # fmt: skip
    parser.add_argument("--ignore-eos", action="store_true",
                        help="decode on past the end-of-sequence id")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--max-memory", type=memory_size, default="available", metavar="SIZE",
                        help="refuse a step whose tensors would need more than SIZE at once "
                        "(default: the memory available to the process)")  # fmt: skip
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    add_threads(parser)
    parser.set_defaults(handler=_handle)


def _ids(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    try:
        ids = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected token ids such as 1,2,3, not '{text}'") \
            from None  # fmt: skip
    return ids


_ids.__name__ = "--input-ids"


class _Tokenizer:
    """The folder's tokenizer.json, through the optional tokenizers library."""

    def __init__(self, lm: LanguageModel, source: str) -> None:
        folder = lm.folder if lm.folder is not None else Path(source).parent
        path = folder / "tokenizer.json"
        if not path.is_file():
            raise IrrunError("--prompt needs the folder's tokenizer.json, which is not there "
                             "(give --input-ids instead)", Location(str(path)))  # fmt: skip
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise UsageError("--prompt needs the tokenizers library: pip install "
                             "'irrun[text]' (or give --input-ids)") from None  # fmt: skip
        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # the library raises its own Exception for a bad file
            raise IrrunError(f"cannot read the tokenizer ({exc})", Location(str(path))) from None

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=True))


def _handle(args: argparse.Namespace) -> int:
    lm = open_language_model(args.model, max_memory=args.max_memory)
    lm.model.threads = args.threads
    tokenizer = _Tokenizer(lm, args.model) if args.prompt is not None else None
    ids = tokenizer.encode(args.prompt) if tokenizer is not None else args.input_ids
    if not ids:
        raise UsageError("the prompt gives no token ids")
    total = args.max_new_tokens or lm.max_new_tokens or 16
    bar = progress(total, sys.stderr, args.quiet, unit="token")
    try:
        result = generate(lm, ids, total, ignore_eos=args.ignore_eos,
                          on_token=lambda _: bar.update())  # fmt: skip
    finally:
        bar.close()
    text = tokenizer.decode(result.tokens) if tokenizer is not None else None
    rate = result.tokens_per_second
    if args.json:
        dump_json({
            "model": str(lm.model.path),
            "prompt": args.prompt,
            "prompt_ids": result.prompt,
            "tokens": result.tokens,
            "text": text,
            "stopped": result.stopped,
            "time_to_first_token_ms": round(result.time_to_first_token * 1000, 3),
            "tokens_per_second": None if rate is None else round(rate, 3),
            "step_ms": [round(s * 1000, 3) for s in result.step_seconds],
        }, sys.stdout)  # fmt: skip
        return 0
    why = "the end-of-sequence id" if result.stopped == "eos" else "--max-new-tokens"
    print(f"prompt              {len(result.prompt)} tokens: {_join(result.prompt)}")
    print(f"tokens              {_join(result.tokens)}  ({len(result.tokens)} new; stopped at "
          f"{why})")  # fmt: skip
    if text is not None:
        print(f"text                {text!r}")
    print(f"first token         {result.time_to_first_token * 1000:.1f} ms  (the prompt's run)")
    if rate is not None:
        after = len(result.tokens) - 1
        print(f"each token after    {1000 / rate:.1f} ms  ({rate:.1f} tokens/s over {after})")
    return 0


def _join(ids: list[int]) -> str:
    return ",".join(map(str, ids))
