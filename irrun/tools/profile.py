"""Per-layer timings of a run (``--profile``, ``--profile-json``).

The profile times the steps a plain run executes (the same plan: fused steps, constants
folded at load), after a warm-up run: a fused step times each of its layers where it can
(an in-place chain does), and shares its time among them by their sizes where it cannot
(one product for several linear layers).  Layers computed once at load are listed apart,
with the time they took then.

The tables follow benchmark_app's sorted performance counters: a summary per op type,
then each layer (layer, type, time, share of the total); the JSON file is the Chrome
trace-event format that onnxruntime's profiler writes, which Perfetto and
``chrome://tracing`` open.  Times are of the layers' kernels; the run's own bookkeeping
between layers shows as the difference between the sum over layers and the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import threads
from ..core.folding import Folding
from ..core.model import LayerRun
from ..errors import LayerRef
from ..version import __version__
from .common import count, positive


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


def warn_if_busy(quiet: bool = False) -> None:
    """Say on stderr that the timings about to be taken are unreliable when the machine's
    load is above the cores this process may use (``--profile``, ``irrun benchmark``):
    other work takes the cores, and the times vary by orders of magnitude.  Not with
    ``quiet`` (``-q``: nothing but errors)."""
    message = None if quiet else threads.busy_warning()
    if message is not None:
        print(f"irrun: warning: {message}", file=sys.stderr, flush=True)


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

    def __init__(self, folding: Folding | None = None, warmups: int = 1) -> None:
        self.layers: dict[str, LayerTimes] = {}
        self.events: list[dict[str, Any]] = []
        self.walls: list[float] = []
        self.warmups = warmups
        self._origin: float | None = None
        self._run = -1
        self._run_start = 0.0
        # The layers computed once at load, with their seconds then.
        self.at_load: list[tuple[str, str, float]] = [
            (step.node.ref.name, _kind(step.node.ref), seconds)
            for step, seconds in (folding.timings if folding is not None else ())
            if step.node.op.type != "Const"
        ]

    def start_run(self, now: float) -> None:
        if self._origin is None:
            self._origin = now
        self._run += 1
        self._run_start = now

    def end_run(self, now: float) -> None:
        self.walls.append(now - self._run_start)

    def __call__(self, layer: LayerRun) -> None:
        if layer.apart or layer.folded or layer.ref.type == "Const":  # not work a run does
            return
        ref = layer.ref
        kind = _kind(ref)
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

    def summary(self) -> dict[str, Any]:
        """What :meth:`table` shows, as data (``irrun run --profile --json``): per op type
        and per layer, most expensive first, each with its median ``ms`` and its ``share``
        of the sum over layers (a fraction, the table's percent over 100); the runs'
        median wall time; the layers computed at load."""
        layers = sorted(self.layers.values(), key=lambda t: -t.median)
        total = sum(t.median for t in layers)
        by_type: dict[str, list[LayerTimes]] = {}
        for t in layers:
            by_type.setdefault(t.type, []).append(t)
        types = sorted(by_type.items(), key=lambda kv: -sum(t.median for t in kv[1]))
        return {
            "runs": len(self.walls),
            "warmup_runs": self.warmups,
            "layers_ms": total * 1e3,
            "wall_ms": (statistics.median(self.walls) if self.walls else total) * 1e3,
            "op_types": [
                {"type": kind, "layers": len(members),
                 "ms": sum(t.median for t in members) * 1e3,
                 "share": _fraction(sum(t.median for t in members), total)}
                for kind, members in types
            ],
            "layers": [
                {"id": t.id, "name": t.name, "type": t.type, "ms": t.median * 1e3,
                 "share": _fraction(t.median, total),
                 "inputs": [list(s) for s in t.inputs], "outputs": [list(s) for s in t.outputs]}
                for t in layers
            ],
            "computed_at_load": [
                {"name": name, "type": kind, "ms": seconds * 1e3}
                for name, kind, seconds in sorted(self.at_load, key=lambda r: -r[2])
            ],
        }  # fmt: skip

    def table(self) -> str:
        """Op types by their layers' summed median times, then layers by median time,
        most expensive first, with a total line; then the layers computed at load.

        Each share is of the sum over layers; ``runs`` is how many runs the medians are over.
        """
        data = self.summary()
        rows = [("op type", "layers", "ms", "share")]
        for kind in data["op_types"]:
            rows.append((kind["type"], str(kind["layers"]), f"{kind['ms']:.3f}",
                         _percent(kind["share"])))  # fmt: skip
        lines = _aligned(rows, right_from=1)
        lines.append("")
        rows = [("layer", "type", "ms", "share")]
        for t in data["layers"]:
            rows.append((t["name"], t["type"], f"{t['ms']:.3f}", _percent(t["share"])))
        lines += _aligned(rows, right_from=2)
        warm = f", after {count(self.warmups, 'warm-up run')}" if self.warmups else ""
        lines.append(
            f"total: {len(data['layers'])} layers, {data['layers_ms']:.3f} ms in layers, "
            f"{data['wall_ms']:.3f} ms per run (median of {count(data['runs'], 'run')}{warm})"
        )
        if data["computed_at_load"]:
            spent = sum(row["ms"] for row in data["computed_at_load"])
            lines.append("")
            lines.append(f"computed once at load, not in a run: "
                         f"{count(len(self.at_load), 'layer')}, {spent:.3f} ms")  # fmt: skip
            rows = [("layer", "type", "ms")]
            for row in data["computed_at_load"]:
                rows.append((row["name"], row["type"], f"{row['ms']:.3f}"))
            lines += _aligned(rows, right_from=2)
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
            "otherData": {
                "model": model,
                "irrun": __version__,
                "runs": len(self.walls),
                "warmup_runs": self.warmups,
                "computed_at_load": [
                    {"name": name, "type": kind, "ms": round(seconds * 1e3, 6)}
                    for name, kind, seconds in self.at_load
                ],
            },
        }


def _kind(ref: LayerRef) -> str:
    return f"{ref.type}-v{ref.version}" if ref.version is not None else ref.type


def _fraction(part: float, total: float) -> float:
    return part / total if total else 0.0


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def _aligned(rows: list[tuple[str, ...]], right_from: int) -> list[str]:
    """``rows`` as lines of columns two spaces apart, those from ``right_from`` on right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(w) if i >= right_from else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
