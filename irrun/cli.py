"""The ``irrun`` command line.

``irrun MODEL.xml ...`` is short for ``irrun run MODEL.xml ...``.  Errors are one
line on stderr with exit code 1 (2 for misuse of the command line); ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import __version__
from .errors import IrrunError, Location, UsageError
from .model import Model, load, validate

COMMANDS = ("run", "validate")


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

    run = sub.add_parser("run", parents=[common], help="run a model and show or save its outputs")
    run.add_argument(
        "-i", "--input", action="append", default=[], metavar="[NAME=]PATH",
        help="an input: a .npy (NAME= picks the input, optional for one input) or an .npz "
        "keyed by input name; repeat for several. Default: seeded random inputs",
    )  # fmt: skip
    run.add_argument(
        "-o", "--output", metavar="OUT.npz",
        help="save the outputs here, keyed by output name (default: print a summary table)",
    )  # fmt: skip
    run.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")

    sub.add_parser(
        "validate", parents=[common], help="check an IR file and report every problem"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in COMMANDS and not args_list[0].startswith("-"):
        args_list.insert(0, "run")
    elif args_list and args_list[0].startswith("-") and args_list[0] not in (
        "-h", "--help", "--version"
    ):  # fmt: skip
        args_list.insert(0, "run")
    args = _parser().parse_args(args_list)
    try:
        if args.command == "validate":
            return _validate(args)
        return _run(args)
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
    except Exception as exc:  # a bug in irrun: still one line, the traceback with --debug
        if args.debug:
            raise
        print(
            f"irrun: internal error: {type(exc).__name__}: {exc} (run with --debug for details)",
            file=sys.stderr,
        )
        return 1


def _validate(args: argparse.Namespace) -> int:
    found = validate(args.model, args.weights)
    errors = sum(d.level == "error" for d in found)
    warnings = len(found) - errors
    for d in found:
        if d.level == "error":
            print(d)
        else:
            where = f"{d.location}: " if d.location else ""
            layer = f"{d.layer}" + (f" port {d.port}" if d.port is not None else "") + ": "
            print(f"{where}warning: {layer if d.layer else ''}{d.message}")
    if errors:
        print(f"{args.model}: {errors} error{'s' * (errors != 1)}, "
              f"{warnings} warning{'s' * (warnings != 1)}")  # fmt: skip
    else:
        extra = f" ({warnings} warning{'s' * (warnings != 1)})" if warnings else ""
        print(f"{args.model}: valid{extra}")
    return 1 if errors else 0


def _run(args: argparse.Namespace) -> int:
    model = load(args.model, args.weights)
    feeds = read_inputs(model, args.input) if args.input else model.random_inputs(args.seed)
    outputs = model.run(feeds)
    if args.output:
        save_npz(Path(args.output), outputs)
    else:
        print(summary_table(outputs))
    return 0


def read_inputs(model: Model, specs: Sequence[str]) -> dict[str, np.ndarray]:
    """Load ``--input`` values: ``NAME=x.npy``, ``x.npy`` (one input) or ``all.npz``."""
    names = {spec.name for spec in model.inputs} | {n for s in model.inputs for n in s.names}
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        name, path = None, spec
        if "=" in spec:
            head, tail = spec.split("=", 1)
            if head in names or not Path(spec).exists():
                name, path = head, tail
        loaded = _load_array_file(Path(path))
        if isinstance(loaded, dict):
            if name is not None:
                if name not in loaded:
                    raise IrrunError(
                        f"{path} has no array '{name}' (it has {', '.join(loaded) or 'none'})"
                    )
                feeds[name] = loaded[name]
            else:
                feeds.update(loaded)
            continue
        if name is None:
            if len(model.inputs) != 1:
                raise UsageError(
                    f"--input {spec}: the model has {len(model.inputs)} inputs "
                    f"({', '.join(s.name for s in model.inputs)}); write NAME={path}"
                )
            name = model.inputs[0].name
        feeds[name] = loaded
    return feeds


def _load_array_file(path: Path) -> np.ndarray | dict[str, np.ndarray]:
    where = Location(str(path))
    if not path.is_file():
        raise IrrunError("no such input file", where)
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                return {k: loaded[k] for k in loaded.files}
        return loaded
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise IrrunError(f"cannot read as .npy or .npz: {exc}", where) from None


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically: a temporary file renamed into place."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise IrrunError("the output's directory does not exist", Location(str(path)))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summary_table(outputs: dict[str, np.ndarray]) -> str:
    rows = [("output", "shape", "dtype", "min", "max", "mean")]
    for name, arr in outputs.items():
        if arr.size and arr.dtype.kind in "fiub":
            with np.errstate(all="ignore"):
                stats = [f"{arr.min():.6g}", f"{arr.max():.6g}", f"{arr.astype(np.float64).mean():.6g}"]
        else:
            stats = ["-", "-", "-"]
        rows.append((name, str(list(arr.shape)), str(arr.dtype), *stats))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
