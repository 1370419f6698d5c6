"""Threads: how many a run may use, and kernels' work split over them in blocks.

A model runs with ``threads`` threads (``irrun.load(..., threads=N)``, ``--threads N``;
by default :func:`default`: the cores this process may use that other work does not keep
busy).  The executor sets :func:`current` for the
run; a kernel that is not BLAS splits its work with :func:`map_blocks` into contiguous
blocks of an axis (batch x channels, rows), a few per thread, and NumPy, which releases
the GIL in its loops, runs them at once.  Each block computes exactly what the whole
would have for its part, so results do not depend on the thread count.  Which kernels
split, and from what size: pools (``fast.chunks.each_chunk``: blocks of planes, at
least 512 KiB of input each), elementwise ops, Softmax and reductions (their fast
kernels, ``fast.blocks``: at least 2**20 elements in all, blocks of at least 2**18).
Convolutions and matrix products go through BLAS's own threads.

Work handed to a pool thread sees ``current() == 1``: blocks never split again.

BLAS.  NumPy's BLAS (OpenBLAS, MKL, BLIS: whichever threadpoolctl finds) has a thread
pool of its own, process-wide.  :func:`running` gives it the run's count for the run
(``Model.run`` uses it) and gives back what it had after; while blocks of
:func:`map_blocks` run at once, it holds BLAS at one thread, so that ``n`` blocks that
multiply matrices use ``n`` threads in all, never ``n * n``.  Outside runs irrun leaves
BLAS as the user set it (nothing changes at import).  Several limits in force at once
(runs in several Python threads, blocks inside a run) give BLAS the smallest of them:
the pool is shared, and the smallest is the one no caller oversubscribes with.

Cost: finding the libraries takes about a millisecond (threadpoolctl's scan of the
loaded libraries), once, at the first run.  After that, entering and leaving a run
reads BLAS's count (a C call, well under a microsecond) and sets it only when it
differs from what the run wants: with the default threads on an idle machine (the
cores) and BLAS's default (the cores, too) a run changes nothing and entering and
leaving costs about 2 µs; a run with another count sets it and sets it back, about 7 µs, where
threadpoolctl's own ``threadpool_limits`` takes about 85 µs (it scans the libraries
each time).  Measured on a 2-core Xeon: 2-4% of a 0.1 ms run.  The trade-off: BLAS's
count is given back after every run rather than left at the run's, so a user's own
BLAS calls between runs keep the user's setting, at the price of two C calls per run
when the counts differ.  BLAS libraries loaded after irrun's first run (torch's,
say) are not limited.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

_CURRENT: contextvars.ContextVar[int] = contextvars.ContextVar("irrun_threads", default=1)
_POOLS: dict[int, ThreadPoolExecutor] = {}


# Variables by which a process is told how many threads its libraries may use: a Dask
# worker, a job scheduler's slot or a benchmark sets them, and irrun's default keeps to
# them as BLAS does.
_ENVIRONMENT = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@functools.cache
def available() -> int:
    """The cores this process may run on (its CPU affinity), at least 1, and no more
    than ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` or ``MKL_NUM_THREADS`` say when
    one is set to a count.

    Worked out once (as OpenBLAS reads its variable once, when it loads): runs read it
    each time, and the system calls would cost a microsecond or two a run.
    ``available.cache_clear()`` has it worked out again.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    for name in _ENVIRONMENT:
        value = os.environ.get(name, "")
        if value.strip().isdigit() and int(value) > 0:
            cores = min(cores, int(value))
    return max(1, cores)


def choose(usable: int, cores: int, load: float | None) -> int:
    """The threads a run uses by default: of the ``usable`` cores, those the machine's
    ``cores`` less its ``load`` (runnable threads, averaged over a minute) leave idle,
    rounded, and at least 1; all ``usable`` when the load is unknown.

    On a machine whose cores are all busy, a second thread is not a gain but a loss of
    a hundred times: OpenBLAS's threads wait for each other by spinning, and one that is
    not scheduled holds up the rest for the scheduler's time slice, some milliseconds a
    product (the demo's conv2 took 48-72 ms on two threads against 0.3 ms on one, with a
    load of 6 on 2 cores).  One thread too few costs at most the share of that thread.

    >>> choose(2, 2, 0.2), choose(2, 2, 0.7), choose(2, 2, 6.0), choose(2, 64, 10.0)
    (2, 1, 1, 2)
    >>> choose(8, 8, 2.4), choose(8, 8, None)
    (6, 8)
    """
    if load is None or not math.isfinite(load):
        return max(1, usable)
    idle = math.floor(cores - load + 0.5)
    return max(1, min(usable, idle))


def machine_load() -> float | None:
    """The system's load average over the last minute, None where there is none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix, or unreadable
        return None


@functools.cache
def default() -> int:
    """The threads a run uses unless told: :func:`choose` of the :func:`available` cores
    and the machine's load.

    Worked out once, at the first run that asks (as :func:`available` is): a run's own
    threads add to the load, and a count read again later would count them as
    somebody else's.  ``default.cache_clear()`` has it worked out again.
    """
    usable = available()
    return choose(usable, max(os.cpu_count() or usable, usable), machine_load())


def busy_warning(load: float | None = None, cores: int | None = None) -> str | None:
    """What to say when timings are taken on a busy machine: its ``load`` (default the
    machine's, now) above the ``cores`` this process may use (default
    :func:`available`); None when it is not busy.

    >>> busy_warning(3.2, 2)
    'the machine is busy (load 3.2 on 2 cores): timings are unreliable'
    >>> busy_warning(1.5, 2) is None
    True
    """
    load = machine_load() if load is None else load
    cores = available() if cores is None else cores
    if load is None or not load > cores:
        return None
    plural = "s" * (cores != 1)
    return f"the machine is busy (load {load:.1f} on {cores} core{plural}): timings are unreliable"


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


_blas_getters: list[Callable[[], int]] = []  # each library's count, read straight from C

# The C functions that read a library's count, when its count is process-wide (not
# OpenMP's, which is each thread's): called directly, a read takes a tenth of the time
# threadpoolctl's property does (which looks the symbol up each time).
_GETTERS = {"openblas": "openblas_get_num_threads", "blis": "bli_thread_get_num_threads"}


def _getter(lib: Any) -> Callable[[], int]:
    name = _GETTERS.get(getattr(lib, "internal_api", ""))
    find = getattr(lib, "_get_symbol", None)
    if name is not None and find is not None and getattr(lib, "threading_layer", "") != "openmp":
        try:
            fn = find(name)
        except Exception:  # threadpoolctl's private API changed: use its property
            fn = None
        if fn is not None and fn() == lib.num_threads:
            return fn  # type: ignore[no-any-return]
    return lambda: lib.num_threads  # type: ignore[no-any-return]


def _blas() -> list[Any]:
    global _blas_libs, _blas_getters
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # a dependency; without it BLAS keeps its own count
            libs = []
        else:
            libs = ThreadpoolController().select(user_api="blas").lib_controllers
            libs = [lib for lib in libs if lib.num_threads is not None]
        _blas_getters = [_getter(lib) for lib in libs]
        _blas_libs = libs
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
            _blas_saved = [get() for get in _blas_getters]
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


def _forget_threads() -> None:
    # A forked child has none of its parent's threads: its pools start anew.
    _POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads)


def _pool(n: int) -> ThreadPoolExecutor:
    pool = _POOLS.get(n)
    if pool is None:  # threads start at the first task: a pool made twice costs nothing
        pool = _POOLS.setdefault(n, ThreadPoolExecutor(n, thread_name_prefix="irrun"))
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


# Blocks per thread.  Blocks are handed out one at a time to whichever thread is free,
# the calling thread included: on a machine whose other cores are busy (a pool thread
# not scheduled for a few milliseconds), the caller does the blocks the late thread
# would have, and a run takes about what it does on one thread instead of waiting
# for the late one.  More blocks balance better and cost more calls of ``fn``.
BLOCKS_PER_THREAD = 4


def map_blocks(fn: Callable[[int, int], T], n: int, min_block: int = 1) -> list[T]:
    """``fn(start, stop)`` over contiguous blocks covering ``range(n)``, on the run's threads.

    Up to :data:`BLOCKS_PER_THREAD` blocks per thread, none holding fewer than
    ``min_block`` items (small work is not worth a thread's hand-off); with one block,
    ``fn(0, n)`` runs on the calling thread and nothing else happens.  Blocks go to
    whichever thread is free, the calling thread included, and results come back in
    block order; the first exception, in block order, is raised once every block has
    ended.  Every block sees ``current() == 1`` and the caller's other context
    variables (NumPy's error state), and BLAS runs on one thread while they do (see
    the module's notes).

    Handing work to a thread and waiting for it costs some 20-60 µs (a wake-up through
    the executor's queue, more on a busy machine): callers choose ``min_block`` so that
    a block is worth well over that.

    >>> with using(2):
    ...     map_blocks(lambda a, b: (a, b), 7)
    [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
    >>> with using(2):
    ...     map_blocks(lambda a, b: (a, b), 7, min_block=3)
    [(0, 4), (4, 7)]
    """
    threads = current()
    most = n // max(min_block, 1)
    helpers = min(threads, most) - 1
    if helpers <= 0:
        return [fn(0, n)]
    work = _Blocks(fn, split(n, min(most, threads * BLOCKS_PER_THREAD)))
    pool = _pool(threads - 1)
    with blas_limit(1):
        for _ in range(helpers):
            # A copy of the caller's context for each: one context runs in one thread.
            pool.submit(contextvars.copy_context().run, work.help)
        with using(1):
            work.take()
        work.wait()
    for ok, value in work.results:
        if not ok:
            raise value
    return [value for _, value in work.results]


class _Blocks:
    """Blocks handed out to threads one at a time, and their results."""

    def __init__(self, fn: Callable[[int, int], Any], blocks: list[tuple[int, int]]) -> None:
        self.fn, self.blocks = fn, blocks
        self.next = itertools.count()  # next() on it is atomic under the GIL
        self.results: list[tuple[bool, Any]] = [(True, None)] * len(blocks)
        self.left = len(blocks)
        self.done = threading.Condition(threading.Lock())

    def take(self) -> None:
        """Run blocks until none is left to start."""
        while (i := next(self.next)) < len(self.blocks):
            try:
                result = (True, self.fn(*self.blocks[i]))
            except BaseException as e:  # raised by map_blocks, in block order
                result = (False, e)
            with self.done:
                self.results[i] = result
                self.left -= 1
                if not self.left:
                    self.done.notify_all()

    def help(self) -> None:
        """:meth:`take` on a pool thread (which may start after every block is done)."""
        _CURRENT.set(1)
        self.take()

    def wait(self) -> None:
        """Until every block started has ended (each was started by some thread)."""
        with self.done:
            while self.left:
                self.done.wait()
