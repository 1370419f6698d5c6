"""``irrun reduce``: shrink a model that fails a check to the smallest subgraph that
still fails it, and write that as a reproducer (see :mod:`irrun.edit.reduce`).

The default check compares irrun's reference kernels with OpenVINO's CPU plugin (in
f32) on the candidate, as ``irrun compare --reference --ref-backend openvino`` does;
``--check "CMD {model}"`` runs a command instead, whose exit status says good (0) or
bad (anything else).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..core.model import load
from ..edit.reduce import MODES, Check, Step, inputs_path, reduce
from ..errors import IrrunError, UsageError
from ..ir.writer import write_ir
from . import common
from .common import Parents
from .compare import compare
from .compare_results import DEFAULT_RTOL


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun reduce`` to the command line."""
    parser = sub.add_parser(
        "reduce", parents=[parents.model],
        description="Shrink a model that fails a check to the smallest subgraph that still "
        "fails it, as Polygraphy's debug reduce does, and write it with its inputs: "
        "repro.xml, repro.bin and repro.inputs.npz. Subgraphs are cut at tensors, which are "
        "fed the values the full model computes there (irrun's reference kernels). The "
        "default check fails when irrun's reference kernels and OpenVINO's CPU plugin (f32) "
        "differ beyond --atol/--rtol on the subgraph's outputs. Exit 0 when a reproducer is "
        "written, 1 when the full model passes the check (nothing is written).",
        epilog="examples:\n"
        "  irrun reduce model.xml -o repro.xml\n"
        "  irrun reduce model.xml --input x.npy --atol 1e-4\n"
        '  irrun reduce model.xml --check "python my_check.py {model} {inputs}"',
    )  # fmt: skip
    parser.add_argument(
        "--check", metavar="CMD",
        help="a command that exits 0 for a good subgraph and non-zero for a bad one; {model} "
        "is replaced by the subgraph's .xml and {inputs} by its inputs' .npz (by tensor name)",
    )  # fmt: skip
    parser.add_argument(
        "--atol", type=float, default=None,
        help="the default check's absolute tolerance (default: compare's, 1e-5)",
    )  # fmt: skip
    parser.add_argument(
        "--rtol", type=float, default=DEFAULT_RTOL,
        help=f"the default check's relative tolerance (default {DEFAULT_RTOL:g})",
    )  # fmt: skip
    parser.add_argument(
        "-i", "--input", action="append", default=[], metavar="[NAME=]PATH",
        help="the model's inputs, as irrun run takes them (default: seeded random inputs)",
    )  # fmt: skip
    parser.add_argument("--seed", type=common.int_at_least(0, "seed"),
                        help="seed of the random inputs (default 0)")  # fmt: skip
    common.add_shape(parser)
    parser.add_argument(
        "--mode", choices=MODES, default="bisect",
        help="bisect: O(log N) checks; linear: one layer at a time, for failures that later "
        "layers hide (default bisect)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", default="repro.xml", metavar="REPRO.xml",
        help="the reproducer's .xml; its .bin and .inputs.npz go beside it (default repro.xml)",
    )  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines, only the summary")  # fmt: skip
    parser.set_defaults(handler=_handle)


def openvino_check(atol: float | None = None, rtol: float = DEFAULT_RTOL) -> Check:
    """The default check: bad when irrun's reference kernels and OpenVINO's CPU plugin
    differ beyond the tolerances on some output of the candidate.  A candidate that one
    of them cannot run counts as good: it shows another problem than the one reduced."""

    def check(xml: Path, npz: Path) -> bool:
        try:
            model = load(xml, reference=True)
            with np.load(npz) as f:
                feeds = {k: f[k] for k in f.files}
            return not compare(model, feeds, backend="openvino", atol=atol, rtol=rtol).passed
        except IrrunError:
            return False

    return check


def command_check(command: str) -> Check:
    """A check by shell command: ``{model}`` and ``{inputs}`` replaced by the candidate's
    paths, bad when it exits non-zero."""
    words = shlex.split(command)
    if not words:
        raise UsageError("--check: an empty command")

    def check(xml: Path, npz: Path) -> bool:
        argv = [w.replace("{model}", str(xml)).replace("{inputs}", str(npz)) for w in words]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
        except OSError as exc:
            raise IrrunError(f"--check: cannot run {argv[0]}: {exc.strerror or exc}") from None
        return done.returncode != 0

    return check


def _handle(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix != ".xml":
        raise UsageError(f"-o {args.output}: expected a file name ending in .xml")
    common.check_output_path(out)
    given = args.check is not None
    if given and args.atol is not None:
        raise UsageError("--atol is the default check's: a --check command has its own")
    check = command_check(args.check) if given else openvino_check(args.atol, args.rtol)
    model = load(args.model, args.weights)
    if args.shape:
        model.reshape(args.shape)
    seed = common.random_seed(args)
    feeds = common.read_inputs(model, args.input) if args.input else None
    started = time.perf_counter()

    def progress(step: Step) -> None:
        if not args.quiet:
            print(f"irrun reduce: {len(steps) + 1:>2}. {step}", file=sys.stderr, flush=True)
        steps.append(step)

    steps: list[Step] = []
    found = reduce(model, check, feeds, mode=args.mode, seed=seed, progress=progress)
    if found is None:
        print(f"irrun reduce: {args.model} passes the check: nothing to reduce, nothing written "
              f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)  # fmt: skip
        return 1
    npz = inputs_path(out)
    common.check_output_path(npz)
    xml, bin_ = write_ir(found.doc, out, model.weights)
    try:
        common.save_npz(npz, found.inputs)  # the same bytes for the same values
    except BaseException:
        xml.unlink(missing_ok=True)  # no reproducer without its inputs
        bin_.unlink(missing_ok=True)
        raise
    print(f"irrun reduce: {found.summary()}", file=sys.stderr)
    common.say_written("the reproducer", f"{xml}, {bin_} and {npz}")
    return 0
