"""ReadValue and Assign: the variables a stateful model keeps between runs.

A variable, named by ``variable_id``, holds one tensor from one run to the next.
``ReadValue`` gives its value; ``Assign`` gives it a new one, which the *next* run
reads.  Before the first run, and after a reset, ReadValue gives its initialising
input, or, for a ReadValue-6 without one, zeros of ``variable_type`` and
``variable_shape`` (a dynamic dim as 0, as the CPU plugin does).  LLMs exported by
optimum-intel keep their KV cache this way, one variable per key and value of each
layer.

The executor, not the op, carries the values: each variable is an extra input of
its ReadValue (None while it is unset, see :class:`irrun.core.executor.Plan`), and
the output of its Assign is what a request keeps (:class:`irrun.core.state.Request`).
So a kernel here only picks between the variable and the initial value, and
:meth:`irrun.Model.run`, which feeds no variable, stays a pure function of its inputs.

Versions: ReadValue-3 and Assign-3 name the variable only, and its type and shape
are those of the initialising input.  ReadValue-6 declares ``variable_type`` and
``variable_shape``; they must relax (contain) the initialising input's, and its
output has them (the initial value's shape when the variable's rank is dynamic), as
in OpenVINO's ``ReadValue::validate_and_infer_types`` (irrun refuses only an initial
shape that cannot fit: its own inference of that shape may know less than OpenVINO's).
Assign-6's input must be compatible with them.  A variable may hold any element type.
Checks between the layers of one variable (a ReadValue without its Assign, two that
disagree, a cycle) are in :mod:`irrun.core.variable_checks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import Shape, format_shape
from ..ir.element_types import ANY, ElementType
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing

_DYNAMIC_TYPES = ("dynamic", "undefined")


def variable_type(a: SimpleNamespace) -> ElementType | None:
    """A ReadValue-6's ``variable_type``, or None where it is dynamic."""
    text = a.variable_type.strip()
    return None if text.lower() in _DYNAMIC_TYPES else element_types.from_attribute(text)


def _check_v6(a: SimpleNamespace) -> None:
    if not a.variable_id:
        raise KernelError("variable_id must not be empty")
    variable_type(a)  # raises ValueError naming the text


def _check_id(a: SimpleNamespace) -> None:
    if not a.variable_id:
        raise KernelError("variable_id must not be empty")


def dims_compatible(a: Shape | None, b: Shape | None) -> bool:
    """Whether two partial shapes can describe the same tensor."""
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        lx, hx = (x, x) if isinstance(x, int) else (x.lo, x.hi)
        ly, hy = (y, y) if isinstance(y, int) else (y.lo, y.hi)
        if (hx is not None and hx < ly) or (hy is not None and hy < lx):
            return False
    return True


def _read_value_v3_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    init = inputs[0]
    return [TensorInfo(init.shape, init.element_type)]


def _read_value_v6_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    declared_type, declared_shape = variable_type(a), a.variable_shape
    if not inputs:
        return [TensorInfo(declared_shape, declared_type)]
    init = inputs[0]
    if declared_type is not None and init.element_type not in (None, declared_type):
        raise ShapeError(
            f"variable '{a.variable_id}' is {declared_type.name} (variable_type), but its "
            f"initial value (input 0) is {init.element_type.name}"
        )
    # OpenVINO asks variable_shape to relax the initial value's shape; irrun may know less
    # of that shape than OpenVINO's partial values do, so only a shape that cannot fit is
    # refused.
    if not dims_compatible(declared_shape, init.shape):
        raise ShapeError(
            f"variable '{a.variable_id}' has shape {format_shape(declared_shape)} "
            f"(variable_shape), which does not hold its initial value's {format_shape(init.shape)}"
        )
    return [TensorInfo(init.shape if declared_shape is None else declared_shape,
                       declared_type or init.element_type)]  # fmt: skip


def initial_zeros(a: SimpleNamespace) -> np.ndarray:
    """A ReadValue-6's value with neither variable nor initialising input: zeros, dynamic
    dims as 0."""
    et = variable_type(a)
    if et is None or a.variable_shape is None:
        raise KernelError(
            f"variable '{a.variable_id}' is unset and has no initial value, and its "
            f"variable_type {a.variable_type} / variable_shape "
            f"{format_shape(a.variable_shape)} do not say what zeros to give"
        )
    shape = tuple(d if isinstance(d, int) else d.lo for d in a.variable_shape)
    return np.zeros(shape, et.dtype)


def _read_value(a: SimpleNamespace, *args: np.ndarray | None) -> tuple[np.ndarray, ...]:
    # The executor passes the variable's current value last: None while it is unset.
    *init, current = args
    if current is not None:
        return (current,)
    if init:
        return (init[0],)  # type: ignore[return-value]
    return (initial_zeros(a),)


def _assign_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, inputs[0].element_type)]


def _assign(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (x,)


_ID = Attr("variable_id", "str")

register(
    OpDef(
        type="ReadValue", version=3, since_opset=3, attrs=(_ID,), infer=_read_value_v3_infer,
        kernel=_read_value, check=_check_id, input_types=(ANY,), shape_attrs=("variable_id",),
        foldable=False,
        doc="the variable's value, or its initial value (input 0) while it is unset",
        scratch=nothing,
    )
)  # fmt: skip
register(
    OpDef(
        type="ReadValue", version=6, since_opset=6,
        attrs=(_ID, Attr("variable_type", "str", "dynamic"),
               Attr("variable_shape", "partial_shape", None)),
        infer=_read_value_v6_infer, kernel=_read_value, inputs=(0, 1), check=_check_v6,
        input_types=(ANY,), shape_attrs=("variable_id",), foldable=False,
        doc="the variable's value, or its initial value (input 0, or zeros) while it is unset",
        scratch=nothing,
    )
)  # fmt: skip
for _version in (3, 6):  # alike: Assign-6 only finds its variable by id, not through a ReadValue
    register(
        OpDef(
            type="Assign", version=_version, since_opset=_version, attrs=(_ID,),
            infer=_assign_infer, kernel=_assign, check=_check_id, input_types=(ANY,),
            shape_attrs=("variable_id",), foldable=False,
            doc="gives the variable the value the next run reads",
            scratch=nothing,
        )
    )  # fmt: skip

__all__ = ["dims_compatible", "initial_zeros", "variable_type"]
