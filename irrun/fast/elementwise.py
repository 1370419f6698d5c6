"""Every op the registry declares ``elementwise``, split over the run's threads; Add and
Multiply also computed into an in-place chain's result (``into``).

An elementwise op's output element comes from its inputs' elements at the same place
(NumPy broadcasting), so its reference kernel run on blocks of the output gives exactly
the whole's elements: :func:`irrun.fast.blocks.split` is its fast kernel, bit for bit the
reference by construction.  An op with a faster kernel of its own (:mod:`.activations`)
keeps it; those split alike.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import ops  # noqa: F401  (registers every op: the elementwise ones are read below)
from ..ir.registry import supported_ops
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

for _op in supported_ops():
    if _op.elementwise and fast_kernel(_op) is None:
        register_fast(FastKernel(_op.type, (_op.version,), APPLIES, blocks.split(_op.kernel),
                                 scratch=blocks.pieces_scratch(_op.scratch),
                                 into=INTO.get(_op.type) if _op.in_place else None))
