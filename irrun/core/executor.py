"""Executing a bound graph: planned once, then run step by step in topological order.

The plan turns every tensor into a numbered slot and every layer into a step
holding its kernel and parsed attributes, so running is a tight loop.  Each
intermediate is dropped as soon as its last consumer has run, and a layer whose
op can skip outputs is told which of its outputs the run actually uses.  The
rewrites of a schedule (fusing steps, and the like) are passes over it
(:mod:`.passes`), applied where the schedule is made: the loop knows no op.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InternalError, IrrunError, Location, OpError
from ..fast import kernel_for
from .arena import keep_freed_memory
from .binding import Node
from .graph import LayerGraph
from .passes import PASSES
from .shapes import ShapeCache, ShapeMiss
from .steps import Pass, Schedule, Step, Tap, parts, run_step

# The layer-id part of the slot key of a variable's value: no layer id is empty.
_VARIABLE = ""


class Plan:
    """Slots and steps for a graph whose layers are all bound."""

    def __init__(
        self, lg: LayerGraph, nodes: Mapping[str, Node], passes: Sequence[Pass] = PASSES,
        reference: bool = False,
    ) -> None:
        self.lg = lg
        # A reference plan runs each op's reference kernel, and no pass rewrites it.
        self.reference = reference
        self.passes = () if reference else tuple(passes)  # applied in order to every schedule
        self.slots: dict[tuple[str, int], int] = {}
        self.steps: list[Step] = []
        self.parameters: dict[str, int] = {}  # Parameter layer id -> slot
        self.producer: dict[int, int] = {}  # slot -> index of the step that writes it
        # A variable's value is fed like a Parameter's (None while it is unset) to each of
        # its ReadValues, as a last input; what its Assign outputs is its next value.
        self.variables: dict[str, int] = {}  # variable id -> the slot its ReadValues read
        self.assigns: dict[str, int] = {}  # variable id -> its Assign's output slot
        slots, sources = self.slots, lg.sources
        for lid in lg.order:
            node = nodes[lid]
            assert node.op is not None and node.attrs is not None
            for port in node.layer.outputs:
                slots[(lid, port.id)] = len(slots)
            outs = tuple([slots[(lid, p.id)] for p in node.layer.outputs])
            if node.op.type == "Parameter":
                self.parameters[lid] = outs[0]
                continue
            # A Source is the (layer, port) key of its producer's slot.
            ins = tuple([slots[sources[(lid, p.id)]] for p in node.layer.inputs])
            if node.op.type == "ReadValue":
                var = node.attrs.variable_id
                if var not in self.variables:
                    self.variables[var] = slots[(_VARIABLE, var)] = len(slots)  # type: ignore[index]
                ins += (self.variables[var],)
            elif node.op.type == "Assign" and outs:
                self.assigns[node.attrs.variable_id] = outs[0]
            for slot in outs:
                self.producer[slot] = len(self.steps)
            kernel = kernel_for(node.op, reference)
            self.steps.append(Step(node, kernel, node.attrs, ins, outs))
        # Slot -> the step that gives its value computed at load (see irrun.core.folding):
        # a run that does not observe each layer reads it instead of running its producers.
        self.folded: dict[int, Step] = {}
        self._schedules: dict[tuple, tuple] = {}
        self._shapes: ShapeCache | bool | None = False  # made at the first run

    def schedule(self, wanted: tuple[int, ...]) -> Schedule:
        """The schedule of a run computing ``wanted``, kept for the next run that wants the same.

        A dict, not ``lru_cache`` over the bound method: that would hold the plan from
        inside itself, and a dropped model would wait for the cyclic garbage collector.
        """
        found = self._schedules.get(wanted)
        if found is None:
            if len(self._schedules) >= 32:  # a caller asking for ever other outputs
                self._schedules.clear()
            found = self._schedules[wanted] = self._make_schedule(wanted)
        return found

    def _make_schedule(
        self, wanted: tuple[int, ...], fed: set[int] = frozenset(),  # type: ignore[assignment]
        guards: Sequence[tuple[int, Step]] = (),
    ) -> Schedule:
        """The steps ``wanted`` needs, each with the slots it is the last reader of.

        A step whose op can skip outputs and has some that nothing reads is scheduled
        as a copy that carries the mask of the used ones.  A slot folded at load
        (:attr:`folded`) is given by its constant step, and the steps that made it run
        only for a slot that was not kept.  Then the passes rewrite the schedule.

        For a run given shape-only values (see :mod:`irrun.core.shapes`): the slots
        ``fed`` come with the feeds, and each ``(i, guard)`` of ``guards`` runs in step
        ``i``'s place, with what its inputs need.
        """
        required: set[int] = set()
        folded = self.folded
        given = {s for s in wanted if s in folded}  # folded slots the run reads
        stack = [self.producer[s] for s in wanted
                 if s in self.producer and s not in folded and s not in fed]  # fmt: skip
        stack += [self.producer[s] for _, g in guards for s in g.inputs
                  if s in self.producer and s not in folded and s not in fed]  # fmt: skip
        given.update(s for _, g in guards for s in g.inputs if s in folded)
        while stack:
            i = stack.pop()
            if i in required:
                continue
            required.add(i)
            for s in self.steps[i].inputs:
                if s in folded:
                    given.add(s)
                elif s in fed:
                    continue
                elif s in self.producer:
                    stack.append(self.producer[s])
        # A folded value's step stands where its producer would.
        order = [((i, -1, 0), self.steps[i]) for i in required]
        order += [((self.producer[s], s, 1), folded[s]) for s in given]
        order += [((i, -1, 0), g) for i, g in guards]
        chosen = [step for _, step in sorted(order, key=lambda pair: pair[0])]
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
            if step.node.op.optional_outputs and not all(used):
                step = replace(step, needed=used)
            schedule.append((step, tuple(frees[pos])))
        for rewrite in self.passes:
            schedule = rewrite(schedule, keep)
        return tuple(schedule)

    def observed_schedule(self, wanted: tuple[int, ...]) -> tuple[Schedule, tuple[Step, ...]]:
        """What a run that observes every layer executes: the plain run's :meth:`schedule`,
        whose slots the tail reads kept to the end, then the tail: the layers that
        schedule does not run (those no wanted slot needs, and those folded at load into
        a later layer's value), unfused, each with all its outputs."""
        key = (wanted, "observed")
        found = self._schedules.get(key)  # type: ignore[call-overload]
        if found is None:
            schedule = self.schedule(wanted)
            covered = {part.node.layer.id for step, _ in schedule for part in parts(step)}
            tail = tuple(step for step in self.steps if step.node.layer.id not in covered)
            found = self._schedules[key] = (schedule, tail)  # type: ignore[index]
        return found

    def run(
        self,
        feeds: Mapping[int, np.ndarray],
        wanted: Sequence[int],
        observe: Observer | None = None,
    ) -> dict[int, np.ndarray]:
        """Compute the slots ``wanted`` from ``feeds`` (Parameter slot -> array).

        ``observe``, when given, sees each layer of the same plan as it finishes (see
        :class:`Observer`): the outputs are those of a run without it, bit for bit.
        """
        keep_freed_memory()  # once per process: tensors reuse the last run's pages
        # NaN, infinities, overflow and underflow are values in the IR's arithmetic, not
        # errors: no kernel may warn of them (kernels that read the flags set their own).
        with np.errstate(all="ignore"), _reference_mode(self.reference):
            if observe is not None:
                return self._run_observed(feeds, tuple(wanted), observe)
            return self._run(feeds, wanted)

    def _run(self, feeds: Mapping[int, np.ndarray], wanted: Sequence[int]) -> dict[int, np.ndarray]:
        if self.shapes is not None:
            return self.shapes.run(self, feeds, wanted)
        return self._execute(self.schedule(tuple(wanted)), feeds, wanted)

    @property
    def shapes(self) -> ShapeCache | None:
        """The cache of shape-only values (see :mod:`irrun.core.shapes`); None for a
        reference plan, one with no shape-only step, or with the cache turned off."""
        if self._shapes is False:
            self._shapes = None if self.reference else ShapeCache.of(self)
        return self._shapes  # type: ignore[return-value]

    @shapes.setter
    def shapes(self, value: ShapeCache | None) -> None:
        self._shapes = value

    def _execute(self, schedule: Schedule, feeds: Mapping[int, object],
                 wanted: Sequence[int]) -> dict[int, np.ndarray]:  # fmt: skip
        values: dict[int, np.ndarray | None] = dict(feeds)  # type: ignore[arg-type]
        for slot in self.variables.values():  # unset unless the caller keeps state
            values.setdefault(slot, None)
        # Bound once: a tiny model's step costs about a microsecond of this loop.
        read, drop = values.__getitem__, values.pop
        for step, frees in schedule:
            try:
                if step.needed is None:
                    results = step.kernel(step.attrs, *map(read, step.inputs))
                else:
                    results = step.kernel(step.attrs, *map(read, step.inputs), needed=step.needed)
            except ShapeMiss:
                raise
            except Exception as exc:
                raise self._error(getattr(exc, "irrun_step", step), exc) from exc
            values.update(zip(step.outputs, results, strict=False))
            for slot in frees:
                drop(slot, None)
        return {s: values[s] for s in wanted}

    def _run_observed(
        self, feeds: Mapping[int, np.ndarray], wanted: tuple[int, ...], observe: Observer
    ) -> dict[int, np.ndarray]:
        # Kept apart from run's loop, which stays free of timing and calls.
        schedule, tail = self.observed_schedule(wanted)
        if not observe.every_layer:
            tail = ()
        read_later = {s for step in tail for s in step.inputs}
        copies = observe.values or bool(read_later)
        values: dict[int, np.ndarray | None] = dict(feeds)
        for slot in self.variables.values():
            values.setdefault(slot, None)
        report = observe.report

        def tap(step: Step, args, results: tuple, seconds: float) -> None:
            for slot, value in zip(step.outputs, results, strict=False):
                if slot in read_later:  # made inside a fused step: kept for the tail
                    values[slot] = value
            try:
                report(step, args, results, seconds)
            except BaseException as exc:  # the observer's own, not the layer's: passed on
                raise _FromObserver(exc) from None

        clock = time.perf_counter
        for step, frees in schedule:
            args = [values[s] for s in step.inputs]
            try:
                observed = getattr(step.kernel, "observed", None)
                if observed is not None:
                    results = observed(args, tap, copies)
                else:
                    start = clock()
                    results = run_step(step, args)
                    seconds = clock() - start
                    if step.needed is not None and observe.every_layer:
                        results = _complete(step, args, results)
                    tap(step, args, results, seconds)
            except _FromObserver as passed:
                raise passed.error from None
            except Exception as exc:
                raise self._error(getattr(exc, "irrun_step", step), exc) from exc
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            for slot in frees:
                if slot not in read_later:
                    values.pop(slot, None)
        for step in tail:
            args = [values[s] for s in step.inputs]
            start = clock()
            try:
                results = run_step(step, args)
            except Exception as exc:
                raise self._error(getattr(exc, "irrun_step", step), exc) from exc
            seconds = clock() - start
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            try:
                tap(step, args, results, seconds)
            except _FromObserver as passed:
                raise passed.error from None
        return {s: values[s] for s in wanted}

    def _error(self, step: Step, exc: Exception) -> IrrunError:
        """The error a failed step raises: the op's own reason, or out of memory, at its
        layer; any other exception is a bug in irrun (:class:`~irrun.errors.InternalError`)."""
        where = Location(str(self.lg.doc.path), step.node.layer.line)
        if isinstance(exc, IrrunError):  # raised located by a step that runs a body
            return exc.with_context(where, step.node.ref)
        if not isinstance(exc, OpError | MemoryError):
            return InternalError.wrap(exc, where, step.node.ref)
        if isinstance(exc, MemoryError):
            # The planned peak fitted (see Model.max_memory), but the system had less to
            # give by then, or a kernel's scratch space tipped it over.
            return IrrunError(f"out of memory in this layer ({exc or 'MemoryError'})", where,
                              step.node.ref, code="out-of-memory")  # fmt: skip
        return IrrunError(str(exc), where, step.node.ref)


@dataclass(frozen=True)
class Observer:
    """What a run reports each layer to, and what it needs.

    ``report`` is called with each layer's step, inputs, outputs and the seconds its
    kernel took, as it finishes (a fused step reports each of its layers).  With
    ``values``, the outputs reported stay valid after the call (a fused step copies what
    it later overwrites); without, only their shapes may be read (a profile).  With
    ``every_layer``, the layers the run does not need (and those folded at load) run
    after it, unfused, and are reported too; their outputs feed nothing the run returns.
    """

    report: Tap
    values: bool = True
    every_layer: bool = True


class _FromObserver(Exception):
    """Carries what an observer raised through the layer's error handling, unchanged."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _complete(step: Step, args, results: tuple) -> tuple:
    """``results`` of a step that computed only the outputs the run reads, with the others
    computed too, by the same kernel on the same inputs (for an observer that sees all)."""
    rest = tuple(not n for n in step.needed)  # type: ignore[union-attr]
    more = run_step(replace(step, needed=rest), args)
    return tuple(a if n else b for a, b, n in zip(results, more, step.needed, strict=True))  # type: ignore[arg-type]


# Set while a reference plan runs, so that the plans of sub-graph bodies are reference too.
_REFERENCE: ContextVar[bool] = ContextVar("irrun_reference", default=False)


@contextmanager
def _reference_mode(on: bool):
    token = _REFERENCE.set(on)
    try:
        yield
    finally:
        _REFERENCE.reset(token)


def reference_mode() -> bool:
    """Whether the plan running now is a reference plan (see :class:`Plan`)."""
    return _REFERENCE.get()
