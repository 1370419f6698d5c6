"""Reductions, SoftMax and LogSoftmax split over two threads (irrun.fast.reduction) against
their reference kernels: bit for bit, over shapes (0-size included), axes, keep_dims,
layouts, element types, NaN, infinities and signed zeros."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome, split_small

from irrun.fast import fast_kernel
from irrun.fast.reduction import REDUCTIONS
from irrun.ir.registry import supported_ops

OPS = sorted((op for op in supported_ops()
              if op.type in (*REDUCTIONS, "SoftMax", "LogSoftmax")), key=lambda o: o.label)


def _types(op) -> list[type]:
    if "Logical" in op.type:
        return [np.bool_]
    if op.type == "LogSoftmax":
        return [np.float32, np.float16, np.float64]
    return [np.float32, np.float16, np.float64, np.int32, np.int8, np.uint8]


@st.composite
def _cases(draw, op):
    dtype = np.dtype(draw(st.sampled_from(_types(op))))
    rank = draw(st.integers(0 if "Reduce" in op.type else 1, 4))
    shape = draw(hnp.array_shapes(min_dims=rank, max_dims=rank, min_side=0, max_side=5))
    x = draw(laid_out(shape, dtype))
    if "Reduce" in op.type:
        axes = draw(st.lists(st.integers(-rank, rank - 1), max_size=rank)) if rank else []
        return SimpleNamespace(keep_dims=draw(st.booleans())), [x, np.int64(axes)]
    low = 0 if op.version == 1 else -rank
    return SimpleNamespace(axis=draw(st.integers(low, rank - 1))), [x]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_split_over_threads_is_the_reference(op, data):
    attrs, args = data.draw(_cases(op))
    want = outcome(op.kernel, attrs, *args)
    with split_small(), np.errstate(all="ignore"):
        got = outcome(fast_kernel(op).run, attrs, *args)
    if got is NotImplemented:
        assert not args[0].flags.c_contiguous or args[0].size < 2
        return
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
def test_the_work_is_split(op):
    x = np.arange(60).reshape(3, 4, 5).astype(_types(op)[0])
    args = [x, np.int64([2])] if "Reduce" in op.type else [x]
    attrs = SimpleNamespace(keep_dims=False, axis=2)
    with split_small() as splits:
        (got,) = fast_kernel(op).run(attrs, *args)
    assert max(splits) > 1
    (want,) = op.kernel(attrs, *args)
    np.testing.assert_array_equal(got, want)


SUMS = [op for op in OPS if op.type in ("ReduceSum", "ReduceMean")]


@pytest.mark.parametrize("op", SUMS, ids=lambda o: o.label)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_one_thread_sums_call_numpy_directly_with_the_references_bits(op, data):
    """At one thread, f32 and f64 data take np.sum at once (any axes, repeated and
    negative ones, keep_dims, 0-size, layouts, NaN and infinities): the reference's bits
    and errors (axes out of range); other types give way."""
    attrs, args = data.draw(_cases(op))
    if data.draw(st.integers(0, 9)) == 0:
        args[1] = np.int64([args[0].ndim + 1])  # out of range
    want = outcome(op.kernel, attrs, *args)
    with np.errstate(all="ignore"):
        got = outcome(fast_kernel(op).run, attrs, *args)
    if args[0].dtype not in (np.float32, np.float64):
        assert got is NotImplemented
        return
    assert_same_outcome(got, want)
