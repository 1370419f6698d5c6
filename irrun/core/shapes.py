"""Shape-only layers computed once per set of input shapes, not at every run.

A model with dynamic input dims computes, at each run, values that depend only on the
inputs' shapes: ShapeOf, and the Gather, Concat, Range, Broadcast... that build reshape
targets, masks and position ranges from it and from constants.  The *shape-only* steps of
a plan are the ShapeOf steps (a ShapeOf reads only its input's shape) and every step that
could fold at load (its op is ``foldable``, it has no body) whose inputs are constants or
the outputs of shape-only steps, one of them at least.  Random ops, ReadValue and the
like are not foldable, so they and all that reads them are never shape-only.

A plain run looks its feeds' shapes (the Parameters', and for a request the variables')
up in a small cache, :class:`ShapeCache`.  The first run with a set of shapes runs every
step and keeps the values that the steps which are not shape-only read from shape-only
ones (the *boundary*), made read-only, as folding keeps its values.  A later run with the
same shapes is given these values and runs no shape-only step: the same kernels made them
from the same shapes and constants, so they are the same bits.

A run whose feeds' shapes the cache does not hold (each step of a decode: the attention
mask and the KV cache grow by one) runs its shape-only steps through *memos*
(:class:`Memo`): the shape-only steps that read the shapes of the same tensors are one
step, which keeps their values per set of those tensors' shapes.  So a decode step
computes again only what reads a shape that changed (the causal mask, the KV length),
not what reads the shapes of ``input_ids`` and of the hidden states, which stay
``[1, 1]`` and ``[1, 1, hidden]``.  A memo's key is the shapes its steps read, whatever
made them, so it needs no guard.  A cache that has missed :data:`_TRIES` runs and never
hit (a long decode) records no more: its runs only read the memos.

A ShapeOf of a tensor that is not a Parameter may see a shape that does not follow from
the inputs' shapes alone (that of a NonZero's output, of a Reshape to a target read from
an input's values...).  So each such ShapeOf that a cached value depends on stays in the
run as a *guard*: it compares its input's shape with the one the cached values were made
from.  A guard that fails stops the run, which then runs again without the cache, and the
plan stops caching (its shapes are not functions of its inputs' shapes); its runs still
use the memos.

Memory.  The cache holds, per set of shapes, the boundary values (index vectors, shapes,
masks; a few KiB in the corpus's transformers), for at most :data:`ENTRIES` sets of
shapes, the least recently used dropped first; a set whose values pass
:data:`ENTRY_BYTES` is not kept; each memo keeps as many sets of its own shapes, on the
same terms.  Runs that observe every layer (``intermediate=True``,
dumps, profiles, ``compare``) do not read the cache: they run every step, as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from .steps import Schedule, Step

# An irrun.core.executor.Plan, which imports this module (so this one may not import it).
Plan = Any

ENTRIES = 8  # sets of input shapes kept
ENTRY_BYTES = 16 * 2**20  # the most one set's values may hold
_TRIES = 2 * ENTRIES  # misses after which a memo that never hit keeps no more values


class ShapeMiss(Exception):
    """A guard saw a shape other than the one the cached values were made from."""


def shape_only(plan: Plan) -> list[bool]:
    """Which of ``plan``'s steps are shape-only (see the module's text)."""
    constant: set[int] = set()
    shaped: set[int] = set()
    flags = [False] * len(plan.steps)
    for i, step in enumerate(plan.steps):
        op = step.node.op
        if op.type == "Const":
            constant.update(step.outputs)
        elif op.type == "ShapeOf":
            flags[i] = True
            shaped.update(step.outputs)
        elif op.foldable and getattr(step.attrs, "sub", None) is None and step.inputs:
            if all(s in constant for s in step.inputs):
                constant.update(step.outputs)
            elif all(s in constant or s in shaped for s in step.inputs):
                flags[i] = True
                shaped.update(step.outputs)
    return flags


def _guard(attrs: SimpleNamespace, x: np.ndarray, expected: tuple[int, ...]) -> tuple:
    if x.shape != expected:
        raise ShapeMiss
    return (expected,)


@dataclass(frozen=True)
class Cached:
    """How a run computing ``wanted`` uses the cache."""

    record: tuple[int, ...]  # the slots a first run keeps: wanted, boundary, guards' shapes
    boundary: tuple[int, ...]  # shape-only slots the cached schedule reads
    guarded: tuple[int, ...]  # ShapeOf output slots whose input's shape is checked
    schedule: Schedule  # the run without shape-only steps, with guards


class ShapeCache:
    """A plan's shape-only steps and the values they gave, per set of feed shapes."""

    def __init__(self, plan: Plan, flags: list[bool]) -> None:
        self.flags = flags
        self.entries: OrderedDict[tuple, dict[int, object]] = OrderedDict()
        self.on = True
        self.hits = self.misses = 0
        self._parameters = set(plan.parameters.values())

    @classmethod
    def of(cls, plan: Plan) -> ShapeCache | None:
        """The cache of ``plan``, None when it has no shape-only step."""
        flags = shape_only(plan)
        return cls(plan, flags) if any(flags) else None

    def cached(self, plan: Plan, wanted: tuple[int, ...]) -> Cached | None:
        """How a run computing ``wanted`` reads the cache; None when it needs no
        shape-only value (or all it needs is folded at load)."""
        key = (wanted, "shapes")
        found = plan._schedules.get(key)  # type: ignore[call-overload]
        if found is None and key not in plan._schedules:
            found = plan._schedules[key] = self._make(plan, wanted)  # type: ignore[index]
        return found

    def _make(self, plan: Plan, wanted: tuple[int, ...]) -> Cached | None:
        producer, steps = plan.producer, plan.steps
        is_shape = _is_shape(plan, self.flags)
        boundary = _boundary(plan, is_shape, wanted)
        if not boundary:
            return None
        # The ShapeOf steps the boundary values come from, checked unless a Parameter's.
        shapeofs: set[int] = set()
        stack = [producer[s] for s in boundary]
        region: set[int] = set()
        while stack:
            i = stack.pop()
            if i in region:
                continue
            region.add(i)
            if steps[i].node.op.type == "ShapeOf":
                if steps[i].inputs[0] not in self._parameters:
                    shapeofs.add(i)
                continue
            stack.extend(producer[s] for s in steps[i].inputs
                         if is_shape(s))  # fmt: skip
        guards = [(i, _guard_step(steps[i])) for i in sorted(shapeofs)]
        guarded = tuple(steps[i].outputs[0] for i in sorted(shapeofs))
        schedule = plan._make_schedule(wanted, fed=boundary | {_expected(s) for s in guarded},
                                       guards=guards)  # fmt: skip
        record = tuple(sorted(set(wanted) | boundary | set(guarded)))
        return Cached(record, tuple(sorted(boundary)), guarded, schedule)

    def memoized(self, plan: Plan, wanted: tuple[int, ...]) -> Schedule:
        """The schedule of a run computing ``wanted`` whose shape-only steps are memoized
        (see :class:`Memo`): what a run whose feeds' shapes are not in the cache runs."""
        key = (wanted, "memo")
        found = plan._schedules.get(key)  # type: ignore[call-overload]
        if found is None:
            found = plan._schedules[key] = _memo_schedule(plan, self.flags, wanted)  # type: ignore[index]
        return found

    def run(self, plan: Plan, feeds: Mapping[int, np.ndarray | None], wanted: Sequence[int]
            ) -> dict[int, np.ndarray]:  # fmt: skip
        """``plan``'s run computing ``wanted``, with the shape-only values of the cache."""
        wanted = tuple(wanted)
        if not self.on:  # shapes that follow from values: the memos key by them all the same
            return plan._execute(self.memoized(plan, wanted), feeds, wanted)
        cached = self.cached(plan, wanted)
        if cached is None:
            return plan._execute(plan.schedule(wanted), feeds, wanted)
        key = tuple([(s, None if v is None else v.shape) for s, v in feeds.items()])
        entry = self.entries.get(key)
        if entry is not None and all(s in entry for s in cached.boundary):
            with suppress(KeyError):  # dropped meanwhile by a run in another thread
                self.entries.move_to_end(key)
            values = dict(feeds)
            values.update((s, entry[s]) for s in cached.boundary)
            values.update((_expected(s), entry[_expected(s)]) for s in cached.guarded)
            try:
                found = plan._execute(cached.schedule, values, wanted)
            except ShapeMiss:  # shapes that follow from values: not cached any more
                self.on = False
                self.entries.clear()
                return plan._execute(self.memoized(plan, wanted), feeds, wanted)
            self.hits += 1
            return found
        self.misses += 1
        found = plan._execute(self.memoized(plan, cached.record), feeds, cached.record)
        # Never a set of shapes twice (each step of a long decode): keeping the values for
        # later runs would cost each run, for none (the memos do what can be done).
        if self.hits or self.misses <= _TRIES:
            self._keep(key, entry, found, cached)
        return {s: found[s] for s in wanted}

    def _keep(self, key: tuple, entry: dict | None, found: dict, cached: Cached) -> None:
        entry = dict(entry or {})
        for s in cached.boundary:
            value = np.asarray(found[s])
            if value.flags.writeable:  # a run may return a view of it: none may write it
                value = value.view()
                value.flags.writeable = False
            entry[s] = value
        for s in cached.guarded:
            entry[_expected(s)] = tuple(int(d) for d in found[s])
        size = sum(v.nbytes for v in entry.values() if isinstance(v, np.ndarray))
        if size > ENTRY_BYTES:
            return
        self.entries[key] = entry
        with suppress(KeyError):  # (runs in other threads may change the cache meanwhile)
            self.entries.move_to_end(key)
            while len(self.entries) > ENTRIES:
                self.entries.popitem(last=False)

    def held_bytes(self) -> int:
        """The memory the cached values hold."""
        return sum(v.nbytes for e in self.entries.values() for v in e.values()
                   if isinstance(v, np.ndarray))  # fmt: skip


def _expected(slot: int) -> int:
    """The slot a guard reads the shape it expects from: one no layer writes."""
    return -1 - slot


def _guard_step(step: Step) -> Step:
    """A step that checks the shape of ``step``'s (a ShapeOf's) input against the shape
    its cached output records (fed in a slot of its own), and passes it on."""
    slot = _expected(step.outputs[0])
    return Step(step.node, _guard, SimpleNamespace(), (step.inputs[0], slot), (slot,))


def _is_shape(plan: Plan, flags: list[bool]):
    """Whether a slot is the output of a shape-only step, not folded at load."""
    producer, folded = plan.producer, plan.folded

    def is_shape(slot: int) -> bool:
        p = producer.get(slot)
        return p is not None and flags[p] and slot not in folded

    return is_shape


def _boundary(plan: Plan, is_shape, wanted: tuple[int, ...]) -> set[int]:
    """The shape-only slots that a run's other steps (or its caller) read."""
    producer, steps, folded = plan.producer, plan.steps, plan.folded
    boundary = {s for s in wanted if is_shape(s)}
    stack = [producer[s] for s in wanted if s in producer and s not in folded
             and not is_shape(s)]  # fmt: skip
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        for s in steps[i].inputs:
            if s in folded:
                continue
            if is_shape(s):
                boundary.add(s)
            elif s in producer:
                stack.append(producer[s])
    return boundary


class Memo:
    """The kernel of a step that stands for shape-only steps: their values for the
    shapes their ShapeOfs read, kept per set of those shapes.

    The steps read only constants and the shapes of the tensors the step is given (its
    inputs: what their ShapeOfs read), so the shapes are the whole key, whatever made
    them, even values: a hit is the same bits as running the steps again.  A decode step
    whose KV cache grew still finds the values made from shapes that did not change
    (those of ``input_ids`` and of the hidden states).  Each memo keeps the values of
    :data:`ENTRIES` sets of shapes (least recently used dropped first), none over
    :data:`ENTRY_BYTES`; the values are read-only, as every run shares them.  A memo that
    has missed :data:`_TRIES` times and never hit (its key grows with a decode) keeps no
    more: its entries stay as they were.
    """

    def __init__(self, region: tuple[Step, ...], leaves: tuple[int, ...], crossing: tuple[int, ...],
                 outputs: tuple[int, ...], constants: dict[int, object]) -> None:  # fmt: skip
        self.region, self.leaves, self.crossing, self.outputs = region, leaves, crossing, outputs
        self.constants = constants
        self.n = len(leaves)
        self.entries: OrderedDict[tuple, tuple] = OrderedDict()
        self.hits = self.misses = 0

    def __call__(self, attrs: SimpleNamespace, *xs: np.ndarray) -> tuple:
        key = tuple([None if x is None else x.shape for x in xs[: self.n]])
        entries = self.entries
        found = entries.get(key)
        if found is not None:
            self.hits += 1
            with suppress(KeyError):  # (dropped meanwhile by a run in another thread)
                entries.move_to_end(key)
            return found
        values = {**self.constants, **dict(zip(self.leaves + self.crossing, xs, strict=True))}
        read = values.__getitem__
        for step in self.region:  # (a plan's own steps: all outputs needed)
            try:
                results = step.kernel(step.attrs, *map(read, step.inputs))
            except Exception as exc:
                exc.irrun_step = step  # type: ignore[attr-defined]  # its layer, not the memo
                raise
            values.update(zip(step.outputs, results, strict=False))
        found = tuple(map(read, self.outputs))
        self.misses += 1
        # A memo whose shapes never came back (a decode's growing length) stops keeping
        # values no run will read; what it gives is then the run's own, as in a plain run.
        if self.hits or self.misses <= _TRIES:
            found = tuple(map(_read_only, found))
            if sum(getattr(v, "nbytes", 0) for v in found) <= ENTRY_BYTES:
                entries[key] = found
                with suppress(KeyError):
                    while len(entries) > ENTRIES:
                        entries.popitem(last=False)
        return found


def _read_only(value: object) -> object:
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def _memo_schedule(plan: Plan, flags: list[bool], wanted: tuple[int, ...]) -> Schedule:
    """``wanted``'s schedule, its shape-only steps run by :class:`Memo` steps.

    Each shape-only step reads the shapes of a set of tensors (those its ShapeOfs read,
    through the steps before it): the steps that read the same set are one memo, keyed by
    those shapes, placed as soon as those tensors are made.  A memo is also given the
    values it reads from memos of fewer tensors (functions of shapes its key holds), so
    that a decode step computes again only what reads a shape that changed."""
    producer, steps, folded = plan.producer, plan.steps, plan.folded
    is_shape = _is_shape(plan, flags)
    boundary = _boundary(plan, is_shape, wanted)
    if not boundary:
        return plan.schedule(wanted)
    needed: set[int] = set()
    stack = [producer[b] for b in boundary]
    while stack:
        i = stack.pop()
        if i not in needed:
            needed.add(i)
            stack.extend(producer[s] for s in steps[i].inputs if is_shape(s))
    shape_of = {steps[i].inputs[0]: steps[i] for i in needed
                if steps[i].node.op.type == "ShapeOf"}  # fmt: skip
    leaves_of: dict[int, tuple[int, ...]] = {}  # step -> the tensors whose shapes it reads
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in sorted(needed):
        step = steps[i]
        if step.node.op.type == "ShapeOf":
            leaves: tuple[int, ...] = (step.inputs[0],)
        else:
            leaves = tuple(sorted({t for s in step.inputs if is_shape(s)
                                   for t in leaves_of[producer[s]]}))  # fmt: skip
        leaves_of[i] = leaves
        groups.setdefault(leaves, []).append(i)
    group_of = {i: leaves for leaves, members in groups.items() for i in members}
    # Slots a memo gives: the boundary's, and those another memo reads.
    given = set(boundary)
    for i in needed:
        given.update(s for s in steps[i].inputs
                     if is_shape(s) and group_of[producer[s]] != group_of[i])  # fmt: skip
    memos = []
    for leaves, members in groups.items():
        region = set(members)
        crossing: list[int] = []
        constants: dict[int, object] = {}
        stack = list(members)
        seen: set[int] = set()
        while stack:  # the constants the members read; an unfolded constant's steps join
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            for s in steps[i].inputs:
                if steps[i].node.op.type == "ShapeOf" and i in region:
                    break  # reads its input's shape only: the input is a key
                p = producer.get(s)
                if s in folded:
                    constants[s] = folded[s].attrs.value
                elif p is not None and is_shape(s) and group_of.get(p) != leaves:
                    if s not in crossing:
                        crossing.append(s)
                elif p is not None and steps[p].node.op.type == "Const":
                    constants[s] = steps[p].attrs.value
                elif p is not None and p not in region:
                    region.add(p)
                    stack.append(p)
        chosen = tuple(steps[i] for i in sorted(region))
        outs = tuple(sorted({s for i in members for s in steps[i].outputs if s in given}))
        kernel = Memo(chosen, leaves, tuple(crossing), outs, constants)
        inputs = (*leaves, *crossing)
        # Named by a ShapeOf of its first tensor (an op no pass rewrites); a layer that
        # fails in it is named by its own step.
        memo = Step(shape_of[leaves[0]].node, kernel, SimpleNamespace(), inputs, outs)
        memos.append(((max(producer.get(s, -1) for s in leaves), len(leaves)), memo))
    memos.sort(key=lambda pair: pair[0])
    return plan._make_schedule(wanted, fed=given, guards=[(at, m) for (at, _), m in memos])
