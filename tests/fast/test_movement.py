"""Reshape, Unsqueeze and Squeeze with their output shape kept (irrun.fast.movement)
against the reference kernels: the same outcome bit for bit (and a view exactly where the
reference gives one), or the same error, over data shapes, layouts, target and axes types,
``special_zero`` and ``allow_axis_skip``, called twice (the second reads the kept shape)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome

from irrun.fast import fast_kernel, movement
from irrun.ir.registry import supported_ops

OPS = sorted((op for op in supported_ops() if op.type in movement.ATTRIBUTES),
             key=lambda o: o.label)  # fmt: skip
INT_TYPES = [np.int64, np.int32, np.int8, np.uint8]


def _second(draw, op, shape) -> np.ndarray | None:
    rank = len(shape)
    dtype = draw(st.sampled_from(INT_TYPES))
    signed = np.dtype(dtype).kind == "i"
    if op.type == "Reshape":
        size = int(np.prod(shape))
        dims = draw(st.lists(st.integers(-1 if signed else 0, 4), min_size=0, max_size=4))
        if draw(st.booleans()) and size:  # a target that fits, now and then
            dims = list(shape) if not dims else [size] if dims[0] > 0 else [-1]
        return np.array(dims, np.int64).astype(dtype)
    if op.type == "Squeeze" and draw(st.booleans()):
        return None
    low = -(rank + 2) if signed else 0
    axes = draw(st.lists(st.integers(low, rank + 1), min_size=0, max_size=3))
    return np.array(axes, np.int64).astype(dtype)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.label)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_kept_shape_is_the_references(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    x = data.draw(laid_out(shape, np.dtype(np.float32)))
    arg = _second(data.draw, op, shape)
    attrs = SimpleNamespace(**{a.name: data.draw(st.booleans()) for a in op.attrs})
    args = [x] if arg is None else [x, arg]
    want = outcome(op.kernel, attrs, *args)
    for _ in range(2):  # the second call reads the kept shape
        got = outcome(fast_kernel(op).run, attrs, *args)
        assert_same_outcome(got, want)
        if not isinstance(want[0], type):
            assert np.shares_memory(got[0], x) == np.shares_memory(want[0], x)
            assert got[0].strides == want[0].strides


def test_the_tables_are_emptied_when_full(monkeypatch):
    monkeypatch.setattr(movement, "KEPT", 3)
    (op,) = [o for o in OPS if o.type == "Unsqueeze"]
    run = fast_kernel(op).run
    run.table.clear()
    for n in range(1, 9):
        x = np.zeros(n, np.float32)
        (got,) = run(SimpleNamespace(), x, np.int64([0]))
        assert got.shape == (1, n) and len(run.table) <= 3


BROADCASTS = sorted((op for op in supported_ops() if op.type == "Broadcast"),
                    key=lambda o: o.label)  # fmt: skip


@pytest.mark.parametrize("op", BROADCASTS, ids=lambda o: o.label)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_broadcast_with_kept_shapes_is_the_reference(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    x = data.draw(laid_out(shape, np.dtype(data.draw(st.sampled_from([np.float32, np.int64,
                                                                         np.bool_])))))  # fmt: skip
    mode = data.draw(st.sampled_from(next(a for a in op.attrs if a.name == "mode").choices))
    extra = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = [*extra, *(d if data.draw(st.booleans()) else data.draw(st.integers(0, 3))
                        for d in shape)]  # fmt: skip
    if mode == "bidirectional" and data.draw(st.booleans()):
        target = target[len(extra):][1:]  # a target shorter than the data
    dtype = data.draw(st.sampled_from(INT_TYPES))
    args = [x, np.array(target, np.int64).astype(dtype)]
    if mode in ("explicit", "none") or data.draw(st.integers(0, 4)) == 0:
        start = len(extra) if data.draw(st.booleans()) else 0
        args.append(np.arange(start, start + len(shape)).astype(dtype))
    attrs = SimpleNamespace(mode=mode)
    want = outcome(op.kernel, attrs, *args)
    for _ in range(2):  # the second call reads the kept shapes
        got = outcome(fast_kernel(op).run, attrs, *args)
        assert_same_outcome(got, want)
        if not isinstance(want[0], type):
            assert got[0].strides == want[0].strides and not np.shares_memory(got[0], x)
