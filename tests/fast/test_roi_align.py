"""ROIAlign-3 and -9 by flat row gathers in chunks (irrun.fast.roi_align) against the
reference kernel: bit for bit over maps, regions (inside, across and outside the map,
degenerate, reversed), batch indices, sampling ratios, pooled sizes, modes, aligned modes,
element types, NaN and infinities, and chunks of one region; and where it gives way."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bits import assert_same_outcome, outcome

from irrun.fast import fast_kernel, roi_align
from irrun.ir.registry import supported_ops

OPS = sorted((op for op in supported_ops() if op.type == "ROIAlign"), key=lambda o: o.label)
CORNERS = st.one_of(st.floats(-4, 40, width=32), st.integers(-2, 20).map(float),
                    st.sampled_from([np.nan, np.inf, -np.inf]))  # fmt: skip


@st.composite
def _cases(draw, op):
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 5))
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    data = rng.standard_normal((n, c, h, w)).astype(dtype)
    if draw(st.booleans()):
        data.reshape(-1)[draw(st.integers(0, data.size - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf]))
    r = draw(st.integers(1, 6))
    rois = np.array(draw(st.lists(CORNERS, min_size=4 * r, max_size=4 * r)),
                    np.float64).reshape(r, 4).astype(dtype)  # fmt: skip
    bidx = np.array(draw(st.lists(st.integers(0, n - 1), min_size=r, max_size=r)),
                    draw(st.sampled_from([np.int32, np.int64])))  # fmt: skip
    attrs = SimpleNamespace(pooled_h=draw(st.integers(1, 4)), pooled_w=draw(st.integers(1, 4)),
                            sampling_ratio=draw(st.integers(1, 3)),
                            spatial_scale=draw(st.sampled_from([1.0, 0.5, 0.25, 0.3])),
                            mode=draw(st.sampled_from(["avg", "max"])))  # fmt: skip
    if op.version == 9:
        attrs.aligned_mode = draw(st.sampled_from(["asymmetric", "half_pixel_for_nn",
                                                   "half_pixel"]))  # fmt: skip
    return attrs, [data, rois, bidx]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@settings(max_examples=120, deadline=None)
@given(data=st.data(), chunk=st.sampled_from([1, 1 << 20]))
def test_roi_align_is_the_reference(op, data, chunk):
    attrs, args = data.draw(_cases(op))
    with np.errstate(all="ignore"):
        want = outcome(op.kernel, attrs, *args)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(roi_align, "CHUNK", chunk)  # one region at a time
            got = outcome(fast_kernel(op).run, attrs, *args)
    assert got is not NotImplemented
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
def test_a_faster_rcnn_head_is_the_reference(op):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 64, 20, 20)).astype(np.float32)
    xy = rng.uniform(0, 300, (150, 2))
    rois = np.concatenate([xy, xy + rng.uniform(1, 100, (150, 2))], axis=1).astype(np.float32)
    attrs = SimpleNamespace(pooled_h=7, pooled_w=7, sampling_ratio=2, spatial_scale=1 / 16,
                            mode="avg", aligned_mode="asymmetric")  # fmt: skip
    args = [data, rois, np.zeros(150, np.int64)]
    assert_same_outcome(fast_kernel(op).run(attrs, *args), op.kernel(attrs, *args))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@pytest.mark.parametrize("case", ["adaptive", "no-rois", "bad-batch", "empty-map"])
def test_it_gives_way(op, case):
    attrs = SimpleNamespace(pooled_h=2, pooled_w=2, sampling_ratio=0 if case == "adaptive" else 2,
                            spatial_scale=1.0, mode="avg", aligned_mode="asymmetric")  # fmt: skip
    data = np.ones((1, 2, 0 if case == "empty-map" else 4, 4), np.float32)
    rois = np.zeros((0 if case == "no-rois" else 1, 4), np.float32)
    bidx = np.full(len(rois), 1 if case == "bad-batch" else 0, np.int64)
    assert fast_kernel(op).run(attrs, data, rois, bidx) is NotImplemented
