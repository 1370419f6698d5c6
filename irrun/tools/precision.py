"""``irrun convert-precision``: a model's float weights converted to f16 or back to f32,
as OpenVINO's ``save_model(..., compress_to_fp16=True)`` does (see
:mod:`irrun.edit.precision`).

The model is read, not run: a model irrun cannot run still converts.  A model with
nothing to convert (no f32 constants, or a quantized one, which OpenVINO leaves as it
is) is still written, unchanged, and a note on stderr says why: the output is what
OpenVINO would write, so a script that converts every model of a folder gets one file
for each.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..edit.precision import Conversion, convert_document
from ..errors import UsageError
from ..ir.reader import read_ir
from ..ir.weights import Weights
from ..ir.writer import write_ir
from . import common, surgery
from .common import Parents


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun convert-precision`` to the command line."""
    cmd = sub.add_parser(
        "convert-precision", parents=[parents.model],
        description="Convert a model's f32 (and f64) weights to f16 (each an f16 constant "
        "and a Convert marked 'decompression', as OpenVINO's save_model(compress_to_fp16=True) "
        "writes them, keeping as they are the constants OpenVINO keeps), or such f16 weights "
        "back to f32 constants.",
        epilog="examples:\n"
        "  irrun convert-precision model.xml --to f16 -o model_f16.xml\n"
        "  irrun convert-precision model_f16.xml --to f32 -o model_f32.xml",
    )  # fmt: skip
    cmd.add_argument("--to", required=True, choices=("f16", "f32"),
                     help="the weights' new precision")  # fmt: skip
    surgery.add_output(cmd)
    cmd.add_argument("-v", "--verbose", action="store_true",
                     help="list the constants converted and those kept, with why")  # fmt: skip
    cmd.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    out = surgery.output_path(args)
    source = Path(args.model)
    if out.resolve() == source.resolve():
        raise UsageError(f"-o {args.output} is the model itself: write the converted one elsewhere")
    weights = Weights(Path(args.weights) if args.weights else source.parent / f"{source.stem}.bin")
    conversion = convert_document(read_ir(source), weights, args.to)
    xml, bin_ = write_ir(conversion.document, out, weights)
    _report(conversion, args)
    common.say_written(f"{len(conversion.document.layers)} layers", f"{xml} and {bin_.name}",
                       args.quiet)  # fmt: skip
    return 0


def _report(c: Conversion, args: argparse.Namespace) -> None:
    if args.verbose:
        for name in c.converted:
            print(f"converted {name}")
        for name, why in c.kept:
            print(f"kept {name}: {why}")
    if c.skipped:
        note = f"nothing converted: {c.skipped}, which OpenVINO leaves as it is"
    elif not c.converted:
        kind = "f32 or f64 constants it may convert" if args.to == "f16" else \
            "f16 constants decompressed to f32 or f64"  # fmt: skip
        note = f"nothing converted: the model has no {kind}"
    else:
        note = f"converted {common.count(len(c.converted), 'constant')} to {args.to}"
        if c.kept:
            note += f", kept {len(c.kept)} as they were" + (
                "" if args.verbose else " (-v lists them)"
            )
    if not args.quiet:
        print(f"irrun: {note}", file=sys.stderr)
