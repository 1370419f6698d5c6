"""``irrun cleanup``: drop outputs, remove dead layers, merge duplicate constants and
renumber the layers, then write the model (see :mod:`irrun.edit.cleanup`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..edit.cleanup import clean
from .common import Parents
from .surgery import add_output, output_path, read, write


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun cleanup`` to the command line."""
    cmd = sub.add_parser(
        "cleanup", parents=[parents.model],
        description="Remove the layers no output needs, merge constants with the same type, "
        "shape and bytes, renumber the layers 0..n-1 in topological order, and write the "
        "model. --drop-outputs removes outputs first (and what only they needed). Output "
        "ports nothing reads stay: they belong to their op.",
        epilog="examples:\n"
        "  irrun cleanup model.xml -o clean.xml\n"
        "  irrun cleanup model.xml --drop-outputs indices -o clean.xml",
    )  # fmt: skip
    cmd.add_argument(
        "--drop-outputs", action="append", default=[], metavar="NAME",
        help="an output to remove, by tensor name or Result layer name (repeat for several)",
    )  # fmt: skip
    add_output(cmd)
    cmd.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    path = output_path(args)
    model = read(args)
    doc, done = clean(model, drop_outputs=args.drop_outputs)
    if not args.quiet:
        print(f"layers: {done.layers_before} -> {done.layers_after}")
        for line in done.describe() or ["nothing to clean up"]:
            print(line)
    write(doc, model, path, args.quiet)
    return 0
