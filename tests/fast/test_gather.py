"""Gather and GatherND by np.take (irrun.fast.gather) against the reference kernels: bit
for bit over shapes (0-size and rank-0 too), axes, layouts, element types, index types,
negative indices; and where they give way (batch dims, indices out of range)."""

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

GATHERS = sorted((op for op in supported_ops() if op.type == "Gather"), key=lambda o: o.label)
GATHER_NDS = sorted((op for op in supported_ops() if op.type == "GatherND"),
                    key=lambda o: o.label)  # fmt: skip
DTYPES = [np.float32, np.float16, np.int64, np.int8, np.bool_]
INDEX_TYPES = [np.int32, np.int64, np.uint8, np.int8]


def _indices(draw, shape, sizes):
    """Indices of ``shape``, each drawn for the matching entry of ``sizes`` (broadcast),
    now and then one out of range."""
    sizes = np.broadcast_to(np.asarray(sizes), shape)
    itype = np.dtype(draw(st.sampled_from(INDEX_TYPES)))
    values = [draw(st.integers(-n if itype.kind == "i" else 0, max(n - 1, 0)))
              for n in sizes.reshape(-1)]  # fmt: skip
    if values and draw(st.integers(0, 9)) == 0:
        values[draw(st.integers(0, len(values) - 1))] = 7
    return np.array(values, np.int64).reshape(shape).astype(itype)


@pytest.mark.parametrize("op", GATHERS, ids=lambda o: o.label)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_gather_is_the_reference(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(laid_out(shape, np.dtype(data.draw(st.sampled_from(DTYPES)))))
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1)) if rank else 0
    idx_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    idx = _indices(data.draw, idx_shape, shape[axis] if rank else 1)
    attrs = SimpleNamespace(batch_dims=data.draw(st.sampled_from([0, 0, 0, 1, -1])))
    args = [x, idx, np.int64(axis) if data.draw(st.booleans()) else np.int32([axis])]
    want = outcome(op.kernel, attrs, *args)
    got = outcome(fast_kernel(op).run, attrs, *args)
    if got is NotImplemented:
        return
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", GATHER_NDS, ids=lambda o: o.label)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_gather_nd_is_the_reference(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    x = data.draw(laid_out(shape, np.dtype(data.draw(st.sampled_from(DTYPES)))))
    k = data.draw(st.integers(1, len(shape)))
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    idx = _indices(data.draw, (*lead, k), np.array(shape[:k]))
    attrs = SimpleNamespace(batch_dims=data.draw(st.sampled_from([0, 0, 0, 1])))
    want = outcome(op.kernel, attrs, x, idx)
    got = outcome(fast_kernel(op).run, attrs, x, idx)
    if got is NotImplemented:
        return
    assert attrs.batch_dims == 0
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", GATHERS + GATHER_NDS, ids=lambda o: o.label)
def test_what_ssdlite_gathers_takes_the_fast_way(op):
    scores = np.arange(3234 * 91, dtype=np.float32).reshape(3234, 91)
    attrs = SimpleNamespace(batch_dims=0)
    if op.type == "Gather":
        args = [scores, np.int64(-5), np.int64(1)]
    else:
        args = [scores[:, 3].copy(), np.array([[7], [0], [-1]], np.int64)]
    got = fast_kernel(op).run(attrs, *args)
    assert got is not NotImplemented
    assert_same_outcome(got, op.kernel(attrs, *args))


@pytest.mark.parametrize("op", GATHERS + GATHER_NDS, ids=lambda o: o.label)
def test_out_of_range_gives_way(op):
    attrs = SimpleNamespace(batch_dims=0)
    x = np.ones((3, 2), np.float32)
    args = [x, np.int64([3]), np.int64(0)] if op.type == "Gather" else [x, np.int64([[3]])]
    assert fast_kernel(op).run(attrs, *args) is NotImplemented
