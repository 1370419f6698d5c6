"""Convert's fast way (irrun.fast.convert) against the reference kernel: every source and
target element type (the packed, small-float and ml_dtypes ones give way), NaN,
infinities, values out of every range, layouts: bit for bit where it runs, and it runs for
every pair of NumPy's own number types but float to integer."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import assert_same_outcome, laid_out, outcome

from irrun.fast import fast_kernel
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import supported_ops

(CONVERT,) = [op for op in supported_ops() if op.type == "Convert"]
SOURCES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
           np.uint16, np.uint32, np.uint64, np.bool_]  # fmt: skip
TARGETS = sorted(name for name, et in ELEMENT_TYPES.items()
                 if name not in ("string", "dynamic", "undefined") and et.dtype is not None)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_convert_is_the_reference(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(laid_out(shape, np.dtype(data.draw(st.sampled_from(SOURCES)))))
    et = ELEMENT_TYPES[data.draw(st.sampled_from(TARGETS))]
    attrs = SimpleNamespace(destination_type=et)
    want = outcome(CONVERT.kernel, attrs, x)
    with np.errstate(all="ignore"):  # as in a run
        got = outcome(fast_kernel(CONVERT).run, attrs, x)
    plain = et.name in ("f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                        "u64")  # fmt: skip
    if plain and not (x.dtype.kind == "f" and et.dtype.kind != "f"):
        assert got is not NotImplemented
    if got is NotImplemented:
        return
    assert_same_outcome(got, want)


@pytest.mark.parametrize("target", ["f32", "f16", "i64"])
def test_a_conversion_to_the_same_type_is_a_copy(target):
    x = np.arange(6).astype(ELEMENT_TYPES[target].dtype)
    (got,) = fast_kernel(CONVERT).run(SimpleNamespace(destination_type=ELEMENT_TYPES[target]), x)
    assert not np.shares_memory(got, x) and np.array_equal(got, x)
