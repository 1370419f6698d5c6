"""Per-layer timings of a run (``--profile``, ``--profile-json``).

The table follows benchmark_app's sorted performance counters (layer, type, time,
share of the total); the JSON file is the Chrome trace-event format that
onnxruntime's profiler writes, which Perfetto and ``chrome://tracing`` open.
Times are of the layers' kernels; the run's own bookkeeping between layers shows
as the difference between the sum over layers and the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import dataclass, field
from typing import Any

from ..core.model import LayerRun
from ..version import __version__
from .common import positive


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The profiling options of ``irrun run``."""
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
        "--iterations", type=positive, default=1, metavar="N",
        help="with --profile/--profile-json: run N times and report each layer's median "
        "(default 1)",
    )  # fmt: skip


@dataclass
class LayerTimes:
    """One layer's identity and its kernel's seconds in every profiled run."""

    id: str
    name: str
    type: str
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


class Profile:
    """The ``on_layer`` callback of profiled runs; call :meth:`start_run` before each run."""

    def __init__(self) -> None:
        self.layers: dict[str, LayerTimes] = {}
        self.events: list[dict[str, Any]] = []
        self.walls: list[float] = []
        self._origin: float | None = None
        self._run = -1
        self._run_start = 0.0

    def start_run(self, now: float) -> None:
        if self._origin is None:
            self._origin = now
        self._run += 1
        self._run_start = now

    def end_run(self, now: float) -> None:
        self.walls.append(now - self._run_start)

    def __call__(self, layer: LayerRun) -> None:
        ref = layer.ref
        kind = f"{ref.type}-v{ref.version}" if ref.version is not None else ref.type
        shapes = tuple(tuple(v.shape) for v in layer.outputs.values())
        times = self.layers.get(ref.id)
        if times is None:
            times = self.layers[ref.id] = LayerTimes(ref.id, ref.name, kind, layer.inputs, shapes)
        times.seconds.append(layer.seconds)
        assert self._origin is not None, "start_run() was not called"
        self.events.append(
            {
                "name": ref.name,
                "cat": kind,
                "ph": "X",
                "ts": round((layer.end - layer.seconds - self._origin) * 1e6, 3),
                "dur": round(layer.seconds * 1e6, 3),
                "pid": os.getpid(),
                "tid": 0,
                "args": {
                    "layer_id": ref.id,
                    "type": kind,
                    "run": self._run,
                    "inputs": [list(s) for s in layer.inputs],
                    "outputs": [list(s) for s in shapes],
                },
            }
        )

    def table(self) -> str:
        """Layers by median time, most expensive first, with a total line.

        Each layer's share is of the sum over layers; ``runs`` is how many runs the
        medians are over.
        """
        layers = sorted(self.layers.values(), key=lambda t: -t.median)
        total = sum(t.median for t in layers)
        rows = [("layer", "type", "ms", "share")]
        for t in layers:
            share = 100 * t.median / total if total else 0.0
            rows.append((t.name, t.type, f"{t.median * 1e3:.3f}", f"{share:.1f}%"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(
                cell.rjust(w) if i >= 2 else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
            for row in rows
        ]
        wall = statistics.median(self.walls) if self.walls else total
        runs = len(self.walls)
        lines.append(
            f"total: {len(layers)} layers, {total * 1e3:.3f} ms in layers, {wall * 1e3:.3f} ms "
            f"per run (median of {runs} run{'s' * (runs != 1)})"
        )
        return "\n".join(lines)

    def chrome_trace(self, model: str) -> dict[str, Any]:
        """The trace: one complete ("X") event per layer per run, times in microseconds."""
        meta = {
            "name": "process_name", "ph": "M", "pid": os.getpid(), "tid": 0,
            "args": {"name": f"irrun {model}"},
        }  # fmt: skip
        return {
            "traceEvents": [meta, *self.events],
            "displayTimeUnit": "ms",
            "otherData": {"model": model, "irrun": __version__, "runs": len(self.walls)},
        }
