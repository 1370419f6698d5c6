"""OpenVINO element types: their names, NumPy dtypes and bit layouts.

Two spellings exist in IR files.  ``<data element_type="f32">`` and
``index_element_type`` use the canonical lower-case names, matched without
regard to case.  A port's ``precision`` uses the legacy names as well
(``FP32``, ``I64``, ``BOOL``, ``BIN``...), matched exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElementType:
    name: str  # canonical OpenVINO name
    dtype: np.dtype  # dtype of the decoded array
    bits: int  # storage bits per element in a .bin file

    @property
    def packed(self) -> bool:
        """Several elements share one byte (u1, u4, i4)."""
        return self.bits < 8

    def __str__(self) -> str:
        return self.name


def _et(name: str, dtype: object, bits: int) -> ElementType:
    return ElementType(name, np.dtype(dtype), bits)


ELEMENT_TYPES: dict[str, ElementType] = {
    et.name: et
    for et in (
        _et("f64", np.float64, 64),
        _et("f32", np.float32, 32),
        _et("f16", np.float16, 16),
        _et("bf16", ml_dtypes.bfloat16, 16),
        _et("f8e4m3", ml_dtypes.float8_e4m3fn, 8),
        _et("f8e5m2", ml_dtypes.float8_e5m2, 8),
        _et("i64", np.int64, 64),
        _et("i32", np.int32, 32),
        _et("i16", np.int16, 16),
        _et("i8", np.int8, 8),
        _et("u64", np.uint64, 64),
        _et("u32", np.uint32, 32),
        _et("u16", np.uint16, 16),
        _et("u8", np.uint8, 8),
        _et("boolean", np.bool_, 8),
        _et("u1", np.uint8, 1),
        _et("u4", np.uint8, 4),
        _et("i4", np.int8, 4),
    )
}

# Legacy spellings accepted on a port's precision (case-sensitive, as OpenVINO reads them).
_PRECISION_ALIASES = {
    "FP64": "f64", "FP32": "f32", "FP16": "f16", "BF16": "bf16",
    "I64": "i64", "I32": "i32", "I16": "i16", "I8": "i8", "I4": "i4",
    "U64": "u64", "U32": "u32", "U16": "u16", "U8": "u8", "U4": "u4", "U1": "u1",
    "BIN": "u1", "bin": "u1", "BOOL": "boolean",
}  # fmt: skip

# The dtype a NumPy array of each kind maps back to, for naming user arrays.
_BY_DTYPE = {
    et.dtype: et for et in ELEMENT_TYPES.values() if et.bits >= 8 or et.name == "u1"
}
_BY_DTYPE[np.dtype(np.uint8)] = ELEMENT_TYPES["u8"]
_BY_DTYPE[np.dtype(np.int8)] = ELEMENT_TYPES["i8"]


def supported_names() -> str:
    return ", ".join(ELEMENT_TYPES)


def from_attribute(text: str) -> ElementType:
    """Parse an element type written in ``<data>`` (canonical name, any case).

    >>> from_attribute("I32").dtype
    dtype('int32')
    """
    et = ELEMENT_TYPES.get(text.lower())
    if et is None:
        raise ValueError(f"'{text}' is not an element type (expected one of {supported_names()})")
    return et


def from_precision(text: str) -> ElementType:
    """Parse a port ``precision`` (canonical or legacy name, case-sensitive).

    >>> from_precision("FP16").name
    'f16'
    """
    name = _PRECISION_ALIASES.get(text, text)
    et = ELEMENT_TYPES.get(name)
    if et is None:
        raise ValueError(f"'{text}' is not a port precision (expected FP32, f32, I64, ...)")
    return et


def of_array(array: np.ndarray) -> ElementType | None:
    """The element type of a NumPy array, or None for dtypes OpenVINO lacks."""
    return _BY_DTYPE.get(array.dtype)


def decode(raw: np.ndarray, et: ElementType, count: int) -> np.ndarray:
    """Turn ``raw`` little-endian bytes into ``count`` elements of type ``et``.

    Whole-byte types are views on ``raw`` (so a memory-mapped .bin stays mapped);
    packed types are unpacked: u1 most significant bit first, u4/i4 low nibble first.

    >>> decode(np.array([0xB1, 0xC0], np.uint8), ELEMENT_TYPES["u1"], 10).tolist()
    [1, 0, 1, 1, 0, 0, 0, 1, 1, 1]
    >>> decode(np.array([0xF8, 0x07], np.uint8), ELEMENT_TYPES["i4"], 3).tolist()
    [-8, -1, 7]
    """
    if et.name == "u1":
        return np.unpackbits(raw, bitorder="big")[:count]
    if et.bits == 4:
        nibbles = np.empty(raw.size * 2, np.uint8)
        nibbles[0::2] = raw & 0x0F
        nibbles[1::2] = raw >> 4
        nibbles = nibbles[:count]
        if et.name == "i4":
            return (nibbles.astype(np.int8) ^ 8) - 8  # sign-extend two's complement nibbles
        return nibbles
    if et.name == "boolean":
        return raw[:count] != 0  # any non-zero byte is true
    return raw[: count * (et.bits // 8)].view(et.dtype.newbyteorder("<"))


def byte_size(et: ElementType, count: int) -> int:
    """Bytes needed to store ``count`` elements."""
    return (count * et.bits + 7) // 8
