"""A pass: runs of consecutive same-size 2-D pools fused into one step each.

The fused step runs the pools' chain kernel (:mod:`irrun.fast.pool_chain`), which makes
only the last pool's output; inputs it does not handle go through the layers' own
kernels one by one.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...fast.pool_chain import ChainPlan, Geometry, Layer, chain_layer
from ..steps import Step


class PoolChain:
    """Consecutive same-size 2-D pools run as one step (see :mod:`irrun.fast.pool_chain`).

    Each pool's output feeds only the next one, so only the last output is made.
    Inputs the chain does not handle (not float32 or not 4-D) go through the
    layers' own kernels one by one.
    """

    def __init__(self, steps: list[Step], geometry: Geometry, layers: tuple[Layer, ...]) -> None:
        self.steps, self.geometry, self.layers = steps, geometry, layers
        self._plans: dict[tuple[int, ...], ChainPlan] = {}

    def __call__(self, _attrs: object, x: np.ndarray) -> tuple[np.ndarray | None, ...]:
        if x.dtype != np.float32 or x.ndim != 4 or 0 in x.shape:
            return self._one_by_one(x)
        plan = self._plans.get(x.shape)
        if plan is None:
            plan = self._plans[x.shape] = ChainPlan(x.shape, self.geometry, self.layers)
        return (plan.run(x),) + (None,) * (len(self.steps[-1].outputs) - 1)

    def _one_by_one(self, x: np.ndarray) -> tuple[np.ndarray | None, ...]:
        results: tuple[np.ndarray | None, ...] = (x,)
        for step in self.steps:
            try:
                if step.needed is None:
                    results = step.kernel(step.attrs, results[0])
                else:
                    results = step.kernel(step.attrs, results[0], needed=step.needed)
            except Exception as exc:
                exc.irrun_step = step  # type: ignore[attr-defined]  # the layer to blame
                raise
        return results


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
