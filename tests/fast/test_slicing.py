"""Slice-8 with its index kept (irrun.fast.slicing) against the reference kernel: bit for
bit over shapes (0-size too), layouts, element types, bound types, negative and
out-of-range bounds, negative steps and axes, called twice (the second call reads the
kept index); the same errors where the bounds are wrong."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome

from irrun.fast import fast_kernel, slicing
from irrun.ir.registry import supported_ops

(SLICE,) = [op for op in supported_ops() if op.type == "Slice"]
BOUND_TYPES = [np.int64, np.int32, np.int8, np.uint8]


def _vector(values, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array([min(max(v, info.min), info.max) for v in values], np.int64).astype(dtype)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_slice_is_the_reference(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    x = data.draw(laid_out(shape, np.dtype(data.draw(st.sampled_from([np.float32, np.int64,
                                                                         np.bool_])))))  # fmt: skip
    rank = len(shape)
    n = data.draw(st.integers(1, rank))
    dtype = data.draw(st.sampled_from(BOUND_TYPES))
    ints = st.integers(-7, 7) | st.sampled_from([2**62, -(2**62)])
    start = _vector(data.draw(st.lists(ints, min_size=n, max_size=n)), dtype)
    stop = _vector(data.draw(st.lists(ints, min_size=n, max_size=n)), dtype)
    step = _vector(data.draw(st.lists(st.sampled_from([-3, -1, 0, 1, 2]),
                                                 min_size=n, max_size=n)), dtype)  # fmt: skip
    axes = None
    if data.draw(st.booleans()):
        axes = _vector(data.draw(st.permutations(range(-rank, 0)))[:n], dtype)
    args = [x, start, stop, step] + ([] if axes is None else [axes])
    attrs = SimpleNamespace()
    want = outcome(SLICE.kernel, attrs, *args)
    for _ in range(2):  # the second reads the index the first kept
        assert_same_outcome(outcome(fast_kernel(SLICE).run, attrs, *args), want)


def test_bounds_of_another_type_with_the_same_bytes_are_another_key():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    attrs = SimpleNamespace()
    for start in (np.int64([1]), np.int32([1, 0])):  # the same 8 bytes
        args = [x, start, np.int64([9]) if start.size == 1 else np.int32([9, 9]),
                np.int64([1]) if start.size == 1 else np.int32([1, 1])]
        assert_same_outcome(outcome(fast_kernel(SLICE).run, attrs, *args),
                            outcome(SLICE.kernel, attrs, *args))  # fmt: skip


def test_the_table_is_emptied_when_full(monkeypatch):
    monkeypatch.setattr(slicing, "KEPT", 4)
    slicing._INDEX.clear()
    attrs = SimpleNamespace()
    for n in range(1, 11):
        x = np.arange(n, dtype=np.float32)
        got = fast_kernel(SLICE).run(attrs, x, np.int64([1]), np.int64([-1]), np.int64([1]))
        np.testing.assert_array_equal(got[0], x[1:-1])
        assert len(slicing._INDEX) <= 4


@pytest.mark.parametrize("bad", ["step0", "lengths"])
def test_wrong_bounds_raise_the_references_error(bad):
    x = np.ones((3, 4), np.float32)
    step = np.int64([0]) if bad == "step0" else np.int64([1, 1])
    args = [x, np.int64([0]), np.int64([2]), step]
    want = outcome(SLICE.kernel, SimpleNamespace(), *args)
    assert isinstance(want, tuple) and isinstance(want[0], type)
    for _ in range(2):
        assert_same_outcome(outcome(fast_kernel(SLICE).run, SimpleNamespace(), *args), want)
