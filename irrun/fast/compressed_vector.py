"""The 4-bit compressed product with a whole group's table in a vector register (AVX-512).

Where the CPU has AVX-512 (and numba compiles for it: ``NUMBA_CPU_NAME`` unset or
``host``), the product of a few rows by a weight of 4-bit codes in groups of a multiple
of 32 (:mod:`.compressed_jit`) runs this kernel instead of the portable one.  A group's
table of 16 f32 values fills one 512-bit register, so ``vpermps`` looks up 16 codes in
one instruction, where the portable kernel loads each value from memory (about 1.5
cycles a code, which made it slower than BLAS on the decompressed weight).  LLVM has no
target-independent operation for a permutation by a run-time index vector, so the
look-up is written in LLVM IR as the x86 intrinsic, through numba's ``intrinsic``.

What it computes.  The input's rows are split once into their even and odd elements
(the low and high nibble of each byte); then, for each 16 bytes of a channel's codes (32
codes of one group), or 64 where the group's length is a multiple of 128:
``even * t[low] + odd * t[high]`` in 16 lanes (each 16 bytes' products in turn, fused
with the addition), the lanes summed pairwise by halves in a fixed order, and that sum
added to the channel's.  For signed codes the index is the nibble with its top bit
flipped, as in the portable kernel (the table starts at -8).

Values.  Each weight value is its table's entry, exactly the decompressed value; the sum
over K is in another order than the portable kernel's or BLAS's, fused or not, so the
product is held to the same bound (:data:`irrun.fast.matmul.BOUND`: 2 K u sum_k |a_ik
w_kj|, which a sum of K products in any order keeps).  The order depends only on K and
the group, not on the block of channels or the thread count.

Affine tables.  Where every table of a weight is ``R((j - zero) * scale)`` for its index
j, ``R`` the f32 product's rounding or its rounding to f16 (NNCF's chains: the codes, less
the zero point, times the scale, in f16; a 9-bit integer times an f16 scale is exact in f32,
so rounding that product to f16 is the f16 multiply's rounding), checked bit for bit for
every entry at load (:func:`affine`), the kernels compute the values instead of reading
them: the 4-bit one makes each group's 16 values in a register (:func:`_table16`), the
8-bit one each weight value (:func:`_affine64`, as f32 arithmetic and ``fptrunc`` to half,
``vcvtps2ph``: round to nearest even, as NumPy's and the reference's f16).  The values are
the tables' bits, so the bound above holds as it is.

Importing this module imports numba; :mod:`.compressed_jit` imports it only when the
engine is on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from llvmlite import binding, ir
from numba import config, types
from numba.core.extending import intrinsic

from . import jit

CHUNK = 16  # bytes of codes a look-up step reads: 32 codes, so a group's length divides by 32

_F32, _I32, _I8 = ir.FloatType(), ir.IntType(32), ir.IntType(8)
_V16F, _V16I, _V16B = ir.VectorType(_F32, 16), ir.VectorType(_I32, 16), ir.VectorType(_I8, 16)


def available() -> bool:
    """Whether the kernel can run here: AVX-512 on this CPU and numba compiling for it."""
    if (config.CPU_NAME or "host") != "host" or config.CPU_FEATURES:
        return False  # compiling for another CPU (a portable cache): maybe without AVX-512
    return bool(binding.get_host_cpu_features().get("avx512f", False))


@functools.cache
def kernel() -> Callable[..., None] | None:
    """The compiled kernel, or None where it cannot run (:func:`available`)."""
    if not available():
        return None
    return jit.compile(_nibbles16, "compressed 4-bit product (AVX-512)",
                       fastmath={"reassoc", "contract"})  # fmt: skip


def _element(context, builder, ty, array, index):
    """A pointer to ``array[index]`` of a contiguous 1-D array."""
    return builder.gep(context.make_array(ty)(context, builder, array).data, [index])


def _make_chunks(parts: int):
    """The look-up step over ``parts`` consecutive chunks of 16 bytes of one group, with
    one sum of the lanes for all (4 parts: a group of 128 codes, or half of 256)."""

    @intrinsic
    def chunks(typingctx, even, odd, at, codes, table, entry, flip):
        """``sum_i even[at + i] * t[low_i] + odd[at + i] * t[high_i]`` for the ``16 *
        parts`` bytes of ``codes`` from ``at`` (low and high nibble, each xor ``flip``),
        ``t`` the 16 values of ``table`` from ``entry``; as f32: a vector of 16 lanes
        (the parts' products in order, fused), its lanes summed by halves."""
        if any(not isinstance(a, types.Array) or a.ndim != 1 or a.layout != "C"
               for a in (even, odd, codes, table)):  # fmt: skip
            return None  # the loads read consecutive elements
        sig = types.float32(even, odd, types.intp, codes, table, types.intp, types.int32)

        def codegen(context, builder, signature, args):
            even_, odd_, at_, codes_, table_, entry_, flip_ = args
            ty = signature.args
            permute = builder.module.declare_intrinsic(
                "llvm.x86.avx512.permvar.sf.512", fnty=ir.FunctionType(_V16F, [_V16F, _V16I]))
            fma = builder.module.declare_intrinsic(
                "llvm.fma.v16f32", fnty=ir.FunctionType(_V16F, [_V16F, _V16F, _V16F]))

            def load(pointer, vector, align):
                return builder.load(builder.bitcast(pointer, vector.as_pointer()), align=align)

            flip16 = builder.insert_element(ir.Constant(_V16I, ir.Undefined), flip_,
                                            ir.Constant(_I32, 0))  # fmt: skip
            flip16 = builder.shuffle_vector(flip16, ir.Constant(_V16I, ir.Undefined),
                                            ir.Constant(_V16I, [0] * 16))  # fmt: skip
            t = load(_element(context, builder, ty[4], table_, entry_), _V16F, 4)
            s = None
            for part in range(parts):
                at = builder.add(at_, ir.Constant(at_.type, 16 * part))
                raw = builder.zext(load(_element(context, builder, ty[3], codes_, at), _V16B, 1),
                                   _V16I)  # fmt: skip
                low = builder.xor(builder.and_(raw, ir.Constant(_V16I, [15] * 16)), flip16)
                high = builder.xor(builder.lshr(raw, ir.Constant(_V16I, [4] * 16)), flip16)
                x_even = load(_element(context, builder, ty[0], even_, at), _V16F, 4)
                x_odd = load(_element(context, builder, ty[1], odd_, at), _V16F, 4)
                first = builder.call(permute, [t, low])
                first = (builder.fmul(x_even, first) if s is None
                         else builder.call(fma, [x_even, first, s]))  # fmt: skip
                s = builder.call(fma, [x_odd, builder.call(permute, [t, high]), first])
            lanes = 16
            while lanes > 1:  # a fixed order: the lower half plus the upper, until one lane
                lanes //= 2
                half = ir.VectorType(_I32, lanes)
                low_half = builder.shuffle_vector(s, s, ir.Constant(half, list(range(lanes))))
                upper = ir.Constant(half, list(range(lanes, 2 * lanes)))
                s = builder.fadd(low_half, builder.shuffle_vector(s, s, upper))
            return builder.extract_element(s, ir.Constant(_I32, 0))

        return sig, codegen

    return chunks


_chunk = _make_chunks(1)
_group64 = _make_chunks(4)


def _nibbles16(x, packed, table, groups, group, signed, out):  # pragma: no cover - compiled
    """As :func:`.compressed_jit._nibbles` (``packed`` and ``table`` C-contiguous, ``group``
    a multiple of 32), by 32 codes at a time."""
    rows, count = out.shape
    half = group // 2
    depth = groups * half
    even = np.empty((rows, depth), np.float32)
    odd = np.empty((rows, depth), np.float32)
    for m in range(rows):
        for i in range(depth):
            even[m, i] = x[m, 2 * i]
            odd[m, i] = x[m, 2 * i + 1]
    flip = np.int32(8 if signed else 0)
    values = table.reshape(-1)
    for n in range(count):
        codes = packed[n]
        for m in range(rows):
            even_m = even[m]
            odd_m = odd[m]
            s = np.float32(0.0)
            for g in range(groups):
                entry = (n * groups + g) * 16
                if half % 64 == 0:  # fewer sums of lanes
                    for at in range(g * half, (g + 1) * half, 64):
                        s += _group64(even_m, odd_m, at, codes, values, entry, flip)
                else:
                    for at in range(g * half, (g + 1) * half, CHUNK):
                        s += _chunk(even_m, odd_m, at, codes, values, entry, flip)
            out[m, n] = s


def affine(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Each row of ``table`` ([tables, codes] f32, entry ``j`` for the ``j``-th code) as
    ``R((j - zero) * scale)``: ``(scale, zero, half)``, ``R`` the f32 product's own rounding
    or, with ``half``, its rounding to f16 (an f16 chain: ``(code - zp) * scale`` in f16,
    whose product of a 9-bit integer by an f16 scale is exact in f32 before that rounding);
    None unless every entry of every row is that, bit for bit (then the tables are needed).

    ``zero`` is where the row is 0 and ``scale`` the next entry (the previous one's
    negation at the last code); a row without a zero, or where the guess is wrong, fails
    the bitwise check."""
    tables, codes = table.shape
    scale = np.empty(tables, np.float32)
    zero = np.empty(tables, np.float32)
    half = None
    j = np.arange(codes, dtype=np.float32)
    for start in range(0, tables, 4096):  # a few MiB of scratch at a time
        t = table[start : start + 4096]
        rows = np.arange(len(t))
        at_zero = t == 0
        if not at_zero.any(axis=1).all():
            return None
        z = np.argmax(at_zero, axis=1)
        s = np.where(z + 1 < codes, t[rows, np.minimum(z + 1, codes - 1)],
                     -t[rows, np.maximum(z - 1, 0)])  # fmt: skip
        w = (j - z.astype(np.float32)[:, None]) * s[:, None].astype(np.float32)
        if half is None:  # decided by the first rows, checked on all
            half = not np.array_equal(w.view(np.uint32), t.view(np.uint32))
        if half:
            w = w.astype(np.float16).astype(np.float32)
        if not np.array_equal(w.view(np.uint32), t.view(np.uint32)):
            return None
        scale[start : start + len(t)] = s
        zero[start : start + len(t)] = z
    return scale, zero, bool(half)


@functools.cache
def byte_kernel() -> Callable[..., None] | None:
    """The compiled 8-bit affine kernel, or None where it cannot run (:func:`available`)."""
    if not available():
        return None
    return jit.compile(_bytes_affine, "compressed 8-bit product (AVX-512)",
                       fastmath={"reassoc", "contract"})  # fmt: skip


@intrinsic
def _affine64(typingctx, x, at, codes, scale, zero, flip, half):
    """``sum_i x[at + i] * R((j_i - zero) * scale)`` for the 64 bytes of ``codes`` from
    ``at`` (``j_i`` the byte xor ``flip``; ``R`` rounds to f16 and back when ``half``),
    as f32: four vectors of 16 lanes, added in order, their lanes summed by halves."""
    if any(not isinstance(a, types.Array) or a.ndim != 1 or a.layout != "C"
           for a in (x, codes)):  # fmt: skip
        return None
    sig = types.float32(x, types.intp, codes, types.float32, types.float32, types.int32,
                        types.boolean)  # fmt: skip

    def codegen(context, builder, signature, args):
        x_, at_, codes_, scale_, zero_, flip_, half_ = args
        ty = signature.args

        def splat(value, vector):
            v = builder.insert_element(ir.Constant(vector, ir.Undefined), value,
                                       ir.Constant(_I32, 0))  # fmt: skip
            return builder.shuffle_vector(v, ir.Constant(vector, ir.Undefined),
                                          ir.Constant(_V16I, [0] * 16))  # fmt: skip

        fma = builder.module.declare_intrinsic(
            "llvm.fma.v16f32", fnty=ir.FunctionType(_V16F, [_V16F, _V16F, _V16F]))
        scale16, zero16, flip16 = splat(scale_, _V16F), splat(zero_, _V16F), splat(flip_, _V16I)
        half16 = ir.VectorType(ir.HalfType(), 16)
        s = None
        for part in range(4):
            at = builder.add(at_, ir.Constant(at_.type, 16 * part))
            pointer = builder.bitcast(_element(context, builder, ty[2], codes_, at),
                                      _V16B.as_pointer())  # fmt: skip
            j = builder.xor(builder.zext(builder.load(pointer, align=1), _V16I), flip16)
            w = builder.fmul(builder.fsub(builder.sitofp(j, _V16F), zero16), scale16)
            rounded = builder.fpext(builder.fptrunc(w, half16), _V16F)
            w = builder.select(half_, rounded, w)
            pointer = builder.bitcast(_element(context, builder, ty[0], x_, at),
                                      _V16F.as_pointer())  # fmt: skip
            xs = builder.load(pointer, align=4)
            s = builder.fmul(xs, w) if s is None else builder.call(fma, [xs, w, s])
        lanes = 16
        while lanes > 1:  # a fixed order: the lower half plus the upper, until one lane
            lanes //= 2
            order = ir.VectorType(_I32, lanes)
            low_half = builder.shuffle_vector(s, s, ir.Constant(order, list(range(lanes))))
            upper = ir.Constant(order, list(range(lanes, 2 * lanes)))
            s = builder.fadd(low_half, builder.shuffle_vector(s, s, upper))
        return builder.extract_element(s, ir.Constant(_I32, 0))

    return sig, codegen


def _bytes_affine(x, code, scale, zero, groups, group, signed, half, out):  # pragma: no cover
    """``out[m, n] = sum_k x[m, k] * R((j - zero[t]) * scale[t])``, ``t = n * groups + k //
    group``, ``j`` the code's byte (xor 128 when ``signed``: the table's index); ``code``
    C-contiguous, ``group`` a multiple of 64."""
    rows, count = out.shape
    flip = np.int32(128 if signed else 0)
    for n in range(count):
        codes = code[n]
        for m in range(rows):
            xm = x[m]
            s = np.float32(0.0)
            for g in range(groups):
                t = n * groups + g
                for at in range(g * group, (g + 1) * group, 64):
                    s += _affine64(xm, at, codes, scale[t], zero[t], flip, half)
            out[m, n] = s


@functools.cache
def affine_nibble_kernel() -> Callable[..., None] | None:
    """The compiled 4-bit kernel for tables :func:`affine` describes, or None where it
    cannot run (:func:`available`)."""
    if not available():
        return None
    return jit.compile(_nibbles_affine, "compressed 4-bit affine product (AVX-512)",
                       fastmath={"reassoc", "contract"})  # fmt: skip


@intrinsic
def _table16(typingctx, scale, zero, half, into):
    """Writes ``R((j - zero) * scale)`` for j = 0..15 into ``into`` (R as in
    :func:`_affine64`): a group's table, made in registers instead of read from memory."""
    if not isinstance(into, types.Array) or into.ndim != 1 or into.layout != "C":
        return None
    sig = types.none(types.float32, types.float32, types.boolean, into)

    def codegen(context, builder, signature, args):
        scale_, zero_, half_, into_ = args

        def splat(value):
            v = builder.insert_element(ir.Constant(_V16F, ir.Undefined), value,
                                       ir.Constant(_I32, 0))  # fmt: skip
            return builder.shuffle_vector(v, ir.Constant(_V16F, ir.Undefined),
                                          ir.Constant(_V16I, [0] * 16))  # fmt: skip

        j = ir.Constant(_V16F, [float(i) for i in range(16)])
        w = builder.fmul(builder.fsub(j, splat(zero_)), splat(scale_))
        rounded = builder.fpext(builder.fptrunc(w, ir.VectorType(ir.HalfType(), 16)), _V16F)
        w = builder.select(half_, rounded, w)
        pointer = _element(context, builder, signature.args[3], into_, ir.Constant(_I32, 0))
        builder.store(w, builder.bitcast(pointer, _V16F.as_pointer()), align=4)
        return context.get_dummy_value()

    return sig, codegen


def _nibbles_affine(x, packed, scale, zero, groups, group, signed, half, out):  # pragma: no cover
    """As :func:`_nibbles16`, each group's table made from its ``scale`` and ``zero``
    (:func:`affine`) instead of read: half the bytes a product reads."""
    rows, count = out.shape
    halfgroup = group // 2
    depth = groups * halfgroup
    even = np.empty((rows, depth), np.float32)
    odd = np.empty((rows, depth), np.float32)
    for m in range(rows):
        for i in range(depth):
            even[m, i] = x[m, 2 * i]
            odd[m, i] = x[m, 2 * i + 1]
    flip = np.int32(8 if signed else 0)
    table = np.empty(16, np.float32)
    for n in range(count):
        codes = packed[n]
        for m in range(rows):
            even_m = even[m]
            odd_m = odd[m]
            s = np.float32(0.0)
            for g in range(groups):
                t = n * groups + g
                _table16(scale[t], zero[t], half, table)
                if halfgroup % 64 == 0:  # fewer sums of lanes
                    for at in range(g * halfgroup, (g + 1) * halfgroup, 64):
                        s += _group64(even_m, odd_m, at, codes, table, 0, flip)
                else:
                    for at in range(g * halfgroup, (g + 1) * halfgroup, CHUNK):
                        s += _chunk(even_m, odd_m, at, codes, table, 0, flip)
            out[m, n] = s
