"""Random inputs for a model: seeded values of the shapes and element types its inputs
declare, refused up front when they, or the run they are for, would not fit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import IrrunError, Location
from ..ir.dims import Shape, format_shape
from .binding import Node
from .budget import UNCHECKED_BYTES
from .memory import IMPOSSIBLE_BYTES, available_memory, format_bytes, tensor_bytes


def random_inputs(
    inputs: Sequence[tuple[str, Node, Shape | None]],
    seed: int,
    budget: int | str | None,
    path: Path,
    check_run: Callable[[dict[str, tuple[int, ...]]], None],
) -> dict[str, np.ndarray]:
    """Seeded random values for ``inputs`` (name, Parameter node, shape), by name; dynamic
    dims become their lower bound or 1.

    Refused, naming the largest input, when they would not fit in ``budget`` (a
    ``max_memory``: bytes, ``"available"`` or None); ``check_run`` refuses the run they
    are for, given their shapes by Parameter layer id, before anything is drawn.
    """
    rng = np.random.default_rng(seed)
    planned: list[tuple[str, tuple[int, ...], np.dtype, int]] = []
    shapes: dict[str, tuple[int, ...]] = {}
    nodes: dict[str, Node] = {}
    for name, node, declared in inputs:
        attrs = node.attrs
        assert attrs is not None
        shape = tuple(d if isinstance(d, int) else max(1, d.lo) for d in (declared or ()))
        dtype = attrs.element_type.dtype
        planned.append((name, shape, dtype, tensor_bytes(shape, dtype.itemsize)))
        shapes[node.layer.id] = shape
        nodes[name] = node
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
    return {name: random_array(rng, shape, dtype) for name, shape, dtype, _ in planned}


# Random values are drawn in float64 or int64 this many at a time and cast into place,
# so that a large input needs its own memory and no more. Drawn in chunks or at once,
# the values are the same.
_DRAW_CHUNK = 1 << 20


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Standard normal floats, integers in [-10, 10] (unsigned: [0, 20]), or fair booleans.

    >>> random_array(np.random.default_rng(0), (2, 3), np.dtype(np.int8)).tolist()
    [[7, 3, 0], [-5, -4, -10]]
    """
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        n = min(_DRAW_CHUNK, flat.size - start)
        if dtype == np.bool_:
            part = rng.random(n) < 0.5
        elif dtype.kind in "iu":
            lo = 0 if dtype.kind == "u" else -10
            part = rng.integers(lo, lo + 21, size=n)
        else:
            part = rng.standard_normal(n)
        flat[start : start + n] = part
    return out
