"""A pass: the ops that alone read a fresh result are done into that result, or as views.

A linear layer's bias, a residual connection, LayerNorm's scale and shift: each is an Add
or a Multiply whose one input is a result nothing else reads, made by a kernel that
returns a new array of its own (an op declared ``fresh_output``).  Such a chain runs as
one step: the head's kernel, then each op declared ``in_place`` computed into the head's
array by its fast kernel's ``into`` (``np.add(y, b, out=y)``), which saves a new array
and a step per op.  Only where ``into`` gives the same array as the op's kernel (for Add
and Multiply: float types of 4 bytes or more and an operand that broadcasts into the
result's shape; for ReLU, Clamp, Swish and Gelu, see :mod:`irrun.fast.activations`);
otherwise the op's own kernel runs.  An op of two inputs broadcast by ``auto_broadcast``
(Add, Multiply: they commute) takes the result as either input; any other takes it as its
first, and its other input, if any, is the chain's argument (Swish's beta).  The other
operand must be ready when the head runs (a constant, an input, or a result made before
it).

The chain also takes, the same way:

- Reshape and Transpose with a constant shape or order (a transformer's heads split
  and merged): a Reshape gives a view in the shape its kernel gives (worked out once per
  input shape); a Transpose gives a view where what reads it takes any strides at BLAS
  speed (a Reshape after it, which then makes the contiguous copy the Transpose would
  have made, or an op declared ``view_reader`` (MatMul, ScaledDotProductAttention) alone
  reading the chain, the last axis staying last), else the contiguous copy its kernel
  makes.  The result after a view is not the chain's own, so a later Add or Multiply runs
  its kernel.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from ...fast import fast_kernel
from ...fast.registry import Into
from ...ir.registry import OpDef
from ..steps import Step, Tap, parts, run_step
from .constants import known_constants


def _into(op: OpDef) -> Into | None:
    """How ``op`` is computed into the running result (an op declared ``in_place`` whose
    fast kernel has an ``into``), or None."""
    fast = fast_kernel(op) if op.in_place else None
    return None if fast is None else fast.into


class _Binary:
    """An Add or Multiply with the running result as one operand: in place where it may."""

    arity = 1

    def __init__(self, step: Step, first: bool, into: Into) -> None:
        self.step, self.first, self.into = step, first, into

    def __call__(self, value: np.ndarray, other: np.ndarray) -> np.ndarray:
        if _owned(value) and self.into(self.step.attrs, value, other):
            return value
        return run_step(self.step, (value, other) if self.first else (other, value))[0]


class _Activation:
    """An activation into the running result where ``into`` may, else by its kernel;
    Swish's beta, when it has one, is the chain's argument."""

    def __init__(self, step: Step, into: Into) -> None:
        self.step, self.into = step, into
        self.arity = len(step.inputs) - 1

    def __call__(self, value: np.ndarray, *more: np.ndarray) -> np.ndarray:
        if _owned(value) and self.into(self.step.attrs, value, *more):
            return value
        return run_step(self.step, (value, *more))[0]


class _Reshape:
    """A Reshape to a constant target: its kernel's shape, found once per input shape."""

    arity = 0

    def __init__(self, step: Step, target: np.ndarray) -> None:
        self.step, self.target = step, target
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.contiguous = False  # set after a Transpose's view: what it gives is laid out anew

    def __call__(self, value: np.ndarray) -> np.ndarray:
        shape = self.shapes.get(value.shape)
        if shape is None:
            made = run_step(self.step, (value, self.target))[0]
            self.shapes[value.shape] = made.shape
        else:
            made = value.reshape(shape)
        return np.ascontiguousarray(made) if self.contiguous else made


class _Transpose:
    """A Transpose by a constant order: a view where ``view``, else its kernel's copy."""

    arity = 0

    def __init__(self, step: Step, order: np.ndarray, view: bool) -> None:
        self.step, self.order, self.view = step, order, view
        # rank -> the view's axes, or None for the kernel's copy
        self.perms: dict[int, tuple[int, ...] | None] = {}

    def __call__(self, value: np.ndarray) -> np.ndarray:
        if value.ndim not in self.perms:
            made = run_step(self.step, (value, self.order))[0]  # checks the order
            axes = tuple(int(a) for a in self.order.reshape(-1)) or tuple(range(value.ndim))[::-1]
            # A view only where the last axis stays last: BLAS then reads it as it is.
            viewed = self.view and value.ndim >= 2 and axes[-1] == value.ndim - 1
            self.perms[value.ndim] = axes if viewed else None
            return made
        perm = self.perms[value.ndim]
        if perm is None:
            return run_step(self.step, (value, self.order))[0]
        return value.transpose(perm)


class InPlaceChain:
    """The head's kernel, then each tail op applied into (or as a view of) its result."""

    def __init__(self, head: Step, tails: list[tuple[Step, object]]) -> None:
        self.head = head
        self.tails = tails  # (the op's step, how the chain runs it)
        self.arity = len(head.inputs)
        self.parts = (*parts(head), *(step for step, _ in tails))

    def __call__(self, _attrs: object, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        value = run_step(self.head, args[: self.arity])[0]
        at = self.arity
        for _, link in self.tails:
            if link.arity:  # type: ignore[attr-defined]
                value = link(value, args[at])  # type: ignore[operator]
                at += 1
            else:
                value = link(value)  # type: ignore[operator]
        return (value,)

    def observed(self, args: list, tap: Tap, copies: bool) -> tuple[np.ndarray, ...]:
        """:meth:`__call__`, reporting each layer; with ``copies``, what a later op of the
        chain overwrites in place is reported as a copy."""
        head_args = args[: self.arity]
        inner = getattr(self.head.kernel, "observed", None)
        if inner is not None:  # a fused head (a MatMul on its transposed weight)
            value = inner(head_args, copied(tap, copies and bool(self.tails)), copies)[0]
        else:
            start = time.perf_counter()
            value = run_step(self.head, head_args)[0]
            seconds = time.perf_counter() - start
            tap(self.head, head_args, (value.copy() if copies else value,), seconds)
        return (run_links(self.tails, value, iter(args[self.arity :]), tap, copies),)


def run_links(tails: list[tuple[Step, object]], value: np.ndarray, others, tap: Tap,
              copies: bool) -> np.ndarray:
    """A chain's tail ops on ``value``, as :meth:`InPlaceChain.__call__` runs them, each
    reported to ``tap`` with its time; with ``copies``, each result but the last as a copy
    (a later op may work in place on it)."""
    clock = time.perf_counter
    last = len(tails) - 1
    for i, (step, link) in enumerate(tails):
        if link.arity:  # type: ignore[attr-defined]
            other = next(others)
            start = clock()
            result = link(value, other)  # type: ignore[operator]
            seconds = clock() - start
            inputs = (value, other)
        else:
            start = clock()
            result = link(value)  # type: ignore[operator]
            seconds = clock() - start
            inputs = (value,)
        value = result
        tap(step, inputs, (value.copy() if copies and i < last else value,), seconds)
    return value


def copied(tap: Tap, copies: bool) -> Tap:
    """``tap``, given copies of the outputs when ``copies`` (they are overwritten later)."""
    if not copies:
        return tap
    return lambda step, args, results, seconds: tap(
        step, args, tuple(r.copy() if r is not None else None for r in results), seconds)


def _owned(value: np.ndarray) -> bool:
    """Whether ``value`` is an array of the chain's own: made by the head's kernel (a
    new array, or a reshape of a whole new one, as a convolution's product gives), not
    a view of part of it or of another layout."""
    if not value.flags.writeable:
        return False
    if value.flags.owndata:
        return True
    base = value.base
    return (isinstance(base, np.ndarray) and base.flags.owndata and value.flags.c_contiguous
            and base.flags.c_contiguous and value.nbytes == base.nbytes)  # fmt: skip


def fold_in_place(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Fold each run of tail ops (see the module's doc) into the fresh result that feeds it."""
    readers: dict[int, list[int]] = {}
    made_at: dict[int, int] = {}
    for pos, (step, _) in enumerate(schedule):
        for slot in step.inputs:
            readers.setdefault(slot, []).append(pos)
        for slot in step.outputs:
            made_at[slot] = pos
    constants = known_constants(schedule)
    absorbed: set[int] = set()
    out: list[tuple[Step, tuple[int, ...]]] = []
    for pos, (head, frees) in enumerate(schedule):
        if pos in absorbed:
            continue
        if not head.node.op.fresh_output or len(head.outputs) != 1 or head.needed is not None:
            out.append((head, frees))
            continue
        tails: list[tuple[Step, object]] = []
        others: list[int] = []
        all_frees = list(frees)
        last = head
        while True:
            slot = last.outputs[0]
            users = readers.get(slot, [])
            if slot in keep or len(users) != 1:
                break
            step, step_frees = schedule[users[0]]
            link = _link(step, slot, constants)
            if link is None:
                break
            if link.arity:  # type: ignore[attr-defined]
                other = step.inputs[1] if step.inputs[0] == slot else step.inputs[0]
                if made_at.get(other, -1) >= pos:
                    break  # made after the head: not ready when the chain runs
                others.append(other)
            tails.append((step, link))
            all_frees += step_frees
            absorbed.add(users[0])
            last = step
        if not tails:
            out.append((head, frees))
            continue
        _let_transposes_be_views(tails, last, readers, schedule, keep)
        chain = InPlaceChain(head, tails)
        fused = Step(last.node, chain, SimpleNamespace(), (*head.inputs, *others), last.outputs)
        out.append((fused, tuple(dict.fromkeys(all_frees))))
    return out


def _link(step: Step, slot: int, constants: dict[int, np.ndarray]) -> object | None:
    """How the chain runs ``step`` on the running result in ``slot``, or None."""
    kind = step.node.op.type
    if step.needed is not None or step.inputs.count(slot) != 1 or parts(step) != (step,):
        return None  # (a fused step, as an elementwise chain, is no op of its own)
    into = _into(step.node.op)
    if into is not None and len(step.inputs) == 2 and hasattr(step.attrs, "auto_broadcast"):
        # Two inputs broadcast alike, which commute: the result may be either.
        if step.attrs.auto_broadcast != "numpy":
            return None
        return _Binary(step, step.inputs[0] == slot, into)
    if step.inputs[0] != slot:
        return None
    if into is not None and len(step.inputs) <= 2:
        return _Activation(step, into)
    if kind in ("Reshape", "Transpose") and len(step.inputs) == 2:
        arg = constants.get(step.inputs[1])
        if arg is None:
            return None
        return _Reshape(step, arg) if kind == "Reshape" else _Transpose(step, arg, False)
    return None


def _let_transposes_be_views(
    tails: list[tuple[Step, object]], last: Step, readers: dict[int, list[int]],
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int],
) -> None:
    """Mark the Transposes whose views are read well: by the next Reshape, or, for the
    chain's last op, by an op declared ``view_reader`` alone."""
    slot = last.outputs[0]
    users = readers.get(slot, [])
    final_ok = (slot not in keep and len(users) == 1
                and schedule[users[0]][0].node.op.view_reader)
    for i, (_, link) in enumerate(tails):
        if isinstance(link, _Transpose):
            nxt = tails[i + 1][1] if i + 1 < len(tails) else None
            link.view = isinstance(nxt, _Reshape) if nxt is not None else final_ok
            if isinstance(nxt, _Reshape):
                nxt.contiguous = True  # a reshape that a strided view allows copies nothing
