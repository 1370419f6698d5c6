"""The ``irrun`` command line.

``irrun MODEL.xml ...`` is short for ``irrun run MODEL.xml ...``.  Errors are one
line on stderr with exit code 1 (2 for misuse of the command line); ``--debug``
shows the traceback instead.

``irrun validate`` prints one line per finding and a summary, and exits 0 when
there is no error (1 with errors, or with warnings under ``--strict``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from . import __version__
from .core.memory import parse_size
from .core.model import LayerRun, Model, check_ir, internal_error, load
from .core.reshape import describe, parse_shapes
from .errors import Diagnostic, IrrunError, Location, UsageError
from .ir.dims import format_shape
from .tools.common import (
    check_output_path,
    count,
    load_array_file,
    save_npz,
    say_written,
    write_atomically,
)
from .tools.dump import LayerDump
from .tools.profile import Profile

# The subcommands; each tool module's register() adds its own parser and handler.
COMMANDS = ("run", "validate", "inspect", "compare", "graph")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irrun",
        description="Run and check OpenVINO IR models (model.xml + model.bin) with NumPy.",
        epilog="'irrun MODEL.xml ...' is short for 'irrun run MODEL.xml ...'.",
    )
    parser.add_argument("--version", action="version", version=f"irrun {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("model", metavar="MODEL.xml", help="the IR's .xml file")
    common.add_argument("--weights", metavar="BIN", help="the .bin file (default: beside the .xml)")
    common.add_argument("--debug", action="store_true", help="show tracebacks")

    inputs = argparse.ArgumentParser(add_help=False)  # for the commands that run the model
    inputs.add_argument(
        "-i", "--input", action="append", default=[], metavar="[NAME=]PATH",
        help="an input: a .npy (NAME= picks the input, optional for one input) or an .npz "
        "keyed by input name; repeat for several. Default: seeded random inputs",
    )  # fmt: skip
    inputs.add_argument(
        "--seed", type=_seed, help="seed for the random inputs used when no --input is given "
        "(default 0)",
    )  # fmt: skip
    inputs.add_argument(
        "--max-memory", type=memory_size, default="available", metavar="SIZE",
        help="refuse a run whose tensors would need more than SIZE at once (512M, 4G, 1T, or "
        "none; default: the memory available to the process)",
    )  # fmt: skip

    run = sub.add_parser(
        "run", parents=[common, inputs], help="run a model and show or save its outputs"
    )
    run.add_argument(
        "-o", "--output", metavar="OUT.npz",
        help="save the outputs here, keyed by output name (default: print a summary table)",
    )  # fmt: skip
    run.add_argument(
        "--shape", type=_shapes, metavar="SHAPES",
        help="run with new input shapes, in OpenVINO's syntax: x[8,3,224,224],y[1,4], or "
        "[8,3,224,224] for a model with one input (? or -1 for any size, 1..10 for a range)",
    )  # fmt: skip
    dump = run.add_argument_group("per-layer outputs")
    dump.add_argument(
        "--dump-dir", metavar="DIR",
        help="write every layer's outputs to DIR as .npy files as they are computed, with "
        "manifest.json (tensor name -> file) and inputs.npz (the inputs used)",
    )  # fmt: skip
    dump.add_argument(
        "--dump-type", action="append", metavar="TYPE",
        help="only layers of these op types (MaxPool,AvgPool; repeatable). Parameters and "
        "Consts are dumped only when named here",
    )  # fmt: skip
    dump.add_argument(
        "--dump-name", metavar="REGEX",
        help="only layers whose name or a tensor name matches this regular expression",
    )  # fmt: skip
    prof = run.add_argument_group("profiling")
    prof.add_argument(
        "--profile", action="store_true",
        help="print each layer's time, most expensive first, and the totals",
    )  # fmt: skip
    prof.add_argument(
        "--profile-json", metavar="TRACE.json",
        help="write the layer timings as a Chrome trace (open it in ui.perfetto.dev)",
    )  # fmt: skip
    prof.add_argument(
        "--iterations", type=_positive, default=1, metavar="N",
        help="with --profile/--profile-json: run N times and report each layer's median "
        "(default 1)",
    )  # fmt: skip
    from .tools.batch import add_arguments  # batch imports this module's file helpers

    add_arguments(run)

    check = sub.add_parser(
        "validate", parents=[common], help="check an IR file and report every problem",
        description="Check an IR file and report every problem, one line each. Exit 0 when "
        "there is no error, 1 when there is one (or a warning, with --strict).",
    )  # fmt: skip
    check.add_argument(
        "--shape", type=_shapes, metavar="SHAPES",
        help="give the inputs new shapes and report what breaks, in OpenVINO's syntax: "
        "x[8,3,224,224],y[1,4], or [1,3,224,224] for a model with one input "
        "(a dim may be ?, -1 or a range 1..10)",
    )  # fmt: skip
    check.add_argument("--strict", action="store_true", help="fail (exit 1) on warnings too")
    check.add_argument(
        "--max-memory", type=memory_size, default="available", metavar="SIZE",
        help="warn of tensors and runs that need more than SIZE (512M, 4G, 1T, or none; "
        "default: the memory available now)",
    )  # fmt: skip
    check.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of lines"
    )
    check.add_argument(
        "-o", "--output", metavar="REPORT.json", help="also write the report as JSON here"
    )
    run.set_defaults(handler=_run)
    check.set_defaults(handler=_validate)
    # Imported here: these tool modules use this module's helpers, so it must load first.
    from .tools import compare
    from .tools import graph as dot
    from .tools import inspect as inspector

    inspector.register(sub, common)
    compare.register(sub, common, inputs)
    dot.register(sub, common)
    return parser


def _shapes(text: str) -> str:
    # Checked here, so that a malformed --shape is a usage error before anything is read.
    try:
        parse_shapes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


_shapes.__name__ = "--shape"  # argparse names the type in "invalid --shape value: '...'"


def int_at_least(low: int, name: str) -> Callable[[str], int]:
    """An argparse type for integers from ``low`` up; ``name`` is what its errors call it.

    Refused by argparse, a value out of range is a usage error (exit 2), not a crash.
    """

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise ValueError(text)
        return value

    parse.__name__ = name  # argparse says "invalid NAME value: '-1'"
    return parse


def memory_size(text: str) -> int | str | None:
    """``--max-memory``: bytes, None for ``none``, or ``available`` (the default)."""
    if text == "available":
        return text
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_seed = int_at_least(0, "seed")  # NumPy refuses negative seeds
_positive = int_at_least(1, "count")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "run")
    args = _parser().parse_args(args_list)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 2
    except IrrunError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (irrun inspect ... | head): stop quietly, and keep Python's
        # flush of stdout at exit from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the shell reports a process a pipe killed
    except Exception as exc:  # a bug in irrun: still one line, the traceback with --debug
        if args.debug:
            raise
        print(
            f"irrun: internal error: {type(exc).__name__}: {exc} (run with --debug for details)",
            file=sys.stderr,
        )
        return 1


def _validate(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(Path(args.output))
    shapes_text = None
    try:
        checked = check_ir(args.model, args.weights, args.shape, max_memory=args.max_memory)
    except UsageError:
        raise
    except Exception as exc:
        if args.debug:
            raise
        found = [internal_error(args.model, exc)]  # never a traceback, whatever the file
    else:
        found = checked.findings
        if checked.graph is not None and checked.shapes:
            shapes_text = describe(checked.graph, checked.shapes)
    if args.debug:  # a bug an op's rule hit was reported; the traceback is wanted instead
        for d in found:
            if "exception" in d.extra:
                raise d.extra["exception"]
    errors = sum(d.level == "error" for d in found)
    warnings = len(found) - errors
    failed = bool(errors or (args.strict and warnings))
    report = validation_report(args.model, found, shapes_text, args.strict)
    if args.output:
        write_atomically(Path(args.output), lambda f: _dump_json(report, f))
        findings = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
        say_written(f"the report ({findings})", args.output)
    if args.json:
        _dump_json(report, sys.stdout)
        return int(failed)
    for d in found:
        print(d)
    subject = f"{args.model} with {shapes_text}" if shapes_text else args.model
    if failed:
        strict = "" if errors else " (--strict: warnings fail)"
        print(f"{subject}: {_count(errors, 'error')}, {_count(warnings, 'warning')}{strict}")
    elif warnings:
        print(f"{subject}: valid ({_count(warnings, 'warning')})")
    else:
        print(f"{subject}: valid")
    return int(failed)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def validation_report(
    model: str, found: list[Diagnostic], shapes: str | None = None, strict: bool = False
) -> dict[str, Any]:
    """The JSON report of ``irrun validate``: a summary and every finding.

    >>> validation_report("m.xml", [])["summary"]
    {'passed': True, 'errors': 0, 'warnings': 0, 'strict': False}
    """
    errors = sum(d.level == "error" for d in found)
    warnings = len(found) - errors
    return {
        "file": model,
        "shapes": shapes,
        "summary": {
            "passed": not errors and not (strict and warnings),
            "errors": errors,
            "warnings": warnings,
            "strict": strict,
        },
        "findings": [d.as_dict() for d in found],
    }


def _dump_json(report: dict[str, Any], f: IO[str]) -> None:
    json.dump(report, f, indent=2)
    f.write("\n")


def _run(args: argparse.Namespace) -> int:
    from .tools.batch import batch_command, check_arguments

    check_arguments(args)
    if args.input_dir is not None:
        return batch_command(args)
    # Outputs are checked before the model runs, so a long run does not end in a failed write.
    if args.output:
        check_output_path(Path(args.output))
    if args.profile_json:
        check_output_path(Path(args.profile_json))
    if args.iterations > 1 and not (args.profile or args.profile_json):
        raise UsageError("--iterations needs --profile or --profile-json")
    seed = random_seed(args)
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
    model = load(args.model, args.weights, args.max_memory)
    say(f"loaded {args.model}: {len(model.layers())} layers, {_ms(start)}")
    if args.shape:
        model.reshape(args.shape)
        say(f"reshaped to {args.shape}")
    feeds = read_inputs(model, args.input) if args.input else model.random_inputs(seed)
    given = ", ".join(args.input) if args.input else f"random (seed {seed})"
    say(f"inputs: {given}: " + ", ".join(
        f"{name} {list(np.shape(v))} {np.asarray(v).dtype}" for name, v in feeds.items()
    ))  # fmt: skip
    start = time.perf_counter()
    profile = Profile() if args.profile or args.profile_json else None
    if dumper is not None:
        dumper.prepare(feeds)
    outputs: dict[str, np.ndarray] = {}
    done = False
    try:
        for i in range(args.iterations if profile is not None else 1):
            # The dump is of the first run; later ones only add timings.
            hooks = [h for h in (dumper if i == 0 else None, profile) if h is not None]
            if profile is not None:
                profile.start_run(time.perf_counter())
            try:
                outputs = model.run(feeds, on_layer=_calling(hooks) if hooks else None)
            except IrrunError as exc:
                raise _with_shape_hint(exc, model, feeds) if not args.input else exc from None
            if profile is not None:
                profile.end_run(time.perf_counter())
        done = True
    finally:
        if dumper is not None:
            dumper.finish(complete=done)
    runs = args.iterations if profile is not None else 1
    say(f"ran {runs} time{'s' * (runs != 1)} in {_ms(start)}")
    if dumper is not None and not args.quiet:
        print(f"irrun: {dumper.summary()}", file=sys.stderr)
    if args.output:
        save_npz(Path(args.output), outputs)
        say_written(count(len(outputs), "output"), args.output, args.quiet)
    else:
        print(summary_table(outputs))
    if profile is not None:
        if args.profile:
            print()
            print(profile.table())
        if args.profile_json:
            trace = profile.chrome_trace(args.model)
            write_atomically(Path(args.profile_json), lambda f: _dump_json(trace, f))
            layers = count(len(profile.layers), "layer")
            say_written(f"the trace of {layers}", args.profile_json, args.quiet)
    return 0


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


def random_seed(args: argparse.Namespace, source: str | None = None) -> int:
    """The seed of the random inputs: ``--seed``, else 0.

    A seed given where no random inputs are made would be silently ignored, so it is
    refused (exit 2): with ``--input`` or ``--input-dir``, or where ``source`` (the
    inputs' other origin, if any) names where the inputs come from instead.
    """
    if args.seed is None:
        return 0
    instead = source or ("--input" if args.input else None)
    if getattr(args, "input_dir", None) is not None:
        instead = "--input-dir"
    if instead:
        raise UsageError(f"--seed makes random inputs, but the inputs come from {instead}")
    return int(args.seed)


def read_inputs(model: Model, specs: Sequence[str]) -> dict[str, np.ndarray]:
    """Load ``--input`` values: ``NAME=x.npy``, ``x.npy`` (one input) or ``all.npz``.

    Every name is checked here, against the Parameter's name and tensor names, so that
    an error can say which argument or file brought it.
    """
    feeds: dict[str, np.ndarray] = {}
    given_by: dict[str, str] = {}  # input name -> the --input that gave it

    def put(name: str, array: np.ndarray, source: str, npz: str | None = None) -> None:
        spec = model.input_spec(name)
        if spec is None:
            valid = ", ".join(s.name for s in model.inputs)
            if npz is not None:
                raise IrrunError(
                    f"array '{name}' is not an input of {model.path.name} (inputs: {valid})",
                    Location(npz),
                )
            raise IrrunError(f"--input {source}: no input named '{name}' (inputs: {valid})")
        if spec.name in given_by:
            raise UsageError(
                f"input '{spec.name}' is given twice: by --input {given_by[spec.name]} "
                f"and by --input {source}"
            )
        given_by[spec.name] = source
        feeds[spec.name] = array

    for spec in specs:
        name, path = None, spec
        if "=" in spec:
            head, tail = spec.split("=", 1)
            if model.input_spec(head) is not None or not Path(spec).exists():
                name, path = head, tail
        loaded = load_array_file(Path(path))
        if isinstance(loaded, dict):
            if name is not None:
                if name not in loaded:
                    raise IrrunError(
                        f"no array '{name}' in it (it has {', '.join(loaded) or 'none'})",
                        Location(path),
                    )
                put(name, loaded[name], spec)
            else:
                for key, array in loaded.items():
                    put(key, array, spec, npz=path)
            continue
        if name is None:
            if len(model.inputs) != 1:
                raise UsageError(
                    f"--input {spec}: the model has {len(model.inputs)} inputs "
                    f"({', '.join(s.name for s in model.inputs)}); write NAME={path}"
                )
            name = model.inputs[0].name
        put(name, loaded, spec)
    return feeds


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
