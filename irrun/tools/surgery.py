"""What the commands that write a changed model (``extract``, ``cleanup``, ``fold``,
``reshape``) share: the ``-o OUT.xml`` option, loading the model, and writing the new
pair of files."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.model import Model, load
from ..errors import UsageError
from ..ir.records import IRDocument
from ..ir.writer import write_ir
from . import common


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.xml",
        help="the .xml to write (its .bin goes beside it, with the suffix .bin)",
    )  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def output_path(args: argparse.Namespace) -> Path:
    """``-o``, checked before any work is done."""
    path = Path(args.output)
    if path.suffix.lower() != ".xml":
        raise UsageError(f"-o {args.output}: expected an .xml file name (its .bin goes beside it)")
    common.check_output_path(path)
    return path


def read(args: argparse.Namespace) -> Model:
    """The model, read and checked; not folded (the commands write what the file holds)."""
    return load(args.model, args.weights, fold_constants=False)


def write(doc: IRDocument, model: Model, path: Path, quiet: bool, what: str | None = None) -> None:
    """Write ``doc`` (its constants' bytes from ``model``'s weights) and say so: ``what``
    was written, by default its count of layers."""
    xml, bin_ = write_ir(doc, path, model.weights)
    common.say_written(what or f"{len(doc.layers)} layers", f"{xml} and {bin_.name}", quiet)
