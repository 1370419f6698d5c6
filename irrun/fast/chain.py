"""Chains of elementwise ops run block by block: each block of the output goes through the
whole chain while it is in the cache (:class:`irrun.core.passes.elementwise_chains.
ElementwiseChain` runs its ops' own kernels on the blocks' slices).

An elementwise op's output element comes from its inputs' elements at its place (NumPy
broadcasting), so a chain of them computes each block of its output from the same block
of its operands (or the whole operand, along the axes it is broadcast on): the same
operations on the same elements, so the same bits as the chain run step by step by
construction.  What is saved: each step of an unfused chain reads and writes a whole
tensor, which for tensors larger than a core's L2 share goes to L3 or memory, and makes
a new tensor (page faults for a large one); a block's intermediates stay in L2 and are
reused.

Blocks are about :data:`BLOCK_BYTES` of the output, cut along the outermost axis whose
trailing axes hold no more than a block (ranges of it, each leading index on its own).
A chain whose output holds fewer than :data:`MIN_ELEMENTS` elements runs whole: in cache
already, it gains nothing from blocks, whose calls cost some microseconds each (measured,
benchmarks/elementwise_chain.py: an 8-op chain on [1,64,112,112] f32 3.7 ms whole, 3.3 ms
in blocks of 200,704 elements, 4.8 ms in blocks of 12,544; [1,256,112,112] 16.6 ms whole,
14.2 ms in blocks of 200,704, on a Xeon with 2 MiB of L2 a core).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from .. import threads
from .blocks import MIN_SPLIT

# Bytes of output a block holds: its intermediates (a few blocks) stay in a core's L2.
BLOCK_BYTES = 1 << 19
# Output elements below which a chain runs whole (its tensors stay in cache anyway).
MIN_ELEMENTS = 1 << 19

# A block: the output's index, then each operand's.
Block = tuple[tuple[slice, ...], tuple[tuple[slice, ...], ...]]


def blocks_of(shape: tuple[int, ...], itemsize: int,
              operands: Sequence[tuple[int, ...]]) -> list[Block] | None:
    """The blocks of an output of ``shape`` computed from operands of the given shapes
    (NumPy broadcasting: each right-aligned with ``shape``, each axis equal or 1), or None
    where the output is too small (:data:`MIN_ELEMENTS`) or cannot be cut.

    Rows of 256 KiB of f32, two to a block of 512 KiB; each operand's slices of a block
    (the scalar's whole):

    >>> [out for out, _ in blocks_of((8, 1 << 16), 4, [(8, 1 << 16), (1,)])]
    [(slice(0, 2, None),), (slice(2, 4, None),), (slice(4, 6, None),), (slice(6, 8, None),)]
    >>> blocks_of((8, 1 << 16), 4, [(8, 1 << 16), (1,)])[1][1]
    ((slice(2, 4, None), slice(None, None, None)), (slice(None, None, None),))
    """
    size = math.prod(shape)
    if size < MIN_ELEMENTS or not shape:
        return None
    per_block = max(1, BLOCK_BYTES // max(itemsize, 1))
    ax = 0
    while math.prod(shape[ax + 1 :]) > per_block:
        ax += 1
    inner = math.prod(shape[ax + 1 :])
    rows = max(1, per_block // inner)
    n = len(shape)
    found: list[Block] = []
    for lead in itertools.product(*(range(d) for d in shape[:ax])):
        for a in range(0, shape[ax], rows):
            b = min(a + rows, shape[ax])
            out = (*(slice(i, i + 1) for i in lead), slice(a, b))
            found.append((out, tuple(_operand_index(s, n, lead, a, b) for s in operands)))
    return found if len(found) > 1 else None


def _operand_index(s: tuple[int, ...], n: int, lead: tuple[int, ...], a: int, b: int
                   ) -> tuple[slice, ...]:
    """An operand's part of the block: its axes right-aligned with the output's; a
    broadcast axis (1) is taken whole."""
    index = []
    for j, d in enumerate(s):
        i = j + n - len(s)
        if i < 0 or d == 1 or i > len(lead):
            index.append(slice(None))
        elif i < len(lead):
            index.append(slice(lead[i], lead[i] + 1))
        else:
            index.append(slice(a, b))
    return tuple(index)


def run_blocks(compute: Callable[..., np.ndarray], shape: tuple[int, ...],
               operands: Sequence[np.ndarray], found: list[Block]) -> np.ndarray:
    """``compute(*operands)`` of ``shape``, block by block (``found``, from
    :func:`blocks_of`), on the run's threads; ``compute`` must give each block's values
    (an elementwise chain).  The first block runs first, on the calling thread: its type
    is the output's."""
    out_index, indexes = found[0]
    first = compute(*(o[i] for o, i in zip(operands, indexes, strict=True)))
    out = np.empty(shape, first.dtype)
    _store(out, out_index, first)

    def block(start: int, stop: int) -> None:
        for k in range(start, stop):
            out_index, indexes = found[k + 1]
            _store(out, out_index, compute(*(o[i] for o, i in zip(operands, indexes,
                                                                   strict=True))))

    rest = len(found) - 1
    per_block = max(1, first.size)
    threads.map_blocks(block, rest, -(-MIN_SPLIT // per_block))
    return out


def _store(out: np.ndarray, index: tuple[slice, ...], values: np.ndarray) -> None:
    dest = out[index]
    if values.shape != dest.shape:  # an op that is not elementwise after all: a bug
        raise AssertionError(f"a block of {dest.shape} came out {values.shape}")
    dest[...] = values
