"""Compressed weights kept compressed: the decompression chains that folding leaves alone.

A weight-compressed model computes each weight of a MatMul (or of an embedding's Gather)
from constants: Const(u8/i8/u4/i4/f16) -> Convert -> [Subtract zero point] -> [Multiply
scale] -> [Reshape the groups away] -> [Convert].  Folding (:mod:`irrun.core.folding`)
would compute it once, in f32: 8x an int4 ``.bin``, 4x an int8 one, and a decode step
then reads all of it.  Instead, :func:`find_chains` finds these chains at load and
:func:`install` gives each reader a kernel of :mod:`irrun.fast.compressed` that holds the
packed weight as it lies in the memory-mapped ``.bin`` (plus the chain's small constants,
computed once) and decompresses a block of output channels at a time, with the chain's
own kernels.  The reader's step then reads only its other inputs; the chain's layers run
in no plain run (a run that observes every layer runs them apart, as it runs folded ones).

A chain qualifies when: every layer on it is a Convert, Subtract, Multiply, Add or
Reshape that could fold, each value on it is read only by the next layer (the last one
only by MatMuls as input 1 and axis-0 Gathers as data), the elementwise layers keep their
main input's shape and their other inputs are smaller constants whose axis of the output
channels is whole or 1, each Reshape keeps the output channels' axis (first for
``transpose_b`` and Gather, last otherwise), and the result is a 2-D f32 weight.  A 4-bit
Const needs its channels first and whole bytes per channel.

``IRRUN_COMPRESSED`` chooses: ``auto`` (the default) keeps compressed the weights that
folding would not hold within its cap and, with the fast engine on (:mod:`irrun.fast.jit`),
every 8-bit or 4-bit weight of at least :data:`ENGINE_FROM` bytes decompressed, whose
products of a few rows (a decode step) the engine computes from the codes as fast as BLAS
reads the f32 weight (without it, NumPy's look-ups by blocks are several times slower than
folded f32, so folding keeps them where memory allows); ``1`` every chain that qualifies; ``0`` none
(folding then decompresses them all at load, as before).  A reference run never does.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..fast import compressed_jit, jit
from ..fast.compressed import (
    CompressedGather,
    CompressedMatMul,
    CompressedWeight,
    gather_scratch,
    product_scratch,
)
from ..ir import element_types
from ..ir.dims import is_static
from ..ir.weights import Weights
from .binding import PackedConst
from .executor import Plan
from .propagation import Infos
from .steps import Step

ENGINE_FROM = 1 << 20  # an LLM's projections; the tiny models' weights stay folded
MODES = {"auto": "auto", "1": "all", "on": "all", "all": "all", "0": "off", "off": "off"}
_ELEMENTWISE = ("Convert", "Subtract", "Multiply", "Add")
_BASE_TYPES = ("u8", "i8", "u4", "i4", "f16")


def mode() -> str:
    """``IRRUN_COMPRESSED`` as ``"auto"``, ``"all"`` or ``"off"``."""
    text = os.environ.get("IRRUN_COMPRESSED", "auto").strip().lower() or "auto"
    if text not in MODES:
        raise UsageError(f"IRRUN_COMPRESSED={text!r}: expected auto, 1 or 0")
    return MODES[text]


def engine_keeps(plan: Plan, chain: Chain, size: int | None) -> bool:
    """Whether ``auto`` keeps ``chain``'s weight (``size`` bytes decompressed) compressed
    for the fast engine: on, an 8-bit or 4-bit weight, large enough."""
    et = plan.steps[chain.base].attrs.element_type
    return (size is not None and size >= ENGINE_FROM and et.name != "f16"
            and jit.enabled())


@dataclass
class Chain:
    """A decompression chain into readers that can keep its weight compressed."""

    slot: int  # the weight the readers read
    base: int  # the Const step it comes from
    path: list[int]  # the chain's steps after the Const, in order
    # For each step of ``path``: (the main input's position, the channel axis of its
    # output, and for each other input its slot and channel axis, None if broadcast).
    plans: list[tuple[int, int, list[tuple[int, int | None]]]]
    base_axis: int
    shape: tuple[int, int]
    channels_first: bool
    readers: list[int]  # step indices
    packed: int  # the Const's bytes
    outs: list[tuple[int, ...]]  # the output shape of each step of ``path``

    @property
    def leaves(self) -> list[int]:
        return [s for _, _, others in self.plans for s, _ in others]


def _shape(infos: Infos, key_of: dict[int, tuple[str, int]], slot: int) -> tuple | None:
    info = infos.get(key_of[slot])
    if info is None or info.shape is None or not is_static(info.shape):
        return None
    return tuple(info.shape)


def find_chains(plan: Plan, infos: Infos, foldable: list[bool], readers: dict[int, list[Step]],
                candidates: list[int]) -> list[Chain]:  # fmt: skip
    """The chains among ``candidates`` (slots folding would keep) that qualify."""
    key_of = {slot: key for key, slot in plan.slots.items()}
    index = {id(step): i for i, step in enumerate(plan.steps)}
    found = []
    for slot in candidates:
        chain = _match(plan, infos, key_of, index, foldable, readers, slot)
        if chain is not None:
            found.append(chain)
    return found


def _match(plan, infos, key_of, index, foldable, readers, slot) -> Chain | None:
    steps, producer = plan.steps, plan.producer
    final = _shape(infos, key_of, slot)
    info = infos.get(key_of[slot])
    if final is None or len(final) != 2 or info.element_type is None \
            or info.element_type.name != "f32":  # fmt: skip
        return None
    firsts = set()
    users = []
    for step in readers.get(slot, []):
        op = step.node.op.type
        if op == "MatMul" and step.inputs[1] == slot and step.inputs[0] != slot:
            firsts.add(bool(step.attrs.transpose_b))
        elif (op == "Gather" and step.node.op.version in (1, 7, 8) and step.inputs[0] == slot
              and slot not in step.inputs[1:] and getattr(step.attrs, "batch_dims", 0) == 0
              and _constant_axis(plan, step.inputs[2]) == 0):  # fmt: skip
            firsts.add(True)
        else:
            return None
        users.append(index[id(step)])
    if len(firsts) != 1 or not users:
        return None
    channels_first = firsts.pop()
    axis = 0 if channels_first else 1
    path: list[int] = []
    plans: list[tuple[int, int, list[tuple[int, int | None]]]] = []
    outs: list[tuple[int, ...]] = []
    cur = slot
    while True:
        p = producer.get(cur)
        if p is None:
            return None
        step = steps[p]
        if step.node.op.type == "Const":
            break
        if not foldable[p] or step.node.op.type not in (*_ELEMENTWISE, "Reshape"):
            return None
        if cur != slot and len(readers.get(cur, [])) != 1:
            return None
        out = _shape(infos, key_of, step.outputs[0])
        if out is None:
            return None
        if step.node.op.type == "Reshape":
            main, others = 0, []
            before = _shape(infos, key_of, step.inputs[0])
            if before is None or not before:
                return None
            in_axis = 0 if axis == 0 else len(before) - 1
            if before[in_axis] != out[axis]:
                return None
        else:
            shapes = [_shape(infos, key_of, s) for s in step.inputs]
            if any(s is None for s in shapes):
                return None
            sizes = [math.prod(s) for s in shapes]
            main = max(range(len(shapes)), key=lambda i: (sizes[i], -i))
            if shapes[main] != out:
                return None
            others = []
            for i, s in enumerate(step.inputs):
                if i == main:
                    continue
                if sizes[i] >= sizes[main] or np.broadcast_shapes(out, shapes[i]) != out:
                    return None
                la = axis - (len(out) - len(shapes[i]))
                if la < 0 or shapes[i][la] == 1:
                    others.append((s, None))
                elif shapes[i][la] == out[axis]:
                    others.append((s, la))
                else:
                    return None
            in_axis = axis
        path.append(p)
        plans.append((main, axis, others))
        outs.append(out)
        axis = in_axis
        cur = step.inputs[main]
    base = producer[cur]
    if len(readers.get(cur, [])) != 1:
        return None
    a = steps[base].attrs
    if a.element_type.name not in _BASE_TYPES or not path:
        return None
    shape = tuple(a.shape)
    if a.element_type.bits == 4 and (axis != 0 or (math.prod(shape[1:]) % 2)):
        return None
    path.reverse()
    plans.reverse()
    outs.reverse()
    packed = element_types.byte_size(a.element_type, math.prod(shape))
    return Chain(slot, base, path, plans, axis, final, channels_first, users, packed, outs)


def _constant_axis(plan: Plan, slot: int) -> int | None:
    p = plan.producer.get(slot)
    if p is None or plan.steps[p].node.op.type != "Const":
        return None
    value = np.asarray(plan.steps[p].attrs.value).reshape(-1)
    return int(value[0]) if value.size == 1 else None


def _take(value: np.ndarray, axis: int, index: slice | np.ndarray) -> np.ndarray:
    return value[(slice(None),) * axis + (index,)]


def build(plan: Plan, chain: Chain, leaves: dict[int, np.ndarray], weights: Weights | None
          ) -> CompressedWeight:  # fmt: skip
    """The chain's weight, kept compressed; ``leaves`` are its small constants' values."""
    a = plan.steps[chain.base].attrs
    shape = tuple(a.shape)
    et = a.element_type
    packed = None
    if et.bits == 4:
        # As binding keeps it (irrun.core.binding.PackedConst), or read from the .bin.
        raw = a.packed if isinstance(a, PackedConst) else None
        if raw is None and weights is None:
            raise ValueError("a 4-bit weight needs the .bin")
        if raw is None:
            raw = weights.raw(a.offset, chain.packed)  # type: ignore[union-attr]
        per = math.prod(shape[1:]) // 2
        packed = raw[: shape[0] * per].reshape(shape[0], per)

        def base(index):
            picked = packed[index]
            count = picked.shape[0] * per * 2
            return element_types.decode(picked.reshape(-1), et, count).reshape(-1, *shape[1:])
    else:
        value = a.value

        def base(index):
            return _take(value, chain.base_axis, index)

    program = []
    for p, (main, axis, others), out in zip(chain.path, chain.plans, chain.outs, strict=True):
        step = plan.steps[p]
        if step.node.op.type == "Reshape":
            program.append((None, axis, out, ()))
        else:
            program.append((step, main, len(step.inputs),
                            tuple((leaves[s], la) for s, la in others)))

    def run(v, index, channels, steps):
        for step, main, n, others in steps:
            if step is None:  # a Reshape, which keeps the channels on their axis
                target = list(n)
                target[main] = channels
                v = v.reshape(target)
                continue
            args = []
            it = iter(others)
            for i in range(n):
                if i == main:
                    args.append(v)
                else:
                    leaf, la = next(it)
                    args.append(leaf if la is None or index is None else _take(leaf, la, index))
            v = step.kernel(step.attrs, *args)[0]
        return v

    def rows(index):
        v = base(index)
        return run(v, index, v.shape[chain.base_axis], program)

    held = sum(_own_bytes(v) for v in leaves.values())
    looked = _lookup(chain, shape, et, program, run, base, packed)
    product = None
    if looked is not None:
        rows, table_bytes, product = looked
        held += table_bytes
    weight = CompressedWeight(chain.shape, chain.channels_first, np.dtype(np.float32), rows,
                              held, chain.packed)  # fmt: skip
    weight.product = product
    return weight


def _lookup(chain: Chain, shape: tuple[int, ...], et, program: list, run, base, packed):
    """Rows decompressed by table look-up, where the chain allows: ``(rows, held bytes)``.

    Where every constant of the chain but the codes is the same along the codes' last
    axis (a group's scale and zero point), each decompressed element is a function of its
    code and of its row and group alone.  Running the chain's kernels on every code of
    each group (16 for 4 bits, 256 for 8) gives a table of exactly the values the chain
    gives each element; a block then looks its codes up in it.  The tables are held when
    they are no larger than the packed weight (4-bit groups of 128 and more, 8-bit rows
    of 1024 and more), else made for each block where that is less work than the chain
    on the block (a group longer than its number of codes); else None: the chain itself.
    """
    if et.name not in ("u8", "i8", "u4", "i4") or chain.base_axis != 0 or len(shape) < 2:
        return None
    reshaped = False
    for step, _, _, others in program:
        if step is None:
            reshaped = True
        elif reshaped and any(la is not None or leaf.size != 1 for leaf, la in others):
            return None  # after the Reshape, constants of one value only
        elif any(leaf.ndim and leaf.shape[-1] != 1 for leaf, _ in others):
            return None  # a constant that differs within a group
    codes = 1 << et.bits
    n, group = shape[0], shape[-1]
    groups = math.prod(shape[1:-1])
    first = -(codes // 2) if et.name[0] == "i" else 0
    code_values = np.arange(first, first + codes).astype(et.dtype)
    # The Reshapes are left out: a table is indexed by row and group alone.
    pre = [p for p in program if p[0] is not None]

    def tables(index, count):
        v = np.broadcast_to(code_values, (count, *shape[1:-1], codes))
        return run(v, index, count, pre).reshape(count * groups, codes)

    table_bytes = n * groups * codes * 4
    if table_bytes <= chain.packed:
        held = np.ascontiguousarray(tables(None, n), dtype=np.float32)

        def table_of(index, count):
            return held.reshape(n, groups * codes)[index].reshape(-1)
    elif codes < group:
        held = None

        def table_of(index, count):
            return np.ascontiguousarray(tables(index, count), dtype=np.float32).reshape(-1)
    else:
        return None
    offsets: dict[int, np.ndarray] = {}

    def offsets_of(count: int) -> np.ndarray:
        found = offsets.get(count)
        if found is None:  # where each row's and group's table starts: [count, groups, 1]
            found = np.arange(count * groups, dtype=np.intp).reshape(count, groups, 1)
            found = offsets[count] = found * codes - first
        return found

    def rows(index):
        count = len(range(*index.indices(n))) if isinstance(index, slice) else len(index)
        table = table_of(index, count)
        if packed is not None:  # two codes a byte, low nibble first
            raw = packed[index]
            code = np.empty((count, raw.shape[1], 2), np.uint8)
            np.bitwise_and(raw, 0x0F, out=code[:, :, 0])
            np.right_shift(raw, 4, out=code[:, :, 1])
            if et.name == "i4":  # two's complement nibbles: -8..7
                code = (code ^ 8).view(np.int8) - np.int8(8)
        else:
            code = base(index)
        # Indices of the platform's own width: NumPy's take converts any other first.
        idx = np.add(code.reshape(count, groups, group), offsets_of(count), dtype=np.intp)
        out = np.take(table, idx, mode="wrap")  # every index is in the table
        return out.reshape(count, *chain.shape[1:])

    product = None
    # Tables that are an affine function of the code, rounded as the chain rounds (checked
    # bit for bit): the AVX-512 kernels compute them instead of reading them (8-bit: each
    # value; 4-bit: each group's table, in a register).
    fits = group % (64 if codes == 256 else 32) == 0
    line = compressed_jit.affine(held) if held is not None and fits else None
    if group % 4 == 0:
        signed = et.name[0] == "i"

        def product(x: np.ndarray, index: slice, out: np.ndarray) -> None:
            count = len(range(*index.indices(n)))
            table = table_of(index, count).reshape(count * groups, codes)
            nibbles, whole = compressed_jit.kernels()  # type: ignore[misc]
            if packed is not None:
                if line is not None:  # each group's table made in registers
                    scale, zero, half = line
                    start, stop, _ = index.indices(n)
                    at = start * groups, stop * groups
                    compressed_jit.affine_kernel(4)(x, np.ascontiguousarray(packed[index]),  # type: ignore[misc]
                                                    scale[at[0] : at[1]], zero[at[0] : at[1]],
                                                    groups, group, signed, half, out)  # fmt: skip
                    return
                # The AVX-512 kernel where it runs (a group of a multiple of 32 codes).
                nibbles = compressed_jit.vector_kernel(group) or nibbles
                nibbles(x, np.ascontiguousarray(packed[index]), np.ascontiguousarray(table),
                        groups, group, signed, out)
            else:
                code = base(index).reshape(count, groups * group).view(np.uint8)
                if line is not None:
                    scale, zero, half = line
                    start, stop, _ = index.indices(n)
                    at = start * groups, stop * groups
                    compressed_jit.affine_kernel()(x, np.ascontiguousarray(code),  # type: ignore[misc]
                                                   scale[at[0] : at[1]], zero[at[0] : at[1]],
                                                   groups, group, signed, half, out)  # fmt: skip
                else:
                    whole(x, code, table, groups, group, signed, out)

    return rows, 0 if held is None else held.nbytes, product


def _own_bytes(value: np.ndarray) -> int:
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return 0 if root.base is not None and not isinstance(root.base, np.ndarray) else root.nbytes


def install(plan: Plan, chain: Chain, weight: CompressedWeight | None) -> None:
    """Give each reader of ``chain`` a step that reads the weight kept compressed
    (``weight`` None: a step that only sizes a run, never runs)."""
    for i in chain.readers:
        step = plan.steps[i]
        if step.node.op.type == "MatMul":
            kernel = (CompressedMatMul(weight, step.kernel) if weight is not None
                      else _Sizing(lambda ins, outs: product_scratch(
                          chain.shape[0] if chain.channels_first else chain.shape[1],
                          chain.shape[1] if chain.channels_first else chain.shape[0], 4)))
            plan.steps[i] = Step(step.node, kernel, step.attrs, step.inputs[:1], step.outputs)
        else:
            kernel = (CompressedGather(weight, step.kernel) if weight is not None
                      else _Sizing(lambda ins, outs: gather_scratch(outs)))
            plan.steps[i] = Step(step.node, kernel, step.attrs, step.inputs[1:], step.outputs)


class _Sizing:
    """The kernel of a step in a plan that only sizes runs: its scratch, never a run."""

    def __init__(self, scratch_of) -> None:
        self.scratch_of = scratch_of

    def __call__(self, *_args):
        raise RuntimeError("a plan that only sizes runs")
