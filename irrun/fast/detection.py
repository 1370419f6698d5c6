"""NonMaxSuppression-5 and -9, hard NMS: IoU only of the pairs of boxes that overlap,
found by a sweep, and the greedy selection decided over those pairs.

The reference (:func:`irrun.ops.detection.non_max_suppression`) selects one box per
step and computes its IoU with every box: ``selected x boxes`` IoUs, one NumPy step per
selected box.  torchvision's post-processing puts all classes in one NMS (the boxes of
each class shifted apart), so a randomly initialised ssdlite320 selects 5,760 of 27,000
boxes, and the reference takes 2 s.

Hard NMS drops a candidate whose IoU with a selected box is above (version 9) or at
least (version 5) ``iou_threshold``; with a threshold above 0 that needs an IoU above
0, so an intersection of positive height and width: ``min(y2, y2') > max(y1, y1')``
and the same along x (a NaN coordinate gives a NaN IoU, which drops nothing).  Here:

1. the candidates (score above ``score_threshold``) are put in the order the reference
   selects them: by score, highest first, equal scores by lowest box index;
2. a sweep along the axis where it finds fewer pairs (boxes sorted by their low
   corner; each paired with those whose low corner lies below its high corner) lists
   the pairs that may overlap; their IoU is the reference's :func:`box_iou`, elementwise
   (IoU is symmetric to the bit: ``areas + c_area`` is one commutative f32 addition), so
   the pairs whose earlier box would drop the later one are exactly the reference's.
   The window is narrower where that is safe: two boxes' IoU is at most their
   intersection's extent along an axis over either box's extent there (``h w / max(a,
   a') <= h / max(e, e')``, as ``w`` is at most either width), so a box ``p`` pairs only
   with boxes whose low corner is below its high corner less ``t e_p``.  The sweep
   leaves out ``0.9 t e_p`` (in f64): an f32 IoU above ``t`` is a true IoU above
   ``t / (1 + 8u)``, far more than ``0.9 t``, where nothing overflows or falls to
   denormals, which coordinates within 1e18 and ``t >= 2^-20`` ensure (an intersection
   that underflows gives an IoU below ``t``); otherwise the window is the whole
   extent;
3. the selection is decided in rounds over those pairs: a candidate dropped by a
   selected one is dropped; a candidate no undecided one can drop is selected.  Each
   round decides at least the first undecided candidate, and usually many at once;
4. the first ``max_output_boxes_per_class`` selected candidates, in order, are the
   group's selections, as the reference's steps give them.

The same boxes, in the same order, with the same scores: bit for bit.  Where
the fast engine is on (numba installed: :mod:`.jit`), steps 2 and 3 run compiled
(:mod:`.nms_jit`), with the same pairs and selection.  It gives way to the reference
for soft NMS (``soft_nms_sigma`` > 0), an ``iou_threshold`` not above 0
(or NaN: every pair may count), inputs the reference would refuse, and boxes that
overlap so much that the pairs outnumber ``PAIRS_PER_BOX`` per candidate plus
``PAIRS_MIN`` (crowded boxes, where the reference's steps are few and short).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.registry import TensorInfo
from ..ops._scratch import static_shape
from ..ops.detection import _corners, box_iou, nms_outputs
from . import nms_jit
from .registry import FastKernel, register_fast

PAIRS_PER_BOX = 256  # the most pairs per candidate the sweep may list ...
PAIRS_MIN = 1 << 20  # ... beyond this many
PAIRS_AT_ONCE = 1 << 16  # pairs whose IoU is computed in one go


def _one_value(x: np.ndarray | None, default, dtype):
    if x is None:
        return default
    values = np.asarray(x).reshape(-1)
    return dtype(values[0]) if values.size == 1 else None


def _sweep(low: np.ndarray, high: np.ndarray, shrink: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Boxes by ``low`` (stable) and, for each in that order, the end (exclusive) of the
    run of later boxes whose ``low`` is below its ``high`` less ``shrink`` times its
    extent; and the pairs so listed."""
    order = np.argsort(low, kind="stable")
    lows, highs = low[order], high[order]
    if shrink:
        lows, highs = lows.astype(np.float64), highs.astype(np.float64)
        highs = highs - shrink * (highs - lows)
    ends = np.searchsorted(lows, highs, side="left")
    ends = np.maximum(ends, np.arange(1, len(order) + 1))
    return order, ends, int((ends - np.arange(1, len(order) + 1)).sum())


def _shrink(corners: np.ndarray, iou_threshold: np.float32) -> float:
    """How much of its extent a box's window may leave out (see the module's docstring):
    ``0.9 * iou_threshold`` where every coordinate is finite and within 1e18 and the
    threshold at least 2^-20, else 0."""
    if not iou_threshold >= 2.0**-20 or not len(corners):
        return 0.0
    with np.errstate(invalid="ignore"):
        tame = bool(np.all(np.abs(corners) <= 1e18))  # NaN is not
    return 0.9 * float(iou_threshold) if tame else 0.0


def overlapping_pairs(corners: np.ndarray, areas: np.ndarray, drops, limit: int,
                      shrink: float = 0.0, jit: tuple | None = None):  # fmt: skip
    """Pairs ``(i, j)`` of rows of ``corners`` (``[m, 4]``, ordered corners) for which
    ``drops(iou)`` holds, each pair once in one of its two orders; None where the sweep
    would list more than ``limit`` pairs.  ``shrink``: see :func:`_shrink`.  ``jit``:
    ``(threshold, at_least)`` to list them compiled (:mod:`.nms_jit`), ``i < j``."""
    m = len(corners)
    sweeps = [(_sweep(corners[:, axis], corners[:, axis + 2], shrink), axis) for axis in (0, 1)]
    (order, ends, count), _ = min(sweeps, key=lambda s: s[0][2])
    if count > limit:
        return None
    # By the sweep's order from here on, a row per coordinate (np.take along a contiguous
    # row is several times faster than fancy indexing of [m, 4] boxes).
    columns = np.ascontiguousarray(corners[order].T)
    box_areas = areas[order]
    if jit is not None:  # the same pairs, listed by compiled loops (nms_jit)
        first = np.empty(count, np.int64)
        second = np.empty(count, np.int64)
        consts = np.array([0, jit[0]], np.float32)
        found = nms_jit.kernels()[0](columns, box_areas, order, ends, consts, jit[1], first,
                                     second)  # fmt: skip
        return first[:found], second[:found]
    starts = np.arange(1, m + 1)
    firsts, seconds = [], []
    p = 0
    while p < m:  # chunks of boxes whose pairs number about PAIRS_AT_ONCE
        counts = ends[p:] - starts[p:]
        q = p + max(1, int(np.searchsorted(np.cumsum(counts), PAIRS_AT_ONCE, side="right")))
        counts = counts[: q - p]
        total = int(counts.sum())
        if total:
            # the k-th pair of box a is (a, a + 1 + k): k counts from the a's first pair
            firsts_at = np.arange(p, q)
            shift = firsts_at + 1 - (np.cumsum(counts) - counts)
            first = np.repeat(firsts_at, counts)
            second = np.arange(total)
            second += np.repeat(shift, counts)
            with np.errstate(all="ignore"):
                iou = box_iou(np.take(columns, second, axis=1).T[:, None, :],
                              np.take(box_areas, second)[:, None],
                              np.repeat(columns[:, p:q], counts, axis=1).T)[:, 0]  # fmt: skip
            hit = drops(iou)
            firsts.append(np.take(order, first[hit]))
            seconds.append(np.take(order, second[hit]))
        p = q
    if not firsts:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return np.concatenate(firsts), np.concatenate(seconds)


def greedy(m: int, earlier: np.ndarray, later: np.ndarray, jit: bool = False) -> np.ndarray:
    """Which of ``m`` candidates, in order, greedy NMS selects when candidate
    ``earlier[k]`` drops ``later[k]`` (``earlier < later``) if it is selected (``jit``:
    in one compiled pass, :mod:`.nms_jit`)."""
    if jit:
        by = np.argsort(earlier, kind="stable")
        chosen = np.empty(m, np.bool_)
        nms_jit.kernels()[1](m, earlier[by], later[by], chosen)
        return chosen
    UNDECIDED, SELECTED, DROPPED = 0, 1, 2
    state = np.zeros(m, np.int8)
    while True:
        before, after = np.take(state, earlier), np.take(state, later)
        live = (before != DROPPED) & (after == UNDECIDED)
        hit = live & (before == SELECTED)
        state[later[hit]] = DROPPED
        live &= ~hit  # both undecided now (later may just have been dropped by another)
        earlier, later = earlier[live], later[live]
        blocked = np.zeros(m, bool)
        blocked[later] = True
        free = (state == UNDECIDED) & ~blocked
        state[free] = SELECTED
        if not (state == UNDECIDED).any():
            return state == SELECTED


def hard_nms(boxes, scores, per_class: int, iou_threshold, score_threshold, version: int,
             encoding: str):  # fmt: skip
    """What the reference's ``non_max_suppression`` returns for hard NMS with an IoU
    threshold above 0, or None where the boxes are too crowded for the sweep."""
    batches, classes, n = scores.shape
    thr_iou, thr_score = np.float32(iou_threshold), np.float32(score_threshold)
    if version == 5:
        def drops(iou):
            return iou >= thr_iou
    else:
        def drops(iou):
            return iou > thr_iou
    limit = max(0, min(per_class, n))
    jit = nms_jit.takes()
    corners_all = _corners(boxes, encoding)
    current = scores.astype(np.float32)
    groups, picks, picked = [], [], []
    for b in range(batches):
        corners = corners_all[b]
        areas = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
        for c in range(classes):
            s = current[b, c]
            candidates = np.flatnonzero(s > thr_score)
            if not len(candidates) or not limit:
                continue
            # the reference's order of selection: by score, then lowest index
            candidates = candidates[np.argsort(-s[candidates], kind="stable")]
            boxes_in = corners[candidates]
            pairs = overlapping_pairs(boxes_in, areas[candidates], drops,
                                      PAIRS_PER_BOX * len(candidates) + PAIRS_MIN,
                                      _shrink(boxes_in, thr_iou),
                                      (thr_iou, version == 5) if jit else None)  # fmt: skip
            if pairs is None:
                return None
            i, j = pairs  # positions in ``candidates``: their ranks
            chosen = greedy(len(candidates), np.minimum(i, j), np.maximum(i, j), jit)
            box = candidates[chosen][:limit]
            groups.append(np.full(len(box), b * classes + c))
            picks.append(box)
            picked.append(s[box])
    if not picks:
        return np.zeros((0, 3), np.int64), np.zeros((0,), np.float32)
    group, box = np.concatenate(groups), np.concatenate(picks)
    selected = np.stack([group // classes, group % classes, box], axis=1).astype(np.int64)
    return selected, np.concatenate(picked)


def _nms(version: int):
    def run(a: SimpleNamespace, boxes: np.ndarray, scores: np.ndarray, *rest: np.ndarray):
        args = list(rest) + [None] * (4 - len(rest))
        per_class = _one_value(args[0], 0, int)
        iou = _one_value(args[1], 0.0, np.float32)
        score = _one_value(args[2], 0.0, np.float32)
        sigma = _one_value(args[3], 0.0, np.float32)
        if (None in (per_class, iou, score, sigma) or sigma > 0 or not iou > 0
                or boxes.ndim != 3 or scores.ndim != 3 or boxes.shape[2] != 4
                or boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2]):
            return NotImplemented
        found = hard_nms(boxes, scores, per_class, iou, score, version, a.box_encoding)
        if found is None:
            return NotImplemented
        return nms_outputs(a, *found)

    return run


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score: its f32 copy and, once selected, its group, box and score; per box of
    the group at work (one at a time): its corners, area, order, rank and state, and its
    share of the pairs (up to PAIRS_PER_BOX, those kept two indices each); plus a chunk's
    temporaries (indices and IoU terms)."""
    scores = static_shape(inputs[1])
    if scores is None or len(scores) != 3:
        return 0
    n = scores[2]
    return (28 * math.prod(scores) + 96 * n + 16 * min(PAIRS_PER_BOX * n + PAIRS_MIN, n * n)
            + 128 * PAIRS_AT_ONCE)  # fmt: skip


for _version in (5, 9):
    register_fast(FastKernel(
        "NonMaxSuppression", (_version,),
        "hard NMS (soft_nms_sigma <= 0) with iou_threshold > 0: the IoU of overlapping pairs "
        "only (a sweep), the selection decided over them (both compiled where numba is "
        f"installed); not where the pairs outnumber {PAIRS_PER_BOX} per candidate plus "
        f"{PAIRS_MIN}",
        _nms(_version), scratch=_scratch))  # fmt: skip
