"""Einsum-7: Einstein summation over any number of inputs, by an ``equation`` attribute.

The equation is read as OpenVINO reads it: input subscripts separated by commas (an
empty subscript is a scalar; a trailing comma is one more, empty, subscript), then
optionally ``->`` and the output subscript.  A subscript is ASCII letters (case
matters) and at most one ``...``; anything else (spaces included: OpenVINO's IR
reader does not strip them) is an error naming the equation.

- Without ``->`` (implicit mode) the output is every label that occurs in exactly one
  input subscript, sorted by character code (upper case before lower case), after
  ``...`` if any input has an ellipsis.
- A label repeated within one input takes that input's diagonal; its dims must be
  equal.  Across inputs a label's dims broadcast (a 1 stretches), as OpenVINO's shape
  inference and CPU plugin do.  Ellipsis dims broadcast with numpy's rules.
- Labels absent from the output are summed out; so are ellipsis dims when the
  output has no ``...`` (OpenVINO allows that; numpy refuses it).  An output ``...``
  with no ellipsis in the inputs stands for no dims.
- irrun refuses a label repeated in the output (``ab->aa``, or implicit ``ii``):
  OpenVINO's shape inference accepts it, but the CPU plugin cannot compile it.

Element types: floating and integer types, all inputs alike.  f32, f64 and integers
compute in their own type (integers wrap, as OpenVINO's reference kernels do in the
input type); f16, bf16 and f8 compute in f32 and round once.  The CPU plugin
computes integer Einsum in f32, so its results differ from irrun's (and the
reference's) beyond 2**24 and saturate rather than wrap for i8/u8.

Tolerance against the CPU plugin for f32: rtol 1e-5 plus atol 1e-5 times the
largest sum of |terms| (einsum over absolute values): both sum products in their
own order.  Integers agree exactly where no value exceeds 2**24.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Shape, format_shape
from ..ir.element_types import NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import broadcast_dims, broadcast_shapes, try_merge_dims

ELLIPSIS = "..."
EINSUM_TYPES = (*NUMBERS, "f8e4m3", "f8e5m2")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class Equation:
    """A parsed equation: each input's labels and the output's (``...`` is one label)."""

    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]


def _labels(subscript: str, equation: str, which: str) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(subscript):
        if subscript.startswith(ELLIPSIS, i) and ELLIPSIS not in out:
            out.append(ELLIPSIS)
            i += 3
        elif subscript[i] in _LETTERS:
            out.append(subscript[i])
            i += 1
        else:
            raise ShapeError(
                f"equation '{equation}': {which} subscript '{subscript}' must consist of "
                "ASCII letters and at most one ellipsis"
            )
    return tuple(out)


def parse_equation(equation: str) -> Equation:
    """Split and check ``equation``; the output subscript is made up in implicit mode.

    >>> parse_equation("ab,bc->ac").output, parse_equation("bA").output
    (('a', 'c'), ('A', 'b'))
    >>> parse_equation("...ij,jk").output
    ('...', 'i', 'k')
    """
    arrow = equation.find("->")
    left = equation if arrow < 0 else equation[:arrow]
    inputs = tuple(_labels(s, equation, f"input {i}") for i, s in enumerate(left.split(",")))
    if arrow >= 0:
        output = _labels(equation[arrow + 2 :], equation, "output")
    else:
        once = [
            label
            for i, labels in enumerate(inputs)
            for label in labels
            if label != ELLIPSIS and not any(label in o for j, o in enumerate(inputs) if j != i)
        ]
        output = tuple(sorted(once))
        if any(ELLIPSIS in labels for labels in inputs):
            output = (ELLIPSIS, *output)
    seen_in = {label for labels in inputs for label in labels}
    for label in output:
        if label != ELLIPSIS and label not in seen_in:
            raise ShapeError(
                f"equation '{equation}': output label '{label}' is in no input subscript"
            )
    repeated = sorted({x for x in output if output.count(x) > 1})
    if repeated:
        raise ShapeError(
            f"equation '{equation}': output label '{repeated[0]}' occurs more than once "
            "(OpenVINO cannot compute a repeated output label)"
        )
    return Equation(inputs, output)


def _split(labels: tuple[str, ...], shape: Sequence, equation: str, port: int):
    """``shape`` cut into (label, dim) pairs and the ellipsis part (None if absent)."""
    has_ellipsis = ELLIPSIS in labels
    named = len(labels) - has_ellipsis
    if (has_ellipsis and len(shape) < named) or (not has_ellipsis and len(shape) != named):
        need = f"at least {named}" if has_ellipsis else str(named)
        raise ShapeError(
            f"equation '{equation}': input {port} has rank {len(shape)} "
            f"({format_shape(tuple(shape))}) but its subscript "
            f"'{''.join(labels)}' needs rank {need}"
        )
    pairs, ellipsis, dim = [], None, 0
    for label in labels:
        if label == ELLIPSIS:
            width = len(shape) - named
            ellipsis = tuple(shape[dim : dim + width])
            dim += width
        else:
            pairs.append((label, shape[dim]))
            dim += 1
    return pairs, ellipsis


def einsum_shape(equation: str, shapes: Sequence[Shape | None]) -> Shape | None:
    """The output shape; raises ShapeError naming the equation.

    >>> einsum_shape("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)])
    (5, 4, 2, 2)
    """
    eq = parse_equation(equation)
    if len(eq.inputs) != len(shapes):
        raise ShapeError(
            f"equation '{equation}' has {len(eq.inputs)} input subscripts for {len(shapes)} inputs"
        )
    sizes: dict[str, Dim] = {}
    ellipsis: Shape | None = ()
    for port, (labels, shape) in enumerate(zip(eq.inputs, shapes, strict=True)):
        if shape is None:
            for label in labels:
                if label == ELLIPSIS:
                    ellipsis = None
                else:
                    sizes.setdefault(label, DYNAMIC)
            continue
        pairs, part = _split(labels, shape, equation, port)
        mine: dict[str, Dim] = {}
        for label, d in pairs:
            merged = d if label not in mine else try_merge_dims(mine[label], d)
            if merged is None:
                raise ShapeError(
                    f"equation '{equation}': label '{label}' is used for dims "
                    f"{mine[label]} and {d} of input {port} {format_shape(shape)}"
                )
            mine[label] = merged
        for label, d in mine.items():
            both = d if label not in sizes else broadcast_dims(sizes[label], d)
            if both is None:
                raise ShapeError(
                    f"equation '{equation}': label '{label}' has dims {sizes[label]} and {d} "
                    f"(input {port} {format_shape(shape)}), which do not broadcast"
                )
            sizes[label] = both
        if part is not None:
            try:
                ellipsis = broadcast_shapes(ellipsis, part, "numpy")
            except ShapeError:
                raise ShapeError(
                    f"equation '{equation}': the dims under '...' do not broadcast: "
                    f"{format_shape(ellipsis)} and {format_shape(part)} of input {port}"
                ) from None
    out: list[Dim] = []
    for label in eq.output:
        if label == ELLIPSIS:
            if ellipsis is None:
                return None
            out.extend(ellipsis)
        else:
            out.append(sizes[label])
    return tuple(out)


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    types = {i.element_type.name for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"inputs must share one element type, got {', '.join(sorted(types))}")
    et = next((i.element_type for i in inputs if i.element_type is not None), None)
    return [TensorInfo(einsum_shape(a.equation, [i.shape for i in inputs]), et)]


def _einsum(a: SimpleNamespace, *xs: np.ndarray) -> tuple[np.ndarray, ...]:
    eq = parse_equation(a.equation)
    einsum_shape(a.equation, [x.shape for x in xs])
    out_dtype = xs[0].dtype
    ct = out_dtype if out_dtype.kind in "iu" or out_dtype in (np.float32, np.float64) else None
    ct = np.dtype(np.float32) if ct is None else ct
    split = [_split(labels, x.shape, a.equation, i) for i, (labels, x) in
             enumerate(zip(eq.inputs, xs, strict=True))]  # fmt: skip
    ell = np.broadcast_shapes(*(part for _, part in split if part is not None))
    sizes: dict[str, int] = {}
    for pairs, _ in split:
        for label, d in pairs:
            if sizes.get(label, 1) == 1:
                sizes[label] = d
    ids = {label: n for n, label in enumerate(sizes)}
    ell_ids = list(range(len(ids), len(ids) + len(ell)))
    if len(ids) + len(ell) > 52:
        raise KernelError(
            f"equation '{a.equation}': {len(ids)} labels and {len(ell)} ellipsis dims "
            "exceed the 52 axes NumPy's einsum can name"
        )
    operands: list[object] = []
    for labels, x, (_, part) in zip(eq.inputs, xs, split, strict=True):
        # Give every operand the full ellipsis rank and every label its full size, so
        # that einsum's optimised paths (tensordot) see no size-1 broadcasting.
        target, axes, shape = [], [], list(x.shape)
        at = 0
        for label in labels:
            if label == ELLIPSIS:
                assert part is not None
                pad = len(ell) - len(part)
                shape[at:at] = [1] * pad
                at += pad + len(part)
                target.extend(ell)
                axes.extend(ell_ids)
            else:
                target.append(sizes[label])
                axes.append(ids[label])
                at += 1
        view = np.broadcast_to(x.reshape(shape).astype(ct, copy=False), tuple(target))
        operands += [view, axes]
    out_axes = []
    for label in eq.output:
        out_axes.extend(ell_ids if label == ELLIPSIS else [ids[label]])
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.einsum(*operands, out_axes, optimize=len(xs) > 1)
    return (np.array(result, dtype=out_dtype),)


register(
    OpDef(
        type="Einsum", version=7, since_opset=7,
        attrs=(Attr("equation", "str"),),
        infer=_infer, kernel=_einsum, inputs=(1, 1 << 16), shape_attrs=("equation",),
        doc="Einstein summation by an equation such as 'ab,bc->ac'",
        scratch=per_element(24), input_types=(EINSUM_TYPES,),
    )
)  # fmt: skip
