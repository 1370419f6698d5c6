"""Helpers of the fast kernels' tests: outcomes compared bit for bit, work split at any size,
arrays with every kind of float value and memory layout."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from hypothesis import strategies as st

from irrun import threads
from irrun.errors import OpError
from irrun.fast import blocks

# Values where kernels' branches and roundings differ.
SPECIALS = (np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45,
            3.0, -3.0, 6.0, 65504.0, -65504.0, 1e30, -1e30)


@contextmanager
def split_small():
    """Fast kernels split work of any size over two threads: blocks of one element of
    their axis, pieces of three elements.  Yields the number of blocks of each split."""
    saved = blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE, threads.map_blocks
    splits: list[int] = []

    def counted(fn, n, min_block=1):
        got = saved[3](fn, n, min_block)
        splits.append(len(got))
        return got

    blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE, threads.map_blocks = 2, 1, 3, counted
    try:
        with threads.using(2):
            yield splits
    finally:
        blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE, threads.map_blocks = saved


def outcome(kernel, *args, **kw):
    """What ``kernel`` gives: its outputs, or the type and message of what it raised."""
    try:
        return kernel(*args, **kw)
    except Exception as exc:  # compared between two kernels, never swallowed
        return (type(exc), str(exc))


def same_bits(a: np.ndarray, b: np.ndarray, nan_payloads: bool = False) -> bool:
    """Whether ``a`` and ``b`` have one type, one shape and the same bits (signed zeros
    and NaN positions included; NaN's own bits only when ``nan_payloads``: which NaN an
    operation on NaN gives, and its sign, depends on whether the CPU took a SIMD or a
    scalar path, which a split into blocks may change)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not nan_payloads and a.dtype.kind == "f":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            return False
        a, b = np.where(nan_a, 0, a).astype(a.dtype), np.where(nan_b, 0, b).astype(b.dtype)
    width = np.dtype(f"u{a.dtype.itemsize}") if a.dtype != np.bool_ else np.dtype(np.uint8)
    return bool(np.array_equal(np.ascontiguousarray(a).view(width),
                               np.ascontiguousarray(b).view(width)))


def assert_same_outcome(got, want) -> None:
    """Both raised alike (an op's error: anything else is a bug), or both gave outputs of
    the same bits."""
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], type):
        assert issubclass(want[0], OpError), want
        assert got == want, (got, want)
        return
    assert not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], type)), got
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, np.ndarray), type(g)
        assert same_bits(g, w), (g, w)


def values(dtype: np.dtype) -> st.SearchStrategy:
    """Elements of ``dtype``: for floats, the special values and any others."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.one_of(st.sampled_from([info.min, info.max, 0, 1, -1 if dtype.kind == "i"
                                          else 2]), st.integers(info.min, info.max))
    width = 8 * dtype.itemsize
    return st.one_of(st.sampled_from(SPECIALS), st.floats(width=width))


@st.composite
def laid_out(draw, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype``: C-contiguous, Fortran-ordered, or a strided
    view (every other element of its last axis)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    flat = draw(st.lists(values(dtype), min_size=n, max_size=n))
    with np.errstate(over="ignore"):
        x = np.array(flat, dtype=np.float64 if dtype.kind == "f" else dtype).astype(dtype)
    x = x.reshape(shape)
    layout = draw(st.sampled_from(["c", "f", "strided"])) if x.ndim else "c"
    if layout == "f":
        return np.asfortranarray(x)
    if layout == "strided":
        wide = np.zeros((*shape[:-1], 2 * shape[-1]), dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    return x
