"""Hard NonMaxSuppression-5 and -9 over overlapping pairs (irrun.fast.detection) against
the reference kernel: the same selections, scores and counts, bit for bit, over box
encodings, element types, layouts, batches and classes, tied scores and boxes on a grid
(IoUs exactly at the threshold, touching and identical boxes, empty ones), NaN and
infinite coordinates and scores, limits, sorting; in chunks of a few pairs; and where it
gives way to the reference; the same with the pairs and the selection compiled
(nms_jit, where numba is installed)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bits import assert_same_outcome, outcome

from irrun.fast import detection, fast_kernel, nms_jit
from irrun.ir import element_types
from irrun.ir.registry import supported_ops

ET = element_types.ELEMENT_TYPES
OPS = sorted((op for op in supported_ops()
              if op.type == "NonMaxSuppression" and op.version in (5, 9)),
             key=lambda o: o.label)  # fmt: skip
COORDINATES = st.one_of(
    st.integers(-2, 6).map(float),  # a grid: ties, touching boxes, IoUs of simple fractions
    st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 0.5, 1e-30, 1e30]),
    st.floats(-10, 10, width=32),
)
SCORES = st.one_of(st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5, 1.0, np.nan, np.inf, -np.inf]),
                   st.floats(-1, 1, width=32))  # fmt: skip


def _attrs(encoding: str, descending: bool, output_type: str) -> SimpleNamespace:
    return SimpleNamespace(box_encoding=encoding, sort_result_descending=descending,
                           output_type=ET[output_type])  # fmt: skip


@st.composite
def _cases(draw):
    batches, classes, n = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(0, 24))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    boxes = np.array(draw(st.lists(COORDINATES, min_size=batches * n * 4, max_size=batches * n * 4)),
                     np.float64).reshape(batches, n, 4)  # fmt: skip
    scores = np.array(draw(st.lists(SCORES, min_size=batches * classes * n,
                                    max_size=batches * classes * n)),
                      np.float64).reshape(batches, classes, n)  # fmt: skip
    with np.errstate(over="ignore"):
        boxes, scores = boxes.astype(dtype), scores.astype(dtype)
    if draw(st.booleans()):  # a strided view
        wide = np.zeros((batches, n, 8), dtype)
        wide[..., ::2] = boxes
        boxes = wide[..., ::2]
    per_class = draw(st.sampled_from([0, 1, 2, 5, 2**31 - 1]))
    iou = draw(st.sampled_from([0.5, 1 / 3, 0.25, 1.0, 0.7, 1e-6, 2.0]))
    score = draw(st.sampled_from([-np.inf, 0.0, 0.25, 0.5, np.float32(-3.4028235e38)]))
    attrs = _attrs(draw(st.sampled_from(["corner", "center"])), draw(st.booleans()),
                   draw(st.sampled_from(["i32", "i64"])))  # fmt: skip
    rest = [np.int64(per_class), np.float32(iou), np.float32(score)]
    if draw(st.booleans()):
        rest.append(np.float32(0.0))  # soft_nms_sigma given as 0: hard NMS
    return attrs, [boxes, scores, *rest]


def _jit(on: bool) -> bool:
    """Whether the compiled pairs and selection (nms_jit) run: skips without numba."""
    if on:
        pytest.importorskip("numba")
    return on


@pytest.mark.parametrize("jit", [False, True], ids=["numpy", "jit"])
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@settings(max_examples=150, deadline=None)
@given(case=_cases(), chunk=st.sampled_from([1, 3, 1 << 16]))
def test_hard_nms_is_the_reference(op, jit, case, chunk):
    attrs, args = case
    on = _jit(jit)
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        want = outcome(op.kernel, attrs, *args)
        patch.setattr(detection, "PAIRS_AT_ONCE", chunk)  # a chunk may hold few pairs
        patch.setattr(nms_jit, "takes", lambda: on)
        got = outcome(fast_kernel(op).run, attrs, *args)
    assert got is not NotImplemented
    assert_same_outcome(got, want)


def _torchvision_like(n: int, classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boxes of many classes in one NMS, each class shifted apart (torchvision's
    batched_nms), scores with ties: [1, n, 4] and [1, 1, n]."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 300, (n, 2))
    wh = rng.uniform(4, 120, (n, 2))
    boxes = np.concatenate([xy, np.minimum(xy + wh, 320)], axis=1)
    boxes += 321 * rng.integers(0, classes, n)[:, None]
    scores = rng.choice(rng.uniform(0, 1, n // 3 + 1), n)  # about three boxes a score
    return boxes[None].astype(np.float32), scores[None, None].astype(np.float32)


@pytest.mark.parametrize("jit", [False, True], ids=["numpy", "jit"])
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@pytest.mark.parametrize("iou", [0.5, 0.7, 0.3])
def test_many_boxes_as_torchvision_gives_them(op, iou, jit, monkeypatch):
    on = _jit(jit)
    monkeypatch.setattr(nms_jit, "takes", lambda: on)
    boxes, scores = _torchvision_like(3000, 20, seed=int(iou * 10))
    attrs = _attrs("corner", False, "i64")
    args = [boxes, scores, np.int64(2**31 - 1), np.float32(iou), np.float32(0.1), np.float32(0)]
    want = op.kernel(attrs, *args)
    got = fast_kernel(op).run(attrs, *args)
    assert 100 < len(want[0]) < 3000  # NMS dropped boxes and kept many
    assert_same_outcome(got, want)


@pytest.mark.parametrize("jit", [False, True], ids=["numpy", "jit"])
def test_greedy_decides_a_chain_one_by_one(jit):
    # each candidate drops the next: every other one is selected (one per round)
    earlier = np.arange(9)
    chosen = detection.greedy(10, earlier, earlier + 1, _jit(jit))
    assert chosen.tolist() == [True, False] * 5


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@pytest.mark.parametrize("rest", [
    [np.int64(5), np.float32(0.5), np.float32(0), np.float32(0.5)],  # soft NMS
    [np.int64(5), np.float32(0.0), np.float32(0)],  # every pair may count
    [np.int64(5), np.float32(-1.0), np.float32(0)],
    [np.int64(5), np.float32(np.nan), np.float32(0)],
    [np.int64([5, 5]), np.float32(0.5), np.float32(0)],  # refused by the reference
], ids=["soft", "iou-0", "iou-negative", "iou-nan", "two-limits"])
def test_it_gives_way(op, rest):
    boxes, scores = _torchvision_like(50, 2, seed=0)
    assert fast_kernel(op).run(_attrs("corner", True, "i64"), boxes, scores, *rest) \
        is NotImplemented  # fmt: skip


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
def test_crowded_boxes_go_to_the_reference(op, monkeypatch):
    boxes, scores = _torchvision_like(200, 1, seed=1)
    attrs = _attrs("corner", True, "i64")
    args = [boxes, scores, np.int64(100), np.float32(0.5), np.float32(0)]
    assert fast_kernel(op).run(attrs, *args) is not NotImplemented
    monkeypatch.setattr(detection, "PAIRS_PER_BOX", 0)
    monkeypatch.setattr(detection, "PAIRS_MIN", 10)
    assert fast_kernel(op).run(attrs, *args) is NotImplemented
