"""Random inputs for a model: seeded values of the shapes and element types its inputs
declare, sensible for what each input is, refused up front when they, or the run they are
for, would not fit.

What an input is (its *role*) comes from its name, as optimum and benchmark_app name
them, and from what it feeds; see :func:`input_roles` and docs/cli.md, "Random inputs".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import Diagnostic, IrrunError, Location
from ..ir.dims import Interval, Shape, format_shape, is_static
from ..ir.registry import TensorInfo
from .binding import Node
from .budget import UNCHECKED_BYTES
from .graph import LayerGraph
from .memory import IMPOSSIBLE_BYTES, available_memory, format_bytes, tensor_bytes
from .propagation import propagate


@dataclass(frozen=True)
class Role:
    """What an input is, for its random values: ``mask`` (ones), ``positions``
    (0..n-1 along the last dim, after ``past``), ``beam`` (0..batch-1), ``past`` (a
    stateless model's KV cache) or ``ids`` (integers in ``[0, high)``: the rows of the
    table the input indexes, named by ``table``)."""

    kind: str
    high: int | None = None
    table: str | None = None


# Inputs named so (or ending so: decoder_attention_mask) by optimum's exports.
_NAMED = (
    ("attention_mask", "mask"), ("position_ids", "positions"), ("cache_position", "positions"),
    ("beam_idx", "beam"),
)  # fmt: skip
_PAST_PREFIXES = ("past_key_values", "past_key", "past_value", "past.")
# Ops an index goes through unchanged in value on its way to a Gather.
_PASS_THROUGH = {"Convert", "Reshape", "Unsqueeze", "Squeeze"}
_GATHERS = {"Gather", "GatherElements", "GatherND"}


def input_roles(
    lg: LayerGraph, nodes: Mapping[str, Node], infos: Mapping[tuple[str, int], TensorInfo]
) -> dict[str, Role]:
    """The role of each Parameter that has one, by layer id.

    By name first (``attention_mask``, ``position_ids``, ``cache_position``, ``beam_idx``,
    ``past_key_values.*``), then by use: an integer input whose values reach the indices
    of a Gather (through Convert, Reshape, Unsqueeze, Squeeze) indexes that Gather's data
    along its axis, so it is drawn below that dim (token ids below the vocabulary size,
    the rows of the embedding table).
    """
    roles: dict[str, Role] = {}
    for lid in lg.order:
        node = nodes[lid]
        layer = node.layer
        if layer.type != "Parameter" or node.attrs is None:
            continue
        names = [n.lower() for n in (layer.name, *(p for o in layer.outputs for p in o.names))]
        named = next((kind for n in names for key, kind in _NAMED if n.endswith(key)), None)
        if named is not None:
            roles[lid] = Role(named)
        elif any(n.startswith(_PAST_PREFIXES) for n in names):
            roles[lid] = Role("past")
        elif node.attrs.element_type.dtype.kind in "iu":
            found = _indexed(lg, nodes, infos, lid)
            if found is not None:
                roles[lid] = Role("ids", *found)
    return roles


def _indexed(
    lg: LayerGraph, nodes: Mapping[str, Node], infos: Mapping[tuple[str, int], TensorInfo],
    lid: str,
) -> tuple[int, str] | None:  # fmt: skip
    """The least size of the data dims the input ``lid`` indexes through Gathers, with the
    name of that Gather's table, or None when it indexes none of known size."""
    best: tuple[int, str] | None = None
    todo, seen = [lid], {lid}
    while todo:
        for dst, _, to_port in lg.consumers(todo.pop()):
            kind = lg.layers[dst].type
            if kind in _PASS_THROUGH and to_port == 0 and dst not in seen:
                seen.add(dst)
                todo.append(dst)
            elif kind in _GATHERS and to_port == 1:
                size = _gathered_dim(lg, nodes, infos, dst)
                if size is not None and (best is None or size < best[0]):
                    best = (size, _table_name(lg, dst))
    return best


def _gathered_dim(
    lg: LayerGraph, nodes: Mapping[str, Node], infos: Mapping[tuple[str, int], TensorInfo],
    gather: str,
) -> int | None:  # fmt: skip
    layer = lg.layers[gather]
    data_src = lg.sources.get((gather, layer.inputs[0].id))
    data = infos.get((data_src.layer, data_src.port)) if data_src else None
    if data is None or data.shape is None:
        return None
    axis = 0
    if layer.type == "Gather" and len(layer.inputs) > 2:
        axis_src = lg.sources.get((gather, layer.inputs[2].id))
        axis_info = infos.get((axis_src.layer, axis_src.port)) if axis_src else None
        if axis_info is None or axis_info.value is None or np.size(axis_info.value) != 1:
            return None
        axis = int(np.asarray(axis_info.value).reshape(-1)[0])
    elif layer.type == "GatherElements":
        axis = int(getattr(nodes[gather].attrs, "axis", 0))
    if not -len(data.shape) <= axis < len(data.shape):
        return None
    dim = data.shape[axis]
    return dim if isinstance(dim, int) and dim > 0 else None


def _table_name(lg: LayerGraph, gather: str) -> str:
    """The name of the layer a Gather reads its data from, past Converts (decompression)."""
    src = lg.sources.get((gather, lg.layers[gather].inputs[0].id))
    while src is not None and lg.layers[src.layer].type == "Convert":
        src = lg.sources.get((src.layer, lg.layers[src.layer].inputs[0].id))
    return lg.layers[src.layer].name if src is not None else lg.layers[gather].name


# The model's graph, as random inputs need it: the layers, their nodes and inferred infos.
Graph = tuple[LayerGraph, Mapping[str, Node], Mapping[tuple[str, int], TensorInfo]]


def random_inputs(
    inputs: Sequence[tuple[str, Node, Shape | None]],
    seed: int,
    budget: int | str | None,
    path: Path,
    check_run: Callable[[dict[str, tuple[int, ...]]], None],
    graph: Graph | None = None,
    past: int | None = None,
) -> dict[str, np.ndarray]:
    """Seeded random values for ``inputs`` (name, Parameter node, shape), by name; dynamic
    dims become their lower bound or 1, but for the inputs whose role ties them to another
    input's (see :func:`plan_shapes`).

    With the model's ``graph``, each input's values fit its role (:func:`input_roles`),
    and the shapes made up for dynamic dims are checked by shape propagation first: a
    model they do not fit (a 3x3 convolution of a 1x1 image) is refused in one line that
    says which shapes to give.  Refused, naming the largest input, when they would not fit
    in ``budget`` (a ``max_memory``: bytes, ``"available"`` or None); ``check_run``
    refuses the run they are for, given their shapes by Parameter layer id, before
    anything is drawn.  ``past`` is the length of the KV cache the inputs follow (a
    stateful model's request that has run: optimum's position ids continue after it);
    None takes it from a stateless model's past_key_values inputs, else 0.
    """
    rng = np.random.default_rng(seed)
    roles = input_roles(*graph) if graph is not None else {}
    shapes_by_name = plan_shapes(inputs, roles, past=past)
    planned: list[tuple[str, tuple[int, ...], np.dtype, int]] = []
    shapes: dict[str, tuple[int, ...]] = {}
    nodes: dict[str, Node] = {}
    for name, node, _ in inputs:
        attrs = node.attrs
        assert attrs is not None
        shape = shapes_by_name[name]
        dtype = attrs.element_type.dtype
        planned.append((name, shape, dtype, tensor_bytes(shape, attrs.element_type.item_bytes)))
        shapes[node.layer.id] = shape
        nodes[name] = node
    if graph is not None and not all(is_static(declared) for *_, declared in inputs):
        _check_shapes(graph, inputs, roles, shapes_by_name, past)
    total = sum(size for *_, size in planned)
    limit = budget if isinstance(budget, int) else None
    if budget == "available" and total > UNCHECKED_BYTES:
        limit = available_memory()
    if total >= IMPOSSIBLE_BYTES or (limit is not None and total > limit):
        name, shape, dtype, size = max(planned, key=lambda p: p[3])
        node = nodes[name]
        et = node.attrs.element_type.name  # type: ignore[union-attr]
        room = ("no machine can hold" if total >= IMPOSSIBLE_BYTES
                else f"more than the {format_bytes(limit)} "  # type: ignore[arg-type]
                + ("available" if budget == "available" else "allowed"))
        raise IrrunError(
            f"random inputs need {format_bytes(total)}, {room} (input '{name}' "
            f"{et}{format_shape(shape)} is {format_bytes(size)}): give smaller shapes with "
            "--shape, or another limit with --max-memory", Location(str(path),
            node.layer.line), node.ref, code="over-budget",
        )  # fmt: skip
    # The run they are for is refused before the draw, which takes seconds for gigabytes.
    check_run(shapes)
    if past is None:
        past = _past_length(inputs, roles, shapes_by_name)
    out: dict[str, np.ndarray] = {}
    for (name, node, _), (_, shape, dtype, _) in zip(inputs, planned, strict=True):
        role = roles.get(node.layer.id)
        out[name] = _role_array(role, shape, dtype, past) if role is not None else None
        if out[name] is None:
            out[name] = random_array(rng, shape, dtype, role.high if role else None)
    return out


def plan_shapes(
    inputs: Sequence[tuple[str, Node, Shape | None]], roles: Mapping[str, Role], fill: int = 1,
    past: int | None = None,
) -> dict[str, tuple[int, ...]]:
    """The shapes of random inputs, by name: the declared dims, and for a dynamic one its
    lower bound or ``fill`` (1 for a batch, the first of two or more dims).

    Inputs with a role follow the token ids (the first ``ids`` input of two dims, [B, S]):
    an attention mask is [B, past + S] (``past``, the KV cache's length, from a stateless
    model's ``past_key_values`` inputs [B, H, past, D], or ``past`` given; else none),
    position ids [B, S] (cache_position [S]), beam_idx [B], the cache's batch B; each
    only where its declared dims allow it.
    """

    def made_up(declared: Shape | None) -> tuple[int, ...]:
        dims = declared or ()
        return tuple(
            d if isinstance(d, int)
            else _within(d, 1 if (i == 0 and len(dims) > 1) else max(1, fill))
            for i, d in enumerate(dims)
        )  # fmt: skip

    shapes = {name: made_up(declared) for name, _, declared in inputs}
    ids = next(
        (shapes[name] for name, node, _ in inputs
         if roles.get(node.layer.id, Role("")).kind == "ids" and len(shapes[name]) == 2),
        None,
    )  # fmt: skip
    if ids is None:
        return shapes
    batch, seq = ids
    if past is None:
        past = _past_length(inputs, roles, shapes)
    for name, node, declared in inputs:
        role = roles.get(node.layer.id)
        if role is None or declared is None:
            continue
        rank = len(declared)
        want: tuple[int, ...] | None = None
        if role.kind == "mask" and rank == 2:
            want = (batch, past + seq)
        elif role.kind == "positions" and rank >= 2:
            want = (*shapes[name][: rank - 2], batch, seq)
        elif role.kind == "positions" and rank == 1:
            want = (seq,)
        elif role.kind in ("beam", "past") and rank >= 1:
            want = (batch, *shapes[name][1:])
        if want is not None:
            shapes[name] = tuple(
                d if isinstance(d, int) else (w if d.contains(w) else m)
                for d, w, m in zip(declared, want, shapes[name], strict=True)
            )  # fmt: skip
    return shapes


def _within(d: Interval, value: int) -> int:
    value = max(value, d.lo)
    return value if d.hi is None else min(value, d.hi)


def _past_length(
    inputs: Sequence[tuple[str, Node, Shape | None]], roles: Mapping[str, Role],
    shapes: Mapping[str, tuple[int, ...]],
) -> int:  # fmt: skip
    """The KV cache's length a stateless model's past_key_values inputs [B, H, past, D]
    have (0 without them: a fresh cache, as a stateful model's first run has)."""
    for name, node, _ in inputs:
        role = roles.get(node.layer.id)
        if role is not None and role.kind == "past" and len(shapes[name]) == 4:
            return shapes[name][2]
    return 0


def _role_array(
    role: Role, shape: tuple[int, ...], dtype: np.dtype, past: int
) -> np.ndarray | None:
    """The values of an input of ``role``, or None for those drawn at random."""
    if role.kind == "mask":
        return np.ones(shape, dtype)
    if role.kind == "positions" and shape:
        row = np.arange(past, past + shape[-1])
        return np.ascontiguousarray(np.broadcast_to(row, shape)).astype(dtype)
    if role.kind == "beam" and shape:
        column = np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1))
        return np.ascontiguousarray(np.broadcast_to(column, shape)).astype(dtype)
    return None


def _check_shapes(
    graph: Graph, inputs: Sequence[tuple[str, Node, Shape | None]], roles: Mapping[str, Role],
    shapes: Mapping[str, tuple[int, ...]], past: int | None = None,
) -> None:  # fmt: skip
    """Refuse made-up shapes the model does not fit, saying which to give instead: the
    least sizes (powers of two, up to 4096) of the made-up dims that it fits."""
    failure = _propagation_error(graph, inputs, shapes)
    if failure is None:
        return
    made_up = [
        (name, declared) for name, node, declared in inputs
        if not is_static(declared) and node.layer.id not in roles
    ]  # fmt: skip
    ran_on = "; ".join(f"{n} {format_shape(shapes[n])} for {format_shape(d)}" for n, d in made_up)
    advice = "give their shapes with --shape, or inputs with --input"
    for fill in (2**k for k in range(1, 13)):
        trial = plan_shapes(inputs, roles, fill, past)
        if _propagation_error(graph, inputs, trial) is None:
            given = ",".join(f"{n}{format_shape(trial[n])}" for n, _ in made_up)
            advice = (f"give their shapes, e.g. --shape \"{given}\" (the least power of two "
                      "that fits), or inputs with --input")  # fmt: skip
            break
    raise IrrunError(
        f"{failure.message}; on random inputs whose unknown dims were made up ({ran_on}): "
        f"{advice}", failure.location, failure.layer, failure.port, code="input-shapes",
    )  # fmt: skip


def _propagation_error(
    graph: Graph, inputs: Sequence[tuple[str, Node, Shape | None]],
    shapes: Mapping[str, tuple[int, ...]],
) -> Diagnostic | None:  # fmt: skip
    lg, nodes, _ = graph
    new = {
        node.layer.id: TensorInfo(shapes[name], node.attrs.element_type)  # type: ignore[union-attr]
        for name, node, _ in inputs
    }  # fmt: skip
    _, problems = propagate(lg, nodes, new)
    return next((d for d in problems if d.level == "error"), None)


# Random values are drawn in float64 or int64 this many at a time and cast into place,
# so that a large input needs its own memory and no more. Drawn in chunks or at once,
# the values are the same.
_DRAW_CHUNK = 1 << 20


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, high: int | None = None
) -> np.ndarray:
    """Standard normal floats, integers in [-10, 10] (unsigned: [0, 20]; with ``high``:
    [0, high), within the type), fair booleans, or strings of 0 to 8 lower-case letters.

    >>> random_array(np.random.default_rng(0), (2, 3), np.dtype(np.int8)).tolist()
    [[7, 3, 0], [-5, -4, -10]]
    >>> random_array(np.random.default_rng(0), (2, 3), np.dtype(np.int64), high=5).tolist()
    [[4, 3, 2], [1, 1, 0]]
    """
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        n = min(_DRAW_CHUNK, flat.size - start)
        if dtype == np.bool_:
            part = rng.random(n) < 0.5
        elif dtype == np.dtype(object):  # string tensors
            letters = rng.integers(ord("a"), ord("z") + 1, size=(n, 8), dtype=np.uint8)
            lengths = rng.integers(0, 9, size=n)
            part = [row[:k].tobytes().decode() for row, k in zip(letters, lengths, strict=True)]
        elif dtype.kind in "iu" and high is not None:
            part = rng.integers(0, min(high, int(np.iinfo(dtype).max) + 1), size=n)
        elif dtype.kind in "iu":
            lo = 0 if dtype.kind == "u" else -10
            part = rng.integers(lo, lo + 21, size=n)
        else:
            part = rng.standard_normal(n)
        flat[start : start + n] = part
    return out
