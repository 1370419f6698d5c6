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
codes of one group): ``even * t[low] + odd * t[high]`` in 16 lanes (the second product
fused with the addition), the lanes summed pairwise by halves in a fixed order, and that
sum added to the channel's.  For signed codes the index is the nibble with its top bit
flipped, as in the portable kernel (the table starts at -8).

Values.  Each weight value is its table's entry, exactly the decompressed value; the sum
over K is in another order than the portable kernel's or BLAS's, fused or not, so the
product is held to the same bound (:data:`irrun.fast.matmul.BOUND`: 2 K u sum_k |a_ik
w_kj|, which a sum of K products in any order keeps).  The order depends only on K and
the group, not on the block of channels or the thread count.

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


@intrinsic
def _chunk(typingctx, even, odd, at, codes, table, entry, flip):
    """``sum_i even[at + i] * t[low_i] + odd[at + i] * t[high_i]`` for the 16 bytes of
    ``codes`` from ``at`` (low and high nibble, each xor ``flip``), ``t`` the 16 values of
    ``table`` from ``entry``; as f32, lanes summed by halves."""
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

        raw = builder.zext(load(_element(context, builder, ty[3], codes_, at_), _V16B, 1),
                           _V16I)  # fmt: skip
        flip16 = builder.insert_element(ir.Constant(_V16I, ir.Undefined), flip_,
                                        ir.Constant(_I32, 0))  # fmt: skip
        flip16 = builder.shuffle_vector(flip16, ir.Constant(_V16I, ir.Undefined),
                                        ir.Constant(_V16I, [0] * 16))  # fmt: skip
        low = builder.xor(builder.and_(raw, ir.Constant(_V16I, [15] * 16)), flip16)
        high = builder.xor(builder.lshr(raw, ir.Constant(_V16I, [4] * 16)), flip16)
        t = load(_element(context, builder, ty[4], table_, entry_), _V16F, 4)
        x_even = load(_element(context, builder, ty[0], even_, at_), _V16F, 4)
        x_odd = load(_element(context, builder, ty[1], odd_, at_), _V16F, 4)
        s = builder.call(fma, [x_odd, builder.call(permute, [t, high]),
                               builder.fmul(x_even, builder.call(permute, [t, low]))])
        lanes = 16
        while lanes > 1:  # a fixed order: the lower half plus the upper, until one lane
            lanes //= 2
            half = ir.VectorType(_I32, lanes)
            low_half = builder.shuffle_vector(s, s, ir.Constant(half, list(range(lanes))))
            upper = ir.Constant(half, list(range(lanes, 2 * lanes)))
            high_half = builder.shuffle_vector(s, s, upper)
            s = builder.fadd(low_half, high_half)
        return builder.extract_element(s, ir.Constant(_I32, 0))

    return sig, codegen


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
                for at in range(g * half, (g + 1) * half, CHUNK):
                    s += _chunk(even_m, odd_m, at, codes, values, entry, flip)
            out[m, n] = s
