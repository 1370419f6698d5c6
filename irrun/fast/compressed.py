"""MatMul and Gather on a compressed weight, decompressed a block of output channels at a time.

A weight-compressed model (NNCF's int8/int4, or an f16 one) computes each weight from
constants: Const(u8/i8/u4/i4/f16) -> Convert -> [Subtract zero point] -> Multiply scale ->
[Reshape the groups away] -> [Convert to f32], into a MatMul (or an embedding's Gather).
:mod:`irrun.core.compressed` finds these chains at load and gives each reader a
:class:`CompressedWeight`: the packed Const as it lies in the memory-mapped ``.bin``, the
small constants (scales, zero points) computed once, and the chain's own kernels.

Values.  :meth:`CompressedWeight.rows` runs the chain's kernels on the rows of every
constant that belong to some output channels (a slice of the packed bytes, unpacked as
binding unpacks them; the scales' and zero points' rows of those channels): the chain is
elementwise along the output channels, so each block holds exactly the elements the whole
decompression holds there, bit for bit (f16 rounding included, where the IR computes in
f16).  Gather picks its rows so: its values are the reference's, bit for bit.

MatMul multiplies its input by each block of :data:`BLOCK_BYTES` of decompressed weight
into that block's columns of the output.  BLAS sums each dot product over K in an order of
its own, which may depend on how many columns it is given (a block narrower than BLAS's
own column panel goes to an edge kernel; at one row NumPy asks for a matrix-vector product
whose order differs from a whole one's): so the product agrees with the reference within
the bound of the fast MatMul (:data:`irrun.fast.matmul.BOUND`), not bit for bit.
Measured: bit-identical in most shapes, a few ulps where it is not.

With the fast engine (numba, :mod:`.jit`), a product of a few rows (a decode step) by a weight
decompressed by table look-ups runs compiled, without decompressing (:mod:`.compressed_jit`),
within the same bound.

Threads.  The blocks go to the run's threads (:func:`irrun.threads.map_blocks`; BLAS at
one thread in each, the compiled kernel without the GIL, in larger blocks: it decompresses
nothing): each writes its own columns of the output, and the blocks are the same for any
thread count, so are the values (the compiled kernels' sums do not depend on the block).

Memory.  A product holds its block, the block's codes and look-up indices (8 bytes an
element) or the chain's intermediates: a few MiB at most, which the memory plan does not
count (:meth:`CompressedWeight.scratch` gives the bound).

A call that the blocks do not fit (``transpose_a``, an input of another element type or a
1-D one) decompresses the whole weight for that call and runs the reader's own kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from .. import threads
from . import compressed_jit

# Decompressed bytes a block of output channels holds: a few hundred KiB, so that the
# block is still in the CPU's L2 cache when BLAS reads it.
BLOCK_BYTES = 1 << 19
# Weight elements a block of the compiled product (:mod:`.compressed_jit`) takes at
# least: about 50 us of work, where a call costs about 6 (measured, 4-bit, one row).
COMPILED_ELEMENTS = 1 << 19


class CompressedWeight:
    """A 2-D weight kept compressed, given by blocks of its output channels.

    ``rows(index)`` returns the decompressed channels that ``index`` (a slice, or an
    array of channel numbers) names, as a 2-D array: ``[channels, K]`` when the channels
    are the weight's first axis (``channels_first``), ``[K, channels]`` when its last.
    """

    def __init__(self, shape: tuple[int, int], channels_first: bool, dtype: np.dtype,
                 rows: Callable[[slice | np.ndarray], np.ndarray], held: int,
                 packed: int) -> None:  # fmt: skip
        self.shape, self.channels_first, self.dtype = shape, channels_first, np.dtype(dtype)
        self.rows = rows
        self.held = held  # bytes of its own (scales, zero points), beside the mapped .bin
        self.packed = packed  # bytes of the compressed weight in the .bin
        # ``product(x, channels, out)``: ``out = x @ rows(channels).T`` for a slice of
        # channels without decompressing them, where the weight allows (compiled table
        # look-ups, :mod:`.compressed_jit`); None: by blocks only.
        self.product: Callable[[np.ndarray, slice, np.ndarray], None] | None = None

    @property
    def channels(self) -> int:
        return self.shape[0] if self.channels_first else self.shape[1]

    @property
    def depth(self) -> int:
        """K: the length of each channel's dot product."""
        return self.shape[1] if self.channels_first else self.shape[0]

    def block_channels(self) -> int:
        """Channels per block of :data:`BLOCK_BYTES` (a multiple of 16, at least 16)."""
        per = max(1, self.depth * self.dtype.itemsize)
        return max(16, BLOCK_BYTES // per // 16 * 16)  # (product_scratch counts the same)

    def whole(self) -> np.ndarray:
        """The whole decompressed weight (for a call the blocks do not fit)."""
        return self.rows(slice(0, self.channels))

    def scratch(self) -> int:
        """The most bytes a product holds beside its input and output: one block, and the
        chain's intermediates for it (a few arrays of its size)."""
        return product_scratch(self.channels, self.depth, self.dtype.itemsize)


def product_scratch(channels: int, depth: int, itemsize: int) -> int:
    """What a product by blocks holds beside its input and output, for a weight of
    ``channels`` x ``depth`` decompressed to ``itemsize`` bytes an element: a block of
    BLOCK_BYTES (at least 16 channels), its codes and look-up indices or the chain's
    intermediates for it (counted as four such blocks of 4-byte elements)."""
    per = max(1, depth * itemsize)
    block = max(16, BLOCK_BYTES // per // 16 * 16)
    return 4 * min(channels, block) * depth * 4


def gather_scratch(outputs) -> int:
    """What a Gather of rows kept compressed holds beside its output: the codes, indices
    and values picked (16 bytes for each element of the output)."""
    shape = outputs[0].shape
    return 16 * math.prod(shape)


class CompressedMatMul:
    """A MatMul layer's kernel whose weight (input 1) is a :class:`CompressedWeight`; it
    takes the layer's input 0 only."""

    def __init__(self, weight: CompressedWeight, kernel: Callable[..., tuple]) -> None:
        self.weight, self.kernel = weight, kernel  # kernel: the layer's, for the whole weight

    def scratch_of(self, inputs, outputs) -> int:
        """The step's scratch for the memory plan (in place of the MatMul op's)."""
        return self.weight.scratch()

    def __call__(self, attrs: SimpleNamespace, a: np.ndarray) -> tuple[np.ndarray, ...]:
        w = self.weight
        if (attrs.transpose_a or attrs.transpose_b != w.channels_first or a.ndim < 2
                or a.dtype != w.dtype or a.shape[-1] != w.depth):  # fmt: skip
            return self.kernel(attrs, a, w.whole())
        n, k = w.channels, w.depth
        rows = math.prod(a.shape[:-1])
        x = a.reshape(rows, k)
        out = np.empty((rows, n), w.dtype)
        step = w.block_channels()
        if w.product is not None and compressed_jit.takes(rows):
            x = np.ascontiguousarray(x)
            # Nothing decompressed to keep in cache: blocks of about COMPILED_ELEMENTS, so
            # that a call's fixed cost (some microseconds) is small beside its work.
            step = max(step, COMPILED_ELEMENTS // k // 16 * 16)

            def blocks(first: int, last: int) -> None:
                for start in range(first * step, min(n, last * step), step):
                    stop = min(n, start + step)
                    w.product(x, slice(start, stop), out[:, start:stop])  # type: ignore[misc]
        else:

            def blocks(first: int, last: int) -> None:
                for start in range(first * step, min(n, last * step), step):
                    block = w.rows(slice(start, min(n, start + step)))
                    np.matmul(x, block.T if w.channels_first else block,
                              out=out[:, start : start + step])  # fmt: skip

        # Each block on its own columns, the same blocks for any thread count: the same bits.
        threads.map_blocks(blocks, -(-n // step))
        return (out.reshape(*a.shape[:-1], n),)


class CompressedGather:
    """A Gather layer's kernel whose data (input 0) is a :class:`CompressedWeight` of
    channels first, gathered along axis 0; it takes the layer's indices and axis."""

    def __init__(self, weight: CompressedWeight, kernel: Callable[..., tuple]) -> None:
        self.weight, self.kernel = weight, kernel

    def scratch_of(self, inputs, outputs) -> int:
        """The step's scratch for the memory plan (in place of the Gather op's, which
        reads its data as an input)."""
        return gather_scratch(outputs)

    def __call__(self, attrs: SimpleNamespace, indices: np.ndarray, axis: np.ndarray
                 ) -> tuple[np.ndarray, ...]:  # fmt: skip
        w = self.weight
        n = w.channels
        flat = np.asarray(indices).reshape(-1)
        if (not w.channels_first or np.asarray(axis).reshape(-1).tolist() != [0]
                or getattr(attrs, "batch_dims", 0) != 0 or flat.dtype.kind not in "iu"
                or (flat.size and (flat.min() < 0 or flat.max() >= n))):  # fmt: skip
            # Negative or out-of-range indices, and the rest, as the reference has them.
            return self.kernel(attrs, w.whole(), indices, axis)
        return (w.rows(flat.astype(np.intp)).reshape(*np.shape(indices), w.depth),)

