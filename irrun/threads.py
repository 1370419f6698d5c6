"""Threads: how many a run may use, and kernels' work split over them in blocks.

A model runs with ``threads`` threads (``irrun.load(..., threads=N)``, ``--threads N``;
by default the cores this process may use).  The executor sets :func:`current` for the
run; a kernel that is not BLAS splits its work with :func:`map_blocks` into contiguous
blocks of an axis (batch x channels, rows), one per thread, and NumPy, which releases
the GIL in its loops, runs them at once.  Each block computes exactly what the whole
would have for its part, so results do not depend on the thread count.

Work handed to a pool thread sees ``current() == 1``: blocks never split again.

BLAS.  NumPy's BLAS (OpenBLAS, MKL, BLIS: whichever threadpoolctl finds) has a thread
pool of its own, process-wide.  :func:`running` gives it the run's count for the run
(``Model.run`` uses it) and gives back what it had after; while blocks of
:func:`map_blocks` run at once, it holds BLAS at one thread, so that ``n`` blocks that
multiply matrices use ``n`` threads in all, never ``n * n``.  Outside runs irrun leaves
BLAS as the user set it (nothing changes at import).  Several limits in force at once
(runs in several Python threads, blocks inside a run) give BLAS the smallest of them:
the pool is shared, and the smallest is the one no caller oversubscribes with.

Cost: finding the libraries takes about a millisecond, once, at the first run.  After
that, entering and leaving a run reads BLAS's count (a C call, well under a
microsecond) and sets it only when it differs from what the run wants: with the
default threads (the cores) and BLAS's default (the cores, too) a run changes nothing,
and a run with another count pays two C calls, a few microseconds in all, where
threadpoolctl's own ``threadpool_limits`` takes about 100 µs.  BLAS libraries loaded
after irrun's first run (torch's, say) are not limited.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

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


_BLAS_LOCK = threading.Lock()
_blas_libs: list[Any] | None = None  # threadpoolctl's controllers of the BLAS libraries
_blas_limits: dict[int, int] = {}  # limit -> how many holders want it now
_blas_saved: list[int] = []  # the user's counts, while some limit holds
_blas_now: list[int] = []  # the counts BLAS has, while some limit holds


def _blas() -> list[Any]:
    global _blas_libs
    if _blas_libs is None:
        from threadpoolctl import ThreadpoolController

        libs = ThreadpoolController().select(user_api="blas").lib_controllers
        _blas_libs = [lib for lib in libs if lib.num_threads is not None]
    return _blas_libs


def _blas_set(libs: list[Any], counts: list[int]) -> None:
    global _blas_now
    for lib, n, now in zip(libs, counts, _blas_now, strict=True):
        if n != now:
            lib.set_num_threads(n)
            # threadpoolctl lets only one Python thread set OpenBLAS's pool (the first
            # to do it); each change here is a short one, so let the next caller in.
            clear = getattr(lib, "clear_controlling_thread", None)
            if clear is not None:
                clear()
    _blas_now = list(counts)


def _blas_enter(n: int) -> None:
    global _blas_saved, _blas_now
    libs = _blas_libs if _blas_libs is not None else _blas()
    if not libs:
        return
    with _BLAS_LOCK:
        if not _blas_limits:
            _blas_saved = [lib.num_threads for lib in libs]
            _blas_now = _blas_saved
        _blas_limits[n] = _blas_limits.get(n, 0) + 1
        want = min(_blas_limits)
        if any(now != want for now in _blas_now):
            _blas_set(libs, [want] * len(libs))


def _blas_exit(n: int) -> None:
    libs = _blas_libs
    if not libs:
        return
    with _BLAS_LOCK:
        left = _blas_limits[n] - 1
        if left:
            _blas_limits[n] = left
        else:
            del _blas_limits[n]
        want = [min(_blas_limits)] * len(libs) if _blas_limits else _blas_saved
        if want != _blas_now:
            _blas_set(libs, want)


class blas_limit:  # lower case: used like a function, as contextlib's are
    """BLAS runs on at most ``n`` threads in this ``with`` block (see the module's notes)."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = max(1, int(n))

    def __enter__(self) -> None:
        _blas_enter(self.n)

    def __exit__(self, *exc: object) -> None:
        _blas_exit(self.n)


class running:
    """A run on ``n`` threads, in this ``with`` block: kernels' blocks and BLAS's pool.

    A class rather than a generator: entering and leaving costs about 1.5 µs when BLAS
    already has ``n`` threads.
    """

    __slots__ = ("n", "token")

    def __init__(self, n: int) -> None:
        self.n = max(1, int(n))

    def __enter__(self) -> None:
        self.token = _CURRENT.set(self.n)
        try:
            _blas_enter(self.n)
        except BaseException:
            _CURRENT.reset(self.token)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            _blas_exit(self.n)
        finally:
            _CURRENT.reset(self.token)


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
    Results come back in block order.  Every block sees ``current() == 1``, and BLAS
    runs on one thread while they do (see the module's notes).

    Handing a block to a thread and waiting for it costs some 20-60 µs (a wake-up
    through the executor's queue, more on a busy machine): callers choose
    ``min_block`` so that a block is worth well over that.

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
    with blas_limit(1):
        # Each block in a copy of the caller's context (NumPy's error state, say), with
        # current() == 1.
        futures = [pool.submit(contextvars.copy_context().run, _block, fn, a, b)
                   for a, b in blocks[1:]]  # fmt: skip
        try:
            with using(1):
                first = fn(*blocks[0])
        finally:
            # Every block ends before this returns, even when one fails.
            results = [_outcome(f) for f in futures]
    out = [first]
    for ok, value in results:
        if not ok:
            raise value
        out.append(value)
    return out


def _block(fn: Callable[[int, int], T], start: int, stop: int) -> T:
    _CURRENT.set(1)
    return fn(start, stop)


def _outcome(future: Any) -> tuple[bool, Any]:
    try:
        return True, future.result()
    except BaseException as e:  # raised by map_blocks, in block order
        return False, e
