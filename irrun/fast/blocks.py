"""Work split over the run's threads (see :mod:`irrun.threads`): elementwise ops, ops
along one axis (Softmax) and reductions.

An elementwise kernel computes each output element from the elements at the same
place of its operands, so any cut of the output into blocks gives, block by block,
exactly the elements the whole would have: results do not depend on the thread count.

Blocks are ranges of the outermost axis that is longer than one (the batch, or the
channels of a batch of one), after operands of the output's own shape have been seen
as one flat row.  Each thread works through its blocks in pieces of about
:data:`PIECE` elements, so that the temporaries of a kernel made of several NumPy
calls stay in the CPU's cache while the piece is copied into the output.  Work too
small to split (:func:`worth_splitting`) runs whole, on the calling thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .. import threads
from ..ir.registry import Kernel, Scratch, TensorInfo
from ..ops._scratch import largest

# Elements the output must hold before the work is split.  Handing a block to a thread
# and waiting for it costs some 20-60 µs.  The cheapest kernels go through about 4 f32
# elements a nanosecond, so 2**20 elements are at least 250 µs of work, in blocks of at
# least MIN_BLOCK elements (65 µs or more): the hand-off stays a small part of it.
# Below, the kernel runs as it would on one thread: small tensors pay nothing.
MIN_SPLIT = 1 << 20
MIN_BLOCK = 1 << 18
# Elements of a piece: 256 KiB of f32, whose temporaries stay in the CPU's L2 cache.
PIECE = 1 << 16


def worth_splitting(size: int) -> bool:
    """Whether work of ``size`` elements is split over the run's threads: with more than
    one thread and at least :data:`MIN_SPLIT` elements."""
    return size >= MIN_SPLIT and threads.current() > 1


def elementwise(
    compute: Callable[..., np.ndarray], shape: tuple[int, ...] | None,
    operands: Sequence[np.ndarray], dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """``compute(*operands)`` as an array of ``shape`` (and ``dtype``), on the run's threads.

    ``compute`` must be elementwise: NumPy broadcasting of the operands to ``shape``
    (None: worked out here, only when needed), each output element from the operands'
    elements at its place.  ``dtype`` None is the type ``compute`` gives (asked of an
    empty block).  With one thread or fewer than :data:`MIN_SPLIT` elements it is
    called once on the whole operands: a call costs well under a microsecond more.

    >>> x = np.arange(3_000_000, dtype=np.float32).reshape(3, 1_000_000)
    >>> with threads.using(2):
    ...     y = elementwise(lambda v: v * 2, x.shape, [x])
    >>> bool((y == x * 2).all()), y.dtype
    (True, dtype('float32'))
    """
    if not worth_splitting(max(o.size for o in operands)):
        return np.asarray(compute(*operands), dtype=dtype)
    if shape is None:
        shape = np.broadcast_shapes(*(o.shape for o in operands))
    if math.prod(shape) < MIN_SPLIT:
        return np.asarray(compute(*operands), dtype=dtype)
    view, ops = shape, list(operands)
    flat = all(o.shape == tuple(shape) and o.flags.c_contiguous for o in ops)
    if flat:
        view, ops = (math.prod(shape),), [o.reshape(-1) for o in ops]
    ax = next((i for i, d in enumerate(view) if d > 1), 0)
    inner = math.prod(view[ax + 1 :])
    lead = (slice(None),) * ax
    # Where each operand's axis ``ax`` is (None: broadcast along it, taken whole).
    where = []
    for o in ops:
        k = ax - (len(view) - o.ndim)
        where.append(k if k >= 0 and o.shape[k] != 1 else None)

    def parts(a: int, b: int) -> list[np.ndarray]:
        return [o if k is None else o[(slice(None),) * k + (slice(a, b),)]
                for o, k in zip(ops, where, strict=True)]

    if dtype is None:
        dtype = np.asarray(compute(*parts(0, 0))).dtype
    out = np.empty(shape, dtype)
    dest = out.reshape(-1) if flat else out
    step = max(1, PIECE // max(inner, 1))

    def block(start: int, stop: int) -> None:
        for a in range(start, stop, step):
            b = min(a + step, stop)
            dest[(*lead, slice(a, b))] = compute(*parts(a, b))

    threads.map_blocks(block, view[ax], -(-MIN_BLOCK // max(inner, 1)))
    return out


def split(kernel: Kernel) -> Kernel:
    """An elementwise op's reference ``kernel`` (one output) run on blocks of its output
    on the run's threads: bit for bit the whole's result, since each block's elements
    are computed from the same input elements by the same operations.

    It gives NotImplemented (the caller then runs ``kernel`` whole) where the work is not
    worth splitting, and where the inputs do not broadcast as NumPy does (``pdpd``, or
    ``none`` with unequal shapes: the kernel then says why, or computes its own way).
    """

    def run(attrs: object, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        shape = _split_shape(attrs, arrays)
        if shape is None:
            return NotImplemented
        return (elementwise(lambda *parts: kernel(attrs, *parts)[0], shape, arrays),)

    return run


def _split_shape(attrs: object, arrays: Sequence[np.ndarray]) -> tuple[int, ...] | None:
    if threads.current() == 1:  # as worth_splitting says, asked first: it costs the least
        return None
    if not worth_splitting(max(a.size for a in arrays)):
        return None
    mode = getattr(attrs, "auto_broadcast", "numpy")
    shapes = {a.shape for a in arrays}
    if mode == "pdpd" or (mode in ("none", "explicit") and len(shapes) > 1):
        return None
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def pieces_scratch(reference: Scratch | None) -> Scratch:
    """The scratch of a kernel split into pieces: what ``reference`` declares for the
    whole (each piece's temporaries are a part of it), and each thread's piece of the
    result, of up to 8 bytes an element, before it is copied into the output (pieces of
    the output: no more in all than the output)."""

    def scratch(attrs: object, inputs: Sequence[TensorInfo],
                outputs: Sequence[TensorInfo]) -> int:
        whole = 0 if reference is None else reference(attrs, inputs, outputs)
        return whole + min(threads.available() * PIECE, largest(outputs)) * 8

    return scratch


def in_place(compute: Callable[[np.ndarray], None], x: np.ndarray) -> None:
    """``compute(x)`` for an elementwise ``compute`` that writes into its argument, on
    the run's threads: ``x`` (C-contiguous) is cut into blocks of its flat row.

    >>> x = np.arange(3_000_000, dtype=np.float32) - 1e6
    >>> with threads.using(2):
    ...     in_place(lambda v: np.maximum(v, 0, out=v), x)
    >>> float(x.min()), float(x.max())
    (0.0, 1999999.0)
    """
    if not worth_splitting(x.size):
        compute(x)
        return
    flat = x.reshape(-1)
    threads.map_blocks(lambda a, b: compute(flat[a:b]), flat.size, MIN_BLOCK)


def across(
    compute: Callable[[np.ndarray], np.ndarray], x: np.ndarray, axis: int, dtype: np.dtype | type,
) -> np.ndarray:
    """``compute(x)`` for a ``compute`` that works along ``axis`` only (Softmax), on the
    run's threads: blocks are ranges of the outermost axis before ``axis`` longer than one.

    Each block holds whole runs along ``axis`` and everything after it as in the whole,
    so NumPy's reductions go through it in the same order.  An axis after ``axis`` would
    not do: a block of it is a strided view, and NumPy may then reduce along ``axis`` in
    another way (for f16, summing in f32 and rounding once instead of at each step).
    With no such axis (a batch of one reduced along its channels) the work is not split.

    >>> x = np.arange(2_000_000, dtype=np.float32).reshape(2, 1_000_000) / 1e5
    >>> with threads.using(2):
    ...     y = across(lambda v: v - v.max(axis=1, keepdims=True), x, 1, np.float32)
    >>> bool((y == x - x.max(axis=1, keepdims=True)).all())
    True
    """
    if not worth_splitting(x.size):
        return np.asarray(compute(x), dtype=dtype)
    ax = next((i for i, d in enumerate(x.shape[:axis]) if d > 1), None)
    if ax is None:
        return np.asarray(compute(x), dtype=dtype)
    return _along(compute, x, ax, np.empty(x.shape, dtype))


def reduced(
    compute: Callable[[np.ndarray], np.ndarray], x: np.ndarray, axes: Sequence[int],
    shape: tuple[int, ...], dtype: np.dtype | type,
) -> np.ndarray:
    """``compute(x)`` for a reduction of ``x`` over ``axes`` into ``shape`` (kept or
    dropped axes), on the run's threads: blocks are ranges of the outermost axis before
    every reduced one that is longer than one (see :func:`across` for why not after).
    That axis keeps its place in the output, whether reduced axes are kept or not.

    >>> x = np.arange(3_000_000, dtype=np.float32).reshape(3, 2, 500_000)
    >>> with threads.using(2):
    ...     y = reduced(lambda v: v.sum(axis=2), x, (2,), (3, 2), np.float32)
    >>> bool((y == x.sum(axis=2)).all())
    True
    """
    if not worth_splitting(x.size):
        return np.asarray(compute(x), dtype=dtype)
    first = min(axes, default=x.ndim)
    ax = next((i for i, d in enumerate(x.shape[:first]) if d > 1), None)
    if ax is None:
        return np.asarray(compute(x), dtype=dtype)
    return _along(compute, x, ax, np.empty(shape, dtype))


def _along(compute: Callable[[np.ndarray], np.ndarray], x: np.ndarray, ax: int,
           out: np.ndarray) -> np.ndarray:
    """``out`` filled with ``compute`` of ranges of ``x``'s axis ``ax`` (which keeps its
    place in ``out``), in pieces, on the run's threads."""
    inner = x.size // x.shape[ax]
    lead = (slice(None),) * ax
    step = max(1, PIECE // max(inner, 1))

    def block(start: int, stop: int) -> None:
        for a in range(start, stop, step):
            part = (*lead, slice(a, min(a + step, stop)))
            out[part] = compute(x[part])

    threads.map_blocks(block, x.shape[ax], -(-MIN_BLOCK // max(inner, 1)))
    return out
