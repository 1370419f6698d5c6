"""Batches: ``irrun MODEL.xml --input-dir DIR --output-dir OUT`` runs every input file in DIR.

Each ``.npy`` or ``.npz`` in DIR (sorted by name, not recursive; other files and hidden
ones are ignored) is one run: a ``.npy`` feeds a model with one input, as
``--input x.npy`` does, an ``.npz`` is keyed by input name.  Its outputs go to
``OUT/<stem>.npz``, keyed as ``-o`` keys them, written whole or not at all, and an
existing one is replaced (``--resume`` keeps it and skips its input instead).

Files are read one at a time, by whichever process runs them, so a directory of any
size goes through in the memory one run takes.  A bad input file is reported on
stderr, one line naming it, and the batch goes on with the others (``--fail-fast``
stops at the first); the exit code is then 1, with a count of the failed files.

``--jobs N`` runs the files in N worker processes (0 or ``auto``: one per CPU).  Each
worker gets the model once, as a pickle of its paths (see ``Model.__getstate__``), and
reads its own inputs and writes its own outputs; the parent only hands out file names
and reports what each worker did, in the order they finish.  Without ``--threads``,
each of the N workers runs on the idle cores this process may use
(:func:`irrun.threads.default`) divided by N (at least one), so that N workers never
ask for more threads than there are cores; ``--threads`` gives each worker that many
(and pins BLAS's count, whose order of summation may depend on it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import IO, Any

import numpy as np

from .. import threads
from ..core.model import Model, load
from ..errors import IrrunError, Location, UsageError
from ..ir.dims import format_shape
from ..text import count
from .common import int_at_least, load_array_file, random_seed, save_npz

INPUT_SUFFIXES = (".npy", ".npz")


@dataclass(frozen=True)
class FileResult:
    """What became of one input file: the output written, or the error that stopped it."""

    source: str
    target: str
    outputs: tuple[tuple[str, str, str], ...] = ()  # (name, shape, dtype) of each output
    seconds: float = 0.0
    error: str | None = None
    skipped: bool = False


def input_files(directory: Path) -> list[Path]:
    """The input files of a batch: DIR's ``.npy`` and ``.npz`` files, sorted by name."""
    where = Location(str(directory))
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise IrrunError(f"--input-dir: {what}", where)
    try:
        entries = list(directory.iterdir())
    except OSError as exc:
        raise IrrunError(f"--input-dir: cannot list: {exc.strerror or exc}", where) from None
    files = sorted(
        (p for p in entries
         if p.suffix.lower() in INPUT_SUFFIXES and not p.name.startswith(".") and p.is_file()),
        key=lambda p: p.name,
    )  # fmt: skip
    if not files:
        raise IrrunError("--input-dir: no .npy or .npz files in it", where)
    return files


def output_path(out_dir: Path, source: Path) -> Path:
    return out_dir / f"{source.stem}.npz"


def read_feeds(model: Model, path: Path) -> dict[str, np.ndarray]:
    """The inputs one batch file holds; raises :class:`IrrunError` naming the file."""
    loaded = load_array_file(path)
    where = Location(str(path))
    if not isinstance(loaded, dict):
        if len(model.inputs) != 1:
            names = ", ".join(s.name for s in model.inputs)
            raise IrrunError(
                f"a .npy feeds a model with one input, and {model.path.name} has "
                f"{len(model.inputs)} ({names}): use an .npz keyed by input name", where
            )  # fmt: skip
        return {model.inputs[0].name: loaded}
    for key in loaded:
        if model.input_spec(key) is None:
            valid = ", ".join(s.name for s in model.inputs)
            raise IrrunError(
                f"array '{key}' is not an input of {model.path.name} (inputs: {valid})", where
            )
    return loaded


def run_file(source: str | Path, model: Model, out_dir: str | Path) -> FileResult:
    """Run ``model`` on one input file and write ``out_dir/<stem>.npz``, whole or not at all.

    Raises :class:`IrrunError` whose message names the input file.  The file comes first,
    as ``dask.bag.Bag.map(run_file, model, out_dir)`` and ``map`` pass it.
    """
    source, out_dir = Path(source), Path(out_dir)
    target = output_path(out_dir, source)
    start = time.perf_counter()
    try:
        outputs = model.run(read_feeds(model, source))
        seconds = time.perf_counter() - start
        save_npz(target, outputs)
    except IrrunError as exc:
        if str(exc).startswith(str(source)):
            raise
        # An error about the model (a wrong shape, a missing input) still names the file.
        raise IrrunError(f"{source}: {exc}") from None
    shapes = tuple((k, format_shape(v.shape), str(v.dtype)) for k, v in outputs.items())
    return FileResult(str(source), str(target), shapes, seconds)


def _attempt(model: Model, source: Path, out_dir: Path, resume: bool, debug: bool) -> FileResult:
    """:func:`run_file`, with its error kept in the result rather than raised."""
    target = output_path(out_dir, source)
    if resume and target.is_file():  # written atomically, so a file there is whole
        return FileResult(str(source), str(target), skipped=True)
    try:
        return run_file(source, model, out_dir)
    except IrrunError as exc:
        return FileResult(str(source), str(target), error=str(exc))
    except Exception as exc:  # a bug in irrun: one line for this file, the rest go on
        if debug:
            raise
        message = f"{source}: internal error: {type(exc).__name__}: {exc}"
        return FileResult(str(source), str(target), error=message)


# --- worker processes ----------------------------------------------------------------------

_worker_model: Model | None = None


def _init_worker(model: Model) -> None:
    # The model arrives pickled by path: unpickling it here read the .xml and mapped the .bin.
    global _worker_model
    _worker_model = model


def _work(source: Path, out_dir: Path, resume: bool, debug: bool) -> FileResult:
    assert _worker_model is not None, "the worker was started without a model"
    return _attempt(_worker_model, source, out_dir, resume, debug)


def _in_pool(
    model: Model, files: Sequence[Path], out_dir: Path, jobs: int, resume: bool, debug: bool,
    fail_fast: bool,
) -> Iterator[FileResult]:  # fmt: skip
    """Results in the order workers finish them, with at most 2 files per worker queued."""
    pending: set[Future[FileResult]] = set()
    queue = iter(files)
    # spawn, not fork: a fresh interpreter per worker, the same on every platform, and
    # no copy of a parent's BLAS threads or locks.
    # Each worker runs on model.threads threads, BLAS's included (batch_command gives
    # each its share of the cores unless --threads says).  OpenBLAS may split a
    # convolution's matrix product differently with another count: --threads pins it,
    # for values that do not depend on --jobs to the last bit.
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=get_context("spawn"),
        initializer=_init_worker, initargs=(model,),
    ) as pool:  # fmt: skip
        try:
            while True:
                for source in queue:
                    pending.add(pool.submit(_work, source, out_dir, resume, debug))
                    if len(pending) >= 2 * jobs:
                        break
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    yield result
                    if result.error is not None and fail_fast:
                        # Files not started are dropped; those running finish and are written.
                        queue = iter(())
                        pending = {f for f in pending if not f.cancel()}
        except BrokenProcessPool:
            raise IrrunError(
                "a worker process died (out of memory, or killed); outputs written so far "
                f"are whole, in {out_dir}", Location(str(model.path)),
            ) from None  # fmt: skip
        finally:
            for future in pending:
                future.cancel()


def run_batch(
    model: Model, files: Sequence[Path], out_dir: Path, jobs: int = 1, resume: bool = False,
    fail_fast: bool = False, debug: bool = False,
) -> Iterator[FileResult]:  # fmt: skip
    """Run every file, yielding each result as it is done (in order when ``jobs`` is 1)."""
    if jobs <= 1 or len(files) <= 1:
        for source in files:
            result = _attempt(model, source, out_dir, resume, debug)
            yield result
            if result.error is not None and fail_fast:
                return
        return
    yield from _in_pool(model, files, out_dir, min(jobs, len(files)), resume, debug, fail_fast)


# --- reporting -----------------------------------------------------------------------------


class Progress:
    """A progress bar on a terminal's stderr (tqdm), and lines printed around it."""

    def __init__(self, total: int, stream: IO[str], enabled: bool, unit: str = "file") -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm  # only a terminal needs it

            self._bar = tqdm(total=total, file=stream, unit=unit, dynamic_ncols=True,
                             leave=False)  # fmt: skip

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def update(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def print(self, text: str, stream: IO[str]) -> None:
        # Through tqdm while a bar is shown, so that the line is not drawn over the bar.
        if self._bar is not None:
            self._bar.write(text, file=stream)
        else:
            print(text, file=stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def progress(total: int, stream: IO[str], quiet: bool = False, unit: str = "file") -> Progress:
    """A bar only when ``stream`` is a terminal and not ``-q``: never in a log or a pipe."""
    isatty = getattr(stream, "isatty", None)
    return Progress(total, stream, not quiet and callable(isatty) and bool(isatty()), unit)


def _describe(result: FileResult) -> str:
    if result.skipped:
        return f"{result.source}: skipped, {result.target} is there"
    shapes = ", ".join(f"{name} {shape} {dtype}" for name, shape, dtype in result.outputs)
    return f"{result.source} -> {result.target}: {shapes} ({result.seconds * 1000:.1f} ms)"


# --- the command ---------------------------------------------------------------------------


def jobs_count(text: str) -> int:
    """``--jobs``: a number of worker processes, 0 or ``auto`` for one per CPU."""
    return 0 if text == "auto" else _non_negative(text)


_non_negative = int_at_least(0, "--jobs")


jobs_count.__name__ = "--jobs"  # argparse names the type in "invalid --jobs value: 'x'"


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The batch options of ``irrun run``."""
    group = run.add_argument_group("batches")
    group.add_argument(
        "--input-dir", metavar="DIR",
        help="run every .npy/.npz in DIR (sorted; a .npy for a model with one input, an .npz "
        "keyed by input name), writing OUT/<stem>.npz for each",
    )  # fmt: skip
    group.add_argument("--output-dir", metavar="OUT", help="where --input-dir's outputs go")
    group.add_argument(
        "-j", "--jobs", type=jobs_count, default=1, metavar="N",
        help="worker processes for --input-dir (default 1; 0 or auto: one per CPU)",
    )  # fmt: skip
    group.add_argument("--fail-fast", action="store_true",
                       help="stop at the first input file that fails")  # fmt: skip
    group.add_argument("--resume", action="store_true",
                       help="skip input files whose output is already in OUT")  # fmt: skip
    verbosity = group.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true",
                           help="print nothing but errors and the outputs asked for")  # fmt: skip
    verbosity.add_argument("-v", "--verbose", action="store_true",
                           help="say what is done and how long it takes on stderr "
                           "(batches: a line per input file)")  # fmt: skip


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse batch options that make no sense together (exit 2)."""
    if args.input_dir is None:
        given = [flag for flag, on in (
            ("--output-dir", args.output_dir is not None), ("--jobs", args.jobs != 1),
            ("--fail-fast", args.fail_fast), ("--resume", args.resume),
        ) if on]  # fmt: skip
        if given:
            raise UsageError(f"{', '.join(given)} need{'s' * (len(given) == 1)} --input-dir")
        return
    if args.output_dir is None:
        raise UsageError("--input-dir needs --output-dir, where the outputs go")
    random_seed(args)  # refuses a --seed, which --input-dir's files would leave unused
    if args.input:
        raise UsageError("--input and --input-dir do not go together: inputs come from DIR")
    if args.output:
        raise UsageError("--output and --input-dir do not go together: outputs go to --output-dir")
    if args.cast:
        raise UsageError("--cast and --input-dir do not go together: run a file with --input")
    # A dump or a profile is of one run; run the file of interest with --input for those.
    single = [flag for flag, on in (
        ("--dump-dir", args.dump_dir), ("--profile", args.profile),
        ("--profile-json", args.profile_json),
    ) if on]  # fmt: skip
    if single:
        raise UsageError(
            f"{', '.join(single)} and --input-dir do not go together: "
            "run the input of interest with --input"
        )


def batch_command(
    args: argparse.Namespace, stdout: IO[str] | None = None, stderr: IO[str] | None = None
) -> int:
    """``irrun run --input-dir DIR --output-dir OUT``: 0 when every file ran, else 1."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    check_arguments(args)
    in_dir, out_dir = Path(args.input_dir), Path(args.output_dir)
    files = input_files(in_dir)
    _check_output_dir(in_dir, out_dir, files)
    # Refused here, before any worker starts.
    model = load(
        args.model,
        args.weights,
        args.max_memory,
        getattr(args, "fold_cap", True),
        reference=args.reference,
    )
    if args.shape:
        model.reshape(args.shape)  # the workers' copies are reshaped too: pickles carry it
    jobs = args.jobs or os.cpu_count() or 1
    if getattr(args, "threads", None) is not None:
        model.threads = args.threads
    elif jobs > 1 and len(files) > 1 and not model.reference:  # each worker its cores' share
        model.threads = max(1, threads.default() // min(jobs, len(files)))
    start = time.perf_counter()
    failed: list[str] = []
    written = skipped = 0
    bar = progress(len(files), stderr, args.quiet)
    try:
        for result in run_batch(model, files, out_dir, jobs, args.resume, args.fail_fast,
                                args.debug):  # fmt: skip
            if result.error is not None:
                failed.append(result.source)
                bar.print(f"irrun: error: {result.error}", stderr)
            elif result.skipped:
                skipped += 1
            else:
                written += 1
            if args.verbose and result.error is None:
                bar.print(_describe(result), stdout)
            bar.update()
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    if not args.quiet:
        parts = [f"{count(len(files), 'input')}, {count(written, 'output')} written to {out_dir}"]
        if skipped:
            parts.append(f"{skipped} skipped (already there)")
        if failed:
            parts.append(f"{len(failed)} failed")
        not_run = len(files) - written - skipped - len(failed)
        if not_run:
            parts.append(f"{not_run} not run (--fail-fast)")
        print(f"{', '.join(parts)} in {seconds:.2f} s", file=stdout, flush=True)
    if failed:
        shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        print(f"irrun: error: {len(failed)} of {count(len(files), 'input file')} failed: {shown}",
              file=stderr)  # fmt: skip
        return 1
    return 0


def _check_output_dir(in_dir: Path, out_dir: Path, files: Sequence[Path]) -> None:
    """Create OUT, and refuse a batch whose outputs would overwrite its inputs or each other."""
    where = Location(str(out_dir))
    if out_dir.exists() and not out_dir.is_dir():
        raise IrrunError("--output-dir: is a file, expected a directory", where)
    if out_dir.is_dir() and os.path.samefile(in_dir, out_dir):
        raise UsageError(
            f"--output-dir {out_dir} is --input-dir: the outputs would replace .npz inputs"
        )
    by_target: dict[str, Path] = {}
    for source in files:
        other = by_target.setdefault(output_path(out_dir, source).name, source)
        if other is not source:
            raise IrrunError(
                f"{other.name} and {source.name} would both be written to "
                f"{output_path(out_dir, source)}: rename one", Location(str(in_dir)),
            )  # fmt: skip
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IrrunError(f"--output-dir: cannot create: {exc.strerror or exc}", where) from None
