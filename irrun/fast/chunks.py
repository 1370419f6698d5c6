"""Planes in chunks: how the fast pools keep their intermediates in the CPU's cache.

A pool treats the (n, c) planes of its input one by one, so the fast kernels work
over runs of planes (chunks) of about a megabyte, on the run's threads, and a plane's
result never depends on which chunk holds it: results are the same for any chunk
size and thread count.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import threads


def plane_chunks(planes: int, plane_bytes: int, target: int) -> list[slice]:
    """Split ``planes`` (N*C) into equal runs of about ``target`` bytes each.

    Pools work chunk by chunk so that a chunk's intermediates stay in the CPU's
    cache and the memory they take stays small next to the tensors themselves.

    >>> plane_chunks(10, 100, 450)
    [slice(0, 4, None), slice(4, 8, None), slice(8, 10, None)]
    """
    per = max(1, target // max(plane_bytes, 1))
    count = -(-planes // per)
    per = -(-planes // count) if count else per
    return [slice(i, min(i + per, planes)) for i in range(0, planes, per)]


# Bytes of input a thread's block of planes must hold at least, and its chunks (four
# times the one-thread chunk).  Every NumPy call hands the GIL over, and a thread
# waiting for it must be woken: on a 2-vCPU VM that wake-up costs about as much as a
# pool's call over a 1 MiB chunk, so two threads over such chunks ran W9 (32x64x56x56)
# no faster than one and W1 (1x64x112x112) 1.8x slower.  Blocks of 4 MiB or more in
# 4 MiB chunks make calls long enough to overlap (W9 1.2x faster on two threads than
# on one); a smaller input runs on the calling thread in cache-sized chunks.
MIN_BLOCK_BYTES = 1 << 22


def each_chunk(
    planes: int, plane_bytes: int, chunks: list[slice], body: Callable[[slice], object],
    target: int,
) -> None:
    """``body(chunk)`` over the planes, chunk by chunk, on the run's threads.

    One thread: over ``chunks`` (the planes in runs of about ``target`` bytes, see
    :func:`plane_chunks`).  More: the planes in one block per thread (see
    :func:`irrun.threads.map_blocks`), each block in chunks of about ``4 * target`` bytes
    (see :data:`MIN_BLOCK_BYTES`).
    """
    if threads.current() <= 1 or planes * plane_bytes < 2 * MIN_BLOCK_BYTES:
        for ch in chunks:
            body(ch)
        return

    def block(start: int, stop: int) -> None:
        for ch in plane_chunks(stop - start, plane_bytes, 4 * target):
            body(slice(start + ch.start, start + ch.stop))

    threads.map_blocks(block, planes, -(-MIN_BLOCK_BYTES // max(plane_bytes, 1)))


def in_flight(total_bytes: int, chunk_bytes: int) -> int:
    """The most bytes of planes in chunks at once: a chunk per thread the run may use (of
    up to four times ``chunk_bytes`` when there are several), never more than all of
    them (``total_bytes``).  A kernel's scratch per chunk is a multiple of this."""
    n = threads.available()
    return min(total_bytes, chunk_bytes if n <= 1 else n * 4 * chunk_bytes)
