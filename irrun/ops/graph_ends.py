"""The graph's ends: Parameter-v1, Result-v1 and Const-v1.

A Parameter is an input a run is given, a Result an output it returns, a Const a tensor
read from the weights file.

Parameter and Const have no input port (their ``input_types`` are empty: their element
type is an attribute); a Result takes a tensor of any element type.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.element_types import ANY
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import nothing


def _parameter_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(a.shape, a.element_type)]


def _no_kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    raise RuntimeError("Parameter values are fed by the executor")


def _result_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return []  # a Result has no output port: the tensor it receives is the model's output


def _result(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return ()


def _const_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    # The executor decodes the weights into ``a.value`` before anything asks; a large
    # 4-bit weight kept packed (irrun.core.binding.PackedConst) decodes only when a kernel
    # asks, so no value of it is kept here.
    return [TensorInfo(tuple(a.shape), a.element_type, vars(a).get("value"))]


def _const(a: SimpleNamespace) -> tuple[np.ndarray, ...]:
    return (a.value,)


def _check_const(a: SimpleNamespace) -> None:
    if any(d < 0 for d in a.shape):
        raise KernelError(f"shape {list(a.shape)} has a negative dimension")
    if a.offset < 0 or a.size < 0:
        raise KernelError(f"offset {a.offset} and size {a.size} must not be negative")


register(
    OpDef(
        type="Parameter",
        version=1,
        since_opset=1,
        attrs=(Attr("shape", "partial_shape", ()), Attr("element_type", "element_type")),
        infer=_parameter_infer,
        kernel=_no_kernel,
        inputs=(0, 0),
        foldable=False,
        scratch=nothing,
    )
)
register(
    OpDef(type="Result", version=1, since_opset=1, attrs=(), infer=_result_infer, kernel=_result,
          input_types=(ANY,), foldable=False,
          scratch=nothing)
)
register(
    OpDef(
        type="Const",
        version=1,
        since_opset=1,
        attrs=(
            Attr("element_type", "element_type"),
            Attr("shape", "ints", ()),
            Attr("offset", "int"),
            Attr("size", "int"),
        ),
        infer=_const_infer,
        kernel=_const,
        inputs=(0, 0),
        check=_check_const,
        foldable=False,  # a constant already,
        scratch=nothing,
    )
)
