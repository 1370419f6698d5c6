"""RandomUniform-8 and Multinomial-13: random numbers, the same bits as OpenVINO's for
the same seeds.

**RandomUniform** fills ``output_shape`` with numbers uniform in ``[min_val, max_val)``
of ``output_type`` (f32, f16, bf16, f64, i32, i64).  Its ``alignment`` picks the
generator and the conversion of its bits to numbers:

- ``tensorflow`` (the default): Philox4x32-10 with the key ``global_seed`` (low and high
  32-bit words) and the 128-bit counter ``(n, op_seed)``: block ``n`` = 0, 1, 2 ... gives
  four 32-bit words.  A 32-bit type takes one word per value, in order; f64 and i64 take
  two.  A float is made of the word's low mantissa bits under the exponent of 1.0, minus
  1 (``[0, 1)``: 23 bits for f32, 10 for f16, 7 for bf16, 20 + 32 for f64, the first word
  giving the high bits), then ``u * (max - min) + min`` in the output type (f16 and bf16
  rounded after each operation, bf16 as ``ov::bfloat16`` rounds: see :func:`_ov_bf16`).
  An integer is ``word % (max - min) + min`` in unsigned arithmetic (i64: the second
  word is the high half), wrapping into the type.
- ``pytorch``: PyTorch's CPU generator, the Mersenne Twister MT19937 seeded with the low
  32 bits of ``global_seed`` (``op_seed`` is not used), one word per value in order (two
  for f64, and for i64 when ``min`` or ``max`` exceeds 2**32 - 1, the first word the high
  half).  A float is ``(word & (2**d - 1)) / 2**d`` for ``d`` = 24 (f32), 11 (f16), 8
  (bf16) or 53 (f64, of the 64-bit pair), then ``u * (max - min) + min`` (f16 and bf16: in
  f32 with ``max - min`` rounded to the type first, the result rounded once); an integer
  is ``word % (max - min) + min``.

``min_val`` must be less than ``max_val`` (OpenVINO's shape inference refuses the
others, and so does irrun's kernel).  For f64 OpenVINO reads ``min_val`` and
``max_val`` through f32 (3.3 counts as 3.2999999523...), and so does irrun.

**Multinomial** draws ``num_samples`` class indices (``convert_type`` i32 or i64) from
each row of ``probs`` ``[B, C]`` (``log_probs``: the values are logarithms, and
``exp`` of each is taken).  irrun draws as OpenVINO's CPU plugin does, bit for bit:

- the numbers: ``std::mt19937`` seeded with ``std::seed_seq{global_seed, op_seed}``
  (each seed taken modulo 2**32), one per sample, row after row, each
  ``f32(word) / f32(2**32 - 1)`` (so in ``[0, 1]``);
- the cumulative sums along the classes, divided by the last (by the smallest normal
  number where the last is smaller);
- with replacement a number ``u`` picks the class ``k`` with ``cdf[k-1] < u <=
  cdf[k]``; without, the draws of a row go one after another, and each pick of class
  ``k`` with probability ``p = cdf[k] - cdf[k-1]`` takes ``p`` off the cumulative values
  from ``k`` on and divides them all by ``1 - p``;
- the arithmetic in f32, each result rounded to bf16 for bf16 ``probs`` (as
  ``ov::bfloat16`` rounds, see :func:`_ov_bf16`); f16 and f64 probabilities are
  computed in f32 (the plugin, with its f32 inference precision, converts them: the f16
  values themselves are kept).

Where no class fits a number (a row of zeros or NaN, or every class drawn already) the
plugin leaves that output element unwritten (whatever the memory held); irrun gives 0.
OpenVINO's reference kernel (``reference/multinomial.hpp``, run by its template plugin,
not by ``Model.evaluate``) draws the numbers from RandomUniform's Philox generator
instead and computes in the type of ``probs``; the CPU plugin marks its generator as a
"TODO" to replace.  irrun follows the plugin, the OpenVINO that runs, so that a seed
gives its numbers; a later plugin that moves to Philox will need the change here too.

Seeds.  OpenVINO reads them from IR as 64-bit signed integers and uses their bits as
unsigned ones (-1 is 2**64 - 1); so does irrun.  Both seeds 0 means "not deterministic"
in OpenVINO: its kernels then seed from
the clock.  irrun then draws the seed from the operating system's entropy, so such a
layer gives other numbers in every run (validate warns about it); every other pair of
seeds gives OpenVINO's numbers.

State.  OpenVINO's RandomUniform carries a state from one inference to the next: a
second inference of the same compiled model (or ``Model.evaluate`` of the same node)
continues the stream, with ``n`` advanced by 256 per Philox block in the reference and
by 256 per element in the CPU plugin (the two disagree from the second inference on).
Multinomial keeps none.  irrun's ``run`` is a pure function of its inputs: every run
gives the numbers of a first inference, as a freshly compiled model does.  The layers
are never folded at load (``foldable=False``).

Where the CPU plugin's RandomUniform differs from the reference (irrun follows the
reference): f32 with a range other than ``[0, 1)`` fuses ``u * (max - min) + min``
into one rounding (the last place may differ); f16 output is computed in f32 and
rounded (other numbers than the reference's f16 arithmetic on 10 bits); f64 and i64
outputs are computed in 32 bits (other numbers altogether, i32 ones for i64); i32 with
``max - min`` beyond 2**31 - 1 (pytorch alignment) gives ``min`` everywhere.  f32 in
``[0, 1)``, i32, bf16 and PyTorch's small-range i64 agree bit for bit.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from types import SimpleNamespace

import ml_dtypes
import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.element_types import FLOATS, INDEX_TYPES, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._shapes import check_vector, flat_ints, fmt, int_values

OUTPUT_TYPES = (*FLOATS, *INDEX_TYPES)
ALIGNMENTS = ("tensorflow", "pytorch")

_BF16 = np.dtype(ml_dtypes.bfloat16)
_U32 = np.uint32
_U64 = np.uint64
_LOW = _U64(0xFFFFFFFF)
_M64 = (1 << 64) - 1

# --------------------------------------------------------------------------- generators

# Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11).
_PHILOX_M0, _PHILOX_M1 = _U64(0xD2511F53), _U64(0xCD9E8D57)
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32(key: int, counter_high: int, first: int, blocks: int) -> np.ndarray:
    """The words of Philox4x32-10 blocks ``first``, ``first + 1``, ... (``blocks`` of
    them), keyed with the 64-bit ``key``; a block's counter is its 64-bit number (carried
    into) the 64-bit ``counter_high``.  Shape ``(blocks, 4)``, uint32.

    >>> philox4x32(0, 0, 0, 1).tolist()  # Random123's known answer for zeros
    [[1713891541, 3781805453, 3159862348, 2600524760]]
    """
    n = _U64(first & _M64) + np.arange(blocks, dtype=_U64)  # wraps past 2**64 - 1
    high = _U64(counter_high & _M64) + (n < _U64(first & _M64)).astype(_U64)
    x0, x1 = (n & _LOW).astype(_U32), (n >> _U64(32)).astype(_U32)
    x2, x3 = (high & _LOW).astype(_U32), (high >> _U64(32)).astype(_U32)
    k0, k1 = key & 0xFFFFFFFF, (key >> 32) & 0xFFFFFFFF
    for _ in range(10):  # the ten rounds
        p0 = _PHILOX_M0 * x0.astype(_U64)
        p1 = _PHILOX_M1 * x2.astype(_U64)
        x0, x1, x2, x3 = (
            (p1 >> _U64(32)).astype(_U32) ^ x1 ^ _U32(k0),
            (p1 & _LOW).astype(_U32),
            (p0 >> _U64(32)).astype(_U32) ^ x3 ^ _U32(k1),
            (p0 & _LOW).astype(_U32),
        )
        k0, k1 = (k0 + _PHILOX_W0) & 0xFFFFFFFF, (k1 + _PHILOX_W1) & 0xFFFFFFFF
    return np.stack([x0, x1, x2, x3], axis=-1)


def philox_words(global_seed: int, op_seed: int, count: int) -> np.ndarray:
    """The first ``count`` words of RandomUniform's ``tensorflow`` generator."""
    return philox4x32(global_seed, op_seed, 0, -(-count // 4)).reshape(-1)[:count]


def mt19937_words(seed: int, count: int) -> np.ndarray:
    """The first ``count`` outputs of MT19937 initialised with the 32-bit ``seed``
    (``init_genrand``, as ``std::mt19937`` and PyTorch's CPU generator), uint32.

    >>> int(mt19937_words(5489, 10000)[-1])  # the C++ standard's check of mt19937
    4123659995
    """
    state = [seed & 0xFFFFFFFF]
    for i in range(1, 624):  # the initialisation of the 624 words: a fixed size
        prev = state[-1]
        state.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return _mt19937_from_state(state, count)


# --------------------------------------------------------------------------- conversions


def _ov_bf16(x: np.ndarray) -> np.ndarray:
    """f32 to bf16 as ``ov::bfloat16(float)`` rounds: it adds half a unit of the last
    place only where that place is odd, so a value rounds down unless the kept part is
    odd and the dropped part at least half (not IEEE's nearest-even: 1 + 2**-8 + 2**-9
    with an even last place is cut, and NaN stays NaN only by luck of its bits).
    """
    bits = np.asarray(x, np.float32).view(_U32)
    bits = bits + ((bits & _U32(0x10000)) >> _U32(1))
    return (bits >> _U32(16)).astype(np.uint16).view(_BF16)


def _scaled(u: np.ndarray, lo, hi, dtype: np.dtype) -> np.ndarray:
    """``u * (hi - lo) + lo``, each operation rounded to ``dtype``."""
    lo, hi = np.asarray(lo, dtype), np.asarray(hi, dtype)
    return (u.astype(dtype) * (hi - lo)).astype(dtype) + lo


def _tensorflow_values(name: str, lo, hi, global_seed: int, op_seed: int,
                       count: int) -> np.ndarray:  # fmt: skip
    wide = name in ("f64", "i64")
    words = philox_words(global_seed, op_seed, count * (2 if wide else 1))
    if wide:
        first, second = words[0::2].astype(_U64), words[1::2].astype(_U64)
    if name == "f32":
        u = (words & _U32(0x7FFFFF) | _U32(127 << 23)).view(np.float32) - np.float32(1)
        return _scaled(u, lo, hi, np.dtype(np.float32))
    if name == "f16":
        bits = (words & _U32(0x3FF) | _U32(15 << 10)).astype(np.uint16)
        return _scaled(bits.view(np.float16) - np.float16(1), lo, hi, np.dtype(np.float16))
    if name == "bf16":  # in f32, each operation rounded as OpenVINO's bfloat16 rounds
        u = (words & _U32(0x7F)).astype(np.float32) * np.float32(2.0**-7)
        lo32, hi32 = np.float32(lo), np.float32(hi)
        span = _ov_bf16(np.float32(hi32 - lo32))
        return _ov_bf16(_ov_bf16(u * span).astype(np.float32) + lo32)
    if name == "f64":
        bits = (first & _U64(0xFFFFF)) << _U64(32) | second | _U64(1023 << 52)
        # OpenVINO reads min and max through f32 (3.3 is 3.2999999523...).
        u = bits.view(np.float64) - 1.0
        return _scaled(u, np.float32(lo), np.float32(hi), np.dtype(np.float64))
    if name == "i32":
        span = _U32((int(hi) - int(lo)) & 0xFFFFFFFF)
        return (words % span + _U32(int(lo) & 0xFFFFFFFF)).view(np.int32)
    span64 = _U64((int(hi) - int(lo)) & _M64)
    return ((second << _U64(32) | first) % span64 + _U64(int(lo) & _M64)).view(np.int64)


def _pytorch_values(name: str, lo, hi, seed: int, count: int) -> np.ndarray:
    one_word = name in ("f32", "f16", "bf16", "i32") or (
        name == "i64" and int(lo) <= 0xFFFFFFFF and int(hi) <= 0xFFFFFFFF
    )
    words = mt19937_words(seed, count * (1 if one_word else 2))
    if name in ("f32", "f16", "bf16"):
        digits = {"f32": 24, "f16": 11, "bf16": 8}[name]
        u = (words & _U32((1 << digits) - 1)).astype(np.float32) * np.float32(2.0**-digits)
        if name == "f32":
            return _scaled(u, lo, hi, np.dtype(np.float32))
        lo32, hi32 = np.float32(lo), np.float32(hi)
        if name == "f16":
            span = np.float32(np.float16(hi32 - lo32))
            return (u * span + lo32).astype(np.float16)
        return _ov_bf16(u * np.float32(_ov_bf16(np.float32(hi32 - lo32))) + lo32)
    if name == "i32":
        span = _U32((int(hi) - int(lo)) & 0xFFFFFFFF)
        return (words % span + _U32(int(lo) & 0xFFFFFFFF)).view(np.int32)
    if one_word:  # i64 from one word each, in signed 64-bit arithmetic (C's %, wrapping)
        span = np.array((int(hi) - int(lo)) & _M64, _U64).view(np.int64)
        return np.fmod(words.astype(np.int64), span) + np.int64(lo)
    pairs = words[0::2].astype(_U64) << _U64(32) | words[1::2].astype(_U64)
    if name == "f64":
        u = (pairs & _U64((1 << 53) - 1)).astype(np.float64) * 2.0**-53
        # OpenVINO reads min and max through f32 here (3.3 is 3.2999999523...).
        return _scaled(u, np.float32(lo), np.float32(hi), np.dtype(np.float64))
    span64 = _U64((int(hi) - int(lo)) & _M64)
    return (pairs % span64).view(np.int64) + np.int64(lo)


def _seeds(a: SimpleNamespace) -> tuple[int, int]:
    """The seeds as OpenVINO's unsigned 64-bit values; both 0: a key from the system."""
    # OpenVINO reads the seeds from IR as 64-bit integers: a negative one is the unsigned
    # value of its bits (-1 is 2**64 - 1), and a number past 2**63 - 1 is refused.
    global_seed, op_seed = a.global_seed & _M64, a.op_seed & _M64
    if global_seed == 0 and op_seed == 0:
        global_seed = secrets.randbits(31)  # OpenVINO: rand() after srand(time)
    return global_seed, op_seed


def uniform(name: str, shape: Sequence[int], lo, hi, global_seed: int, op_seed: int,
            alignment: str = "tensorflow") -> np.ndarray:  # fmt: skip
    """RandomUniform's values of type ``name`` (see the module's docstring)."""
    count = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore", invalid="ignore"):
        if alignment == "pytorch":
            values = _pytorch_values(name, lo, hi, global_seed, count)
        else:
            values = _tensorflow_values(name, lo, hi, global_seed, op_seed, count)
    return values.reshape(tuple(shape))


# --------------------------------------------------------------------------- RandomUniform


def _scalar_value(info: TensorInfo, what: str):
    if (
        info.shape is not None
        and tuple(info.shape) not in ((), (1,))
        and not (len(info.shape) == 1 and not isinstance(info.shape[0], int))
    ):
        raise ShapeError(f"{what} must be a scalar or a 1-D tensor of one value, "
                         f"got shape {fmt(info.shape)}")  # fmt: skip
    return None if info.value is None else np.asarray(info.value).reshape(-1)[0]


def _check_range(lo, hi) -> None:
    if not lo < hi:
        raise ShapeError(f"min_val must be less than max_val, got {lo} and {hi}")


def _uniform_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    shape_info, lo_info, hi_info = inputs
    out_type = a.output_type
    if out_type.name not in OUTPUT_TYPES:
        raise ShapeError(f"output_type must be one of {', '.join(OUTPUT_TYPES)}, "
                         f"got {out_type.name}")  # fmt: skip
    for info, what in ((lo_info, "min_val"), (hi_info, "max_val")):
        et = info.element_type
        if et is not None and et.name != out_type.name:
            raise ShapeError(f"{what} is {et.name}, not output_type {out_type.name}")
    check_vector(shape_info, "output_shape", allow_scalar=False)
    lo, hi = _scalar_value(lo_info, "min_val"), _scalar_value(hi_info, "max_val")
    if lo is not None and hi is not None:
        _check_range(lo, hi)
    values = int_values(shape_info)
    shape: tuple[Dim, ...] | None
    if values is not None:
        shape = tuple(DYNAMIC if v < 0 else v for v in values)
    elif shape_info.shape is not None and isinstance(shape_info.shape[0], int):
        shape = (DYNAMIC,) * shape_info.shape[0]
    else:
        shape = None
    return [TensorInfo(shape, out_type)]


def _uniform_kernel(a: SimpleNamespace, shape: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    dims = flat_ints(shape)
    if any(d < 0 for d in dims):
        raise KernelError(f"output_shape {dims} has a negative dim")
    if lo.size != 1 or hi.size != 1:
        raise KernelError(f"min_val and max_val must be one value each, got {lo.size} and "
                          f"{hi.size}")  # fmt: skip
    low, high = lo.reshape(-1)[0], hi.reshape(-1)[0]
    if not low < high:
        raise KernelError(f"min_val must be less than max_val, got {low} and {high}")
    global_seed, op_seed = _seeds(a)
    return (uniform(a.output_type.name, dims, low, high, global_seed, op_seed, a.alignment),)


def _warn_seeds(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
    if a.global_seed == 0 and a.op_seed == 0:
        return ["global_seed and op_seed are both 0: the numbers differ from run to run "
                "(in OpenVINO too)"]  # fmt: skip
    return []


def _uniform_scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                     outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The Philox rounds hold a few word-sized arrays per block and the conversion a few
    per element; f64 and i64 draw two words per element (measured: 48 bytes for f64)."""
    from ._scratch import largest

    return 56 * largest(outputs)


register(OpDef(type="RandomUniform", version=8, since_opset=8,
               attrs=(Attr("output_type", "element_type"),
                      Attr("global_seed", "int", 0),
                      Attr("op_seed", "int", 0),
                      Attr("alignment", "enum", "tensorflow", ALIGNMENTS)),
               infer=_uniform_infer, kernel=_uniform_kernel, inputs=(3, 3),
               input_types=(INDEX_TYPES, OUTPUT_TYPES, OUTPUT_TYPES),
               foldable=False, scratch=_uniform_scratch, warn=_warn_seeds))  # fmt: skip


# --------------------------------------------------------------------------- Multinomial


def seed_sequence(values: Sequence[int], n: int = 624) -> list[int]:
    """``std::seed_seq(values).generate`` of ``n`` 32-bit words (C++ [rand.util.seedseq]):
    a fixed-size mixing of the seeds (each taken modulo 2**32), the state with which
    ``std::mt19937::seed(seq)`` starts."""
    mask = 0xFFFFFFFF
    v = [x & mask for x in values]
    b = [0x8B8B8B8B] * n
    t = 11 if n >= 623 else 7 if n >= 68 else 5 if n >= 39 else 3 if n >= 7 else (n - 1) // 2
    p, q, m = (n - t) // 2, (n - t) // 2 + t, max(len(v) + 1, n)

    def mix(x: int) -> int:
        return x ^ (x >> 27)

    for k in range(m):  # fixed-size loops over the 624 state words
        r1 = (1664525 * mix(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & mask
        r2 = (r1 + (len(v) if k == 0 else k % n + (v[k - 1] if k <= len(v) else 0))) & mask
        b[(k + p) % n] = (b[(k + p) % n] + r1) & mask
        b[(k + q) % n] = (b[(k + q) % n] + r2) & mask
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * mix((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & mask)) & mask
        r4 = (r3 - k % n) & mask
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


def _mt19937_from_state(state: Sequence[int], count: int) -> np.ndarray:
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": np.array(state, dtype=_U32), "pos": 624}}  # fmt: skip
    return generator.random_raw(count).astype(_U32)


def multinomial_uniforms(global_seed: int, op_seed: int, count: int) -> np.ndarray:
    """The CPU plugin's numbers for Multinomial: ``std::mt19937`` seeded with
    ``std::seed_seq{global_seed, op_seed}``, each output ``f32(word) / f32(2**32 - 1)``
    (so in ``[0, 1]``, f32)."""
    words = _mt19937_from_state(seed_sequence([global_seed, op_seed]), count)
    return words.astype(np.float32) / np.float32(2.0**32)  # f32(2**32 - 1) is 2**32


def _rounding(dtype: np.dtype):
    """The rounding of f32 results to ``dtype`` (bf16 as ``ov::bfloat16`` rounds), the
    results kept as f32 values."""
    if dtype == _BF16:
        return lambda x: _ov_bf16(x).astype(np.float32)
    return lambda x: np.asarray(x, np.float32).astype(dtype).astype(np.float32)


def multinomial(probs: np.ndarray, samples: int, with_replacement: bool, log_probs: bool,
                global_seed: int, op_seed: int, rounding=None) -> np.ndarray:  # fmt: skip
    """Class indices ``[B, samples]`` (int64) drawn from the rows of ``probs`` ``[B, C]``
    as the CPU plugin draws them (see the module's docstring).  The arithmetic is f32
    with each result rounded by ``rounding`` (default: none, the plugin's f32)."""
    r = rounding or _rounding(np.dtype(np.float32))
    p = r(probs.astype(np.float32))
    batch, classes = p.shape
    out = np.zeros((batch, samples), np.int64)
    if batch * samples == 0 or classes == 0:
        return out
    with np.errstate(all="ignore"):
        if log_probs:  # expf, correctly rounded; the running sum rounded at each step
            p = np.exp(p.astype(np.float64)).astype(np.float32)
        if rounding is None:
            cdf = np.cumsum(p, axis=1, dtype=np.float32)
        else:
            cdf = np.empty_like(p)
            running = np.zeros(batch, np.float32)
            for k in range(classes):  # a running sum over the classes, rounded each step
                running = cdf[:, k] = r(p[:, k] + running)
        u = r(multinomial_uniforms(global_seed, op_seed, batch * samples)).reshape(batch, -1)
        last = cdf[:, -1:]
        tiny = np.float32(np.finfo(np.float32).tiny)  # numeric_limits<P>::min()
        cdf = r(cdf / np.where(last < tiny, tiny, last))
        if with_replacement:
            previous = np.concatenate([np.full((batch, 1), -np.inf, np.float32), cdf[:, :-1]],
                                      axis=1)  # fmt: skip
            hit = (u[:, :, None] <= cdf[:, None, :]) & (u[:, :, None] > previous[:, None, :])
            return np.where(hit.any(axis=2), hit.argmax(axis=2), 0)
        rows, columns = np.arange(batch), np.arange(classes)
        for j in range(samples):  # each draw changes the next one's distribution
            hit = u[:, j : j + 1] <= cdf
            found = hit.any(axis=1)
            chosen = hit.argmax(axis=1)
            out[:, j] = np.where(found, chosen, 0)
            before = np.where(chosen > 0, cdf[rows, np.maximum(chosen - 1, 0)], np.float32(0))
            taken = np.where(chosen > 0, r(cdf[rows, chosen] - before), cdf[rows, 0])
            divisor = r(np.float32(1) - taken)
            shifted = np.where(columns >= chosen[:, None], r(cdf - taken[:, None]), cdf)
            cdf = np.where(found[:, None], r(shifted / divisor[:, None]), cdf)
    return out


def _multinomial_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    probs, count = inputs
    if a.convert_type.name not in INDEX_TYPES:
        raise ShapeError(f"convert_type must be i32 or i64, got {a.convert_type.name}")
    if probs.shape is not None and len(probs.shape) != 2:
        raise ShapeError(f"probs must be 2-D [batch, classes], got shape {fmt(probs.shape)}")
    if (
        count.shape is not None
        and tuple(count.shape) not in ((), (1,))
        and not (len(count.shape) == 1 and not isinstance(count.shape[0], int))
    ):
        raise ShapeError(f"num_samples must be a scalar or a 1-D tensor of one value, "
                         f"got shape {fmt(count.shape)}")  # fmt: skip
    values = int_values(count)
    samples: Dim = DYNAMIC if values is None or values[0] < 0 else values[0]
    if probs.shape is None:
        return [TensorInfo(None, a.convert_type)]
    return [TensorInfo((probs.shape[0], samples), a.convert_type)]


def _multinomial_kernel(a: SimpleNamespace, probs: np.ndarray,
                        count: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    if count.size != 1:
        raise KernelError(f"num_samples must be one value, got {count.size}")
    samples = int(count.reshape(-1)[0])
    if samples < 0:
        raise KernelError(f"num_samples must not be negative, got {samples}")
    global_seed, op_seed = _seeds(a)
    rounding = _rounding(probs.dtype) if probs.dtype == _BF16 else None
    out = multinomial(probs, samples, a.with_replacement, a.log_probs, global_seed, op_seed,
                      rounding)  # fmt: skip
    return (out.astype(a.convert_type.dtype),)


def _multinomial_scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                         outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """A few copies of the cumulative sums, and with replacement one boolean per
    sample and class."""
    from ._scratch import static_shape

    probs = static_shape(inputs[0]) if inputs else None
    out = static_shape(outputs[0]) if outputs else None
    if probs is None or out is None or len(probs) != 2 or len(out) != 2:
        return 0
    cells = probs[0] * probs[1]
    return (
        40 * cells
        + 24 * out[0] * out[1]
        + (3 * out[0] * out[1] * probs[1] if attrs.with_replacement else 0)
    )


register(OpDef(type="Multinomial", version=13, since_opset=13,
               attrs=(Attr("convert_type", "element_type"),
                      Attr("with_replacement", "bool"),
                      Attr("log_probs", "bool"),
                      Attr("global_seed", "int", 0),
                      Attr("op_seed", "int", 0)),
               infer=_multinomial_infer, kernel=_multinomial_kernel, inputs=(2, 2),
               input_types=(FLOATS, INTEGERS),
               foldable=False, scratch=_multinomial_scratch, warn=_warn_seeds))  # fmt: skip
