"""Hard NMS's pairs and selection compiled by numba: the fast engine's, where it is on.

Where the fast engine is on (numba installed, ``IRRUN_JIT`` not ``0``: :mod:`.jit`), the
NonMaxSuppression kernel of :mod:`.detection` hands each group's sweep to two compiled
loops: one lists the pairs (earlier, later) whose IoU drops the later box, going over
the same sweep windows, with the IoU computed as :func:`irrun.ops.detection.box_iou`
computes it (f32, each operation rounded on its own: numba compiles without fast-math,
so no fused multiply-add; NaN coordinates give a NaN IoU, which drops nothing); the
other runs the greedy selection over them in order of rank, one pass.  The same pairs
and the same selection as the NumPy path, so the reference's bits
(tests/fast/test_detection.py runs both).  Every run without the engine takes the NumPy
path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import jit


@functools.cache
def kernels() -> tuple[Callable[..., int], Callable[..., None]]:
    """The compiled pair lister and selection; the fast engine must be on."""
    # error_model="numpy": a float division by zero gives inf or NaN, as in NumPy, not
    # Python's ZeroDivisionError.
    return (jit.compile(_pairs, "NMS pairs", error_model="numpy"),
            jit.compile(_select, "NMS selection", error_model="numpy"))


def takes() -> bool:
    """Whether the JIT lists the pairs and selects: the fast engine on."""
    return jit.enabled()


def _pairs(columns, areas, order, ends, consts, at_least, first, second):  # pragma: no cover
    """For each sweep position p and each later position q < ends[p]: the IoU of boxes
    ``order[p]`` and ``order[q]`` (``columns`` [4, m] in the sweep's order, ``areas`` in
    the sweep's order), as box_iou with q's box as ``boxes`` and p's as ``chosen``; the
    pairs it drops (``iou >= t`` with ``at_least``, else ``> t``; ``consts`` is f32
    ``[0, t]``) written to ``first``/``second`` as ranks, earlier first; returns how many
    (-1 if they do not fit)."""
    zero, t = consts[0], consts[1]
    m = order.shape[0]
    k = 0
    for p in range(m):
        c0, c1, c2, c3 = columns[0, p], columns[1, p], columns[2, p], columns[3, p]
        c_area = (c2 - c0) * (c3 - c1)
        for q in range(p + 1, ends[p]):
            b0, b1, b2, b3 = columns[0, q], columns[1, q], columns[2, q], columns[3, q]
            # np.minimum and np.maximum: NaN where either is (a if a is NaN or wins)
            lo = b0 if (b0 != b0 or b0 > c0) else c0
            hi = b2 if (b2 != b2 or b2 < c2) else c2
            d = hi - lo
            h = d if (d != d or d > zero) else zero
            lo = b1 if (b1 != b1 or b1 > c1) else c1
            hi = b3 if (b3 != b3 or b3 < c3) else c3
            d = hi - lo
            w = d if (d != d or d > zero) else zero
            inter = h * w
            a = areas[q]
            iou = inter / (a + c_area - inter)
            if a <= zero or c_area <= zero:
                iou = zero
            if (iou >= t) if at_least else (iou > t):
                if k == first.shape[0]:
                    return -1
                i, j = order[p], order[q]
                first[k] = min(i, j)
                second[k] = max(i, j)
                k += 1
    return k


def _select(m, earlier, later, chosen):  # pragma: no cover - runs compiled
    """Greedy NMS over ``m`` candidates in rank order: ``earlier[k]`` drops ``later[k]``
    if selected (the pairs sorted by ``earlier``); ``chosen`` gets the selection."""
    dropped = np.zeros(m, np.bool_)
    k = 0
    n = earlier.shape[0]
    for i in range(m):
        keep = not dropped[i]
        chosen[i] = keep
        while k < n and earlier[k] == i:
            if keep:
                dropped[later[k]] = True
            k += 1
