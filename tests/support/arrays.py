"""Element types and seeded random input arrays for the op tests.

``values`` and ``random_data`` draw an input of a shape and element type from a NumPy
generator (``values``: standard normal floats, integers in [-50, 100); ``random_data``:
normal floats of scale 3, integers within +-1000 clipped to the type); ``dtype_of`` and
``DTYPES`` map IR element type names to NumPy dtypes, ``ET`` to irrun's element types.
"""

from __future__ import annotations

import numpy as np

from irrun.ir.element_types import ELEMENT_TYPES

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "boolean": np.bool_}  # fmt: skip
ET = {name: ELEMENT_TYPES[name] for name in ("f32", "f16", "i32", "i64", "u8", "i8", "boolean")}


def dtype_of(name: str) -> np.dtype:
    return np.dtype({"f32": np.float32, "f16": np.float16, "i32": np.int32, "i8": np.int8,
                     "u8": np.uint8}[name])  # fmt: skip


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "boolean":
        return rng.random(shape) < 0.5
    if dtype in ("f32", "f16"):
        return rng.standard_normal(shape).astype(DTYPES[dtype])
    low = 0 if dtype == "u8" else -50
    return rng.integers(low, 100, shape).astype(DTYPES[dtype])


def random_data(rng, shape, et="f32"):
    dtype = ET[et].dtype
    if dtype.kind == "f":
        return rng.normal(0, 3, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)
