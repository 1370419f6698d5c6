"""A pass: a MatMul with ``transpose_b`` on a constant runs on a transposed copy of it.

A linear layer converted from PyTorch multiplies by its weight transposed
(``transpose_b=true`` on the ``[out, in]`` weight).  BLAS multiplies by a weight laid out
``[in, out]`` some 10-15% faster, so the schedule keeps such a copy, made the first time
the schedule is (the Const itself is untouched).  A weight above ``LIMIT`` bytes, or not
2-D and float, stays as it is: the copy would cost its size again in memory.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from ..steps import Step
from .constants import known_constants

LIMIT = 64 * 2**20


class _OnTransposed:
    """MatMul's kernel with its second input given: a contiguous ``[in, out]`` weight."""

    def __init__(self, matmul: Step, weight: np.ndarray) -> None:
        self.matmul = matmul
        self.weight = np.ascontiguousarray(weight.T)
        self.attrs = SimpleNamespace(**{**vars(matmul.attrs), "transpose_b": False})

    def __call__(self, _attrs: object, a: np.ndarray) -> tuple[np.ndarray, ...]:
        try:
            return self.matmul.kernel(self.attrs, a, self.weight)
        except Exception as exc:
            exc.irrun_step = self.matmul  # type: ignore[attr-defined]  # the layer to blame
            raise


def transpose_matmul_weights(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Give each MatMul with ``transpose_b`` on a small enough 2-D float Const its copy."""
    constants = known_constants(schedule)
    out = []
    for step, frees in schedule:
        weight = constants.get(step.inputs[1]) if len(step.inputs) == 2 else None
        if (step.node.op.type == "MatMul" and step.attrs.transpose_b and weight is not None
                and weight.ndim == 2 and weight.dtype.kind == "f" and weight.nbytes <= LIMIT
                and step.needed is None):  # fmt: skip
            kernel = _OnTransposed(step, weight)
            step = dataclasses.replace(step, kernel=kernel, inputs=step.inputs[:1])
        out.append((step, frees))
    return out
