"""OpenVINO element types: their names, NumPy dtypes and bit layouts.

Two spellings exist in IR files.  ``<data element_type="f32">`` and
``index_element_type`` use the canonical lower-case names, matched without
regard to case.  A port's ``precision`` uses the legacy names as well
(``FP32``, ``I64``, ``BOOL``, ``BIN``, ``F8E4M3``...), matched exactly.

The low-precision floats are ml_dtypes' types: f8e4m3 is ``float8_e4m3fn`` (no
infinities, 0x7f/0xff NaN), f8e5m2 ``float8_e5m2``, f8e8m0 ``float8_e8m0fnu`` (powers
of two 2^-127..2^127, 0xff NaN) and f4e2m1 ``float4_e2m1fn`` (one per byte once
unpacked).  nf4 has no NumPy type: its elements are the 4-bit codes of the NF4 table
(:data:`NF4_TABLE`) in a one-field structured dtype (:data:`NF4`), so that no op takes
them for u8 numbers; Convert turns them into the table's values.  The packed integer
types u1, u2, u3, u4, u6 (uint8) and i4 (int8) hold one element per byte once
unpacked.

``string`` elements are Python ``str`` in NumPy object arrays (:data:`STRING`), not
NumPy 2's ``StringDType``: irrun requires only ``numpy>=1.26`` (pyproject.toml), which
has no ``StringDType``, while object arrays of ``str`` behave alike on NumPy 1 and 2 and
go through the data-movement kernels (reshape, transpose, take, concatenate) unchanged.
Fixed-width ``<U`` and ``S`` arrays are no representation of their own: they are taken
as inputs and converted (:func:`as_strings`), since they pad and cut.  OpenVINO's
strings are bytes; irrun decodes them as UTF-8 with ``surrogateescape``, so that bytes
that are no UTF-8 survive a round trip (StringTensorUnpack gives them back as they
were), and encodes them the same way.  In a ``.bin`` a string constant is an i32 count
of its elements, count + 1 i32 offsets (0, then each element's end) into the bytes that
follow, then the bytes (:func:`decode_strings`).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

# A string element's bytes in a budget (see ElementType.item_bytes).
STRING_ITEM_BYTES = 8 + 64


@dataclass(frozen=True)
class ElementType:
    name: str  # canonical OpenVINO name
    dtype: np.dtype  # dtype of the decoded array
    bits: int  # storage bits per element in a .bin file (0: string, of varying size)

    @property
    def item_bytes(self) -> int:
        """Bytes irrun holds per element once decoded, for memory budgets: the dtype's
        size, and for a string the object array's pointer and a Python ``str`` of up to
        15 ASCII characters (64 bytes in CPython), so that a budget counts the text too:
        longer strings are undercounted, but no longer by a factor of ten."""
        return STRING_ITEM_BYTES if self.bits == 0 else self.dtype.itemsize

    @property
    def packed(self) -> bool:
        """Several elements share one byte (u1, u2, u3, u4, u6, i4, nf4, f4e2m1)."""
        return 0 < self.bits < 8

    def __str__(self) -> str:
        return self.name


def _et(name: str, dtype: object, bits: int) -> ElementType:
    return ElementType(name, np.dtype(dtype), bits)


# nf4's 4-bit codes, kept apart from u8 numbers; NF4_TABLE[code] is the value of a code.
NF4 = np.dtype([("nf4", np.uint8)])
NF4_TABLE = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], np.float32)  # fmt: skip

# The dtype of string tensors: object arrays whose elements are Python str.
STRING = np.dtype(object)

ELEMENT_TYPES: dict[str, ElementType] = {
    et.name: et
    for et in (
        _et("f64", np.float64, 64),
        _et("f32", np.float32, 32),
        _et("f16", np.float16, 16),
        _et("bf16", ml_dtypes.bfloat16, 16),
        _et("f8e4m3", ml_dtypes.float8_e4m3fn, 8),
        _et("f8e5m2", ml_dtypes.float8_e5m2, 8),
        _et("f8e8m0", ml_dtypes.float8_e8m0fnu, 8),
        _et("f4e2m1", ml_dtypes.float4_e2m1fn, 4),
        _et("nf4", NF4, 4),
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
        _et("u2", np.uint8, 2),
        _et("u3", np.uint8, 3),
        _et("u4", np.uint8, 4),
        _et("u6", np.uint8, 6),
        _et("i4", np.int8, 4),
        _et("string", STRING, 0),
    )
}

# Legacy spellings accepted on a port's precision (case-sensitive, as OpenVINO reads them).
_PRECISION_ALIASES = {
    "FP64": "f64", "FP32": "f32", "FP16": "f16", "BF16": "bf16",
    "I64": "i64", "I32": "i32", "I16": "i16", "I8": "i8", "I4": "i4",
    "U64": "u64", "U32": "u32", "U16": "u16", "U8": "u8", "U6": "u6", "U4": "u4",
    "U3": "u3", "U2": "u2", "U1": "u1", "BIN": "u1", "bin": "u1", "BOOL": "boolean",
    "NF4": "nf4", "F8E4M3": "f8e4m3", "F8E5M2": "f8e5m2", "F8E8M0": "f8e8m0",
    "F4E2M1": "f4e2m1", "STRING": "string",
}  # fmt: skip

# The dtype a NumPy array of each kind maps back to, for naming user arrays.
_BY_DTYPE = {
    et.dtype: et for et in ELEMENT_TYPES.values() if et.bits >= 8 or et.name in ("u1", "string")
}
_BY_DTYPE[NF4] = ELEMENT_TYPES["nf4"]
_BY_DTYPE[np.dtype(ml_dtypes.float4_e2m1fn)] = ELEMENT_TYPES["f4e2m1"]
_BY_DTYPE[np.dtype(np.uint8)] = ELEMENT_TYPES["u8"]
_BY_DTYPE[np.dtype(np.int8)] = ELEMENT_TYPES["i8"]

# Named sets of element types, in which ops declare what each input port takes
# (``OpDef.input_types``) and ``irrun ops`` describes it.
FLOATS = ("f64", "f32", "f16", "bf16")
LOW_FLOATS = ("f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1")
INTEGERS = ("i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8")
PACKED_INTEGERS = ("i4", "u1", "u2", "u3", "u4", "u6")
INDEX_TYPES = ("i32", "i64")
NUMBERS = (*FLOATS, *INTEGERS)
# What arithmetic takes: the numbers, the low-precision floats and the packed integers
# (unpacked to a byte each); not boolean, nf4 (codes, not numbers) or string.
ALL_NUMBERS = (*NUMBERS, *LOW_FLOATS, *PACKED_INTEGERS)
ANY = tuple(ELEMENT_TYPES)
# Largest first: a description names the largest sets that a port takes whole.
TYPE_GROUPS = {
    "any": ANY,
    "all numbers": ALL_NUMBERS,
    "numbers": NUMBERS,
    "floats": FLOATS,
    "integers": INTEGERS,
    "low floats": LOW_FLOATS,
    "packed integers": PACKED_INTEGERS,
}


def describe_types(names: tuple[str, ...] | None) -> str:
    """``names`` in words: the groups of :data:`TYPE_GROUPS` it holds whole, then the rest
    in the order of :data:`ELEMENT_TYPES` (None: any).

    >>> describe_types(("i64", "i32", "f16", "f32", "f64", "bf16", "boolean"))
    'floats, i64, i32, boolean'
    >>> describe_types(None), describe_types(("i32", "i64"))
    ('any', 'i64, i32')
    """
    if names is None:
        return "any"
    left = [name for name in ELEMENT_TYPES if name in names]
    words = []
    for word, group in TYPE_GROUPS.items():
        if all(name in left for name in group):
            words.append(word)
            left = [name for name in left if name not in group]
    return ", ".join(words + left)


def dtype_name(dtype: np.dtype) -> str:
    """The name reports give an array's dtype: NumPy's, but ``string`` for the object
    arrays that hold strings and ``nf4`` for nf4's codes.

    >>> dtype_name(np.dtype(np.float32)), dtype_name(STRING), dtype_name(NF4)
    ('float32', 'string', 'nf4')
    """
    if dtype == STRING:
        return "string"
    return "nf4" if dtype == NF4 else str(dtype)


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
    packed types are unpacked as OpenVINO packs them: u1 most significant bit first;
    u2 least significant pair first; u4, i4, nf4 and f4e2m1 low nibble first.  u3 comes
    in groups of 8 elements in 3 bytes (their low 2 bits, first element in the top bits
    of byte 0, then their high bits in byte 2, first element in bit 7); u6 in groups of 4
    in 3 bytes (low nibbles, first element in the high nibble of byte 0, then the high 2
    bits in byte 2, first element in the top pair).

    >>> decode(np.array([0xB1, 0xC0], np.uint8), ELEMENT_TYPES["u1"], 10).tolist()
    [1, 0, 1, 1, 0, 0, 0, 1, 1, 1]
    >>> decode(np.array([0xF8, 0x07], np.uint8), ELEMENT_TYPES["i4"], 3).tolist()
    [-8, -1, 7]
    >>> decode(np.array([0xE4, 0x01], np.uint8), ELEMENT_TYPES["u2"], 5).tolist()
    [0, 1, 2, 3, 1]
    >>> decode(np.array([0x1B, 0x1B, 0x0F], np.uint8), ELEMENT_TYPES["u3"], 8).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> decode(np.array([0x01, 0x2F, 0x03], np.uint8), ELEMENT_TYPES["u6"], 4).tolist()
    [0, 1, 2, 63]
    """
    if et.name == "u1":
        return np.unpackbits(raw, bitorder="big")[:count]
    if et.name == "u2":
        return (raw[:, None] >> np.array([0, 2, 4, 6], np.uint8) & 3).reshape(-1)[:count]
    if et.name in ("u3", "u6"):
        groups = raw[: raw.size - raw.size % 3].reshape(-1, 3)
        if et.name == "u3":
            low = groups[:, :2, None] >> np.array([6, 4, 2, 0], np.uint8) & 3
            high = groups[:, 2:3] >> np.arange(7, -1, -1, dtype=np.uint8) & 1
            return ((high << 2) | low.reshape(-1, 8)).reshape(-1)[:count]
        low = groups[:, :2, None] >> np.array([4, 0], np.uint8) & 0x0F
        high = groups[:, 2:3] >> np.array([6, 4, 2, 0], np.uint8) & 3
        return ((high << 4) | low.reshape(-1, 4)).reshape(-1)[:count]
    if et.bits == 4:
        nibbles = np.empty(raw.size * 2, np.uint8)
        nibbles[0::2] = raw & 0x0F
        nibbles[1::2] = raw >> 4
        nibbles = nibbles[:count]
        if et.name == "i4":
            return (nibbles.astype(np.int8) ^ 8) - 8  # sign-extend two's complement nibbles
        return nibbles.view(et.dtype)  # u4's numbers, nf4's codes, f4e2m1's floats
    if et.name == "boolean":
        return raw[:count] != 0  # any non-zero byte is true
    return raw[: count * (et.bits // 8)].view(et.dtype.newbyteorder("<"))


def encode(values: np.ndarray, et: ElementType) -> bytes:
    """The bytes of ``values`` as a constant of type ``et`` lies in a ``.bin``: what
    :func:`decode` reads back (whole-byte types little-endian; u1 most significant bit
    first; u4, i4 and nf4 low nibble first; strings as their count, offsets and bytes).

    >>> encode(np.array([-8, -1, 7]), ELEMENT_TYPES["i4"]).hex()
    'f807'
    >>> encode(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 1]), ELEMENT_TYPES["u1"]).hex()
    'b1c0'
    >>> raw = encode(np.array(["ab", "c"], object), ELEMENT_TYPES["string"])
    >>> decode_strings(np.frombuffer(raw, np.uint8), 2)[0].tolist()
    ['ab', 'c']
    """
    flat = np.asarray(values).reshape(-1)
    if et.name == "string":
        parts = [encode_string(_text(v)) for v in flat.tolist()]
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts], dtype=np.int64)])
        head = np.concatenate([[len(parts)], offsets]).astype("<i4").tobytes()
        return head + b"".join(parts)
    if et.name == "u1":
        return np.packbits(flat != 0, bitorder="big").tobytes()
    if et.bits == 4:
        codes = flat.astype(et.dtype).view(np.uint8) & 0x0F if et.dtype.itemsize == 1 \
            else flat.astype(np.int64).astype(np.uint8) & 0x0F  # fmt: skip
        if codes.size % 2:
            codes = np.append(codes, np.uint8(0))
        return (codes[0::2] | codes[1::2] << 4).astype(np.uint8).tobytes()
    if et.packed:
        raise ValueError(f"cannot write {et} values: only whole bytes, u1 and 4-bit types")
    if et.name == "boolean":
        return (flat != 0).astype(np.uint8).tobytes()
    return flat.astype(et.dtype.newbyteorder("<")).tobytes()


def byte_size(et: ElementType, count: int) -> int:
    """Bytes needed to store ``count`` elements (u3 and u6 in whole groups of 3 bytes).

    >>> byte_size(ELEMENT_TYPES["u3"], 10), byte_size(ELEMENT_TYPES["u6"], 7)
    (6, 6)
    """
    if et.name == "u3":
        return (count + 7) // 8 * 3
    if et.name == "u6":
        return (count + 3) // 4 * 3
    return (count * et.bits + 7) // 8


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8", "surrogateescape")
    raise ValueError(f"{type(value).__name__} {value!r} is not a string")


def as_strings(array: np.ndarray) -> np.ndarray:
    """``array`` as a string tensor (:data:`STRING`): from ``<U`` arrays, ``S`` arrays
    (bytes, decoded as UTF-8 with ``surrogateescape``) or object arrays of str or bytes.
    Raises ValueError for anything else (numbers are not taken for their digits).

    >>> as_strings(np.array([b"ab", b"\\xff"])).tolist()
    ['ab', '\\udcff']
    """
    array = np.asarray(array)
    if array.dtype.kind not in "USO":
        raise ValueError(f"{array.dtype} values are not strings")
    out = np.empty(array.shape, STRING)
    flat = out.reshape(-1)
    for i, value in enumerate(array.reshape(-1).tolist()):
        flat[i] = _text(value)
    return out


def encode_string(value: str) -> bytes:
    """One string element's bytes, as OpenVINO holds them."""
    return value.encode("utf-8", "surrogateescape")


def decode_strings(raw: np.ndarray, count: int) -> tuple[np.ndarray, int]:
    """``count`` string elements from the bytes of a string constant (see the module's
    docstring) and the bytes they take.  Raises ValueError for bytes that are no such
    constant.

    >>> raw = np.frombuffer(bytes([2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0])
    ...                     + b"abc", np.uint8)
    >>> decode_strings(raw, 2)
    (array(['ab', 'c'], dtype=object), 19)
    """
    if raw.size < 4:
        raise ValueError(f"{raw.size} bytes hold no element count (4 bytes)")
    stored = int(raw[:4].view("<i4")[0])
    if stored != count:
        raise ValueError(f"the bytes hold {stored} strings, the shape {count}")
    head = 4 * (count + 2)
    if raw.size < head:
        raise ValueError(f"{raw.size} bytes are too few for the offsets of {count} strings "
                         f"(needs {head})")  # fmt: skip
    offsets = raw[4:head].view("<i4").astype(np.int64)
    total = raw.size - head
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > total:
        raise ValueError(f"the offsets of {count} strings are not increasing from 0 "
                         f"within the {total} bytes that follow them")  # fmt: skip
    data = raw[head : head + int(offsets[-1])].tobytes()
    out = np.empty(count, STRING)
    for i in range(count):
        out[i] = data[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogateescape")
    return out, head + int(offsets[-1])
