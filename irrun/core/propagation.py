"""Shape propagation: infer every tensor's shape and type, and check the declared ports.

Shapes flow from the Parameters (or from given input shapes) through each op's
shape rule.  Every declared ``<dim>`` is compared with what was inferred, and
every output port's precision with the inferred element type; all problems are
collected.  Small constant subgraphs (a Const and a Convert feeding an adaptive
pool's ``output_shape``) are folded so shapes stay known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from ..errors import Diagnostic
from ..ir.dims import Shape, dims_agree, format_shape, is_static
from ..ir.registry import ShapeError, TensorInfo
from .binding import Node
from .graph import LayerGraph
from .memory import IMPOSSIBLE_BYTES, format_bytes, tensor_bytes

# Constants up to this many elements are folded through ops during propagation.
FOLD_LIMIT = 4096

Infos = dict[tuple[str, int], TensorInfo]  # (layer id, output port id) -> info


def input_infos(lg: LayerGraph, node: Node, infos: Infos) -> list[TensorInfo] | None:
    """Infos of a layer's inputs in port order, or None if any is unknown."""
    out = []
    for port in node.layer.inputs:
        src = lg.sources.get((node.layer.id, port.id))
        info = infos.get((src.layer, src.port)) if src else None
        if info is None:
            return None
        out.append(info)
    return out


def describe_attrs(node: Node) -> str:
    assert node.op is not None and node.attrs is not None
    parts = []
    for name in node.op.shape_attrs:
        if not hasattr(node.attrs, name):
            continue
        value = getattr(node.attrs, name)
        if isinstance(value, tuple):
            value = "[" + ",".join(str(v) for v in value) + "]"
        elif isinstance(value, bool):
            value = str(value).lower()
        parts.append(f"{name}={value}")
    return ", ".join(parts)


def propagate(
    lg: LayerGraph, nodes: Mapping[str, Node], shapes: Mapping[str, TensorInfo] | None = None
) -> tuple[Infos, list[Diagnostic]]:
    """Infer all tensors. ``shapes`` overrides Parameters' infos by layer id.

    With ``shapes`` the declared ``<dim>``s are not compared: they describe the
    shapes the file was written for, not the new ones.
    """
    infos: Infos = {}
    problems: list[Diagnostic] = []
    loc = lg.doc.location
    check_dims = not shapes
    sources = lg.sources
    # Layers of one op with the same <data> and the same input shapes and types infer
    # alike: the shape rule and the pool checks run once per model for each such kind.
    outcomes: dict[tuple, tuple[tuple, SimpleNamespace]] = {}
    impossible: set[tuple[str, int]] = set()
    for lid in lg.order:
        node = nodes[lid]
        layer = node.layer
        op = node.op
        # Without all its ports (the reader reported one) a layer's outputs cannot be
        # matched to what its op produces.
        if op is None or node.attrs is None or layer.unreadable_ports:
            continue
        inputs = []
        constant = False  # some input's value is known: the outcome is this layer's own
        for port in layer.inputs:
            src = sources.get((lid, port.id))
            info = infos.get(src) if src else None  # a Source is a (layer, port) key
            if info is None:
                break
            inputs.append(info)
            constant = constant or info.value is not None
        if len(inputs) != len(layer.inputs):  # some input is unknown
            continue
        if check_dims:  # before the shape rule, which may refuse these very inputs
            for port, info in zip(layer.inputs, inputs, strict=True):
                # Dims and precision just as inferred agree, whatever is compared.
                if (port.dims != info.shape or port.precision is not info.element_type) and \
                        not _port_agrees(port, info, False, True):  # fmt: skip
                    problems.extend(_check_port(lg, node, port, info, None))
        if op.type == "Parameter" and shapes and lid in shapes:
            outputs = [shapes[lid]]
            empty: list[str] = []
        else:
            if constant or op.type in ("Parameter", "Const"):
                outcome = _infer(node, inputs)
            else:
                key = (node.kind, tuple([(i.shape, i.element_type) for i in inputs]))
                shared = outcomes.get(key)
                if shared is None:
                    shared = outcomes[key] = (_infer(node, inputs), node.attrs)
                elif shared[1] is not node.attrs:
                    # What a shape rule records on its layer's attributes from the input
                    # types (ConvertLike: the type it converts to) holds for this layer too.
                    vars(node.attrs).update(vars(shared[1]))
                outcome = shared[0]
            failure, outputs, empty = outcome
            if failure is not None:
                problems.append(replace(failure, location=loc(node.layer.line), layer=node.ref))
                continue
        if empty:
            problems.extend(
                Diagnostic("warning", "empty-window", message, loc(layer.line), node.ref)
                for message in empty
            )
        if len(outputs) != len(layer.outputs):
            problems.append(
                Diagnostic(
                    "error", "output-count",
                    f"has {len(node.layer.outputs)} output ports, {op.label} produces "
                    f"{len(outputs)}", loc(node.layer.line), node.ref,
                    expected=len(outputs), actual=len(node.layer.outputs),
                )
            )
        precision_matters = "decompression" not in layer.rt_info
        # A tensor no machine can hold is reported where it first appears, not again at
        # every layer it flows into.
        inherited = any(src in impossible for src in
                        (sources.get((lid, p.id)) for p in layer.inputs))  # fmt: skip
        for port, info in zip(layer.outputs, outputs, strict=False):
            size = _impossible_size(info)
            if size is not None:
                impossible.add((lid, port.id))
                if not inherited:
                    problems.append(Diagnostic(
                        "error", "impossible-size",
                        f"output {port.id} would be {info.element_type}"  # type: ignore[union-attr]
                        f"{format_shape(info.shape)}, {format_bytes(size)}: more than NumPy "
                        f"can index (2^63 bytes)", loc(port.line or layer.line), node.ref,
                        port.id,
                    ))  # fmt: skip
            # Of two ports with one id (reported by the graph), edges read the first.
            infos.setdefault((lid, port.id), info)
            if (port.dims != info.shape or port.precision is not info.element_type) and \
                    not _port_agrees(port, info, precision_matters, check_dims):  # fmt: skip
                problems.extend(_check_port(lg, node, port, info, inputs, check_dims))
    return infos, problems


def _infer(
    node: Node, inputs: list[TensorInfo]
) -> tuple[Diagnostic | None, list[TensorInfo], list[str]]:
    """A layer's output infos and its op's warnings (``OpDef.warn``: empty windows of a
    pool), or the finding (without its location) that says why its shape rule refused
    the inputs."""
    op = node.op
    assert op is not None
    try:
        outputs = op.infer(node.attrs, inputs)
    except ShapeError as exc:
        detail = describe_attrs(node)
        shown = ", ".join(format_shape(i.shape) for i in inputs)
        message = f"{exc} (input {shown}" + (f"; {detail})" if detail else ")")
        return Diagnostic("error", "shape-error", message), [], []
    except Exception as exc:  # a bug in an op's shape rule: report it, check the rest
        return Diagnostic(
            "error", "internal-error",
            f"irrun's shape rule for {op.label} failed ({type(exc).__name__}: "
            f"{exc}); this is a bug in irrun (--debug shows where)",
            extra={"exception": exc},
        ), [], []  # fmt: skip
    too_big = _too_big(outputs)
    if too_big is not None:
        return Diagnostic("error", "shape-error", too_big), [], []
    outputs = _fold(node, inputs, outputs)
    empty = op.warn(node.attrs, inputs) if op.warn is not None else []
    return None, outputs, empty


# The largest dimension there is: OpenVINO's are 64-bit signed integers, and so are NumPy's.
LARGEST_DIM = (1 << 63) - 1


def _too_big(outputs: list[TensorInfo]) -> str | None:
    """Why an inferred shape cannot be (a dim past :data:`LARGEST_DIM`), or None."""
    for i, info in enumerate(outputs):
        for d in info.shape or ():
            bound = d if isinstance(d, int) else d.hi if d.hi is not None else d.lo
            if bound > LARGEST_DIM:
                return (f"output {i} would be {format_shape(info.shape)}, past the largest "
                        f"dimension there is (2^63-1)")  # fmt: skip
    return None


def _port_agrees(port, info: TensorInfo, precision_matters: bool, check_dims: bool) -> bool:
    """The quick test that :func:`_check_port` would find nothing (False: ask it)."""
    dims = port.dims
    if check_dims and dims is not None and info.shape is not None and dims != info.shape:
        return False
    if precision_matters and port.precision is not None and info.element_type is not None:
        return port.precision.name == info.element_type.name
    return True


def _fold(node: Node, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[TensorInfo]:
    if not inputs or any(i.value is None or i.value.size > FOLD_LIMIT for i in inputs):
        return outputs
    # Small inputs can still make a huge output (a pool with enormous pads): bounded work only.
    if not all(is_static(o.shape) and _count(o.shape) <= FOLD_LIMIT for o in outputs):
        return outputs
    assert node.op is not None
    try:
        with np.errstate(all="ignore"):  # as in a run (see Plan.run)
            values = node.op.kernel(node.attrs, *(i.value for i in inputs))
    except Exception:  # a kernel that cannot fold leaves the shapes as inferred
        return outputs
    return [
        TensorInfo(o.shape, o.element_type, np.asarray(v))
        for o, v in zip(outputs, values, strict=True)
    ]


def _impossible_size(info: TensorInfo) -> int | None:
    """The bytes of a tensor too large for any machine, else None."""
    if info.element_type is None or not is_static(info.shape):
        return None
    size = tensor_bytes(info.shape, info.element_type.item_bytes)  # type: ignore[arg-type]
    return size if size >= IMPOSSIBLE_BYTES else None


def _count(shape: Shape | None) -> int:
    count = 1
    for d in shape or ():
        assert isinstance(d, int)
        count *= d
    return count


def _check_port(
    lg: LayerGraph,
    node: Node,
    port,
    info: TensorInfo,
    inputs: list[TensorInfo] | None,
    check_dims: bool = True,
) -> list[Diagnostic]:
    """Compare a port's declared dims and precision with the inferred tensor.

    ``inputs`` is None for the layer's own input ports, whose precision OpenVINO
    never reads.
    """
    found: list[Diagnostic] = []
    where = lg.doc.location(port.line)
    if (
        check_dims
        and info.shape is not None
        and port.dims is not None
        and not _shape_agrees(port.dims, info.shape)
    ):
        declared, inferred = format_shape(port.dims), format_shape(info.shape)
        detail = describe_attrs(node) if inputs is not None else ""
        found.append(
            Diagnostic(
                "error", "shape-mismatch",
                f"declared {declared}, inferred {inferred}" + (f" ({detail})" if detail else ""),
                where, node.ref, port.id, expected=inferred, actual=declared,
            )
        )
    et = info.element_type
    # OpenVINO reads no input port's precision, and its serializer writes the compressed
    # type on a decompressing Convert that feeds a Result: neither is a mistake in the file.
    # Anywhere else its serializer writes the tensor's own type, so a different one is an
    # error (though one OpenVINO itself ignores: it re-infers every type).
    precision_matters = inputs is not None and "decompression" not in node.layer.rt_info
    if (
        precision_matters
        and port.precision is not None
        and et is not None
        and port.precision.name != et.name
    ):
        found.append(
            Diagnostic(
                "error", "type-mismatch",
                f"precision {port.precision.name}, but the tensor is {et.name}",
                where, node.ref, port.id, expected=et.name, actual=port.precision.name,
            )
        )
    return found


def _shape_agrees(declared: Shape, inferred: Shape) -> bool:
    return len(declared) == len(inferred) and all(
        dims_agree(d, i) for d, i in zip(declared, inferred, strict=True)
    )
