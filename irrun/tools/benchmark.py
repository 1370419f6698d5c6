"""``irrun benchmark MODEL.xml``: time a model's runs, as OpenVINO's benchmark_app does.

The model is loaded (and reshaped with ``--shape`` or ``-b``), its inputs read from
``--input`` files or drawn at random (``--seed``), and it runs ``--warmup`` times
(default 1, not counted: the first run is benchmark_app's "First inference"), then
again and again, each run timed on its own, until the limits are reached:

- ``-niter N``: N runs; ``-t SECONDS``: runs until SECONDS have passed (a run that is
  going on when they do is finished and counted).  Both given, both must be reached,
  as in benchmark_app, whose loop goes on while ``iteration < niter`` or
  ``elapsed < duration``.  Neither given: 10 seconds (benchmark_app's default on a CPU
  is 60 s; irrun's runs are slower, and 10 s holds enough of them to make a median).

irrun runs one inference at a time, on the thread count ``--threads`` gives: what
benchmark_app measures with ``-api sync`` (``-hint latency``).  Its ``-nireq``,
``-nstreams`` and ``-hint throughput`` have no counterpart.

Statistics are benchmark_app's (tools/benchmark_tool/openvino/tools/benchmark/
benchmark.py, as OpenVINO 2026.4's wheel ships it):

- a latency is one run's wall time; median and p90 are *nearest-rank* percentiles of
  the sorted latencies, ``sorted[ceil(n * p / 100) - 1]`` (the median of an even count
  is the lower of the middle two, never their mean);
- average, min and max are those of the latencies;
- throughput is runs per second of the whole measured loop (``iterations / duration``),
  and FPS counts samples: throughput times the batch.  The batch is ``-b`` when given,
  else the first dim of the inputs that look like images (4-D, NCHW or NHWC, with the
  channels at most 4 and the other side larger), which is how benchmark_app guesses a
  batch for a model whose inputs have no layout, else 1.

The C++ benchmark_app (samples/cpp/common/utils/src/latency_metrics.cpp) indexes
``sorted[floor(n * p / 100)]`` instead, which for an even count is the upper of the
middle two; irrun follows the Python tool, the one ``pip install openvino`` installs.

``--report out.json`` writes the same figures, and every latency in run order, as
JSON (written whole or not at all, refused before the model is loaded when it cannot
be written); ``--json`` (or ``--report -``) prints that report instead of the text,
and an error as ``irrun run --json`` does (:func:`irrun.tools.run.error_report`).  A
progress bar, of runs for ``-niter`` alone, else of the seconds run as the C++
benchmark_app's is, is drawn on stderr only when it is a terminal (not with ``-q``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..core.model import Feeds, Model, load
from ..errors import IrrunError, UsageError
from ..ir.dims import Shape, format_shape
from ..version import __version__
from . import common
from .batch import Progress, progress
from .common import Parents
from .profile import warn_if_busy
from .run import _with_shape_hint, errors_as_json, inputs_report

DEFAULT_SECONDS = 10.0  # when neither -niter nor -t is given

# The percentiles the text and the report show, besides min and max.
MEDIAN, P90 = 50, 90


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun benchmark`` to the command line."""
    bench = sub.add_parser(
        "benchmark", parents=[parents.model, parents.inputs],
        description="Time a model's runs as OpenVINO's benchmark_app -api sync does: "
        "warm-up runs, then runs until -niter runs are done and -t seconds have passed "
        f"(default: {DEFAULT_SECONDS:g} s); latency median, average, min, max and 90th "
        "percentile, and throughput.",
        epilog="examples:\n"
        "  irrun benchmark model.xml\n"
        "  irrun benchmark model.xml -t 10 -nthreads 1\n"
        "  irrun benchmark model.xml -shape [8,3,224,224] --report bench.json",
    )  # fmt: skip
    limits = bench.add_argument_group("how long")
    limits.add_argument(
        "-niter", "--iterations", type=common.positive, metavar="N",
        help="run N times (with -t: at least N times and for at least SECONDS)",
    )  # fmt: skip
    limits.add_argument(
        "-t", "--time", type=seconds_value, metavar="SECONDS",
        help=f"run until SECONDS have passed (default {DEFAULT_SECONDS:g} when -niter is not "
        "given)",
    )  # fmt: skip
    limits.add_argument(
        "--warmup", type=common.int_at_least(0, "--warmup"), default=1, metavar="N",
        help="runs before the measured ones, not counted (default 1; the first builds "
        "what later runs reuse)",
    )  # fmt: skip
    limits.add_argument(
        "-no_warmup", "--no-warmup", dest="warmup", action="store_const", const=0,
        help="no warm-up run: the same as --warmup 0",
    )  # fmt: skip
    model = bench.add_argument_group("the model")
    model.add_argument(
        "-nthreads", "--threads", type=common.positive, metavar="N",
        help="threads a run uses (default: the cores this process may use that the "
        "machine's load leaves idle, at least 1)",
    )  # fmt: skip
    model.add_argument(
        "-shape", "--shape", type=common.shapes, metavar="SHAPES",
        help="run with new input shapes, in OpenVINO's syntax: x[8,3,224,224],y[1,4], or "
        "[8,3,224,224] for a model with one input",
    )  # fmt: skip
    model.add_argument(
        "-b", "--batch", type=common.positive, metavar="N",
        help="set the batch, the first dim of each input whose first dim is dynamic or 1 "
        "or that looks like an image (4-D NCHW or NHWC), after --shape; FPS counts N "
        "samples a run",
    )  # fmt: skip
    out = bench.add_argument_group("output")
    out.add_argument(
        "--report", metavar="OUT.json",
        help="write the figures and every latency as JSON here (- for stdout: --json)",
    )  # fmt: skip
    out.add_argument(
        "--json", action="store_true", help="print that JSON report instead of the text"
    )
    out.add_argument(
        "-q", "--quiet", action="store_true",
        help="no progress bar, no word on the report written",
    )  # fmt: skip
    bench.set_defaults(handler=_handle)


def seconds_value(text: str) -> float:
    """``-t``: a finite number of seconds above 0."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(text)
    return value


seconds_value.__name__ = "-t"  # argparse says "invalid -t value: '0'"


# --------------------------------------------------------------------------- statistics


def percentile(sorted_values: Sequence[float], percent: float) -> float:
    """The nearest-rank ``percent`` percentile of ascending ``sorted_values``, as
    benchmark_app reports it: ``sorted_values[ceil(n * percent / 100) - 1]``.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile(list(range(1, 11)), 90)
    (2.0, 9)
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no values")
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], not {percent}")
    # Exact for integer percents (n * p is an integer); ceil of the float otherwise.
    rank = -(-n * percent // 100) if isinstance(percent, int) else math.ceil(n * percent / 100)
    return sorted_values[int(rank) - 1]


def latency_stats(latencies: Sequence[float]) -> dict[str, float]:
    """Median, average, min, max and p90 of ``latencies``, in their unit.

    >>> latency_stats([4.0, 1.0, 3.0, 2.0])
    {'median': 2.0, 'average': 2.5, 'min': 1.0, 'max': 4.0, 'p90': 4.0}
    """
    ordered = sorted(latencies)
    if not ordered:
        raise ValueError("no latencies")
    return {
        "median": percentile(ordered, MEDIAN),
        "average": math.fsum(ordered) / len(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "p90": percentile(ordered, P90),
    }


@dataclass(frozen=True)
class BenchmarkResult:
    """The timings of a benchmark, in seconds.

    ``latencies`` are the measured runs' in run order, ``duration`` the measured loop's
    from its start to its end (a little more than their sum), ``warmup`` the warm-up
    runs', and ``batch`` the samples one run takes, which FPS counts.
    """

    latencies: tuple[float, ...]
    duration: float
    warmup: tuple[float, ...] = ()
    batch: int = 1

    @property
    def iterations(self) -> int:
        return len(self.latencies)

    @property
    def median(self) -> float:
        return self.stats()["median"]

    @property
    def average(self) -> float:
        return self.stats()["average"]

    @property
    def min(self) -> float:
        return self.stats()["min"]

    @property
    def max(self) -> float:
        return self.stats()["max"]

    @property
    def p90(self) -> float:
        return self.stats()["p90"]

    @property
    def throughput(self) -> float:
        """Runs per second: ``iterations / duration``."""
        return self.iterations / self.duration

    @property
    def fps(self) -> float:
        """Samples per second, as benchmark_app's FPS: ``batch * throughput``."""
        return self.batch * self.throughput

    @property
    def first_inference(self) -> float:
        """The first run's seconds: the first warm-up, or the first measured run."""
        return (self.warmup or self.latencies)[0]

    def stats(self) -> dict[str, float]:
        """:func:`latency_stats` of the latencies, in seconds."""
        return latency_stats(self.latencies)

    def summary(self) -> dict[str, Any]:
        """The figures in milliseconds, as the report holds them."""
        return {
            "iterations": self.iterations,
            "duration_ms": self.duration * 1e3,
            "warmup": len(self.warmup),
            "first_inference_ms": self.first_inference * 1e3,
            "latency_ms": {k: v * 1e3 for k, v in self.stats().items()},
            "throughput": {"inferences_per_second": self.throughput, "fps": self.fps},
            "batch": self.batch,
        }


def benchmark(
    model: Model | str | Path, feeds: Feeds | None = None, iterations: int | None = None,
    seconds: float | None = None, warmup: int = 1, batch: int = 1,
    on_run: Callable[[float], None] | None = None,
) -> BenchmarkResult:  # fmt: skip
    """Run ``model`` (a :class:`~irrun.Model`, or the path of its .xml) on ``feeds``
    (anything :meth:`~irrun.Model.run` takes; by default its seeded random inputs)
    ``warmup`` times, then until ``iterations`` runs are done and ``seconds`` have
    passed, timing each run.

    With neither limit it runs for :data:`DEFAULT_SECONDS`; with both, until both are
    reached (benchmark_app's rule).  ``on_run`` is called with each measured run's
    seconds (a progress bar); ``batch`` is what :attr:`BenchmarkResult.fps` counts.

    >>> from irrun import load
    >>> model = load("models/demo.xml")
    >>> result = benchmark(model, model.random_inputs(seed=0), iterations=5)
    >>> result.iterations, len(result.warmup), sorted(result.stats())
    (5, 1, ['average', 'max', 'median', 'min', 'p90'])
    >>> result.min <= result.median <= result.p90 <= result.max
    True
    """
    if isinstance(model, str | os.PathLike):
        model = load(model)
    if feeds is None:
        feeds = model.random_inputs(seed=0)
    _check_count(iterations, "iterations", 1, none=True)
    _check_count(warmup, "warmup", 0)
    _check_count(batch, "batch", 1)
    if seconds is not None and not (
        isinstance(seconds, int | float) and not isinstance(seconds, bool)
        and math.isfinite(seconds) and seconds > 0
    ):  # fmt: skip
        raise UsageError(f"seconds must be a positive number, or None, not {seconds!r}")
    if iterations is None and seconds is None:
        seconds = DEFAULT_SECONDS
    clock = time.perf_counter
    warm: list[float] = []
    for _ in range(warmup):
        start = clock()
        model.run(feeds)
        warm.append(clock() - start)
    latencies: list[float] = []
    elapsed = 0.0
    begin = clock()
    while (iterations is not None and len(latencies) < iterations) or (
        seconds is not None and elapsed < seconds
    ):
        start = clock()
        model.run(feeds)
        end = clock()
        latencies.append(end - start)
        elapsed = end - begin
        if on_run is not None:
            on_run(end - start)
    # At least the clock's resolution, as benchmark_app keeps a division by it finite.
    duration = max(clock() - begin, time.get_clock_info("perf_counter").resolution)
    return BenchmarkResult(tuple(latencies), duration, tuple(warm), batch)


def _check_count(value: object, name: str, low: int, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        allowed = f"a count of at least {low}" + (", or None" if none else "")
        raise UsageError(f"{name} must be {allowed}, not {value!r}")


# --------------------------------------------------------------------------- batches


def _looks_like_image(shape: Sequence[Any]) -> bool:
    """4-D with channels (at most 4) second and a larger last dim, or the other way round:
    benchmark_app's guess of NCHW or NHWC for an input without a layout."""
    if len(shape) != 4:
        return False

    def most(d: Any) -> float:  # a dim's upper bound; an unbounded one is large
        if isinstance(d, int):
            return d
        return math.inf if d.hi is None else d.hi

    c_first, c_last = most(shape[1]), most(shape[3])
    return (c_first <= 4 < c_last) or (c_last <= 4 < c_first)


def batch_of(feeds: Mapping[str, np.ndarray]) -> int:
    """The samples a run takes, as benchmark_app guesses them without ``-b``: the first
    dim of the inputs that look like images, when they agree, else 1.

    >>> batch_of({"image": np.zeros((8, 3, 32, 32)), "scale": np.zeros(2)})
    8
    """
    firsts = {a.shape[0] for a in feeds.values() if _looks_like_image(np.shape(a))}
    return firsts.pop() if len(firsts) == 1 else 1


def batch_shapes(model: Model, n: int) -> dict[str, list[int | str]]:
    """``-b n``: new shapes for the inputs whose first dim is the batch (dynamic, 1, or
    an image's), as benchmark_app sets a batch on inputs without a layout."""
    shapes: dict[str, list[int | str]] = {}
    for spec in model.inputs:
        shape: Shape | None = spec.shape
        if not shape:  # unknown rank, or a scalar
            continue
        first = shape[0]
        if not isinstance(first, int) or first == 1 or _looks_like_image(shape):
            shapes[spec.name] = [n, *(d if isinstance(d, int) else str(d) for d in shape[1:])]
    if not shapes:
        listed = ", ".join(f"{s.name} {format_shape(s.shape)}" for s in model.inputs)
        raise IrrunError(
            f"-b {n}: no input has a batch dim, a first dim that is dynamic or 1 or an "
            f"image's (inputs: {listed or 'none'}); give the shapes with --shape"
        )
    return shapes


# --------------------------------------------------------------------------- the command


def _handle(args: argparse.Namespace) -> int:
    if args.report == "-":  # stdout: what --json prints
        args.json, args.report = True, None
    return errors_as_json(_benchmark, args) if args.json else _benchmark(args)


def _benchmark(args: argparse.Namespace) -> int:
    report_path = Path(args.report) if args.report else None
    if report_path is not None:
        common.check_output_path(report_path)
    seed = common.random_seed(args)
    clock = time.perf_counter
    start = clock()
    model = load(
        args.model, args.weights, args.max_memory, threads=args.threads, reference=args.reference
    )
    load_seconds = clock() - start
    reshape_seconds = None
    if args.shape or args.batch:
        start = clock()
        if args.shape:
            model.reshape(args.shape)
        if args.batch:
            model.reshape(batch_shapes(model, args.batch))
        reshape_seconds = clock() - start
    if args.input:
        feeds = common.read_inputs(model, args.input, args.cast)
        source = "--input " + " ".join(args.input)
    else:
        feeds = model.random_inputs(seed)
        source = f"random, seed {seed}"
    batch = args.batch or batch_of(feeds)
    # Without limits, the default time; benchmark() would pick it too, the report says it.
    limited = args.time is not None or args.iterations is not None
    seconds = args.time if limited else DEFAULT_SECONDS
    warn_if_busy(args.quiet)
    bar = _ProgressBar(args.iterations, seconds, sys.stderr, args.quiet)
    try:
        result = benchmark(
            model, feeds, args.iterations, seconds, args.warmup, batch,
            on_run=bar.update,
        )  # fmt: skip
    except IrrunError as exc:
        raise _with_shape_hint(exc, model, feeds) if not args.input else exc from None
    finally:
        bar.close()
    report = benchmark_report(
        args.model, model, feeds, source, result, load_seconds, reshape_seconds,
        {"iterations": args.iterations, "seconds": seconds},
    )  # fmt: skip
    if args.json:
        common.dump_json(report, sys.stdout)
    else:
        print(format_report(report))
    if report_path is not None:
        common.write_atomically(report_path, lambda f: common.dump_json(report, f))
        common.say_written("the report", report_path, args.quiet)
    return 0


class _ProgressBar:
    """A bar on a terminal's stderr: of runs for ``-niter`` alone, else of the seconds
    run (with the count of runs beside it), as the C++ benchmark_app's follows its time."""

    def __init__(self, iterations: int | None, seconds: float | None, stream: IO[str],
                 quiet: bool) -> None:  # fmt: skip
        self._runs: Progress | None = None
        self._timed: Any = None
        self._count, self._elapsed = 0, 0.0
        isatty = getattr(stream, "isatty", None)
        if seconds is None:
            self._runs = progress(iterations or 0, stream, quiet, unit="it")
        elif not quiet and callable(isatty) and isatty():
            from tqdm import tqdm  # only a terminal needs it

            self._timed = tqdm(
                total=seconds, file=stream, dynamic_ncols=True, leave=False,
                bar_format="{l_bar}{bar}| {n:.1f}/{total:g} s{postfix}",
            )  # fmt: skip

    def update(self, latency: float) -> None:
        if self._runs is not None:
            self._runs.update()
        elif self._timed is not None:
            self._count += 1
            self._elapsed = min(self._elapsed + latency, self._timed.total)
            self._timed.set_postfix_str(common.count(self._count, "run"), refresh=False)
            self._timed.update(self._elapsed - self._timed.n)

    def close(self) -> None:
        for bar in (self._runs, self._timed):
            if bar is not None:
                bar.close()


def benchmark_report(
    path: str, model: Model, feeds: Mapping[str, np.ndarray], source: str,
    result: BenchmarkResult, load_seconds: float, reshape_seconds: float | None,
    limits: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """What ``--report`` writes: the run's settings, the figures (ms), every latency."""
    return {
        "irrun_version": __version__,
        "model": path,
        "inputs": inputs_report(model, feeds),
        "input_source": source,
        "threads": model.threads,
        "limits": limits,
        "load_ms": load_seconds * 1e3,
        "reshape_ms": None if reshape_seconds is None else reshape_seconds * 1e3,
        **result.summary(),
        "latencies_ms": [t * 1e3 for t in result.latencies],
    }  # fmt: skip


def format_report(report: Mapping[str, Any]) -> str:
    """The text of a report, benchmark_app's wording where it has one.

    >>> report = {"model": "m.xml", "input_source": "random, seed 0",
    ...     "inputs": [{"name": "x", "shape": [8, 3, 4, 4], "element_type": "f32"}],
    ...     "threads": 2, "warmup": 1, "load_ms": 12.0, "reshape_ms": None,
    ...     "first_inference_ms": 3.0, "iterations": 4, "duration_ms": 10.5, "batch": 8,
    ...     "latency_ms": {"median": 2.0, "average": 2.5, "min": 1.0, "max": 4.0, "p90": 4.0},
    ...     "throughput": {"inferences_per_second": 380.95, "fps": 3047.6}}
    >>> print(format_report(report))
    Model:                m.xml
    Inputs:               random, seed 0
       x                  f32 [8,3,4,4]
    Threads:              2
    Read model took       12.00 ms
    Warm-up:              1 run, not counted
    First inference took  3.00 ms
    Count:                4 iterations
    Duration:             10.50 ms
    Latency:
       Median:            2.00 ms
       Average:           2.50 ms
       Min:               1.00 ms
       Max:               4.00 ms
       90 percentile:     4.00 ms
    Throughput:           3047.60 FPS (batch 8, 380.95 inferences/s)
    """
    lines: list[str] = []

    def row(label: str, value: str, indent: str = "") -> None:
        lines.append(f"{indent}{label:<{21 - len(indent)}} {value}".rstrip())

    row("Model:", str(report["model"]))
    row("Inputs:", str(report["input_source"]))
    for spec in report["inputs"]:
        row(spec["name"], f"{spec['element_type']} {format_shape(tuple(spec['shape']))}", "   ")
    row("Threads:", str(report["threads"]))
    row("Read model took", f"{report['load_ms']:.2f} ms")
    if report.get("reshape_ms") is not None:
        row("Reshape model took", f"{report['reshape_ms']:.2f} ms")
    warmup = report["warmup"]
    row("Warm-up:", f"{common.count(warmup, 'run')}, not counted" if warmup else "none")
    row("First inference took", f"{report['first_inference_ms']:.2f} ms")
    row("Count:", common.count(report["iterations"], "iteration"))
    row("Duration:", f"{report['duration_ms']:.2f} ms")
    lines.append("Latency:")
    latency = report["latency_ms"]
    for key, label in (("median", "Median:"), ("average", "Average:"), ("min", "Min:"),
                       ("max", "Max:"), ("p90", f"{P90} percentile:")):  # fmt: skip
        row(label, f"{latency[key]:.2f} ms", "   ")
    speed = report["throughput"]
    fps = f"{speed['fps']:.2f} FPS"
    if report["batch"] != 1:
        fps += f" (batch {report['batch']}, {speed['inferences_per_second']:.2f} inferences/s)"
    row("Throughput:", fps)
    return "\n".join(lines)
