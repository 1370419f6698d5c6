"""``irrun run`` (``irrun MODEL.xml``): run a model and show or save its outputs.

Its options come from the tools they drive: per-layer outputs (:mod:`.dump`),
timings (:mod:`.profile`) and batches of input files (:mod:`.batch`).
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.memory import parse_size
from ..core.model import LayerRun, Model, load
from ..errors import IrrunError, UsageError
from ..fast import jit
from ..ir.dims import format_shape
from ..ir.element_types import dtype_name
from ..version import __version__
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
        help="save the outputs here, keyed by output name, - for stdout (default: print a "
        "summary table)",
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
    run.add_argument(
        "--json", action="store_true",
        help="print a JSON report on stdout instead of the tables: the outputs' names, shapes, "
        "dtypes and min/max/mean, and with --profile its rows; errors too, as JSON",
    )  # fmt: skip
    common.add_threads(run)
    dump.add_arguments(run)
    profiling.add_arguments(run)
    batch.add_arguments(run)
    run.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    return errors_as_json(_run, args) if args.json else _run(args)


def errors_as_json(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``handler(args)``, with an error (the model's, the inputs', the command line's once
    parsed) printed on stdout as :func:`error_report`'s JSON instead of a line on stderr,
    and the exit code it has there: 2 for misuse, else 1.  ``--debug`` raises it."""
    try:
        return handler(args)
    except IrrunError as exc:
        if args.debug:
            raise
        sys.stdout.flush()
        common.dump_json(error_report(exc), sys.stdout)
        return 2 if isinstance(exc, UsageError) else 1


def error_report(exc: IrrunError) -> dict[str, Any]:
    """An error as JSON data, with the fields of ``validate --json``'s findings.

    >>> from irrun.errors import Location
    >>> error_report(IrrunError("no such file", Location("m.xml")))
    {'error': {'message': 'no such file', 'file': 'm.xml', 'line': None, 'layer': None, \
'port': None, 'code': 'error'}}
    """
    code = exc.code  # every error has one: "usage", "missing-file", "internal-error"...
    where = exc.location
    return {
        "error": {
            "message": exc.message,
            "file": where.file if where is not None else None,
            "line": (where.line or None) if where is not None else None,
            "layer": exc.layer.as_dict() if exc.layer is not None else None,
            "port": exc.port,
            "code": code,
        }
    }


def _run(args: argparse.Namespace) -> int:
    check_arguments(args)
    if args.json and args.input_dir is not None:
        raise UsageError("--json and --input-dir do not go together: --json reports one run")
    if args.input_dir is not None:
        return batch_command(args)
    # Outputs are checked before the model runs, so a long run does not end in a failed write.
    if args.output == STDOUT:
        check_binary_stdout(f"-o {STDOUT}: the outputs' .npz")
        if args.json:
            raise UsageError(f"-o {STDOUT} and --json both write to stdout: give -o a file")
        if args.profile:
            raise UsageError(
                f"-o {STDOUT} writes the outputs to stdout, where --profile prints "
                "its table: give -o a file, or write the profile with --profile-json"
            )
    elif args.output:
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
    compiles = len(jit.compiled())  # the fast engine's compiles before this run's
    start = time.perf_counter()
    model = load(
        args.model, args.weights, args.max_memory, args.fold_cap, args.threads, args.reference
    )
    say(f"loaded {args.model}: {len(model.layers())} layers, {_ms(start)}")
    for line in model.folding.describe() if model.folding is not None else ():
        say(line)
    if args.shape:
        model.reshape(args.shape)
        say(f"reshaped to {args.shape}")
    if types:
        check_dump_types(types, model)
    if args.input:
        feeds = common.read_inputs(model, args.input, args.cast)
    else:
        feeds = model.random_inputs(seed)
    given = ", ".join(args.input) if args.input else f"random (seed {seed})"
    say(f"inputs: {given}: " + ", ".join(
        f"{name} {list(np.shape(v))} {np.asarray(v).dtype}" for name, v in feeds.items()
    ))  # fmt: skip
    start = time.perf_counter()
    profile = Profile(model.folding) if args.profile or args.profile_json else None
    if profile is not None:
        profiling.warn_if_busy(args.quiet)
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
    say(
        f"ran {runs} time{'s' * (runs != 1)} in {_ms(start)} on "
        f"{common.count(model.threads, 'thread')}"
    )
    for compiled in jit.compiled(compiles):
        say(compiled.describe())
    if dumper is not None and not args.quiet:
        print(f"irrun: {dumper.summary()}", file=sys.stderr)
    if args.output == STDOUT:
        sys.stdout.flush()
        common.write_npz(sys.stdout.buffer, outputs)
        sys.stdout.buffer.flush()
        common.say_written(common.count(len(outputs), "output"), "stdout", args.quiet)
    elif args.output:
        common.save_npz(Path(args.output), outputs)
        common.say_written(common.count(len(outputs), "output"), args.output, args.quiet)
    elif not args.json:
        print(summary_table(outputs))
    if args.json:
        source = "--input " + " ".join(args.input) if args.input else f"random, seed {seed}"
        report = run_report(args.model, model, feeds, source, outputs)
        report["output_file"] = args.output
        report["profile"] = profile.summary() if profile is not None else None
        common.dump_json(report, sys.stdout)
    if profile is not None:
        if args.profile and not args.json:
            print()
            print(profile.table())
        if args.profile_json:
            trace = profile.chrome_trace(args.model)
            common.write_atomically(Path(args.profile_json), lambda f: common.dump_json(trace, f))
            layers = common.count(len(profile.layers), "layer")
            common.say_written(f"the trace of {layers}", args.profile_json, args.quiet)
    return 0


def _run_once(
    model: Model,
    feeds: dict[str, np.ndarray],
    args: argparse.Namespace,
    hooks: Sequence[Callable[[LayerRun], None]] = (),
    every_layer: bool = True,
) -> dict[str, np.ndarray]:
    """One run with ``hooks`` on its layers: a dump sees ``every_layer`` and their values,
    a profile only the times of the layers the run executes."""
    try:
        return model._execute(
            feeds,
            on_layer=_calling(hooks) if hooks else None,
            every_layer=every_layer,
            values=every_layer,
        )[0]
    except IrrunError as exc:
        raise _with_shape_hint(exc, model, feeds) if not args.input else exc from None


STDOUT = "-"  # as a file name: stdout, as graph -o takes it


def check_binary_stdout(what: str) -> None:
    """Refuse to write ``what``, binary, to a terminal (it would garble the screen);
    to a pipe or a file stdout is redirected to, it goes."""
    isatty = getattr(sys.stdout, "isatty", None)
    if callable(isatty) and isatty():
        raise UsageError(
            f"{what} is binary and stdout is a terminal: redirect it (> out.npz), pipe it, or "
            "give a file name"
        )


# Layers a run computes nothing for: a dump of them would be empty.
_NOT_DUMPED = frozenset({"Parameter", "Result"})


def check_dump_types(types: Sequence[str], model: Model) -> None:
    """Refuse ``--dump-type`` names no layer of the model has (a dump of nothing looks
    like a model without such layers), naming the types it has and the nearest one.

    Op types are matched as OpenVINO spells them, case and all: ``maxpool`` is refused,
    with ``MaxPool`` suggested.
    """
    unseen = [t for t in dict.fromkeys(types) if t in _NOT_DUMPED]
    if unseen:
        raise UsageError(
            f"--dump-type {', '.join(unseen)}: a dump holds what layers compute: the inputs "
            f"(Parameters) are in {dump.INPUTS} in the dump's directory, and a Result's value "
            "is the output of the layer that feeds it"
        )
    have = sorted({ref.type for ref, _, _ in model.layers()} - _NOT_DUMPED)
    missing = [t for t in dict.fromkeys(types) if t not in have]
    if not missing:
        return
    by_lower = {t.lower(): t for t in have}
    hints = []
    for t in missing:
        near = by_lower.get(t.lower()) or next(
            iter(difflib.get_close_matches(t, have, n=1, cutoff=0.6)), None
        )
        if near is not None:
            hints.append(f"{t} -> {near}" if len(missing) > 1 else near)
    which = ", ".join(missing)
    layer_s = "layers" if len(missing) > 1 else "layer"
    message = (f"--dump-type {which}: {model.path.name} has no {layer_s} of "
               f"{'these types' if len(missing) > 1 else 'that type'} (its types: "
               f"{', '.join(have)})")  # fmt: skip
    if hints:
        message += f"; did you mean {', '.join(hints)}?"
    raise UsageError(message)


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


def inputs_report(model: Model, feeds: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """The inputs a run was given, as ``--json`` reports list them (``run``, ``benchmark``)."""
    types = {spec.name: spec.element_type for spec in model.inputs}
    return [
        {"name": name, "shape": list(np.shape(v)), "element_type": types.get(name),
         "dtype": dtype_name(np.asarray(v).dtype)}
        for name, v in feeds.items()
    ]  # fmt: skip


def run_report(path: str, model: Model, feeds: dict[str, np.ndarray], source: str,
               outputs: dict[str, np.ndarray]) -> dict[str, Any]:  # fmt: skip
    """What ``irrun run --json`` prints (less the ``output_file`` and ``profile`` the
    command adds): the settings as ``benchmark --json`` gives them, and each output's
    name, shape, dtype and statistics (:func:`output_stats`)."""
    return {
        "irrun_version": __version__,
        "model": path,
        "inputs": inputs_report(model, feeds),
        "input_source": source,
        "threads": model.threads,
        "outputs": [
            {
                "name": name,
                "shape": list(arr.shape),
                "dtype": dtype_name(arr.dtype),
                **output_stats(arr),
            }
            for name, arr in outputs.items()
        ],
    }


def output_stats(arr: np.ndarray) -> dict[str, Any]:
    """Min, max and mean of a numeric array, as the summary table has them but unrounded
    (None for an empty or non-numeric one); NaN and the infinities, which JSON has no
    numbers for, as the strings ``"nan"``, ``"inf"`` and ``"-inf"``.

    >>> output_stats(np.array([1, 2, 4], np.int32))
    {'min': 1, 'max': 4, 'mean': 2.3333333333333335}
    >>> output_stats(np.array([1.0, np.nan], np.float32))
    {'min': 'nan', 'max': 'nan', 'mean': 'nan'}
    """
    if not (arr.size and arr.dtype.kind in "fiub"):
        return {"min": None, "max": None, "mean": None}
    with np.errstate(all="ignore"):
        values = (arr.min().item(), arr.max().item(), float(arr.astype(np.float64).mean()))
    names = ("min", "max", "mean")
    return {k: v if not isinstance(v, float) or math.isfinite(v) else str(v)
            for k, v in zip(names, values, strict=True)}  # fmt: skip


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
        rows.append((name, str(list(arr.shape)), dtype_name(arr.dtype), *stats))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
