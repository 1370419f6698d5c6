"""``irrun run`` (``irrun MODEL.xml``): run a model and show or save its outputs.

Its options come from the tools they drive: per-layer outputs (:mod:`.dump`),
timings (:mod:`.profile`) and batches of input files (:mod:`.batch`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.memory import parse_size
from ..core.model import LayerRun, Model, load
from ..errors import IrrunError, UsageError
from ..ir.dims import format_shape
from . import batch, common, dump
from . import profile as profiling
from .batch import batch_command, check_arguments
from .common import Parents
from .dump import LayerDump
from .profile import Profile


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun run`` to the command line."""
    run = sub.add_parser(
        "run", parents=[parents.model, parents.inputs],
        description="Run a model on the inputs given (default: seeded random ones) and print "
        "a table of its outputs, or save them (-o, --output-dir). --dump-dir saves every "
        "layer's outputs, --profile times each layer, --input-dir runs a folder of inputs.",
        epilog="examples:\n"
        "  irrun run model.xml                         # 'irrun model.xml' for short\n"
        "  irrun model.xml --input x.npy -o out.npz\n"
        "  irrun model.xml --shape [1,3,224,224] --profile\n"
        "  irrun model.xml --input x.npy --dump-dir dump",
    )  # fmt: skip
    run.add_argument(
        "-o", "--output", metavar="OUT.npz",
        help="save the outputs here, keyed by output name (default: print a summary table)",
    )  # fmt: skip
    run.add_argument(
        "--shape", type=common.shapes, metavar="SHAPES",
        help="run with new input shapes, in OpenVINO's syntax: x[8,3,224,224],y[1,4], or "
        "[8,3,224,224] for a model with one input (? or -1 for any size, 1..10 for a range)",
    )  # fmt: skip
    run.add_argument(
        "--fold-cap", type=fold_cap, default=True, metavar="SIZE",
        help="compute the layers whose inputs are all constants (decompressed weights, shape "
        "subgraphs) once at load while their values take at most SIZE (512M, 4G, 0 for none, "
        "or none for no cap; default: max(64M, 8 times the .bin), at most half of "
        "--max-memory); -v says what was folded",
    )  # fmt: skip
    common.add_threads(run)
    dump.add_arguments(run)
    profiling.add_arguments(run)
    batch.add_arguments(run)
    run.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    check_arguments(args)
    if args.input_dir is not None:
        return batch_command(args)
    # Outputs are checked before the model runs, so a long run does not end in a failed write.
    if args.output:
        common.check_output_path(Path(args.output))
    if args.profile_json:
        common.check_output_path(Path(args.profile_json))
    if args.iterations > 1 and not (args.profile or args.profile_json):
        raise UsageError("--iterations needs --profile or --profile-json")
    seed = common.random_seed(args)
    types = [t.strip() for item in args.dump_type or () for t in item.split(",") if t.strip()]
    if (types or args.dump_name) and not args.dump_dir:
        raise UsageError("--dump-type and --dump-name select what --dump-dir writes: give it")
    dumper = None
    if args.dump_dir:
        try:
            dumper = LayerDump(Path(args.dump_dir), Path(args.model), types, args.dump_name)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    say = _say if args.verbose else _silent
    start = time.perf_counter()
    model = load(args.model, args.weights, args.max_memory, args.fold_cap, args.threads,
                 args.reference)
    say(f"loaded {args.model}: {len(model.layers())} layers, {_ms(start)}")
    for line in model.folding.describe() if model.folding is not None else ():
        say(line)
    if args.shape:
        model.reshape(args.shape)
        say(f"reshaped to {args.shape}")
    feeds = common.read_inputs(model, args.input) if args.input else model.random_inputs(seed)
    given = ", ".join(args.input) if args.input else f"random (seed {seed})"
    say(f"inputs: {given}: " + ", ".join(
        f"{name} {list(np.shape(v))} {np.asarray(v).dtype}" for name, v in feeds.items()
    ))  # fmt: skip
    start = time.perf_counter()
    profile = Profile(model.folding) if args.profile or args.profile_json else None
    if dumper is not None:
        dumper.prepare(feeds, [ref.id for ref, _, _ in model.layers() if ref.type != "Parameter"])
    outputs: dict[str, np.ndarray] = {}
    done = False
    try:
        if profile is not None:  # the first run's set-up is charged to no layer
            _run_once(model, feeds, args)
        for i in range(args.iterations if profile is not None else 1):
            # The dump is of the first run; later ones only add timings.
            hooks = [h for h in (dumper if i == 0 else None, profile) if h is not None]
            if profile is not None:
                profile.start_run(time.perf_counter())
            outputs = _run_once(model, feeds, args, hooks, every_layer=dumper in hooks)
            if profile is not None:
                profile.end_run(time.perf_counter())
        done = True
    finally:
        if dumper is not None:
            dumper.finish(complete=done)
    runs = args.iterations if profile is not None else 1
    say(f"ran {runs} time{'s' * (runs != 1)} in {_ms(start)} on "
        f"{common.count(model.threads, 'thread')}")
    if dumper is not None and not args.quiet:
        print(f"irrun: {dumper.summary()}", file=sys.stderr)
    if args.output:
        common.save_npz(Path(args.output), outputs)
        common.say_written(common.count(len(outputs), "output"), args.output, args.quiet)
    else:
        print(summary_table(outputs))
    if profile is not None:
        if args.profile:
            print()
            print(profile.table())
        if args.profile_json:
            trace = profile.chrome_trace(args.model)
            common.write_atomically(Path(args.profile_json), lambda f: common.dump_json(trace, f))
            layers = common.count(len(profile.layers), "layer")
            common.say_written(f"the trace of {layers}", args.profile_json, args.quiet)
    return 0


def _run_once(model: Model, feeds: dict[str, np.ndarray], args: argparse.Namespace,
              hooks: Sequence[Callable[[LayerRun], None]] = (), every_layer: bool = True,
              ) -> dict[str, np.ndarray]:
    """One run with ``hooks`` on its layers: a dump sees ``every_layer`` and their values,
    a profile only the times of the layers the run executes."""
    try:
        return model._execute(feeds, on_layer=_calling(hooks) if hooks else None,
                              every_layer=every_layer, values=every_layer)[0]
    except IrrunError as exc:
        raise _with_shape_hint(exc, model, feeds) if not args.input else exc from None


def fold_cap(text: str) -> int | None:
    """``--fold-cap``: bytes, or None for ``none`` (no cap)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _say(message: str) -> None:
    print(f"irrun: {message}", file=sys.stderr)


def _silent(message: str) -> None:
    pass


def _with_shape_hint(exc: IrrunError, model: Model, feeds: dict[str, np.ndarray]) -> IrrunError:
    """``exc`` with a word on the random inputs whose unknown dims were made up,
    which is the likelier cause of a failure than the model."""
    made_up = [
        f"{spec.name} {format_shape(feeds[spec.name].shape)} for {format_shape(spec.shape)}"
        for spec in model.inputs
        if spec.shape is None or not all(isinstance(d, int) for d in spec.shape)
    ]
    if not made_up:
        return exc
    hint = (f" (random inputs with their unknown dims at their least: {'; '.join(made_up)}; "
            "give shapes with --shape or inputs with --input)")  # fmt: skip
    return IrrunError(exc.message + hint, exc.location, exc.layer, exc.port, exc.code)


def _ms(start: float) -> str:
    return f"{(time.perf_counter() - start) * 1e3:.1f} ms"


def _calling(hooks: list[Callable[[LayerRun], None]]) -> Callable[[LayerRun], None]:
    if len(hooks) == 1:
        return hooks[0]

    def each(layer: LayerRun) -> None:
        for hook in hooks:
            hook(layer)

    return each


def summary_table(outputs: dict[str, np.ndarray]) -> str:
    """The outputs, a row each: shape, dtype, and min, max and mean to 5 significant digits.

    Five digits, as Polygraphy prints its statistics: a sixth would change with the
    order in which the BLAS kernel OpenBLAS picks for the CPU sums a convolution.

    >>> print(summary_table({"p": np.array([7.350085e-05, 0.5890035], np.float32)}))
    output  shape  dtype    min         max    mean
    p       [2]    float32  7.3501e-05  0.589  0.29454
    """
    rows = [("output", "shape", "dtype", "min", "max", "mean")]
    for name, arr in outputs.items():
        if arr.size and arr.dtype.kind in "fiub":
            with np.errstate(all="ignore"):
                mean = arr.astype(np.float64).mean()
                stats = [f"{arr.min():.5g}", f"{arr.max():.5g}", f"{mean:.5g}"]
        else:
            stats = ["-", "-", "-"]
        rows.append((name, str(list(arr.shape)), str(arr.dtype), *stats))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
