"""Every op the registry declares ``elementwise``, split over the run's threads; Add and
Multiply also computed into an in-place chain's result (``into``).

An elementwise op's output element comes from its inputs' elements at the same place
(NumPy broadcasting), so its reference kernel run on blocks of the output gives exactly
the whole's elements: :func:`irrun.fast.blocks.split` is its fast kernel, bit for bit the
reference by construction.  An op with a faster kernel of its own (:mod:`.activations`)
keeps it; those split alike.

At one thread, Add, Subtract, Multiply, Divide and Power of f32 or f64 operands of one
type (NumPy broadcasting; Add, Subtract and Multiply of integers too, which wrap alike),
the comparisons (numbers and booleans), the logical and bitwise And, Or and Xor, Select
of a boolean condition, and the unary functions of :data:`irrun.ops.unary.FUNCTIONS`
(Sqrt, Exp, Sin...) of an f32 or f64 input, call the reference's NumPy function directly,
without the reference's work around it (type checks, f16 conversions, NumPy's error
state, which a run has set already): the same call on the same arrays, bit for bit; a
tiny model's decode step has some fifty of them, at a few microseconds each.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import threads
from ..ir.registry import supported_ops
from ..ops import unary  # (and with it every op: the elementwise ones are read below)
from . import activations, blocks  # noqa: F401  (activations first: its ops keep their kernels)
from .registry import FastKernel, fast_kernel, register_fast

APPLIES = ("more than one thread, at least 2**20 output elements, inputs broadcast as "
           "NumPy does: the reference on blocks of the output")


def _binary_into(ufunc: np.ufunc):
    def into(attrs: SimpleNamespace, value: np.ndarray, other: np.ndarray) -> bool:
        """``value`` and ``other`` combined into ``value``'s memory where that gives the
        op's result: one float type of 4 bytes or more (f16 is computed in f32 and
        rounded), ``numpy`` broadcasting of ``other`` into ``value``'s shape; whether it
        did.  The op commutes, so ``value`` may be either of its inputs."""
        if (value.dtype != other.dtype or value.dtype.kind != "f" or value.dtype.itemsize < 4
                or attrs.auto_broadcast != "numpy" or other.ndim > value.ndim
                or not value.flags.writeable):
            return False
        tail = value.shape[value.ndim - other.ndim :]
        if not all(d in (1, v) for d, v in zip(other.shape, tail, strict=True)):
            return False
        ufunc(value, other, out=value)
        return True

    return into


INTO = {"Add": _binary_into(np.add), "Multiply": _binary_into(np.multiply)}

# The reference's function of these ops on operands of one type (numpy broadcasting) is
# one call of NumPy's; around it the reference checks types, converts f16 and sets NumPy's
# error state (a run has set it: see irrun.core.executor.Plan.run), a few microseconds a
# call that a decode step of a tiny model pays some fifty times.  Each with the kinds of
# types it takes so: floats of 4 bytes or more; integers where they wrap alike in the
# reference and in NumPy's function (not Divide's nor Power's, whose reference handles
# division by zero and negative powers itself); booleans for the comparisons and logic.
BINARY_UFUNCS = {"Add": (np.add, "fiu"), "Subtract": (np.subtract, "fiu"),
                 "Multiply": (np.multiply, "fiu"), "Divide": (np.true_divide, "f"),
                 "Power": (np.power, "f"), "Equal": (np.equal, "fiub"),
                 "NotEqual": (np.not_equal, "fiub"), "Less": (np.less, "fiub"),
                 "LessEqual": (np.less_equal, "fiub"), "Greater": (np.greater, "fiub"),
                 "GreaterEqual": (np.greater_equal, "fiub"),
                 "LogicalAnd": (np.logical_and, "b"), "LogicalOr": (np.logical_or, "b"),
                 "LogicalXor": (np.logical_xor, "b"), "BitwiseAnd": (np.bitwise_and, "iub"),
                 "BitwiseOr": (np.bitwise_or, "iub"),
                 "BitwiseXor": (np.bitwise_xor, "iub")}  # fmt: skip
_KIND_NAMES = {"f": "f32 or f64", "i": "signed integer", "u": "unsigned integer", "b": "boolean"}
DIRECT_UNARY = "at one thread, an f32 or f64 input: the reference's NumPy function called directly"


def _direct_applies(kinds: str) -> str:
    return (f"at one thread, {', '.join(_KIND_NAMES[k] for k in kinds)} operands of one type "
            "broadcast as NumPy does: the reference's NumPy function called directly")


def _binary_direct(ufunc: np.ufunc, split, kinds: str):
    def run(attrs: SimpleNamespace, x: np.ndarray, y: np.ndarray):
        kind = x.dtype.kind
        if (threads.current() == 1 and x.dtype == y.dtype and kind in kinds
                and (kind != "f" or x.dtype.itemsize >= 4)
                and attrs.auto_broadcast == "numpy"):  # fmt: skip
            try:
                return (np.asarray(ufunc(x, y)),)
            except ValueError:  # shapes that do not broadcast: the reference names them
                return NotImplemented
        return split(attrs, x, y)

    return run


def _select_direct(split):
    def run(attrs: SimpleNamespace, cond: np.ndarray, then: np.ndarray, other: np.ndarray):
        if (threads.current() == 1 and cond.dtype == np.bool_ and then.dtype == other.dtype
                and attrs.auto_broadcast == "numpy"):  # fmt: skip
            try:
                return (np.where(cond, then, other),)
            except ValueError:  # shapes that do not broadcast: the reference names them
                return NotImplemented
        return split(attrs, cond, then, other)

    return run


def _unary_direct(fn, split):
    def run(attrs: SimpleNamespace, x: np.ndarray):
        if threads.current() == 1 and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
            return (np.asarray(fn(x)).astype(x.dtype, copy=False),)
        return split(attrs, x)

    return run


for _op in supported_ops():
    if _op.elementwise and fast_kernel(_op) is None:
        _run, _applies = blocks.split(_op.kernel), APPLIES
        if _op.type in BINARY_UFUNCS:
            _ufunc, _kinds = BINARY_UFUNCS[_op.type]
            _run = _binary_direct(_ufunc, _run, _kinds)
            _applies = f"{_direct_applies(_kinds)}; {APPLIES}"
        elif _op.type == "Select":
            _run = _select_direct(_run)
            _applies = (f"at one thread, a boolean condition and values of one type broadcast "
                        f"as NumPy does: the reference's np.where called directly; {APPLIES}")
        elif _op.type in unary.FUNCTIONS and _op.version == unary.FUNCTIONS[_op.type][0]:
            _run = _unary_direct(unary.FUNCTIONS[_op.type][2], _run)
            _applies = f"{DIRECT_UNARY}; {APPLIES}"
        register_fast(FastKernel(_op.type, (_op.version,), _applies, _run,
                                 scratch=blocks.pieces_scratch(_op.scratch),
                                 into=INTO.get(_op.type) if _op.in_place else None))
