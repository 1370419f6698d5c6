"""A pass: rotary position embedding's layers, as optimum exports them, run as one step.

The layers (see :mod:`irrun.fast.rotary`): ``Multiply(q, cos)``; two ``Slice``\\ s of ``q``
with known bounds, the first's multiplied by a constant (-1), concatenated in that order;
that ``Multiply`` by ``sin``; the two products added.  Each intermediate has that one
reader and the run does not keep it.  The step computes what the layers' reference
kernels compute, the same calls in the same order (:func:`irrun.fast.rotary.rotary`), the
same bits; where that does not apply (f16, mixed types), or where the layers' fast kernels
would split the work over the run's threads, it runs the layers one by one, as observed
runs (views) always do, reporting each.

It runs before :mod:`.elementwise_chains`, which would otherwise take ``q * cos`` and the
Add as a chain of their own.
"""

from __future__ import annotations

import numpy as np

from ...fast.blocks import worth_splitting
from ...fast.rotary import rotary
from ...ops._shapes import normalize_axis
from ...ops.slicing import _slice_index
from ..steps import Step
from .constants import known_constants
from .rms_norm import LayersInOneStep, _plain, fuse_at, replaced


class Rotary(LayersInOneStep):
    """Rotary embedding's layers as one step (see the module's doc)."""

    def __init__(self, steps: list[Step], inputs: tuple[int, ...], layout: dict,
                 bounds: tuple[tuple, tuple]) -> None:
        self.parts = tuple(steps)
        self.inputs = inputs
        self.layout = layout
        self.bounds = bounds  # the two Slices' (start, stop, step, axes) values
        # The parts: q * cos, Slice, negation, Slice, Concat, * sin, Add.
        self.concat_axis = steps[4].attrs.axis
        self._indexes: dict[tuple[int, ...], tuple | None] = {}

    def __call__(self, _attrs: object, *args: np.ndarray) -> tuple[np.ndarray]:
        lay = self.layout
        q = args[0]
        if worth_splitting(q.size):  # the layers' fast kernels split it over the threads
            return (self._one_by_one(args),)
        found = self._indexes.get(q.shape, False)
        if found is False:
            found = self._indexes[q.shape] = self._index(q)
        if found is not None:
            out = rotary(q, args[lay["cos"]], args[lay["sin"]], args[lay["negate"]], *found,
                         lay["order"])
            if out is not None:
                return (out,)
        return (self._one_by_one(args),)

    def _index(self, q: np.ndarray) -> tuple | None:
        """The Slices' indexes and the Concat's axis for ``q``'s shape, or None where the
        layers refuse it (they say why)."""
        try:
            second, first = (_slice_index(q, *bounds) for bounds in self.bounds)
            return second, first, normalize_axis(self.concat_axis, q.ndim)
        except Exception:
            return None


def _match(schedule, concat_pos: int, reader, producer, known):
    concat = schedule[concat_pos][0]
    if not _plain(concat, "Concat", 2) or len(set(concat.inputs)) != 2:
        return None
    if any(reader(s) is None for s in concat.inputs):
        return None
    neg_pos, first_pos = producer.get(concat.inputs[0]), producer.get(concat.inputs[1])
    if neg_pos is None or first_pos is None:
        return None
    neg, first = schedule[neg_pos][0], schedule[first_pos][0]
    if not _plain(neg, "Multiply", 2) or not _plain(first, "Slice", len(first.inputs)):
        return None
    if neg.inputs[0] in known:
        negate, half_slot, slice_first = neg.inputs[0], neg.inputs[1], False
    elif neg.inputs[1] in known:
        negate, half_slot, slice_first = neg.inputs[1], neg.inputs[0], True
    else:
        return None
    second_pos = producer.get(half_slot)
    if second_pos is None or reader(half_slot) is None:
        return None
    second = schedule[second_pos][0]
    if not _plain(second, "Slice", len(second.inputs)) or second.inputs[0] != first.inputs[0]:
        return None
    q = first.inputs[0]
    if any(s not in known for s in (*first.inputs[1:], *second.inputs[1:])):
        return None
    times_sin_pos = reader(concat.outputs[0])
    if times_sin_pos is None or not _plain(schedule[times_sin_pos][0], "Multiply", 2):
        return None
    times_sin = schedule[times_sin_pos][0]
    cat_first = times_sin.inputs[0] == concat.outputs[0]
    sin = times_sin.inputs[1] if cat_first else times_sin.inputs[0]
    add_pos = reader(times_sin.outputs[0])
    if add_pos is None or not _plain(schedule[add_pos][0], "Add", 2):
        return None
    add = schedule[add_pos][0]
    b_first = add.inputs[0] == times_sin.outputs[0]
    a_slot = add.inputs[1] if b_first else add.inputs[0]
    times_cos_pos = producer.get(a_slot)
    if times_cos_pos is None or reader(a_slot) is None:
        return None
    times_cos = schedule[times_cos_pos][0]
    if not _plain(times_cos, "Multiply", 2) or q not in times_cos.inputs:
        return None
    q_first = times_cos.inputs[0] == q
    cos = times_cos.inputs[1] if q_first else times_cos.inputs[0]
    if len({q, cos, sin, negate}) != 4 or a_slot == times_sin.outputs[0]:
        return None
    chain = [times_cos_pos, second_pos, neg_pos, first_pos, concat_pos, times_sin_pos, add_pos]
    if len(set(chain)) != 7 or add_pos != max(chain):
        return None
    inputs = tuple(dict.fromkeys([q, cos, sin, negate, *second.inputs[1:], *first.inputs[1:]]))
    layout = {"cos": inputs.index(cos), "sin": inputs.index(sin),
              "negate": inputs.index(negate),
              "order": (q_first, slice_first, cat_first, not b_first)}
    # (start, stop, step, axes), axes None where the Slice has none
    bounds = tuple((*(known[s] for s in step.inputs[1:]), None)[:4] for step in (second, first))
    ordered = sorted(chain)
    steps = {p: schedule[p][0] for p in chain}
    return ordered, inputs, layout, bounds, [steps[p] for p in chain]


def fuse_rotary(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Fuse each rotary embedding (see the module's doc) into one step, in the place of its
    Add."""
    readers: dict[int, list[int]] = {}
    producer: dict[int, int] = {}
    for pos, (step, _) in enumerate(schedule):
        for slot in dict.fromkeys(step.inputs):
            readers.setdefault(slot, []).append(pos)
        for slot in step.outputs:
            producer[slot] = pos

    def reader(slot: int) -> int | None:
        found = readers.get(slot, [])
        return found[0] if len(found) == 1 and slot not in keep else None

    known: dict[int, np.ndarray] | None = None
    taken: set[int] = set()
    fused_at: dict[int, tuple[Step, tuple[int, ...]]] = {}
    for pos, (step, _) in enumerate(schedule):
        if step.node.op.type != "Concat" or pos in taken:
            continue
        if known is None:
            known = known_constants(schedule)
        found = _match(schedule, pos, reader, producer, known)
        if found is None or taken.intersection(found[0]):
            continue
        chain, inputs, layout, bounds, steps = found
        # Parts in the layers' order: q*cos, the Slices and negation, Concat, *sin, Add.
        fuse_at(schedule, chain, Rotary(steps, inputs, layout, bounds), inputs, steps[-1],
                taken, fused_at)
    return replaced(schedule, taken, fused_at)
