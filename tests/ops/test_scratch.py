"""Kernels hold no more memory beside their inputs and outputs than their ``OpDef.scratch``
declares (irrun/ops/_scratch.py): measured with ``tracemalloc``, which sees NumPy's
arrays, for the elementwise ops, reductions, SoftMax, MatMul, the normalizations and
attention, in each element type they take, and for the data movement, indexing, sorting
and detection ops of tests/support/scratch_cases.py; the reference kernels, and a default
run's (the fast kernel where it applies) on one thread and on two.  Every op declares its
scratch, ``nothing`` included, so that none is left out of the plan by omission."""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace as NS

import numpy as np
import pytest
from support.elementwise_cases import ELEMENTWISE, accepted_types, default_attrs, filled
from support.scratch_cases import cases as movement_cases

from irrun import threads
from irrun.fast import blocks, kernel_for, scratch_bytes
from irrun.ir.element_types import ELEMENT_TYPES, of_array
from irrun.ir.registry import TensorInfo, resolve, supported_ops

SHAPE = (8, 64, 64)
# Python's own objects and NumPy's small arrays while a kernel runs.
SLACK = 32 * 1024


def held(op, attrs, arrays, kernel) -> tuple[int, int]:
    """(bytes ``kernel`` held beside its inputs and outputs at its peak, the scratch a
    plan counts for it)."""
    with np.errstate(all="ignore"):
        kernel(attrs, *arrays)  # caches (Gelu's table) made once, apart
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with np.errstate(all="ignore"):
            outputs = [o for o in kernel(attrs, *arrays) if o is not None]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Scalars (an axis, a count) are known as a plan knows its Consts.
    infos = [TensorInfo(np.shape(a), of_array(np.asarray(a)), np.asarray(a) if np.ndim(a) == 0
                        else None) for a in arrays if a is not None]  # fmt: skip
    outputs = [np.asarray(o) for o in outputs]
    declared = scratch_bytes(op, attrs, infos, [TensorInfo(o.shape, of_array(o)) for o in outputs])
    return peak - base - sum(o.nbytes for o in outputs), declared


KERNELS = ["reference", "default", "default-2-threads"]


def _held(op, attrs, arrays, which: str) -> tuple[int, int]:
    if which == "reference":
        return held(op, attrs, arrays, op.kernel)
    if which == "default":
        return held(op, attrs, arrays, kernel_for(op))
    # Split into blocks and pieces as 2**20 elements and more would be.
    saved = blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE
    blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE = 1 << 10, 1 << 8, 1 << 12
    try:
        with threads.using(2):
            return held(op, attrs, arrays, kernel_for(op))
    finally:
        blocks.MIN_SPLIT, blocks.MIN_BLOCK, blocks.PIECE = saved


def _elementwise_cases():
    for op in ELEMENTWISE:
        for dtype in accepted_types(op):
            modes = ("erf", "tanh") if op.type == "Gelu" and op.version == 7 else (None,)
            for mode in modes:
                yield pytest.param(op, dtype, mode, id=f"{op.label}-{dtype.name}-{mode}")


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize(("op", "dtype", "mode"), list(_elementwise_cases()))
def test_elementwise_kernels_hold_what_they_declare(op, dtype, mode, which):
    attrs = default_attrs(op)
    if mode:
        attrs.approximation_mode = mode
    for value in (0.7, -1.0):  # -1: integer powers with negative exponents
        arrays = filled(op, dtype, SHAPE, value)
        got, declared = _held(op, attrs, arrays, which)
        assert got <= declared + SLACK, (value, got, declared)


def _others():
    f32, f16, f64, i32 = (np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32))
    for dtype in (f32, f16, f64, i32):
        x = np.full(SHAPE, 0.7 if dtype.kind == "f" else 3, dtype)
        for name in ("ReduceMean", "ReduceMax", "ReduceSum", "ReduceProd", "ReduceMin",
                     "ReduceL1", "ReduceL2"):
            for axes in ([2], [0], [1, 2]):
                yield resolve(name, "opset4"), NS(keep_dims=False), [x, np.int64(axes)]
        yield resolve("CumSum", "opset3"), NS(exclusive=True, reverse=True), [x, np.int64(1)]
        if dtype.kind != "f":
            continue
        for axis in (2, 0):
            yield resolve("SoftMax", "opset8"), NS(axis=axis), [x]
            yield resolve("LogSoftmax", "opset8"), NS(axis=axis), [x]
        for ta in (False, True):
            yield (resolve("MatMul", "opset1"), NS(transpose_a=ta, transpose_b=ta),
                   [x, np.full((64, 64), 0.5, dtype)])
        c = np.linspace(0.5, 1.5, 64).astype(dtype)
        for axes in ([2], [1, 2]):
            yield (resolve("MVN", "opset6"),
                   NS(normalize_variance=True, eps=1e-5, eps_mode="inside_sqrt"),
                   [x, np.int64(axes)])
        yield (resolve("MVN", "opset2"), NS(normalize_variance=True, eps=1e-5,
                                            across_channels=True, reduction_axes=()), [x])
        yield resolve("BatchNormInference", "opset5"), NS(epsilon=1e-5), [x, c, c, c, c]
        yield resolve("NormalizeL2", "opset1"), NS(eps=1e-5, eps_mode="add"), [x, np.int64([1, 2])]
        for axes in ([1], [1, 2]):
            yield (resolve("LRN", "opset1"), NS(alpha=1e-4, beta=0.75, bias=1.0, size=5),
                   [x, np.int64(axes)])
        yield resolve("GroupNormalization", "opset12"), NS(num_groups=8, epsilon=1e-5), [x, c, c]
        yield resolve("PRelu", "opset1"), NS(), [x, c]
        yield resolve("Selu", "opset1"), NS(), [x, np.ones(1, dtype), np.ones(1, dtype)]
        q = np.full((2, 4, 64, 32), 0.3, dtype)
        sdpa = resolve("ScaledDotProductAttention", "opset13")
        yield sdpa, NS(causal=False), [q, q, q]
        yield sdpa, NS(causal=True), [q, q, q]
        yield sdpa, NS(causal=False), [q, q[:, :, :16], q[:, :, :16], np.zeros((64, 16), dtype)]
        yield sdpa, NS(causal=False), [q, q, q, None, None, np.zeros((2, 4, 64, 1), dtype)]
        promote = resolve("ConvertPromoteTypes", "opset14")
        yield promote, NS(promote_unsafe=True, pytorch_scalar_promotion=False,
                          u64_integer_promotion_target=ELEMENT_TYPES["f32"]), [x, x.astype(np.int64)]


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize("case", list(_others()),
                         ids=lambda c: f"{c[0].label}-{c[2][0].dtype}-{len(c[2])}")
def test_other_kernels_hold_what_they_declare(case, which):
    op, attrs, arrays = case
    got, declared = _held(op, attrs, arrays, which)
    assert got <= declared + SLACK, (got, declared)


def _movement():
    for dtype in map(np.dtype, (np.float32, np.float16, np.float64, np.int32, np.uint8)):
        for op, attrs, arrays in movement_cases(dtype):
            yield pytest.param(op, attrs, arrays, id=f"{op.label}-{dtype.name}")


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize(("op", "attrs", "arrays"), list(_movement()))
def test_movement_and_indexing_kernels_hold_what_they_declare(op, attrs, arrays, which):
    got, declared = _held(op, attrs, arrays, which)
    assert got <= declared + SLACK, (got, declared)


def test_every_op_declares_its_scratch():
    import irrun.core.subgraphs  # noqa: F401  (If, Loop and TensorIterator register there)

    assert [op.label for op in supported_ops() if op.scratch is None] == []


def test_an_embedding_lookup_declares_a_row_not_its_table():
    """An LLM's token embedding (a Gather of one row of [32000, 1024] at a decode step):
    counting the table would make every step look large enough to check against the
    memory available (see irrun.core.budget)."""
    op = resolve("Gather", "opset8")
    f32, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]
    inputs = [TensorInfo((32000, 1024), f32), TensorInfo((1, 1), i64),
              TensorInfo((), i64, np.array(0))]  # fmt: skip
    declared = scratch_bytes(op, NS(batch_dims=0), inputs, [TensorInfo((1, 1, 1024), f32)])
    assert declared == 16 * 1024
