"""Executing a bound graph: planned once, then run step by step in topological order.

The plan turns every tensor into a numbered slot and every layer into a step
holding its kernel and parsed attributes, so running is a tight loop.  Each
intermediate is dropped as soon as its last consumer has run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    kernel: Callable[..., tuple[np.ndarray, ...]]
    attrs: SimpleNamespace
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


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
        self, wanted: tuple[int, ...]
    ) -> tuple[tuple[Step, tuple[int, ...]], ...]:
        """The steps ``wanted`` needs, each with the slots it is the last reader of."""
        needed: set[int] = set()
        stack = [self.producer[s] for s in wanted if s in self.producer]
        while stack:
            i = stack.pop()
            if i in needed:
                continue
            needed.add(i)
            stack.extend(self.producer[s] for s in self.steps[i].inputs if s in self.producer)
        chosen = [self.steps[i] for i in sorted(needed)]
        last_reader: dict[int, int] = {}
        for pos, step in enumerate(chosen):
            for slot in step.inputs:
                last_reader[slot] = pos
        keep = set(wanted)
        frees: list[list[int]] = [[] for _ in chosen]
        for slot, pos in last_reader.items():
            if slot not in keep:
                frees[pos].append(slot)
        for pos, step in enumerate(chosen):  # outputs nobody reads go at once
            frees[pos].extend(s for s in step.outputs if s not in last_reader and s not in keep)
        return tuple((step, tuple(f)) for step, f in zip(chosen, frees, strict=True))

    def run(self, feeds: Mapping[int, np.ndarray], wanted: Sequence[int]) -> dict[int, np.ndarray]:
        values: dict[int, np.ndarray] = dict(feeds)
        path = str(self.lg.doc.path)
        for step, frees in self._schedule(tuple(wanted)):
            try:
                results = step.kernel(step.attrs, *(values[s] for s in step.inputs))
            except (ShapeError, ValueError) as exc:
                layer = step.node.layer
                raise IrrunError(str(exc), Location(path, layer.line), step.node.ref) from exc
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            for slot in frees:
                values.pop(slot, None)
        return {s: values[s] for s in wanted}
