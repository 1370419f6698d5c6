"""What the commands share: their common arguments, reading inputs, writing files.

Arguments: the parents every command's sub-parser is built on (the model, and the
inputs of the commands that run it), the argparse types of shapes, counts and sizes,
the seed of random inputs and ``--input`` files.  Files: result files are written
whole or not at all, and refused before any work is done.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from ..core.memory import parse_size
from ..core.model import Model
from ..core.reshape import parse_shapes
from ..errors import IrrunError, Location, MissingFile, UsageError
from ..files import mode_for
from ..text import count as count  # profile.py imports it from here


def check_output_path(path: Path) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    ``-`` is stdout to irrun (``graph -o -``, ``run -o -``): an output that does not
    take it is refused rather than written to a file named ``-``.
    """
    where = Location(str(path))
    if str(path) == "-":
        raise UsageError(
            "- means stdout, which this output does not take: give a file name (--json prints "
            "the report on stdout)"
        )
    if path.is_dir() or not path.name:
        raise IrrunError("is a directory, expected a file name such as out.npz", where)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise IrrunError("the output's directory does not exist", where)


def say_written(what: str, path: Path | str, quiet: bool = False) -> None:
    """Tell on stderr what a command wrote where (``irrun: wrote 2 outputs to out.npz``),
    unless ``quiet``: a file that appears without a word looks like nothing happened.
    stdout is left to what the command prints for itself."""
    if not quiet:
        print(f"irrun: wrote {what} to {path}", file=sys.stderr, flush=True)


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically: a temporary file renamed into place.

    The same arrays give the same bytes (see :func:`write_npz`).
    """
    write_atomically(path, lambda f: write_npz(f, arrays), binary=True)


# The earliest time a zip entry can hold; every member gets it, not the time of writing.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(f: Any, arrays: dict[str, np.ndarray]) -> None:
    """What ``np.savez(f, **arrays)`` writes, but the same bytes for the same arrays.

    np.savez stamps each member with the current time, so two runs of a model that
    agree to the bit still give different files; here every member has a fixed time,
    no compression and the arrays' order, so that a checksum or ``cmp`` tells whether
    outputs changed.  ``np.load`` reads it as it reads np.savez's files.

    >>> import io
    >>> a, b = io.BytesIO(), io.BytesIO()
    >>> write_npz(a, {"y": np.arange(3)}); write_npz(b, {"y": np.arange(3)})
    >>> a.getvalue() == b.getvalue(), list(np.load(io.BytesIO(a.getvalue())))
    (True, ['y'])
    """
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16  # what unzip gives the extracted .npy
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, _storable(name, np.asanyarray(array)),
                                          allow_pickle=False)  # fmt: skip


def _storable(name: str, array: np.ndarray) -> np.ndarray:
    """``array`` as a .npy holds it without pickle: a string tensor (an object array of
    str) as fixed-width ``<U``, refused where that would cut a trailing NUL character."""
    if array.dtype != np.dtype(object):
        return array
    values = array.reshape(-1).tolist()
    if any(not isinstance(v, str) for v in values):
        raise IrrunError(f"{name}: an object array that is no string tensor cannot be saved")
    if any(v.endswith("\x00") for v in values):
        raise IrrunError(f"{name}: a string ending in NUL cannot be saved (.npy's fixed-width "
                         "strings drop it)")  # fmt: skip
    return np.array(values, dtype=str).reshape(array.shape)


def write_atomically(path: Path, write: Callable[[Any], object], binary: bool = False) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it into place.

    The file appears whole or not at all; an existing one is left as it was on failure.
    """
    check_output_path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise IrrunError(f"cannot write: {exc.strerror or exc}", Location(str(path))) from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            write(f)
        # mkstemp makes the file private (0600); give it the mode open() would have.
        os.chmod(tmp, mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            where = Location(str(path))
            raise IrrunError(f"cannot write: {exc.strerror or exc}", where) from None
        raise


NPY_MAGIC = (b"\x93NUMPY",)
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member, or an empty archive


def check_magic(path: Path, magics: tuple[bytes, ...], what: str, kind: str = "") -> None:
    """Refuse a file that is missing or does not start as ``what`` (``.npy``, ``.npz``) does.

    np.load falls back to unpickling what it does not recognise, and then blames pickling;
    ``kind`` names the file's role in the message (``no such input file``).
    """
    where = Location(str(path))
    if path.is_dir():
        raise IrrunError(f"is a directory, expected a {what} file", where)
    if not path.is_file():
        raise MissingFile(f"no such {kind + ' ' if kind else ''}file", where)
    try:
        with path.open("rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise IrrunError(f"cannot read: {exc.strerror or exc}", where) from None
    if not magic.startswith(magics):
        header = " or ".join(("NumPy" if m == NPY_MAGIC else "zip") for m in _kinds(magics))
        article = "an" if what[1] in "aeiou" else "a"
        raise IrrunError(f"not {article} {what} file (no {header} header)", where)


def _kinds(magics: tuple[bytes, ...]) -> list[tuple[bytes, ...]]:
    return [m for m in (NPY_MAGIC, ZIP_MAGIC) if set(m) <= set(magics)]


def load_array_file(path: Path) -> np.ndarray | dict[str, np.ndarray]:
    """An input file: a .npy's array, or an .npz's arrays by name; errors name the file."""
    where = Location(str(path))
    check_magic(path, NPY_MAGIC + ZIP_MAGIC, ".npy or .npz", "input")
    try:
        # Opened here, so that it is closed when NumPy fails partway (a broken .npz
        # otherwise leaves its file open until the garbage collector finds it).
        with open(path, "rb") as f:
            loaded = np.load(f, allow_pickle=False)
            if isinstance(loaded, np.lib.npyio.NpzFile):
                with loaded:
                    return {k: loaded[k] for k in loaded.files}
            return loaded
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise IrrunError(f"cannot read as .npy or .npz: {exc}", where) from None


# ------------------------------------------------------------------------- arguments


class Parents(NamedTuple):
    """The arguments commands share, as argparse parents of their sub-parsers."""

    model: argparse.ArgumentParser  # MODEL.xml, --weights, --debug: every command
    inputs: argparse.ArgumentParser  # -i, --seed, --max-memory: the commands that run it


def parents() -> Parents:
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
        "--cast", action="store_true",
        help="convert --input arrays of another number type (np.save's float64) to the "
        "input's type, refusing values it cannot hold (out of range, fractions for integers)",
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
    inputs.add_argument(
        "--reference",
        action="store_true",
        help="run the reference kernels only: no fast kernel, no fused step, one thread "
        "(what irrun's values are defined by; slower)",
    )
    return Parents(common, inputs)


def shapes(text: str) -> str:
    # Checked here, so that a malformed --shape is a usage error before anything is read.
    try:
        parse_shapes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


shapes.__name__ = "--shape"  # argparse names the type in "invalid --shape value: '...'"

SHAPE_HELP = (
    "run with new input shapes, in OpenVINO's syntax: x[8,3,224,224],y[1,4], or "
    "[8,3,224,224] for a model with one input (? or -1 for any size, 1..10 for a range)"
)


def add_shape(parser: argparse.ArgumentParser) -> None:
    """``--shape``, for the commands that make inputs: random ones take the shapes given."""
    parser.add_argument("--shape", type=shapes, metavar="SHAPES", help=SHAPE_HELP)


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


def add_threads(parser: argparse.ArgumentParser) -> None:
    """``--threads N``, for the commands that run a model (see :mod:`irrun.threads`)."""
    parser.add_argument(
        "--threads", type=int_at_least(1, "--threads"), metavar="N",
        help="threads a run uses, BLAS's and the other kernels' (default: the cores this "
        "process may use that the machine's load leaves idle, at least 1); results do not "
        "depend on it but for the order of BLAS's sums",
    )  # fmt: skip


def memory_size(text: str) -> int | str | None:
    """``--max-memory``: bytes, None for ``none``, or ``available`` (the default)."""
    if text == "available":
        return text
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_seed = int_at_least(0, "seed")  # NumPy refuses negative seeds
positive = int_at_least(1, "count")


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


def read_inputs(model: Model, specs: Sequence[str], cast: bool = False) -> dict[str, np.ndarray]:
    """Load ``--input`` values: ``NAME=x.npy``, ``x.npy`` (one input) or ``all.npz``.

    Every name is checked here, against the Parameter's name and tensor names, so that
    an error can say which argument or file brought it.  With ``cast`` (``--cast``) each
    array is converted to its input's type (see :meth:`~irrun.Model.cast_inputs`).
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
    return model.cast_inputs(feeds) if cast else feeds


def dump_json(data: dict[str, Any], f: IO[str]) -> None:
    """A report as the commands write it: indented JSON and a newline."""
    json.dump(data, f, indent=2)
    f.write("\n")
