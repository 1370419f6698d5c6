"""The elementwise ops of the registry and inputs they take, for tests that run every one
of them (tests/fast/test_elementwise.py, tests/ops/test_scratch.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from irrun.ir.element_types import of_array
from irrun.ir.registry import OpDef, ShapeError, TensorInfo, supported_ops

ELEMENTWISE = sorted((op for op in supported_ops() if op.elementwise), key=lambda o: o.label)
TYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32, np.int8, np.uint8,
                               np.int64, np.bool_)]
# The ports of 0-D parameters, beside the data that broadcast together.
SCALAR_PARAMETERS = {"HardSigmoid": (1, 2), "Swish": (1,)}


def ports(op: OpDef) -> int:
    return op.inputs[1]


def input_types(op: OpDef, first: np.dtype) -> list[np.dtype]:
    """Each input's type when the data are of ``first``: Select's condition is boolean."""
    types = [first] * ports(op)
    if op.type == "Select":
        types = [np.dtype(np.bool_), first, first]
    return types


def default_attrs(op: OpDef) -> SimpleNamespace:
    """The op's default attributes, and a value for each it requires."""
    values = {a.name: a.default for a in op.attrs if not a.required}
    values.update({"min": -1.0, "max": 1.0, "alpha": 1.0, "destination_type": "f8e4m3"})
    return SimpleNamespace(**values)


def accepts(op: OpDef, dtype: np.dtype) -> bool:
    """Whether ``op``'s shape rule takes data of ``dtype`` (with its default attributes)."""
    shapes = [() if i in SCALAR_PARAMETERS.get(op.type, ()) else (2,) for i in range(ports(op))]
    infos = [TensorInfo(s, of_array(np.zeros(1, t)))
             for s, t in zip(shapes, input_types(op, dtype), strict=True)]
    try:
        op.infer(default_attrs(op), infos)
    except ShapeError:
        return False
    return True


def accepted_types(op: OpDef) -> list[np.dtype]:
    return [t for t in TYPES if accepts(op, t)]


def filled(op: OpDef, dtype: np.dtype, shape: tuple[int, ...], value: float) -> list[np.ndarray]:
    """Inputs of ``op`` with data of ``dtype`` and ``shape``, each element ``value`` (its
    integer part for integers, 1 for 0 and for negative values of unsigned types), 0-D
    parameters alike."""
    scalars = SCALAR_PARAMETERS.get(op.type, ())

    def element(t: np.dtype) -> float | int:
        if t.kind == "f":
            return value
        return int(value) if int(value) and (t.kind != "u" or value > 0) else 1

    return [np.full(() if i in scalars else shape, element(t), dtype=t)
            for i, t in enumerate(input_types(op, dtype))]
