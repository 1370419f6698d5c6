"""``irrun reshape``: new input shapes written into the file, as OpenVINO's
``reshape`` and ``save_model`` write them (see :mod:`irrun.edit.reshape`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..edit.reshape import reshape
from . import common
from .common import Parents
from .surgery import add_output, output_path, read, write


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun reshape`` to the command line."""
    cmd = sub.add_parser(
        "reshape", parents=[parents.model],
        description="Give the inputs new shapes, infer every tensor's shape again and write "
        "the model with them (the Parameters' shape attributes and every port's dims).",
        epilog="examples:\n"
        "  irrun reshape model.xml --shape x[1,3,224,224] -o static.xml\n"
        "  irrun reshape model.xml --shape input_ids[1,?],attention_mask[1,?] -o out.xml",
    )  # fmt: skip
    cmd.add_argument(
        "--shape", type=common.shapes, metavar="SHAPES", required=True,
        help="the new shapes, in OpenVINO's syntax: x[1,3,224,224],y[1,4], or [1,3,224,224] "
        "for a model with one input (? or -1 for any size, 1..10 for a range)",
    )  # fmt: skip
    add_output(cmd)
    cmd.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    path = output_path(args)
    model = read(args)
    before = {spec.name: spec.partial_shape for spec in model.outputs}
    inputs = {spec.name: spec.partial_shape for spec in model.inputs}
    doc = reshape(model, args.shape)
    model.reshape(args.shape)  # for the new shapes' text alone: the file is written from doc
    if not args.quiet:
        for spec in model.inputs:
            print(f"input {spec.name}: {inputs[spec.name]} -> {spec.partial_shape}")
        for spec in model.outputs:
            print(f"output {spec.name}: {before[spec.name]} -> {spec.partial_shape}")
    write(doc, model, path, args.quiet)
    return 0
