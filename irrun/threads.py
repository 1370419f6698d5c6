"""Threads: how many a run may use, and kernels' work split over them in blocks.

A model runs with ``threads`` threads (``irrun.load(..., threads=N)``, ``--threads N``;
by default the cores this process may use).  The executor sets :func:`current` for the
run; a kernel that is not BLAS splits its work with :func:`map_blocks` into contiguous
blocks of an axis (batch x channels, rows), one per thread, and NumPy, which releases
the GIL in its loops, runs them at once.  Each block computes exactly what the whole
would have for its part, so results do not depend on the thread count.

Work handed to a pool thread sees ``current() == 1``: blocks never split again.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_CURRENT: contextvars.ContextVar[int] = contextvars.ContextVar("irrun_threads", default=1)
_POOLS: dict[int, ThreadPoolExecutor] = {}


def available() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def current() -> int:
    """The threads the running kernel may use (1 outside a run, and inside a block)."""
    return _CURRENT.get()


@contextmanager
def using(n: int) -> Iterator[None]:
    """Let kernels called in this block use ``n`` threads."""
    token = _CURRENT.set(max(1, int(n)))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _pool(n: int) -> ThreadPoolExecutor:
    pool = _POOLS.get(n)
    if pool is None:
        pool = _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="irrun")
    return pool


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``range(n)`` in at most ``parts`` contiguous blocks of near-equal size.

    >>> split(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    parts = max(1, min(parts, n))
    base, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + base + (i < extra)
        out.append((start, stop))
        start = stop
    return out


def map_blocks(fn: Callable[[int, int], T], n: int, min_block: int = 1) -> list[T]:
    """``fn(start, stop)`` over blocks covering ``range(n)``, on the run's threads.

    One block per thread (fewer when a block would hold less than ``min_block`` items:
    small work is not worth a thread's start-up); the calling thread takes the first.
    Results come back in block order.

    >>> with using(3):
    ...     map_blocks(lambda a, b: (a, b), 7)
    [(0, 3), (3, 5), (5, 7)]
    """
    threads = current()
    parts = min(threads, n // max(min_block, 1))
    if parts <= 1:
        return [fn(0, n)]
    blocks = split(n, parts)
    pool = _pool(threads - 1)
    futures = [pool.submit(fn, a, b) for a, b in blocks[1:]]
    first = fn(*blocks[0])
    return [first, *(f.result() for f in futures)]
