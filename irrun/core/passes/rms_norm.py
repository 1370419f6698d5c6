"""A pass: RMSNorm's layers, as optimum exports them, run as one step.

The layers (see :mod:`irrun.fast.rms_norm`): ``Power(x, p)`` or ``Multiply(x, x)``, then
``ReduceMean``, ``Add`` of one other operand (epsilon), ``Sqrt``, ``Divide`` of one other
operand (1) by it, ``Multiply`` by ``x`` again, and, where the export keeps one, a
``Multiply`` by a constant (the weight).  Each intermediate has that one reader and the
run does not keep it.  The step computes what the layers' reference kernels compute, the
same calls in the same order (:func:`irrun.fast.rms_norm.rms_norm`), the same bits; where
that does not apply (f16, mixed types), or where the layers' fast kernels would split the
work over the run's threads (:func:`irrun.fast.blocks.worth_splitting`), it runs the layers
one by one, as observed runs (views) always do, reporting each.

It runs before :mod:`.elementwise_chains`, which would otherwise take the Add, Sqrt,
Divide and Multiply as a chain and leave the Power and the ReduceMean as steps of their own.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from ...fast.blocks import worth_splitting
from ...fast.rms_norm import rms_norm
from ...ops._shapes import flat_ints
from ...ops.reduction import reduction_axes
from ..steps import Step, Tap, parts, run_step
from .constants import known_constants
from .elementwise_chains import _free_late


class LayersInOneStep:
    """A fused step's layers (``parts``, reading the step's ``inputs``) run one by one: where
    its own kernel does not apply, and observed."""

    # Run part by part (views, other types), it holds an intermediate while the next part
    # makes its output (the memory plan counts it: irrun.core.budget).
    holds_intermediates = True
    parts: tuple[Step, ...]
    inputs: tuple[int, ...]

    def _one_by_one(self, args, tap: Tap | None = None) -> np.ndarray:
        values = dict(zip(self.inputs, args, strict=True))
        result: np.ndarray | None = None
        for step in self.parts:
            operands = [values[s] for s in step.inputs]
            start = time.perf_counter()
            result = run_step(step, operands)[0]
            if tap is not None:
                tap(step, operands, (result,), time.perf_counter() - start)
            values[step.outputs[0]] = result
        return result  # type: ignore[return-value]

    def observed(self, args: list, tap: Tap, _copies: bool) -> tuple[np.ndarray]:
        """The step's output, bit for bit, its layers run one by one and each reported to
        ``tap`` (no part writes into another's output: no copies needed)."""
        return (self._one_by_one(tuple(args), tap),)


class RMSNorm(LayersInOneStep):
    """RMSNorm's layers as one step (see the module's doc)."""

    def __init__(self, steps: list[Step], inputs: tuple[int, ...], layout: dict,
                 axes: np.ndarray | None) -> None:
        self.parts: tuple[Step, ...] = tuple(steps)
        self.inputs = inputs
        self.layout = layout  # where each operand is among the step's inputs, and orders
        self.keep_dims = steps[1].attrs.keep_dims
        # ReduceMean's axes where known before the run, normalised per rank of x.
        self._axes = None if axes is None else flat_ints(axes)
        self._normalised: dict[int, tuple[int, ...]] = {}

    def __call__(self, _attrs: object, *args: np.ndarray) -> tuple[np.ndarray]:
        lay = self.layout
        x = args[0]
        # Work the layers' fast kernels split over the run's threads runs layer by layer.
        axes = None if worth_splitting(x.size) else self._axes_for(x, args[lay["axes"]])
        if axes is not None:
            out = rms_norm(
                x, None if lay["exponent"] is None else args[lay["exponent"]], axes,
                self.keep_dims, args[lay["eps"]], lay["eps_first"], args[lay["numerator"]],
                lay["x_first"], None if lay["weight"] is None else args[lay["weight"]],
                lay["weight_first"])
            if out is not None:
                return (out,)
        return (self._one_by_one(args),)

    def _axes_for(self, x: np.ndarray, axes: np.ndarray) -> tuple[int, ...] | None:
        """ReduceMean's axes for ``x``, or None where they are not valid (the layer says why)."""
        if self._axes is None:
            try:
                return reduction_axes(flat_ints(axes), x.ndim)
            except Exception:
                return None
        found = self._normalised.get(x.ndim)
        if found is None:
            try:
                found = self._normalised[x.ndim] = reduction_axes(self._axes, x.ndim)
            except Exception:
                return None
        return found

def _plain(step: Step, kind: str, arity: int) -> bool:
    """Whether ``step`` is a plain step of a ``kind`` layer with ``arity`` inputs."""
    return (step.node.op.type == kind and len(step.inputs) == arity and len(step.outputs) == 1
            and not step.folded and step.needed is None and parts(step) == (step,)
            and getattr(step.attrs, "auto_broadcast", "numpy") == "numpy")


def _match(schedule, start: int, reader, known) -> tuple[list[int], tuple[int, ...], dict] | None:
    """The positions of an RMSNorm's steps starting at ``start``, its inputs and layout."""
    first = schedule[start][0]
    if _plain(first, "Power", 2):
        x, exponent = first.inputs
        if exponent == x:
            return None
    elif _plain(first, "Multiply", 2) and first.inputs[0] == first.inputs[1]:
        x, exponent = first.inputs[0], None
    else:
        return None
    chain = [start]

    def follow(kind: str, arity: int) -> Step | None:
        running = schedule[chain[-1]][0].outputs[0]
        pos = reader(running)
        if pos is None or not _plain(schedule[pos][0], kind, arity):
            return None
        step = schedule[pos][0]
        if step.inputs.count(running) != 1:
            return None
        chain.append(pos)
        return step

    mean = follow("ReduceMean", 2)
    if mean is None or mean.inputs[0] != first.outputs[0]:
        return None
    add = follow("Add", 2)
    if add is None:
        return None
    eps_first = add.inputs[1] == mean.outputs[0]
    eps = add.inputs[0] if eps_first else add.inputs[1]
    sqrt = follow("Sqrt", 1)
    divide = follow("Divide", 2) if sqrt is not None else None
    if divide is None or divide.inputs[1] != sqrt.outputs[0]:  # type: ignore[union-attr]
        return None
    scale = follow("Multiply", 2)
    if scale is None or x not in scale.inputs:
        return None
    x_first = scale.inputs[0] == x
    weight, weight_first = None, False
    pos = reader(scale.outputs[0])
    if pos is not None and _plain(schedule[pos][0], "Multiply", 2):
        other = [s for s in schedule[pos][0].inputs if s != scale.outputs[0]]
        if len(other) == 1 and other[0] in known:
            follow("Multiply", 2)
            weight = other[0]
            weight_first = schedule[pos][0].inputs[0] == weight
    slots = [x, exponent, mean.inputs[1], eps, divide.inputs[0], weight]
    inputs = tuple(dict.fromkeys(s for s in slots if s is not None))
    index = {s: inputs.index(s) for s in inputs}
    layout = {"exponent": index.get(exponent), "axes": index[mean.inputs[1]],
              "eps": index[eps], "eps_first": eps_first, "numerator": index[divide.inputs[0]],
              "x_first": x_first, "weight": index.get(weight), "weight_first": weight_first}
    return chain, inputs, layout


def fuse_rms_norms(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Fuse each RMSNorm (see the module's doc) into one step, in the place of its last."""
    readers: dict[int, list[int]] = {}
    for pos, (step, _) in enumerate(schedule):
        for slot in dict.fromkeys(step.inputs):
            readers.setdefault(slot, []).append(pos)

    def reader(slot: int) -> int | None:
        found = readers.get(slot, [])
        return found[0] if len(found) == 1 and slot not in keep else None

    known: dict[int, np.ndarray] | None = None
    taken: set[int] = set()
    fused_at: dict[int, tuple[Step, tuple[int, ...]]] = {}
    for pos, (step, _) in enumerate(schedule):
        if pos in taken or step.node.op.type not in ("Power", "Multiply"):
            continue
        if known is None:
            known = known_constants(schedule)
        found = _match(schedule, pos, reader, known)
        if found is None or taken.intersection(found[0]):
            continue
        chain, inputs, layout = found
        steps = [schedule[p][0] for p in chain]
        axes = known.get(steps[1].inputs[1])
        fuse_at(schedule, chain, RMSNorm(steps, inputs, layout, axes), inputs, steps[-1],
                taken, fused_at)
    return replaced(schedule, taken, fused_at)


def fuse_at(schedule, chain: list[int], kernel, inputs: tuple[int, ...], last: Step,
            taken: set[int], fused_at: dict) -> None:  # fmt: skip
    """Record one step running ``kernel`` on ``inputs`` for the layers at ``chain``'s
    positions, in the place of the last (``last``, whose layer and outputs it takes),
    freeing what any of them freed."""
    frees = tuple(dict.fromkeys(s for p in chain for s in schedule[p][1]))
    taken.update(chain)
    fused_at[chain[-1]] = (Step(last.node, kernel, SimpleNamespace(), inputs, last.outputs),
                           frees)


def replaced(schedule, taken: set[int], fused_at: dict) -> list:
    """``schedule`` with the fused steps recorded by :func:`fuse_at` in place of theirs."""
    if not fused_at:
        return schedule
    out = [fused_at.get(pos, entry) for pos, entry in enumerate(schedule)
           if pos not in taken or pos in fused_at]
    return _free_late(out)
