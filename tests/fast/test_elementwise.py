"""Elementwise ops' fast kernels against their reference kernels (irrun.fast.elementwise,
irrun.fast.activations): split over two threads into blocks of any size, bit for bit the
reference, or the reference's error, over shapes from rank 0 to 4 (0-size included),
broadcasting, memory layouts, element types, NaN, infinities and signed zeros.  Gelu in
erf mode reads a table instead (tests/fast/test_gelu_table.py bounds it); its other cases
are here.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome, same_bits, split_small
from support.elementwise_cases import (
    ELEMENTWISE,
    SCALAR_PARAMETERS,
    accepted_types,
    default_attrs,
    filled,
    input_types,
    ports,
)

from irrun.fast import fast_kernel, kernel_for
from irrun.fast.elementwise import BINARY_UFUNCS
from irrun.ops import unary


@st.composite
def _attrs(draw, op, same_shapes: bool) -> SimpleNamespace:
    values = {}
    for a in op.attrs:
        if a.name == "auto_broadcast":
            values[a.name] = draw(st.sampled_from(["numpy", "none"] if same_shapes else ["numpy"]))
        elif a.kind == "enum":
            values[a.name] = draw(st.sampled_from(a.choices))
        elif a.kind == "bool":
            values[a.name] = draw(st.booleans())
        elif a.kind == "float":
            values[a.name] = draw(st.sampled_from([0.0, -0.0, 0.5, 1.0, -2.0, 6.0, np.inf,
                                                   -np.inf]))
    if op.type == "Clamp":
        values["min"], values["max"] = sorted((values["min"], values["max"]))
    return SimpleNamespace(**values)


@st.composite
def cases(draw, op):
    """``(attrs, arrays)`` for ``op``: its data of one accepted type, of shapes that
    broadcast together, each laid out its own way; 0-D parameters where it takes them."""
    dtype = draw(st.sampled_from(accepted_types(op)))
    scalars = SCALAR_PARAMETERS.get(op.type, ())
    count = draw(st.sampled_from([1, 2])) if op.type == "Swish" else ports(op)
    data = [i for i in range(count) if i not in scalars]
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(data), min_dims=0,
                                                    max_dims=4, min_side=0, max_side=4))
    attrs = draw(_attrs(op, len(set(shapes.input_shapes)) == 1))
    types = input_types(op, dtype)
    arrays = []
    for i in range(count):
        shape = () if i in scalars else shapes.input_shapes[data.index(i)]
        arrays.append(draw(laid_out(shape, types[i])))
    return attrs, arrays


def _exact(op, attrs) -> bool:
    return not (op.type == "Gelu" and getattr(attrs, "approximation_mode", "erf") == "erf")


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.label)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_split_over_threads_is_the_reference(op, data):
    attrs, arrays = data.draw(cases(op))
    if not _exact(op, attrs):
        arrays[0] = arrays[0].astype(np.float64)  # Gelu-erf of f64: the reference's values
    want = outcome(op.kernel, attrs, *arrays)
    with split_small(), np.errstate(all="ignore"):
        got = outcome(kernel_for(op), attrs, *arrays)
    assert_same_outcome(got, want)


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.label)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,)], ids=str)
@pytest.mark.parametrize("split", [False, True])
def test_rank_0_and_empty_inputs(op, shape, split):
    """Every elementwise op, reference and fast, on a rank-0 and on empty inputs: an
    array of the right shape and type (ONNX's DynamicQuantizeLinear clamps a 0-D scale;
    an MoE's expert that no token chose gets 0 rows)."""
    dtype = accepted_types(op)[0]
    arrays = filled(op, dtype, shape, 0.5)
    attrs = default_attrs(op)
    (want,) = op.kernel(attrs, *arrays)
    assert isinstance(want, np.ndarray) and want.shape == shape
    with np.errstate(all="ignore"):
        if split:
            with split_small():
                (got,) = kernel_for(op)(attrs, *arrays)
        else:
            (got,) = kernel_for(op)(attrs, *arrays)
    assert isinstance(got, np.ndarray) and got.shape == shape and got.dtype == want.dtype
    if _exact(op, attrs) or dtype == np.float64:
        assert same_bits(got, want)


def test_every_elementwise_op_has_a_fast_kernel():
    missing = [op.label for op in ELEMENTWISE if fast_kernel(op) is None]
    assert not missing


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda o: o.label)
def test_the_work_is_split(op):
    arrays = filled(op, accepted_types(op)[0], (3, 4), 2)
    with split_small() as splits, np.errstate(all="ignore"):
        kernel_for(op)(default_attrs(op), *arrays)
    assert splits and max(splits) > 1


def test_the_split_leaves_pdpd_and_small_work_to_the_reference():
    add = next(op for op in ELEMENTWISE if op.type == "Add")
    run = fast_kernel(add).run
    x, y = np.ones((4, 3), np.float32), np.ones((4,), np.float32)
    with split_small():
        assert run(SimpleNamespace(auto_broadcast="pdpd"), x, y) is NotImplemented
        assert run(SimpleNamespace(auto_broadcast="none"), x, y[:3]) is NotImplemented
        assert run(SimpleNamespace(auto_broadcast="numpy"), x, y[:3]) is not NotImplemented
    # At one thread: the reference for f16 (f32 calls NumPy directly, below).
    xh, yh = x.astype(np.float16), y.astype(np.float16)
    assert run(SimpleNamespace(auto_broadcast="numpy"), xh, yh[:3]) is NotImplemented


DIRECT = [op for op in ELEMENTWISE if op.type in BINARY_UFUNCS or op.type == "Select"
          or (op.type in unary.FUNCTIONS and op.version == unary.FUNCTIONS[op.type][0])]  # fmt: skip


@pytest.mark.parametrize("op", DIRECT, ids=lambda o: o.label)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_one_thread_calls_numpy_directly_with_the_references_bits(op, data):
    """At one thread, f32 and f64 data (integers too for Add, Subtract, Multiply and the
    comparisons, booleans for the comparisons and logic, any type for Select's values;
    NaN, infinities, signed zeros, any layout, broadcasting by ``numpy``, shapes that do
    not broadcast) take NumPy's function at once: the reference's outputs and errors, bit
    for bit; the rest gives way."""
    attrs, arrays = data.draw(cases(op))
    if data.draw(st.booleans()) and len(arrays) == 2 and arrays[1].ndim:
        arrays[1] = arrays[1][..., :0] if arrays[1].shape[-1] > 1 else arrays[1]  # mismatch
    want = outcome(op.kernel, attrs, *arrays)
    with np.errstate(all="ignore"):
        direct = outcome(fast_kernel(op).run, attrs, *arrays)
        got = outcome(kernel_for(op), attrs, *arrays)
    assert_same_outcome(got, want)
    kinds = BINARY_UFUNCS[op.type][1] if op.type in BINARY_UFUNCS else "f"
    dtype = arrays[0].dtype
    floats = dtype.kind in kinds and (dtype.kind != "f" or dtype in (np.float32, np.float64))
    floats = floats and all(a.dtype == arrays[0].dtype for a in arrays)
    if op.type == "Select":  # a boolean condition, then and else of one type
        floats = dtype == np.bool_ and arrays[1].dtype == arrays[2].dtype
    floats = floats and getattr(attrs, "auto_broadcast", "numpy") == "numpy"
    failed = isinstance(want[0], type)
    if not floats:
        assert direct is NotImplemented
    elif not failed:
        assert_same_outcome(direct, want)


BINARY_INTO = [op for op in ELEMENTWISE if op.type in ("Add", "Multiply")]


@pytest.mark.parametrize("op", BINARY_INTO, ids=lambda o: o.label)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_add_and_multiply_into_the_result(op, data):
    """Into the first input's memory where the op gives its type and shape; either
    input may be the one written (the ops commute; a NaN's bits may come from the other
    input then)."""
    attrs, (x, y) = data.draw(cases(op))
    into = fast_kernel(op).into
    for value, other, first in ((x, y, True), (y, x, False)):
        target = np.array(value, copy=True)
        (want,) = op.kernel(attrs, *((value, other) if first else (other, value)))
        with np.errstate(all="ignore"):
            done = into(attrs, target, other)
        if done:
            assert target.dtype in (np.float32, np.float64) and want.shape == target.shape
            assert same_bits(target, want, nan_payloads=first)
        else:
            assert same_bits(target, value)  # untouched


@pytest.mark.parametrize("op", BINARY_INTO, ids=lambda o: o.label)
def test_binary_into_refuses_what_it_cannot_give(op):
    into = fast_kernel(op).into
    numpy = SimpleNamespace(auto_broadcast="numpy")
    f32 = np.ones((2, 3), np.float32)
    for attrs, value, other in (
        (numpy, f32.astype(np.float16), f32.astype(np.float16)),  # f16 is computed in f32
        (numpy, f32[:, :1].copy(), f32),  # the result is larger than the value
        (numpy, f32.copy(), f32.astype(np.float64)),
        (numpy, f32.astype(np.int32), f32.astype(np.int32)),
        (SimpleNamespace(auto_broadcast="pdpd"), f32.copy(), f32[:, 0].copy()),
    ):
        before = value.copy()
        assert not into(attrs, value, other)
        assert same_bits(value, before)
