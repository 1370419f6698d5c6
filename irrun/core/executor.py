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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..errors import InternalError, IrrunError, Location, OpError
from ..fast import kernel_for
from .arena import keep_freed_memory
from .binding import Node
from .graph import LayerGraph
from .passes import PASSES
from .steps import Pass, Schedule, Step

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
        self._schedules: dict[tuple[tuple[int, ...], bool], tuple] = {}

    def _schedule(self, wanted: tuple[int, ...], every_step: bool = False) -> Schedule:
        """:meth:`_make_schedule`'s result, kept for the next run that wants the same.

        A dict, not ``lru_cache`` over the bound method: that would hold the plan from
        inside itself, and a dropped model would wait for the cyclic garbage collector.
        """
        key = (wanted, every_step)
        found = self._schedules.get(key)
        if found is None:
            if len(self._schedules) >= 32:  # a caller asking for ever other outputs
                self._schedules.clear()
            found = self._schedules[key] = self._make_schedule(wanted, every_step)
        return found

    def _make_schedule(self, wanted: tuple[int, ...], every_step: bool = False) -> Schedule:
        """The steps ``wanted`` needs, each with the slots it is the last reader of.

        A step whose op can skip outputs and has some that nothing reads is scheduled
        as a copy that carries the mask of the used ones.  With ``every_step`` all
        steps run and compute all their outputs, for an observer that sees each one.
        Otherwise a slot folded at load (:attr:`folded`) is given by its constant step,
        and the steps that made it run only for a slot that was not kept.
        """
        required: set[int] = set(range(len(self.steps))) if every_step else set()
        folded = {} if every_step else self.folded
        given = {s for s in wanted if s in folded}  # folded slots the run reads
        stack = [self.producer[s] for s in wanted if s in self.producer and s not in folded]
        while stack:
            i = stack.pop()
            if i in required:
                continue
            required.add(i)
            for s in self.steps[i].inputs:
                if s in folded:
                    given.add(s)
                elif s in self.producer:
                    stack.append(self.producer[s])
        # A folded value's step stands where its producer would.
        order = [((i, -1, 0), self.steps[i]) for i in required]
        order += [((self.producer[s], s, 1), folded[s]) for s in given]
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
            if step.node.op.optional_outputs and not all(used) and not every_step:
                step = replace(step, needed=used)
            schedule.append((step, tuple(frees[pos])))
        if not every_step:
            for rewrite in self.passes:
                schedule = rewrite(schedule, keep)
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
        keep_freed_memory()  # once per process: tensors reuse the last run's pages
        # NaN, infinities, overflow and underflow are values in the IR's arithmetic, not
        # errors: no kernel may warn of them (kernels that read the flags set their own).
        with np.errstate(all="ignore"):
            if observe is not None:
                return self._run_observed(feeds, wanted, observe)
            return self._run(feeds, wanted)

    def _run(self, feeds: Mapping[int, np.ndarray], wanted: Sequence[int]) -> dict[int, np.ndarray]:
        values: dict[int, np.ndarray | None] = dict(feeds)
        for slot in self.variables.values():  # unset unless the caller keeps state
            values.setdefault(slot, None)
        for step, frees in self._schedule(tuple(wanted)):
            args = [values[s] for s in step.inputs]
            try:
                if step.needed is None:
                    results = step.kernel(step.attrs, *args)
                else:
                    results = step.kernel(step.attrs, *args, needed=step.needed)
            except Exception as exc:
                raise self._error(getattr(exc, "irrun_step", step), exc) from exc
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
        for slot in self.variables.values():
            values.setdefault(slot, None)
        clock = time.perf_counter
        for step, frees in self._schedule(tuple(wanted), True):
            args = [values[s] for s in step.inputs]
            start = clock()
            try:
                results = step.kernel(step.attrs, *args)
            except Exception as exc:
                raise self._error(getattr(exc, "irrun_step", step), exc) from exc
            seconds = clock() - start
            for slot, value in zip(step.outputs, results, strict=False):
                values[slot] = value
            observe(step, args, tuple(values[s] for s in step.outputs), seconds)
            for slot in frees:
                values.pop(slot, None)
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


# Called with a step, its inputs, its outputs and the seconds its kernel took.
Observer = Callable[
    [Step, Sequence[np.ndarray | None], tuple[np.ndarray | None, ...], float], None
]
