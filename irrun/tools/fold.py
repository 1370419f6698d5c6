"""``irrun fold``: constant folding written into the file, compressed weights kept
compressed, shapes made static with ``--shape`` (see :mod:`irrun.edit.fold`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.memory import parse_size
from ..edit.fold import DEFAULT_CAP, folded
from . import common
from .common import Parents
from .surgery import add_output, output_path, read, write


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun fold`` to the command line."""
    cmd = sub.add_parser(
        "fold", parents=[parents.model],
        description="Replace the layers whose outputs are the same at every run by constants "
        "holding their values, and write the model. Compressed weights (f16, int8, int4 with "
        "their decompression Converts) stay compressed; --shape makes the input shapes "
        "static first, so that shape subgraphs fold too. Dead layers are removed and equal "
        "constants merged.",
        epilog="examples:\n"
        "  irrun fold model.xml -o folded.xml\n"
        "  irrun fold model.xml --shape input_ids[1,128] -o folded.xml\n"
        "  irrun fold model.xml --cap 1M -o folded.xml",
    )  # fmt: skip
    cmd.add_argument(
        "--shape", type=common.shapes, metavar="SHAPES",
        help="reshape first, in OpenVINO's syntax: x[1,3,224,224],y[1,4], or [1,3,224,224] "
        "for a model with one input",
    )  # fmt: skip
    cmd.add_argument(
        "--cap", type=_cap, default=DEFAULT_CAP, metavar="SIZE",
        help="leave unfolded a value larger than SIZE (512K, 64M, or none; default 64M)",
    )  # fmt: skip
    add_output(cmd)
    cmd.set_defaults(handler=_handle)


def _cap(text: str) -> int | None:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_cap.__name__ = "--cap"  # argparse names the type in "invalid --cap value: '...'"


def _handle(args: argparse.Namespace) -> int:
    path = output_path(args)
    model = read(args)
    doc, done = folded(model, args.cap, args.shape)
    if not args.quiet:
        for line in done.describe():
            print(line)
    write(doc, model, path, args.quiet)
    return 0
