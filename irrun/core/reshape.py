"""New input shapes for a model, written as OpenVINO's tools write them.

``x[8,3,224,224]``, several inputs ``x[1,3,224,224],y[1,4]``, or a bare
``[1,3,224,224]`` for a model with one input; a dim is a size, ``?`` or ``-1``
(any size), or a range ``1..10``, ``..10``, ``1..``; ``[...]`` leaves the rank
unknown.  An input is named by its Parameter's name or any of its tensor names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import IrrunError, UsageError
from ..ir.dims import Shape, format_shape, parse_dim, parse_partial_shape
from ..ir.registry import TensorInfo
from .binding import Node
from .graph import LayerGraph
from .propagation import Infos, propagate

# Spec: the whole argument is "name[dims]" items separated by commas.
_ITEM = re.compile(r"\s*([^\[\],]*?)\s*\[([^\[\]]*)\]\s*(?:,|$)")

ShapeSpec = str | Mapping[str, str | Sequence[int | str]]


def parse_shapes(text: str) -> list[tuple[str | None, Shape | None]]:
    """Parse ``--shape``'s text into (name or None, shape) pairs.

    >>> parse_shapes("x[8,3,?,1..10],y[1,4]")
    [('x', (8, 3, Interval(lo=0, hi=None), Interval(lo=1, hi=10))), ('y', (1, 4))]
    >>> parse_shapes("[1,-1]")
    [(None, (1, Interval(lo=0, hi=None)))]
    """
    items: list[tuple[str | None, Shape | None]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(
                f"cannot read {text[pos:]!r}: expected NAME[d1,d2,...] items separated by "
                "commas, such as x[1,3,224,224],y[1,4] (a dim is a size, ?, -1 or a range a..b)"
            )
        name, dims = m.group(1), m.group(2)
        items.append((name or None, _shape(dims, f"{name}[{dims}]")))
        pos = m.end()
    if not items:
        raise ValueError("no shape given (expected NAME[d1,d2,...] or [d1,d2,...])")
    if any(name is None for name, _ in items) and len(items) > 1:
        raise ValueError("name every input when giving several shapes: x[...],y[...]")
    return items


def _shape(dims: str, shown: str) -> Shape | None:
    """``1,3,?,1..10`` (brackets optional) as a shape, naming the field that is wrong."""
    text = dims.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return parse_partial_shape(f"[{text}]")
    except ValueError:
        bad = next((f for f in text.split(",") if not _is_dim(f)), text)
        raise ValueError(
            f"{shown}: '{bad.strip()}' is not a dimension (a size, ?, -1 or a range a..b)"
        ) from None


def _is_dim(text: str) -> bool:
    try:
        parse_dim(text)
    except ValueError:
        return False
    return True


def _as_items(spec: ShapeSpec) -> list[tuple[str | None, Shape | None]]:
    if isinstance(spec, str):
        return parse_shapes(spec)
    items: list[tuple[str | None, Shape | None]] = []
    for name, value in spec.items():
        dims = value if isinstance(value, str) else ",".join(str(v) for v in value)
        items.append((name, _shape(dims, f"{name}[{dims}]")))
    return items


def input_shapes(
    lg: LayerGraph, nodes: Mapping[str, Node], spec: ShapeSpec
) -> dict[str, TensorInfo]:
    """The Parameters' new infos by layer id; raises :class:`UsageError` for a bad ``spec``."""
    try:
        items = _as_items(spec)
    except ValueError as exc:
        raise UsageError(f"--shape: {exc}") from None
    # In file order, as OpenVINO lists a model's inputs.
    params = sorted(
        (n for n in nodes.values() if n.op is not None and n.op.type == "Parameter"),
        key=lambda n: n.layer.line,
    )
    by_name: dict[str, Node] = {}
    for node in params:
        names = (node.layer.name, *(p for port in node.layer.outputs for p in port.names))
        for name in names:
            by_name.setdefault(name, node)
    listed = ", ".join(n.layer.name for n in params) or "none"
    out: dict[str, TensorInfo] = {}
    for name, shape in items:
        if name is None:
            if len(params) != 1:
                raise UsageError(
                    f"--shape {format_shape(shape)}: the model has {len(params)} inputs "
                    f"({listed}); name the input, as in NAME{format_shape(shape)}"
                )
            node = params[0]
        elif name in by_name:
            node = by_name[name]
        else:
            raise UsageError(f"--shape: no input named '{name}' (inputs: {listed})")
        if node.layer.id in out:
            raise UsageError(f"--shape: input '{node.layer.name}' is given twice")
        element_type = node.attrs.element_type if node.attrs is not None else None
        out[node.layer.id] = TensorInfo(shape, element_type)
    return out


def describe(lg: LayerGraph, shapes: Mapping[str, TensorInfo]) -> str:
    """``x[8,3,224,224],y[1,4]``: the shapes applied, by the inputs' layer names."""
    return ",".join(
        f"{lg.layers[lid].name}{format_shape(info.shape)}" for lid, info in shapes.items()
    )


def reshape_infos(lg: LayerGraph, nodes: dict[str, Node], current: Mapping[str, Shape | None],
                  new: dict[str, TensorInfo]) -> tuple[Infos, dict[str, TensorInfo]]:  # fmt: skip
    """Every tensor's info once the Parameters have the ``new`` shapes (by layer id), on
    top of the ``current`` ones they were reshaped to, and the Parameters' infos; raises
    :class:`IrrunError` naming the first layer the new shapes break."""
    merged = {lid: TensorInfo(shape, nodes[lid].attrs.element_type)  # type: ignore[union-attr]
              for lid, shape in current.items()}  # fmt: skip
    merged.update(new)
    infos, problems = propagate(lg, nodes, merged)
    errors = [d for d in problems if d.level == "error"]
    if errors:
        err = errors[0].as_error()
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise IrrunError(f"reshape to {describe(lg, new)}: {err.message}{more}",
                         err.location, err.layer, err.port, err.code)  # fmt: skip
    return infos, merged
