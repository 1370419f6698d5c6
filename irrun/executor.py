"""Executing a bound graph: planned once, then run step by step in topological order.

The plan turns every tensor into a numbered slot and every layer into a step
holding its kernel and parsed attributes, so running is a tight loop.  Each
intermediate is dropped as soon as its last consumer has run, and a layer whose
op can skip outputs is told which of its outputs the run actually uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .binding import Node
from .errors import IrrunError, Location
from .graph import LayerGraph
from .registry import ShapeError


@dataclass(frozen=True)
class Step:
    node: Node
    kernel: Callable[..., tuple[np.ndarray | None, ...]]
    attrs: SimpleNamespace
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # Which outputs a scheduled run uses, when the op can skip the others (None: all).
    needed: tuple[bool, ...] | None = None


class Plan:
    """Slots and steps for a graph whose layers are all bound."""

    def __init__(self, lg: LayerGraph, nodes: Mapping[str, Node]) -> None:
        self.lg = lg
        self.slots: dict[tuple[str, int], int] = {}
        self.steps: list[Step] = []
        self.parameters: dict[str, int] = {}  # Parameter layer id -> slot
        self.producer: dict[int, int] = {}  # slot -> index of the step that writes it
        for lid in lg.order:
            node = nodes[lid]
            assert node.op is not None and node.attrs is not None
            for port in node.layer.outputs:
                self.slots[(lid, port.id)] = len(self.slots)
            outs = tuple(self.slots[(lid, p.id)] for p in node.layer.outputs)
            if node.op.type == "Parameter":
                self.parameters[lid] = outs[0]
                continue
            ins = tuple(
                self.slots[(src.layer, src.port)]
                for src in (lg.sources[(lid, p.id)] for p in node.layer.inputs)
            )
            for slot in outs:
                self.producer[slot] = len(self.steps)
            self.steps.append(Step(node, node.op.kernel, node.attrs, ins, outs))
        self._schedule = lru_cache(maxsize=32)(self._make_schedule)

    def _make_schedule(
        self, wanted: tuple[int, ...], every_step: bool = False
    ) -> tuple[tuple[Step, tuple[int, ...]], ...]:
        """The steps ``wanted`` needs, each with the slots it is the last reader of.

        A step whose op can skip outputs and has some that nothing reads is scheduled
        as a copy that carries the mask of the used ones.  With ``every_step`` all
        steps run and compute all their outputs, for an observer that sees each one.
        """
        required: set[int] = set(range(len(self.steps))) if every_step else set()
        stack = [self.producer[s] for s in wanted if s in self.producer]
        while stack:
            i = stack.pop()
            if i in required:
                continue
            required.add(i)
            stack.extend(self.producer[s] for s in self.steps[i].inputs if s in self.producer)
        chosen = [self.steps[i] for i in sorted(required)]
        last_reader: dict[int, int] = {}
        for pos, step in enumerate(chosen):
            for slot in step.inputs:
                last_reader[slot] = pos
        keep = set(wanted)
        frees: list[list[int]] = [[] for _ in chosen]
        for slot, pos in last_reader.items():
            if slot not in keep:
                frees[pos].append(slot)
        schedule = []
        for pos, step in enumerate(chosen):
            used = tuple(s in last_reader or s in keep for s in step.outputs)
            # Outputs nobody reads go at once.
            frees[pos].extend(s for s, u in zip(step.outputs, used, strict=True) if not u)
            if step.node.op.optional_outputs and not all(used) and not every_step:
                step = replace(step, needed=used)
            schedule.append((step, tuple(frees[pos])))
        return tuple(schedule)

    def run(
        self,
        feeds: Mapping[int, np.ndarray],
        wanted: Sequence[int],
        observe: Observer | None = None,
    ) -> dict[int, np.ndarray]:
        """Compute the slots ``wanted`` from ``feeds`` (Parameter slot -> array).

        ``observe``, when given, sees every step of the graph as it finishes, with its
        inputs, its outputs and the seconds its kernel took; they may be dropped right after.
        """
        if observe is not None:
            return self._run_observed(feeds, wanted, observe)
        values: dict[int, np.ndarray | None] = dict(feeds)
        for step, frees in self._schedule(tuple(wanted)):
            args = [values[s] for s in step.inputs]
            try:
                if step.needed is None:
                    results = step.kernel(step.attrs, *args)
                else:
                    results = step.kernel(step.attrs, *args, needed=step.needed)
            except (ShapeError, ValueError) as exc:
                raise self._error(step, exc) from exc
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            for slot in frees:
                values.pop(slot, None)
        return {s: values[s] for s in wanted}

    def _run_observed(
        self, feeds: Mapping[int, np.ndarray], wanted: Sequence[int], observe: Observer
    ) -> dict[int, np.ndarray]:
        # Kept apart from run's loop, which stays free of timing and calls.
        values: dict[int, np.ndarray | None] = dict(feeds)
        clock = time.perf_counter
        for step, frees in self._schedule(tuple(wanted), True):
            args = [values[s] for s in step.inputs]
            start = clock()
            try:
                results = step.kernel(step.attrs, *args)
            except (ShapeError, ValueError) as exc:
                raise self._error(step, exc) from exc
            seconds = clock() - start
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            observe(step, args, tuple(values[s] for s in step.outputs), seconds)
            for slot in frees:
                values.pop(slot, None)
        return {s: values[s] for s in wanted}

    def _error(self, step: Step, exc: Exception) -> IrrunError:
        where = Location(str(self.lg.doc.path), step.node.layer.line)
        return IrrunError(str(exc), where, step.node.ref)


# Called with a step, its inputs, its outputs and the seconds its kernel took.
Observer = Callable[
    [Step, Sequence[np.ndarray | None], tuple[np.ndarray | None, ...], float], None
]
