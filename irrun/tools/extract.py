"""``irrun extract``: write the subgraph between some tensors and others as a new IR
(see :mod:`irrun.edit.extract`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..edit.extract import TensorIndex, extract_tensors
from . import common
from .common import Parents
from .surgery import add_output, output_path, read, write


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun extract`` to the command line."""
    parser = sub.add_parser(
        "extract", parents=[parents.model],
        description="Write the subgraph that computes --outputs from --inputs as a new IR "
        "(.xml and .bin). Tensors are named by tensor name, by layer name (its first "
        "output) or as LAYER:PORT; the inputs become Parameters with the shapes and element "
        "types irrun infers for them, and keep their names. Only the layers the outputs "
        "need are kept, with the constants and original inputs they need.",
        epilog="examples:\n"
        "  irrun extract model.xml --inputs stem_pool:1 --outputs avg_pool -o sub.xml\n"
        "  irrun extract model.xml --outputs logits -o head.xml   # from the model's inputs",
    )  # fmt: skip
    parser.add_argument(
        "--inputs", type=_names, default=[], metavar="T1,T2",
        help="the tensors to cut at, which become the subgraph's inputs (default: none, the "
        "model's own inputs)",
    )  # fmt: skip
    parser.add_argument(
        "--outputs", type=_names, required=True, metavar="T3,T4",
        help="the tensors the subgraph computes, its outputs",
    )  # fmt: skip
    add_output(parser)
    parser.set_defaults(handler=_handle)


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"an empty name in '{text}'")
    return names


_names.__name__ = "tensor list"


def _handle(args: argparse.Namespace) -> int:
    out = output_path(args)
    model = read(args)
    index = TensorIndex(model)
    cuts = [index.find(n, "--inputs") for n in args.inputs]
    outs = [index.find(n, "--outputs") for n in args.outputs]
    labels = dict(zip(cuts + outs, [*args.inputs, *args.outputs], strict=True))
    made = extract_tensors(model, cuts, outs, labels)
    layers = common.count(len(made.compute_layers(model)), "layer")
    what = (f"the subgraph ({layers}; inputs {', '.join(made.inputs) or 'none'}; outputs "
            f"{', '.join(made.outputs)})")  # fmt: skip
    write(made.doc, model, out, args.quiet, what)
    return 0
