"""ScatterElementsUpdate-3 and -12 by whole slices (irrun.fast.scatter) against the
reference kernel: bit for bit over shapes (indices smaller than data off the axis), axes
(negative too), element types, index types, duplicate and negative rows; and where it
gives way: reductions, indices that vary within a slice, rows out of range."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome

from irrun.fast import fast_kernel
from irrun.ir.registry import supported_ops

OPS = sorted((op for op in supported_ops() if op.type == "ScatterElementsUpdate"),
             key=lambda o: o.label)  # fmt: skip


@st.composite
def _cases(draw, op):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    ax = axis % rank
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float16, np.int32, np.int8, np.bool_])))
    data = draw(laid_out(shape, dtype))
    idx_shape = [draw(st.integers(1, d)) if i != ax else draw(st.integers(0, 6))
                 for i, d in enumerate(shape)]  # fmt: skip
    n = shape[ax]
    rows = draw(st.lists(st.integers(-n - 1 if draw(st.booleans()) else -n, n - 1),
                         min_size=idx_shape[ax], max_size=idx_shape[ax]))  # fmt: skip
    itype = draw(st.sampled_from([np.int32, np.int64, np.int8]))
    view = [1] * rank
    view[ax] = len(rows)
    idx = np.broadcast_to(np.array(rows, itype).reshape(view), idx_shape).copy()
    if draw(st.booleans()) and idx.size > 1:  # an index that differs from its slice's
        flat = idx.reshape(-1)
        flat[draw(st.integers(0, idx.size - 1))] = draw(st.integers(0, n - 1))
    upd = draw(laid_out(tuple(idx_shape), dtype))
    attrs = SimpleNamespace()
    if op.version == 12:
        reduction = draw(st.sampled_from(["none", "none", "sum", "max"]))
        attrs = SimpleNamespace(reduction=reduction, use_init_val=draw(st.booleans()))
    return attrs, [data, idx, upd, np.int64(axis) if draw(st.booleans()) else np.int32([axis])]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_slices_are_the_reference(op, data):
    attrs, args = data.draw(_cases(op))
    want = outcome(op.kernel, attrs, *args)
    got = outcome(fast_kernel(op).run, attrs, *args)
    if got is NotImplemented:
        return
    assert getattr(attrs, "reduction", "none") == "none"
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
def test_torchvision_roi_levels_take_it(op):
    # MultiScaleRoIAlign: result[idx_in_level] = pooled, rows in any order, repeated
    rng = np.random.default_rng(0)
    data = np.zeros((40, 8, 3, 3), np.float32)
    rows = rng.integers(0, 40, 30)
    idx = np.broadcast_to(rows[:, None, None, None], (30, 8, 3, 3)).astype(np.int32)
    upd = rng.standard_normal((30, 8, 3, 3)).astype(np.float32)
    attrs = SimpleNamespace(reduction="none", use_init_val=True)
    got = fast_kernel(op).run(attrs, data, idx, upd, np.int64(0))
    assert got is not NotImplemented
    assert_same_outcome(got, op.kernel(attrs, data, idx, upd, np.int64(0)))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@pytest.mark.parametrize("case", ["varies", "out-of-range", "sum"])
def test_it_gives_way(op, case):
    data = np.zeros((4, 3), np.float32)
    idx = np.array([[1, 1, 1], [2, 2, 2]], np.int64)
    if case == "varies":
        idx[1, 2] = 3
    if case == "out-of-range":
        idx[1] = 4
    attrs = SimpleNamespace(reduction="sum" if case == "sum" else "none", use_init_val=True)
    if case == "sum" and op.version == 3:
        return
    got = fast_kernel(op).run(attrs, data, idx, np.ones((2, 3), np.float32), np.int64(0))
    assert got is NotImplemented
