"""Freed tensors' memory kept for the next ones, as an inference runtime's arena does.

A run allocates every layer's output afresh and frees it when its last reader is done.
glibc's malloc serves blocks over its mmap threshold (128 KiB at first, raised as such
blocks are freed) with fresh pages from the system, and hands the top of its heap back
once more than twice that lies free there.  Either way the next run's tensors arrive
as pages the kernel must fault in and zero one by one: on mnasnet0_5 that was 660
page faults per run, about a tenth of its time, for memory the previous run had just
given back.

:func:`keep_freed_memory` raises both limits once per process (glibc only): blocks up
to :data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TRIM_THRESHOLD` of free
heap stays in the process, so a run's tensors reuse the pages of the run before, as
onnxruntime's and OpenVINO's own arenas do.  The cost is that the process keeps up to
that much memory after a run instead of returning it.  ``IRRUN_MALLOC=system`` leaves
malloc as it is.  On other C libraries (musl, macOS, Windows) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# The largest mmap threshold glibc accepts on 64-bit (half its heap size); larger
# tensors take fresh pages, which their kernels' work dwarfs.
MMAP_THRESHOLD = 32 * 2**20
TRIM_THRESHOLD = 128 * 2**20


@functools.cache
def keep_freed_memory() -> bool:
    """Set malloc to keep freed tensors' memory (see the module's doc); once per process.
    Whether it did: False with ``IRRUN_MALLOC=system`` or without glibc."""
    if os.environ.get("IRRUN_MALLOC", "").strip().lower() == "system":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: its own allocator's policy stays
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; setting either turns off glibc's dynamic thresholds.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
