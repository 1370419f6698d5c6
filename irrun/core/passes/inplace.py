"""A pass: the ops that alone read a fresh result are done into that result, or as views.

A linear layer's bias, a residual connection, LayerNorm's scale and shift: each is an Add
or a Multiply whose one input is a result nothing else reads, made by a kernel that
returns a new array of its own (:data:`HEADS`).  Such a chain runs as one step: the head's
kernel, then each binary op into the head's array (``np.add(y, b, out=y)``), which saves a
new array and a step per op.  Only where that gives the same array as the op's kernel:
float types of 4 bytes or more and an operand that broadcasts into the result's shape;
otherwise the op's own kernel runs.  The other operand must be ready when the head runs
(a constant, an input, or a result made before it).

The chain also takes, the same way:

- Gelu, computed into the result where its kernel can (f32, erf mode:
  :func:`irrun.ops.activations.gelu_erf_into`), else by its kernel;
- ReLU, Clamp and Swish after a convolution or a residual Add (a CNN's
  activations), into the result where their kernels' passes can run in place (f32 and
  f64: :func:`irrun.ops.activations.relu_into`, :func:`~irrun.ops.activations.clamp_into`,
  :func:`~irrun.ops.activations.swish_into`), else by their kernels;
- Reshape and Transpose with a constant shape or order (a transformer's heads split
  and merged): a Reshape gives a view in the shape its kernel gives (worked out once per
  input shape); a Transpose gives a view where what reads it takes any strides at BLAS
  speed (a Reshape after it, which then makes the contiguous copy the Transpose would
  have made, or a MatMul or ScaledDotProductAttention alone reading the chain, the last
  axis staying last), else the contiguous copy its kernel makes.  The result after a
  view is not the chain's own, so a later Add or Multiply runs its kernel.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...ops.activations import clamp_into, gelu_erf_into, relu_into, swish_into
from ..steps import Step
from .constants import known_constants

# Ops whose kernels always return a new array of their own for their first output.
HEADS = frozenset({"MatMul", "MVN", "Add", "Multiply", "Gelu", "ScaledDotProductAttention",
                   "Convolution", "GroupConvolution"})  # fmt: skip
# Activations done into the running result: op type -> fn(attrs, array) -> whether it did.
ACTIVATIONS = {"Gelu": gelu_erf_into, "ReLU": relu_into, "Clamp": clamp_into,
               "Swish": swish_into}  # fmt: skip
TAILS = {"Add": np.add, "Multiply": np.multiply}
# Readers that take a strided view of a Transpose (its last axis kept) at no cost.
VIEW_READERS = frozenset({"MatMul", "ScaledDotProductAttention"})


class _Binary:
    """An Add or Multiply with the running result as one operand: in place where it may."""

    arity = 1

    def __init__(self, step: Step, first: bool) -> None:
        self.step, self.first = step, first
        self.ufunc = TAILS[step.node.op.type]
        # _in_place's answer but for ownership, by types and shapes
        self.fits: dict[tuple, bool] = {}

    def __call__(self, value: np.ndarray, other: np.ndarray) -> np.ndarray:
        key = (value.dtype, other.dtype, value.shape, other.shape)
        fits = self.fits.get(key)
        if fits is None:
            if len(self.fits) >= 32:
                self.fits.clear()
            fits = self.fits[key] = _in_place(value, other, owned=False)
        if fits and _owned(value):
            self.ufunc(value, other, out=value)
            return value
        return _run(self.step, (value, other) if self.first else (other, value))[0]


class _Activation:
    """An activation (:data:`ACTIVATIONS`) into the running result where it may, else by
    its kernel; Swish's beta, when it has one, is the chain's argument."""

    def __init__(self, step: Step) -> None:
        self.step = step
        self.into = ACTIVATIONS[step.node.op.type]
        self.arity = len(step.inputs) - 1

    def __call__(self, value: np.ndarray, *more: np.ndarray) -> np.ndarray:
        if _owned(value) and self.into(self.step.attrs, value, *more):
            return value
        return _run(self.step, (value, *more))[0]


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
            made = _run(self.step, (value, self.target))[0]
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
            made = _run(self.step, (value, self.order))[0]  # checks the order
            axes = tuple(int(a) for a in self.order.reshape(-1)) or tuple(range(value.ndim))[::-1]
            # A view only where the last axis stays last: BLAS then reads it as it is.
            viewed = self.view and value.ndim >= 2 and axes[-1] == value.ndim - 1
            self.perms[value.ndim] = axes if viewed else None
            return made
        perm = self.perms[value.ndim]
        if perm is None:
            return _run(self.step, (value, self.order))[0]
        return value.transpose(perm)


class InPlaceChain:
    """The head's kernel, then each tail op applied into (or as a view of) its result."""

    def __init__(self, head: Step, tails: list[tuple[Step, object]]) -> None:
        self.head = head
        self.tails = tails  # (the op's step, how the chain runs it)
        self.arity = len(head.inputs)

    def __call__(self, _attrs: object, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        value = _run(self.head, args[: self.arity])[0]
        at = self.arity
        for _, link in self.tails:
            if link.arity:  # type: ignore[attr-defined]
                value = link(value, args[at])  # type: ignore[operator]
                at += 1
            else:
                value = link(value)  # type: ignore[operator]
        return (value,)


def _run(step: Step, args) -> tuple[np.ndarray, ...]:
    try:
        if step.needed is None:
            return step.kernel(step.attrs, *args)
        return step.kernel(step.attrs, *args, needed=step.needed)
    except Exception as exc:
        if not hasattr(exc, "irrun_step"):
            exc.irrun_step = step  # type: ignore[attr-defined]  # the layer to blame
        raise


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


def _in_place(value: np.ndarray, other: np.ndarray, owned: bool = True) -> bool:
    """Whether ``value op= other`` gives what the op would: one float type of 4 bytes or
    more, ``other`` broadcasting into ``value``'s shape, an array ``value`` owns (checked
    unless ``owned`` is false)."""
    if value.dtype != other.dtype or value.dtype.kind != "f" or value.dtype.itemsize < 4:
        return False
    if other.ndim > value.ndim or (owned and not _owned(value)):
        return False
    tail = value.shape[value.ndim - other.ndim :]
    return all(d in (1, v) for d, v in zip(other.shape, tail, strict=True))


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
        if head.node.op.type not in HEADS or len(head.outputs) != 1 or head.needed is not None:
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


def _binary_tail(step: Step, slot: int) -> bool:
    return (step.node.op.type in TAILS and step.attrs.auto_broadcast == "numpy"
            and step.needed is None and step.inputs.count(slot) == 1)  # fmt: skip


def _link(step: Step, slot: int, constants: dict[int, np.ndarray]) -> object | None:
    """How the chain runs ``step`` on the running result in ``slot``, or None."""
    kind = step.node.op.type
    if kind in TAILS:
        return _Binary(step, step.inputs[0] == slot) if _binary_tail(step, slot) else None
    if step.needed is not None or step.inputs.count(slot) != 1 or step.inputs[0] != slot:
        return None
    if kind in ACTIVATIONS and (len(step.inputs) == 1 or kind == "Swish"):
        return _Activation(step)
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
    chain's last op, by a MatMul or ScaledDotProductAttention alone."""
    slot = last.outputs[0]
    users = readers.get(slot, [])
    final_ok = (slot not in keep and len(users) == 1
                and schedule[users[0]][0].node.op.type in VIEW_READERS)  # fmt: skip
    for i, (_, link) in enumerate(tails):
        if isinstance(link, _Transpose):
            nxt = tails[i + 1][1] if i + 1 < len(tails) else None
            link.view = isinstance(nxt, _Reshape) if nxt is not None else final_ok
            if isinstance(nxt, _Reshape):
                nxt.contiguous = True  # a reshape that a strided view allows copies nothing
