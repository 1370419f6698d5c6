"""A pass: runs of consecutive same-size 2-D pools fused into one step each.

The fused step runs the pools' chain kernel (:mod:`irrun.fast.pool_chain`), which makes
only the last pool's output; inputs it does not handle go through the layers' own
kernels one by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from ...fast.pool_chain import ChainPlan, Geometry, Layer, chain_layer
from ..steps import Step

# Told of each part of a fused step as it is done: (its step, its inputs, its outputs,
# its seconds).
Tap = Callable[[Step, tuple, tuple, float], None]


class PoolChain:
    """Consecutive same-size 2-D pools run as one step (see :mod:`irrun.fast.pool_chain`).

    Each pool's output feeds only the next one, so only the last output is made.
    Inputs the chain does not handle (not float32 or not 4-D) go through the
    layers' own kernels one by one.  ``parts`` are the layers' steps, in order;
    :meth:`observed` runs the chain telling of each layer's outputs and time.
    """

    def __init__(self, steps: list[Step], geometry: Geometry, layers: tuple[Layer, ...]) -> None:
        self.parts: tuple[Step, ...] = tuple(steps)
        self.geometry, self.layers = geometry, layers
        self._plans: dict[tuple[int, ...], ChainPlan] = {}

    def __call__(self, _attrs: object, x: np.ndarray) -> tuple[np.ndarray | None, ...]:
        plan = self._plan(x)
        if plan is None:
            return self._one_by_one(x)
        return self._outputs(self.parts[-1], plan.run(x))

    def _plan(self, x: np.ndarray) -> ChainPlan | None:
        """The chain's plan for ``x``, or None where the layers run one by one."""
        if x.dtype != np.float32 or x.ndim != 4 or 0 in x.shape:
            return None
        plan = self._plans.get(x.shape)
        if plan is None:
            plan = self._plans[x.shape] = ChainPlan(x.shape, self.geometry, self.layers)
        return plan

    @staticmethod
    def _outputs(step: Step, values: np.ndarray) -> tuple[np.ndarray | None, ...]:
        """A pool's outputs as its kernel gives them when only its values are needed."""
        return (values,) + (None,) * (len(step.outputs) - 1)

    def _one_by_one(self, x: np.ndarray, tap: Tap | None = None) -> tuple[np.ndarray | None, ...]:
        results: tuple[np.ndarray | None, ...] = (x,)
        for step in self.parts:
            args = (results[0],)
            started = time.perf_counter()
            try:
                if step.needed is None:
                    results = step.kernel(step.attrs, *args)
                else:
                    results = step.kernel(step.attrs, *args, needed=step.needed)
            except Exception as exc:
                exc.irrun_step = step  # type: ignore[attr-defined]  # the layer to blame
                raise
            if tap is not None:
                tap(step, args, results, time.perf_counter() - started)
        return results

    def observed(self, args: tuple[np.ndarray, ...], tap: Tap, copies: bool
                 ) -> tuple[np.ndarray | None, ...]:
        """The outputs :meth:`__call__` gives, bit for bit, calling ``tap(part, part_args,
        part_outputs, seconds)`` for each part in order: its inputs and outputs, and its
        own time within the chain (over all chunks, when the chain works in chunks).

        With ``copies`` each part's inputs and outputs are arrays of their own (the
        chain's buffers copied out, chunk by chunk).  Without, they are what costs
        nothing, for times and shapes: when the chain is one chunk, views of its buffers
        (the outputs hold the layer's values while ``tap`` runs; the inputs may have been
        overwritten by then); when it is several, no layer's whole output ever exists,
        and they are read-only arrays of the right shape and type holding NaN.
        """
        (x,) = args
        plan = self._plan(x)
        if plan is None:
            return self._one_by_one(x, tap)
        *inner, last = self.parts
        seconds = [0.0] * len(self.parts)
        # The last part's output is the chain's own; the others' are copied out of its
        # buffers, or told at once while the buffers hold them (one chunk).
        kept: list[np.ndarray] | None = None
        if copies and plan.per_chunk < plan.planes:
            kept = [np.empty((plan.planes, plan.h, plan.w), np.float32) for _ in inner]
        inputs = [x]

        def told(i: int, view: np.ndarray | None, start: int, spent: float) -> None:
            seconds[i] += spent
            if view is None or i == len(inner):
                return
            if kept is not None:
                np.copyto(kept[i][start : start + len(view)], view)
            elif plan.per_chunk >= plan.planes:
                values = view.reshape(x.shape)  # the planes split into (n, c): a view
                values = values.copy() if copies else values
                tap(inner[i], (inputs[-1],), self._outputs(inner[i], values), seconds[i])
                inputs.append(values)

        out = plan.run(x, told)
        if plan.per_chunk < plan.planes:
            for i, step in enumerate(inner):
                if kept is not None:
                    values = kept[i].reshape(x.shape)
                else:  # read-only, of no memory: for times and shapes
                    values = np.broadcast_to(np.float32(np.nan), x.shape)
                tap(step, (inputs[-1],), self._outputs(step, values), seconds[i])
                inputs.append(values)
        tap(last, (inputs[-1],), self._outputs(last, out.copy() if copies else out), seconds[-1])
        return self._outputs(last, out)


def fuse_pool_chains(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Fuse runs of consecutive pools that :class:`PoolChain` can run into one step each.

    A pool joins the one before it when its only input is that pool's first output,
    nothing else reads that output or any other of the earlier pool's outputs, and
    the run does not keep them; all pools of a chain share one window geometry.
    """
    readers: dict[int, int] = {}
    for step, _ in schedule:
        for slot in step.inputs:
            readers[slot] = readers.get(slot, 0) + 1
    kinds = [_pool_kind(step) for step, _ in schedule]
    fused: list[tuple[Step, tuple[int, ...]]] = []
    i = 0
    while i < len(schedule):
        j = i + 1
        while (kinds[i] is not None and j < len(schedule) and kinds[j] is not None
               and kinds[j][0] == kinds[i][0]
               and _feeds_only(schedule[j - 1][0], schedule[j][0], readers, keep)):
            j += 1
        if j - i < 2:
            fused.append(schedule[i])
            i += 1
            continue
        steps = [step for step, _ in schedule[i:j]]
        layers = tuple(kinds[k][1] for k in range(i, j))  # type: ignore[index]
        chain = PoolChain(steps, kinds[i][0], layers)  # type: ignore[index]
        last = steps[-1]
        step = Step(last.node, chain, SimpleNamespace(), steps[0].inputs, last.outputs)
        frees = tuple(slot for _, f in schedule[i:j] for slot in f)
        fused.append((step, frees))
        i = j
    return fused


def _pool_kind(step: Step) -> tuple[Geometry, Layer] | None:
    if len(step.inputs) != 1:
        return None
    # Of a pool's outputs only the values may be used (a chain makes no indices).
    if len(step.outputs) > 1 and (step.needed is None or any(step.needed[1:])):
        return None
    if step.needed is not None and not step.needed[0]:
        return None
    return chain_layer(step.node.op.type, step.attrs)


def _feeds_only(a: Step, b: Step, readers: dict[int, int], keep: set[int]) -> bool:
    """Whether ``b`` reads ``a``'s first output and nothing else reads any of ``a``'s."""
    first, *others = a.outputs
    return (b.inputs == (first,) and readers.get(first, 0) == 1 and first not in keep
            and not any(readers.get(s, 0) or s in keep for s in others))
