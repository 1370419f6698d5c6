"""A pass: every Const of a schedule given by one step at its start.

A Const's kernel returns the array binding made at load, so running each as a step of
its own only costs the loop a call per weight (a transformer layer has dozens).  One
step returns them all; slots no step reads are not given at all.  A value folded at load
(:mod:`irrun.core.folding`) comes as a Const step of the layer that made it, so the one
step gives those too.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..steps import Step, Tap


class _Constants:
    def __init__(self, steps: tuple[Step, ...], values: tuple[np.ndarray, ...]) -> None:
        self.parts, self.values = steps, values

    def __call__(self, _attrs: object) -> tuple[np.ndarray, ...]:
        return self.values

    def observed(self, _args: object, tap: Tap, _copies: bool) -> tuple[np.ndarray, ...]:
        for step, value in zip(self.parts, self.values, strict=True):
            tap(step, (), (value,), 0.0)
        return self.values


def known_constants(schedule: list[tuple[Step, tuple[int, ...]]]) -> dict[int, np.ndarray]:
    """The slots whose values are known before the run: Consts' and this pass's step's."""
    known: dict[int, np.ndarray] = {}
    for step, _ in schedule:
        values = step.kernel.values if isinstance(step.kernel, _Constants) else None
        if values is None and step.node.op.type == "Const":
            values = (step.attrs.value,)
        if values is not None:
            known.update(zip(step.outputs, values, strict=True))
    return known


def gather_constants(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Replace the schedule's Const steps with one step, first, that gives all their values."""
    consts = [(step, frees) for step, frees in schedule if step.node.op.type == "Const"]
    if len(consts) < 2:
        return schedule
    outputs = tuple(s for step, _ in consts for s in step.outputs)
    values = tuple(step.attrs.value for step, _ in consts)
    # A Const nothing reads is freed by its own step: freed here at once, as it was.
    frees = tuple(s for _, f in consts for s in f)
    first = consts[0][0]
    parts = tuple(step for step, _ in consts)
    step = Step(first.node, _Constants(parts, values), SimpleNamespace(), (), outputs)
    rest = [(step_, f) for step_, f in schedule if step_.node.op.type != "Const"]
    return [(step, frees), *rest]
