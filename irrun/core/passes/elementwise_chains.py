"""A pass: chains of elementwise ops run as one step, block by block over the output.

A chain is a run of steps of ops the registry declares ``elementwise``, each reading the
one before's output, which nothing else reads and the run does not keep (other inputs
come from outside the chain: constants, inputs, earlier results).  The fused step runs
each op's own kernel (the step's: its fast kernel where one applies, else the reference)
on blocks of the output (:mod:`irrun.fast.chain`), so each block's intermediates stay in
the cache: the same operations on the same elements, the same bits as step by step.
Where blocks do not pay (a small output) or do not apply (a broadcast other than NumPy's),
the steps run one by one, as unfused, Add and Multiply (and the activations with an
``into``) computed into the running result where it is the chain's own, as
:mod:`.inplace` does.

Where the fast engine is on (numba: :mod:`irrun.fast.jit`) and every op of the chain is
one whose arithmetic numba reproduces exactly, on f32 or f64 data, the chain runs as one
compiled loop instead (:mod:`irrun.fast.chain_jit`): each element through the whole chain
in registers, the same bits.  Observed runs (views) run the parts one by one, whole, and
report each: the same bits again, since every op is elementwise and each kernel exact.
(Which NaN an operation on NaNs gives, its sign and payload, is the CPU's, and NumPy's SIMD
and scalar loops, which blocks and compiled loops meet at other places, may pick another:
NaN stays NaN at the same places, as :func:`irrun.fast.blocks.split` has it.)

It runs before :mod:`.inplace` and leaves it what it does better: the ops it would apply
into a convolution's or a matrix product's fresh result (a bias, an activation) are not
taken.  Ops whose fast kernel is not exact are not taken either: their fast kernel may
apply to a whole tensor and not to a block of it.
"""

from __future__ import annotations

import operator
import time
from types import SimpleNamespace

import numpy as np

from ...fast import chain_jit, fast_kernel, jit
from ...fast.chain import Block, blocks_of, run_blocks
from ..steps import Step, Tap, parts, run_step
from .inplace import _Activation, _Binary, _into

# An operand of a part: the running value (RUNNING), or the chain's k-th argument.
RUNNING = -1
_SHAPE = operator.attrgetter("shape")


class ElementwiseChain:
    """Steps of elementwise ops, each reading the one before's output, as one step."""

    # Run part by part (small outputs, observed runs), it holds an intermediate while the
    # next part makes its output (the memory plan counts it: irrun.core.budget).
    holds_intermediates = True

    def __init__(self, steps: list[Step], wiring: list[tuple[int, ...]], arity: int) -> None:
        self.parts: tuple[Step, ...] = tuple(steps)
        self.wiring = wiring  # each part's operands: RUNNING or an index into the arguments
        self.arity = arity
        self.links = [_link(step, w) for step, w in zip(steps, wiring, strict=True)]
        # Per part, what the loop reads: its step, operands, link, the link's other
        # operand (or None), and whether its kernel's output is a new array of its own.
        self._table = [
            (step, w, link, next((k for k in w if k != RUNNING), None) if link else None,
             step.node.op.fresh_output)
            for step, w, link in zip(steps, wiring, self.links, strict=True)]
        # The chain as the fast engine compiles it (chain_jit), or None.
        compiled = [(step.node.op.type, step.attrs, w) for step, w in zip(steps, wiring,
                                                                           strict=True)]
        self._compiled = compiled if chain_jit.takes(compiled) else None
        # Per argument shapes: the output's shape (None where they do not broadcast), its
        # blocks (None: run whole), and the compiled loop (None: NumPy; False: not yet
        # looked for).
        self._plans: dict[tuple, list] = {}

    def __call__(self, _attrs: object, *args: np.ndarray) -> tuple[np.ndarray]:
        key = tuple(map(_SHAPE, args))  # a chain of 200 Adds has 200 arguments: kept lean
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(args)
        shape, found, compiled = plan
        if compiled is False:
            compiled = plan[2] = self._compile(args, shape)
        if compiled is not None:
            out = compiled(args)
            if out is not None:
                return (out,)
        if found is None:
            return (self._run(args),)
        return (run_blocks(lambda *block: self._run(block), shape, args, found),)  # type: ignore[arg-type]

    def _plan(self, args: tuple[np.ndarray, ...]) -> list:
        try:
            shape = self._shape(args)
        except ValueError:
            return [None, None, None]  # the step that breaks says why, run one by one
        return [shape, self._blocks(args), False]

    def _compile(self, args, shape) -> chain_jit.Prepared | None:
        """The fast engine's loop of the chain for ``args``, where it is on and takes it."""
        if self._compiled is None or shape is None or not jit.enabled():
            return None
        return chain_jit.prepare(self._compiled, args, shape)

    def _shape(self, args) -> tuple[int, ...]:
        return np.broadcast_shapes(*(a.shape for a in args))

    def _blocks(self, args: tuple[np.ndarray, ...]) -> list[Block] | None:
        """The blocks of the chain's output for arguments like ``args``, or None: not
        worth it, or an op that does not broadcast as NumPy does."""
        if any(not isinstance(a, np.ndarray) for a in args):
            return None
        if len({a.shape for a in args}) > 1 and any(
                getattr(step.attrs, "auto_broadcast", "numpy") != "numpy" for step in self.parts):
            return None
        try:
            shape = self._shape(args)
        except ValueError:
            return None  # the step that breaks says why, run one by one
        itemsize = max(a.dtype.itemsize for a in args)
        return blocks_of(shape, itemsize, [a.shape for a in args])

    def _run(self, args, tap: Tap | None = None, copies: bool = False) -> np.ndarray:
        """The parts one by one on ``args`` (whole arguments or a block's slices)."""
        if tap is not None:
            return self._run_observed(args, tap, copies)
        value: np.ndarray | None = None
        fresh = False  # whether ``value`` is the chain's own array (a link may work in it)
        for step, wiring, link, other, fresh_output in self._table:
            if fresh and link is not None:
                result = link(value) if other is None else link(value, args[other])
                fresh = result is value or fresh_output
            else:
                result = run_step(step, [value if k == RUNNING else args[k] for k in wiring])[0]
                fresh = fresh_output
            value = result
        return value  # type: ignore[return-value]

    def _run_observed(self, args, tap: Tap, copies: bool) -> np.ndarray:
        """:meth:`_run`, reporting each part to ``tap`` with its time."""
        value: np.ndarray | None = None
        fresh = False  # whether ``value`` is the chain's own array (a link may work in it)
        last = len(self.parts) - 1
        for i, (step, wiring, link) in enumerate(
                zip(self.parts, self.wiring, self.links, strict=True)):
            operands = tuple(value if k == RUNNING else args[k] for k in wiring)
            start = time.perf_counter()
            if fresh and link is not None:
                others = tuple(args[k] for k in wiring if k != RUNNING)
                result = link(value, *others)
                fresh = result is value or step.node.op.fresh_output
            else:
                result = run_step(step, operands)[0]
                fresh = step.node.op.fresh_output
            seconds = time.perf_counter() - start
            tap(step, operands, (result.copy() if copies and i < last else result,), seconds)
            value = result
        return value  # type: ignore[return-value]

    def observed(self, args: list, tap: Tap, copies: bool) -> tuple[np.ndarray]:
        """The chain's output, bit for bit, its parts run one by one over whole tensors
        (elementwise: the blocks' values) and each reported to ``tap``; with ``copies``,
        what a later part may overwrite in place is reported as a copy."""
        return (self._run(tuple(args), tap, copies),)


def _link(step: Step, wiring: tuple[int, ...]) -> object | None:
    """How a part computes into the running value when that is the chain's own: Add and
    Multiply (either operand), an activation with an ``into`` (first operand); None."""
    into = _into(step.node.op)
    if into is None or wiring.count(RUNNING) != 1:
        return None
    if len(wiring) == 2 and hasattr(step.attrs, "auto_broadcast"):
        if step.attrs.auto_broadcast != "numpy":
            return None
        return _Binary(step, wiring[0] == RUNNING, into)
    if wiring[0] == RUNNING:
        return _Activation(step, into)
    return None


def _chainable(step: Step) -> bool:
    """Whether ``step`` is a plain step of an elementwise op with one output, whose kernel
    gives the same bits on a block as on the whole (no inexact fast kernel)."""
    op = step.node.op
    if not op.elementwise or step.folded or len(step.outputs) != 1 or step.needed is not None:
        return False
    if parts(step) != (step,) or not step.inputs:
        return False
    fast = fast_kernel(op)
    return fast is None or fast.exact


def _left_to_inplace(schedule: list[tuple[Step, tuple[int, ...]]], readers: dict[int, list[int]],
                     keep: set[int]) -> set[int]:
    """The positions of the ops :mod:`.inplace` applies into the fresh result of an op
    that is not elementwise (a convolution's bias and activation)."""
    left: set[int] = set()
    for step, _ in schedule:
        op = step.node.op
        if not op.fresh_output or op.elementwise or len(step.outputs) != 1:
            continue
        slot = step.outputs[0]
        while slot not in keep and len(readers.get(slot, ())) == 1:
            pos = readers[slot][0]
            nxt = schedule[pos][0]
            if not nxt.node.op.in_place or len(nxt.outputs) != 1:
                break
            left.add(pos)
            slot = nxt.outputs[0]
    return left


def fuse_elementwise_chains(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Fuse each chain of two or more elementwise steps (see the module's doc) into one
    step, in the place of its last."""
    readers: dict[int, list[int]] = {}
    for pos, (step, _) in enumerate(schedule):
        for slot in dict.fromkeys(step.inputs):
            readers.setdefault(slot, []).append(pos)
    left = _left_to_inplace(schedule, readers, keep)
    ok = [_chainable(step) and pos not in left for pos, (step, _) in enumerate(schedule)]
    taken: set[int] = set()
    fused_at: dict[int, tuple[Step, tuple[int, ...]]] = {}
    for pos in range(len(schedule)):
        if not ok[pos] or pos in taken:
            continue
        chain = [pos]
        while True:
            slot = schedule[chain[-1]][0].outputs[0]
            users = readers.get(slot, [])
            if slot in keep or len(users) != 1 or not ok[users[0]] or users[0] in taken:
                break
            chain.append(users[0])
        if len(chain) < 2:
            continue
        taken.update(chain)
        fused_at[chain[-1]] = _fuse([schedule[p] for p in chain])
    if not fused_at:
        return schedule
    out = [fused_at.get(pos, entry) for pos, entry in enumerate(schedule)
           if pos not in taken or pos in fused_at]
    return _free_late(out)


def _free_late(schedule: list[tuple[Step, tuple[int, ...]]]) -> list[tuple[Step, tuple[int, ...]]]:
    """The schedule with each slot freed after its last reader: a fused step stands where
    its chain's last step stood, so an input of an earlier part may now be read after the
    step that used to free it."""
    last: dict[int, int] = {}
    for pos, (step, _) in enumerate(schedule):
        for slot in step.inputs:
            last[slot] = pos
    moved: dict[int, list[int]] = {}
    fixed = []
    for pos, (step, frees) in enumerate(schedule):
        kept = []
        for slot in frees:
            if last.get(slot, pos) > pos:
                moved.setdefault(last[slot], []).append(slot)
            else:
                kept.append(slot)
        fixed.append([step, kept])
    for pos, slots in moved.items():
        fixed[pos][1] = [*fixed[pos][1], *slots]
    return [(step, tuple(frees)) for step, frees in fixed]


def _fuse(entries: list[tuple[Step, tuple[int, ...]]]) -> tuple[Step, tuple[int, ...]]:
    args: list[int] = []
    wiring: list[tuple[int, ...]] = []
    running: int | None = None
    for step, _ in entries:
        w = []
        for slot in step.inputs:
            if slot == running:
                w.append(RUNNING)
            else:
                if slot not in args:
                    args.append(slot)
                w.append(args.index(slot))
        wiring.append(tuple(w))
        running = step.outputs[0]
    steps = [step for step, _ in entries]
    chain = ElementwiseChain(steps, wiring, len(args))
    last = steps[-1]
    frees = tuple(dict.fromkeys(s for _, f in entries for s in f))
    return Step(last.node, chain, SimpleNamespace(), tuple(args), last.outputs), frees
