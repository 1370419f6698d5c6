"""The fast pooling kernels (irrun/fast/{max,avg,adaptive}_pool.py) against the reference
kernels of irrun/ops, bit for bit.

The fast kernels add and compare in the reference's order (a sum adds its window's taps
in row-major order from +0.0; a maximum is the first strictly greater tap), so every
output must be the same bits: values, indices and their types.  Only NaN's payload may
differ (which NaN an addition of two returns is the CPU's pick of an operand), so NaN
must stand where the reference has NaN and everything else must be the same bits,
zeros' signs included.  Hypothesis draws the geometry (1-3 spatial axes, kernels,
strides, dilations, pads, auto_pad, rounding), every element type the pools take,
strided inputs, empty spatial axes, and values full of ties, NaN, infinities, the start
value of a maximum and zeros of both signs; half the examples run in chunks of a few
planes.  The reference kernels themselves are checked against OpenVINO in
tests/ops/test_pooling.py and the other pool tests.
"""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from irrun import threads
from irrun.errors import OpError
from irrun.fast import adaptive_pool as fast_adaptive
from irrun.fast import avg_pool as fast_avg
from irrun.fast import fast_kernel
from irrun.fast import max_pool as fast_max
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import TensorInfo, resolve
from irrun.ops.window import AUTO_PADS, POOL_TYPES

DTYPES = {name: ELEMENT_TYPES[name].dtype for name in POOL_TYPES}
LOWEST_F32 = np.finfo(np.float32).min
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, LOWEST_F32, 1e-45, -1e-45, 3e38]


def _op(op_type: str, version: int):
    return resolve(op_type, f"opset{version}")


def _same(got: np.ndarray | None, want: np.ndarray | None, what: str) -> None:
    """Bit for bit, but that any NaN stands for any other."""
    assert (got is None) == (want is None), what
    if got is None:
        return
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    bits = np.dtype(f"u{got.dtype.itemsize}")
    if got.dtype.kind in "fV":  # floats and bf16
        g32, w32 = got.astype(np.float32), want.astype(np.float32)
        nan = np.isnan(w32)
        np.testing.assert_array_equal(np.isnan(g32), nan, err_msg=f"{what}: NaN positions")
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(got.view(bits), want.view(bits), err_msg=what)


@st.composite
def _inputs(draw, shape, dtype_name: str) -> np.ndarray:
    """An array of ``shape`` and type: ties, specials, and sometimes a strided view."""
    dtype = DTYPES[dtype_name]
    size = int(np.prod(shape))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype_name == "boolean":
        flat = rng.random(size) < 0.5
    elif dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        flat = rng.integers(-2, 3, size).astype(np.float64)  # ties
        normal = rng.random(size) < 0.5
        flat[normal] = rng.standard_normal(int(normal.sum()))
        pick = rng.random(size)
        specials = np.array(SPECIAL)[rng.integers(0, len(SPECIAL), size)]
        flat = np.where(pick < draw(st.sampled_from([0.0, 0.3, 0.7])), specials, flat)
        with np.errstate(over="ignore"):
            flat = flat.astype(np.float32).astype(dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(2**40)), min(int(info.max), 2**40)
        flat = rng.integers(-3, 4, size).clip(lo, hi)
        edges = rng.random(size) < 0.2
        flat[edges] = rng.choice([lo, hi, lo + 1, -(2**31), 2**31 - 1], int(edges.sum())).clip(
            lo, hi)
        flat = flat.astype(dtype)
    x = flat.reshape(shape)
    if draw(st.booleans()):  # the same values as a strided view of a larger array
        wide = np.zeros((*shape[:-1], 2 * shape[-1]), dtype)
        wide[..., ::2] = x
        x = wide[..., ::2]
        assert not x.flags.c_contiguous or x.size <= 1
    return x


def _maybe_tiny_chunks(module, tiny: bool):
    """A context in which ``module``'s plans cut the planes into chunks of ~a plane."""
    module._plan.cache_clear()
    return mock.patch.object(module, "CHUNK_BYTES", 64 if tiny else module.CHUNK_BYTES)


@st.composite
def _window_pools(draw, op_type: str):
    version = draw(st.sampled_from([1, 8, 14] if op_type == "MaxPool" else [1, 14, 16]))
    op = _op(op_type, version)
    n = draw(st.integers(1, 3))
    ints = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=n, max_size=n)  # noqa: E731
    a = SimpleNamespace(
        kernel=tuple(draw(ints(1, 4))), strides=tuple(draw(ints(1, 3))),
        pads_begin=tuple(draw(ints(0, 5))), pads_end=tuple(draw(ints(0, 5))),
        auto_pad=draw(st.sampled_from(AUTO_PADS)),
        rounding_type=draw(st.sampled_from(["floor", "ceil", "ceil_torch"][: 2 + (version >= 14)])),
    )
    if (op_type, version) in (("MaxPool", 8), ("MaxPool", 14), ("AvgPool", 16)):
        a.dilations = tuple(draw(ints(1, 3)))
    # An IR may give pads and dilations as "": zeros and ones, as OpenVINO reads them.
    for name in ("pads_begin", "pads_end", "dilations"):
        if hasattr(a, name) and draw(st.integers(0, 5)) == 0:
            setattr(a, name, ())
    if op_type == "AvgPool":
        a.exclude_pad = draw(st.booleans())
    if op_type == "MaxPool" and version >= 8:
        a.index_element_type = ELEMENT_TYPES[draw(st.sampled_from(["i32", "i64"]))]
        a.axis = draw(st.integers(-(n + 2), n + 1))
    dtype_name = draw(st.sampled_from(POOL_TYPES))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)),
             *draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    try:
        op.check(a)
        op.infer(a, [TensorInfo(shape, ELEMENT_TYPES[dtype_name])])
    except OpError:
        assume(False)
    return op, a, draw(_inputs(shape, dtype_name))


NEEDED = [(True, True), (True, False), (False, True)]


@settings(max_examples=300, deadline=None)
@given(_window_pools("MaxPool"), st.sampled_from(NEEDED), st.booleans())
def test_max_pool_fast_is_the_reference(case, needed, tiny):
    op, a, x = case
    with _maybe_tiny_chunks(fast_max, tiny):
        kw = {"needed": needed} if op.version >= 8 else {}
        got = fast_kernel(op).run(a, x, **kw)
        fast_max._plan.cache_clear()
    want = op.kernel(a, x)
    event("fast" if got is not NotImplemented else "reference")
    if got is NotImplemented:
        return
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if op.version >= 8 and not needed[i]:
            continue  # an output not asked for may be left out
        _same(g, w, f"{op.label} output {i}")


@settings(max_examples=300, deadline=None)
@given(_window_pools("AvgPool"), st.booleans())
def test_avg_pool_fast_is_the_reference(case, tiny):
    op, a, x = case
    with _maybe_tiny_chunks(fast_avg, tiny):
        got = fast_kernel(op).run(a, x)
        fast_avg._plan.cache_clear()
    event("fast" if got is not NotImplemented else "reference")
    if got is not NotImplemented:
        _same(got[0], op.kernel(a, x)[0], op.label)


@st.composite
def _adaptive_pools(draw, op_type: str):
    n = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    outs = [draw(st.integers(1, s + 3)) for s in sizes]
    dtype_name = draw(st.sampled_from(POOL_TYPES))
    if op_type == "AdaptiveAvgPool" and dtype_name == "boolean" and all(o == 1 for o in outs):
        assume(False)  # refused by the shape rule: the plugin's ReduceMean takes numbers only
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *sizes)
    a = SimpleNamespace()
    if op_type == "AdaptiveMaxPool":
        a.index_element_type = ELEMENT_TYPES[draw(st.sampled_from(["i32", "i64"]))]
    return _op(op_type, 8), a, draw(_inputs(shape, dtype_name)), np.array(outs, np.int64)


@settings(max_examples=200, deadline=None)
@given(_adaptive_pools("AdaptiveAvgPool"), st.booleans())
def test_adaptive_avg_pool_fast_is_the_reference(case, tiny):
    op, a, x, target = case
    with _maybe_tiny_chunks(fast_adaptive, tiny):
        got = fast_kernel(op).run(a, x, target)
        fast_adaptive._plan.cache_clear()
    event("fast" if got is not NotImplemented else "reference")
    if got is not NotImplemented:
        _same(got[0], op.kernel(a, x, target)[0], op.label)


@settings(max_examples=200, deadline=None)
@given(_adaptive_pools("AdaptiveMaxPool"), st.sampled_from(NEEDED), st.booleans())
def test_adaptive_max_pool_fast_is_the_reference(case, needed, tiny):
    op, a, x, target = case
    with _maybe_tiny_chunks(fast_adaptive, tiny):
        got = fast_kernel(op).run(a, x, target, needed=needed)
        fast_adaptive._plan.cache_clear()
    event("fast" if got is not NotImplemented else "reference")
    if got is NotImplemented:
        return
    want = op.kernel(a, x, target)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if needed[i]:
            _same(g, w, f"{op.label} output {i}")


# ---------------------------------------------------------------------- where each applies


def _attrs(n=2, k=3, s=2, p=1, exclude_pad=True):
    return SimpleNamespace(kernel=(k,) * n, strides=(s,) * n, pads_begin=(p,) * n,
                           pads_end=(p,) * n, auto_pad="explicit", rounding_type="floor",
                           dilations=(1,) * n, exclude_pad=exclude_pad,
                           index_element_type=ELEMENT_TYPES["i64"], axis=0)


@pytest.mark.parametrize(("op_type", "version"), [("MaxPool", 8), ("AvgPool", 1)])
def test_the_window_pools_apply_to_usual_geometry_and_leave_huge_pads_to_the_reference(
        op_type, version):
    op = _op(op_type, version)
    x = np.random.default_rng(0).standard_normal((1, 4, 12, 12)).astype(np.float32)
    assert fast_kernel(op).run(_attrs(), x) is not NotImplemented
    # 1000 border outputs, and a kernel past the input: each left to the reference.
    huge = _attrs(p=1000, s=1, exclude_pad=False)
    assert fast_kernel(op).run(huge, x) is NotImplemented
    assert fast_kernel(op).run(_attrs(k=20, p=9, s=1, exclude_pad=False), x) is NotImplemented


def test_the_adaptive_pools_leave_windows_longer_than_their_count_to_the_reference():
    x = np.random.default_rng(0).standard_normal((1, 4, 50)).astype(np.float32)
    avg, top = _op("AdaptiveAvgPool", 8), _op("AdaptiveMaxPool", 8)
    a = SimpleNamespace(index_element_type=ELEMENT_TYPES["i64"])
    assert fast_kernel(top).run(a, x, np.array([10])) is not NotImplemented
    assert fast_kernel(top).run(a, x, np.array([2])) is NotImplemented
    assert fast_kernel(avg).run(a, x, np.array([2])) is NotImplemented
    assert fast_kernel(avg).run(a, x, np.array([1])) is not NotImplemented  # a whole plane
    assert fast_kernel(avg).run(a, x.astype(np.int32), np.array([1])) is NotImplemented


@pytest.mark.parametrize("op_type", ["MaxPool", "AvgPool"])
def test_the_window_pools_on_two_threads_are_the_reference(op_type):
    # Blocks of planes go to the threads only from 8 MiB of input on.
    op = _op(op_type, 8 if op_type == "MaxPool" else 1)
    x = np.random.default_rng(1).standard_normal((2, 64, 128, 130)).astype(np.float32)
    x[:, :, ::7] = -0.0
    x[:, ::5, 3] = np.nan
    a = _attrs()
    with threads.using(2):
        got = fast_kernel(op).run(a, x)
    for g, w in zip(got, op.kernel(a, x), strict=True):
        _same(g, w, op.label)


# ---------------------------------------------------------------------- scratch


SCRATCH_CASES = [
    ("MaxPool", 8, (2, 16, 40, 42), _attrs()),
    ("MaxPool", 1, (1, 8, 12, 13, 14), _attrs(n=3, k=2, s=2, p=0)),
    ("MaxPool", 14, (1, 4, 3, 3), SimpleNamespace(**{**vars(_attrs(p=0, s=1, k=2)),
                                                     "pads_begin": (5000, 0)})),
    ("AvgPool", 1, (2, 16, 40, 42), _attrs(s=1, exclude_pad=False)),
    ("AvgPool", 16, (1, 32, 7, 7), _attrs(k=7, s=1, p=0)),
    ("AvgPool", 14, (1, 3, 200), _attrs(n=1, k=60, s=1, p=30, exclude_pad=False)),
]


def _peak_beyond(kernel, *args) -> int:
    """The most bytes ``kernel(*args)`` held at once beyond the outputs it returned."""
    tracemalloc.start()
    try:
        outputs = kernel(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if outputs is NotImplemented:  # the reference runs instead, checked on its own
        return 0
    return peak - sum(o.nbytes for o in outputs if o is not None)


@pytest.mark.parametrize(("op_type", "version", "shape", "a"), SCRATCH_CASES,
                         ids=[f"{t}{v}-{'x'.join(map(str, s))}" for t, v, s, _ in SCRATCH_CASES])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "u8"])
def test_the_window_pools_hold_no_more_than_their_scratch(op_type, version, shape, a, dtype):
    op = _op(op_type, version)
    et = ELEMENT_TYPES[dtype]
    x = (np.random.default_rng(2).standard_normal(shape) * 50).astype(np.float32).astype(et.dtype)
    infos = [TensorInfo(shape, et)]
    outs = op.infer(a, infos)
    reference = op.scratch(a, infos, outs)
    assert _peak_beyond(op.kernel, a, x) <= reference
    fast = max(fast_kernel(op).scratch(a, infos, outs), reference)  # the plan counts both
    with threads.using(threads.available()):
        assert _peak_beyond(fast_kernel(op).run, a, x) <= fast


@pytest.mark.parametrize("op_type", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
@pytest.mark.parametrize(("shape", "outs"), [((2, 16, 13, 13), (7, 7)), ((1, 3, 1000), (3,)),
                                             ((1, 4, 6, 7, 8), (1, 1, 1))])
def test_the_adaptive_pools_hold_no_more_than_their_scratch(op_type, shape, outs):
    op = _op(op_type, 8)
    a = SimpleNamespace(index_element_type=ELEMENT_TYPES["i64"])
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    target = np.array(outs, np.int64)
    infos = [TensorInfo(shape, ELEMENT_TYPES["f32"]),
             TensorInfo((len(outs),), ELEMENT_TYPES["i64"], target)]
    results = op.infer(a, infos)
    reference = op.scratch(a, infos, results)
    assert _peak_beyond(op.kernel, a, x, target) <= reference
    fast = max(fast_kernel(op).scratch(a, infos, results), reference)
    with threads.using(threads.available()):
        assert _peak_beyond(fast_kernel(op).run, a, x, target) <= fast
