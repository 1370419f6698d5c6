"""``irrun generate``: decoding a causal LM, token by token, greedy or sampled.

    irrun generate tests/stateful/llama --input-ids 1,2,3 --max-new-tokens 8
    irrun generate FOLDER --prompt "Once upon a time" --do-sample --top-p 0.9 --seed 1
    irrun generate FOLDER --prompt "Once upon a time" --json

The model is an optimum-intel folder (``openvino_model.xml`` with ``config.json`` and
``generation_config.json``, which give the vocabulary and the end-of-sequence ids) or
an ``.xml``.  ``--prompt`` needs the folder's ``tokenizer.json`` and the small
``tokenizers`` library (:func:`install_hint` says how to get it for the way irrun was
installed); ``--input-ids`` needs neither.  The new tokens (or their text) are printed
as they come on a terminal or with ``--stream``; then the prompt's and the new tokens,
why decoding stopped, the time to the first token and the tokens per second after it;
``--json`` prints the same as one JSON object.  See :mod:`irrun.core.generation` for
what each step feeds and how ``--do-sample`` picks tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlparse

from ..core.generation import LanguageModel, generate, open_language_model, sampling_settings
from ..errors import IrrunError, Location, UsageError
from .batch import progress
from .common import Parents, add_threads, dump_json, int_at_least, memory_size, positive


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
                        "tokenizers library: pip install tokenizers)")  # fmt: skip
    parser.add_argument("--max-new-tokens", type=positive, metavar="N",
                        help="stop after N new tokens (default: generation_config.json's "
                        "max_new_tokens, else 16)")  # fmt: skip
    parser.add_argument("--ignore-eos", action="store_true",
                        help="decode on past the end-of-sequence id")  # fmt: skip
    sample = parser.add_argument_group(
        "sampling", "as Hugging Face's generate(do_sample=True): the logits divided by the "
        "temperature, cut to the top k, then to the top p, then a token drawn; the defaults "
        "are generation_config.json's, else Hugging Face's")  # fmt: skip
    sample.add_argument("--do-sample", action="store_true",
                        help="draw each token from the logits' distribution (default: greedy, "
                        "the largest logit)")  # fmt: skip
    sample.add_argument("--temperature", type=float, metavar="T",
                        help="divide the logits by T, above 0 (default 1.0)")  # fmt: skip
    sample.add_argument("--top-k", type=int_at_least(0, "--top-k"), metavar="K",
                        help="keep the K most likely tokens; 0 keeps all (default 50)")  # fmt: skip
    sample.add_argument("--top-p", type=_probability, metavar="P",
                        help="keep the fewest most likely tokens whose probability reaches P, "
                        "at least one (default 1.0: all)")  # fmt: skip
    sample.add_argument("--seed", type=int_at_least(0, "--seed"), metavar="N",
                        help="seed the draws, to draw the same tokens again (default: a random "
                        "seed, printed)")  # fmt: skip
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=None,
                        help="print each new token (or its text) as it comes (default: on a "
                        "terminal, without --json)")  # fmt: skip
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


def _probability(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


_probability.__name__ = "--top-p"


def install_hint(extra: str, package: str) -> str:
    """How to install ``package`` (irrun's extra ``extra``) for the way irrun was installed.

    From an index, ``pip install "irrun[EXTRA]"``; from a source folder,
    ``pip install -e "FOLDER[EXTRA]"`` (editable) or ``pip install "FOLDER[EXTRA]"``;
    otherwise (irrun run from a source tree, from a Git URL or an archive, or from
    another tree than the installed one) the package itself.
    """
    plain = f"pip install {package}"
    try:
        dist = metadata.distribution("irrun")
    except metadata.PackageNotFoundError:
        return plain
    if extra not in (dist.metadata.get_all("Provides-Extra") or []):
        return plain
    here = Path(__file__).resolve().parents[2]  # the folder that holds this irrun package
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except json.JSONDecodeError:
        return plain
    if direct is None:  # from an index: the installed package should be this one
        located = Path(str(dist.locate_file("irrun"))).resolve()
        return f'pip install "irrun[{extra}]"' if located == here / "irrun" else plain
    url = urlparse(str(direct.get("url", "")))
    if "dir_info" not in direct or url.scheme != "file":
        return plain
    folder = Path(unquote(url.path))
    if folder.resolve() != here or not (folder / "pyproject.toml").is_file():
        return plain
    editable = bool(direct["dir_info"].get("editable"))
    return f'pip install {"-e " * editable}"{folder}[{extra}]"'


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
            raise UsageError(f"--prompt needs the tokenizers library: "
                             f"{install_hint('text', 'tokenizers')} (or give --input-ids)"
                             ) from None  # fmt: skip
        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # the library raises its own Exception for a bad file
            raise IrrunError(f"cannot read the tokenizer ({exc})", Location(str(path))) from None

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=True))


class _Stream:
    """Each new token printed as it comes: its text through the tokenizer, else its id."""

    def __init__(self, out: IO[str], tokenizer: _Tokenizer | None) -> None:
        self.out, self.tokenizer = out, tokenizer
        self.tokens: list[int] = []
        self.shown = ""

    def __call__(self, token: int) -> None:
        self.tokens.append(token)
        if self.tokenizer is None:
            piece = ("," if len(self.tokens) > 1 else "") + str(token)
        else:
            text = self.tokenizer.decode(self.tokens)
            # A character split over tokens decodes as U+FFFD until its last byte comes;
            # and text that decodes otherwise than its start did is held back.
            if text.endswith("\ufffd") or not text.startswith(self.shown):
                return
            piece, self.shown = text[len(self.shown) :], text
        self.out.write(piece)
        self.out.flush()

    def close(self) -> None:
        """The text held back, and the end of the line (none if no token came)."""
        if not self.tokens:
            return
        if self.tokenizer is not None:
            text = self.tokenizer.decode(self.tokens)
            if text.startswith(self.shown):
                self.out.write(text[len(self.shown) :])
        self.out.write("\n")
        self.out.flush()


def _handle(args: argparse.Namespace) -> int:
    stream = args.stream
    if stream and args.json:
        raise UsageError("--stream prints tokens and --json one JSON object, both on stdout: "
                         "give one")  # fmt: skip
    if stream is None:
        stream = not args.json and sys.stdout.isatty()
    lm = open_language_model(args.model, max_memory=args.max_memory)
    lm.model.threads = args.threads
    tokenizer = _Tokenizer(lm, args.model) if args.prompt is not None else None
    ids = tokenizer.encode(args.prompt) if tokenizer is not None else args.input_ids
    if not ids:
        raise UsageError("the prompt gives no token ids")
    total = args.max_new_tokens or lm.max_new_tokens or 16
    try:
        chosen = sampling_settings(lm, args.do_sample, args.temperature, args.top_k, args.top_p,
                                   args.seed)  # fmt: skip
    except UsageError as exc:
        raise UsageError(_flag_names(str(exc))) from None
    sampling: dict[str, Any] = {"do_sample": chosen is not None, **(chosen or {})}
    if stream:
        streamer = _Stream(sys.stdout, tokenizer)
        try:
            result = generate(lm, ids, total, ignore_eos=args.ignore_eos, on_token=streamer,
                              **sampling)  # fmt: skip
        finally:
            streamer.close()
    else:
        bar = progress(total, sys.stderr, args.quiet, unit="token")
        try:
            result = generate(lm, ids, total, ignore_eos=args.ignore_eos,
                              on_token=lambda _: bar.update(), **sampling)  # fmt: skip
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
            "sampling": result.sampling,
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
    if result.sampling is not None:
        chosen = result.sampling
        print(f"sampled             temperature {chosen['temperature']:g}, top-k "
              f"{chosen['top_k'] or 'all'}, top-p {chosen['top_p']:g}, seed {chosen['seed']}  "
              f"(--seed {chosen['seed']} draws these tokens again)")  # fmt: skip
    print(f"first token         {result.time_to_first_token * 1000:.1f} ms  (the prompt's run)")
    if rate is not None:
        after = len(result.tokens) - 1
        print(f"each token after    {1000 / rate:.1f} ms  ({rate:.1f} tokens/s over {after})")
    return 0


def _flag_names(message: str) -> str:
    """The sampling settings' errors as the command line spells them."""
    message = message.replace("do_sample (--do-sample)", "--do-sample")
    for name in ("do_sample", "temperature", "top_k", "top_p", "seed"):
        message = message.replace(name, "--" + name.replace("_", "-"))
    return message


def _join(ids: list[int]) -> str:
    return ",".join(map(str, ids))
