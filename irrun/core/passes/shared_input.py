"""A pass: linear layers side by side on one input run as one product (attention's Q, K, V).

Consecutive in-place chains (:mod:`.inplace`) that each begin with a MatMul of the same
input by a constant ``[out, in]`` weight (``transpose_b``, as converters write a linear
layer) and the Add of a constant 1-D bias run as one step: one product by the weights
stacked (``[out1 + out2 + ..., in]``, read transposed as each MatMul reads its own), one
Add of the biases side by side, then each chain's other ops on its columns of the result
(a view; an op that would work in place there runs its own kernel instead).  Each output
is the dot product the chain's own MatMul takes, of the same rows, summed by the same BLAS
over the same K, and the same bias added.  Only f32 and f64 (f16 adds in f32 and rounds,
apart), and chains whose results the run does not keep (they are views into the shared
result).
"""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import numpy as np

from ..steps import Step, Tap, run_step
from .constants import known_constants
from .inplace import InPlaceChain, _Binary, run_links


class SharedInput:
    """One product and bias for several chains, then each chain's remaining ops."""

    def __init__(self, chains: list[InPlaceChain], weight: np.ndarray, bias: np.ndarray,
                 columns: list[tuple[int, int]]) -> None:
        self.chains, self.columns = chains, columns
        first = chains[0].head
        self.head = first  # the layer blamed for a product that fails
        self.product = first  # the MatMul's step
        self.weight, self.bias = weight, bias
        self.parts = tuple(p for chain in chains for p in chain.parts)

    def _product(self, a: np.ndarray) -> np.ndarray:
        try:
            return self.product.kernel(self.product.attrs, a, self.weight)[0]
        except Exception as exc:
            exc.irrun_step = self.product  # type: ignore[attr-defined]  # the layer to blame
            raise

    def _add_bias(self, value: np.ndarray) -> np.ndarray:
        if value.dtype == self.bias.dtype and value.flags.owndata:
            value += self.bias
            return value
        # not reached for f32 and f64 products; kept for a kernel that changes
        return run_step(self.chains[0].tails[0][0], (value, self.bias))[0]

    def __call__(self, _attrs: object, a: np.ndarray, *others: np.ndarray):
        value = self._add_bias(self._product(a))
        outs = []
        at = 0
        for chain, (lo, hi) in zip(self.chains, self.columns, strict=True):
            part = value[..., lo:hi]
            for _, link in chain.tails[1:]:
                if link.arity:  # type: ignore[attr-defined]
                    part = link(part, others[at])  # type: ignore[operator]
                    at += 1
                else:
                    part = link(part)  # type: ignore[operator]
            outs.append(part)
        return tuple(outs)

    def observed(self, args: list, tap: Tap, copies: bool) -> tuple[np.ndarray, ...]:
        """:meth:`__call__`, reporting each layer.  The shared product's and the biases'
        times are shared among the chains by their columns."""
        a, others = args[0], iter(args[1:])
        clock = time.perf_counter
        start = clock()
        value = self._product(a)
        product_seconds = clock() - start
        product = value.copy() if copies else value  # before the bias is added into it
        start = clock()
        value = self._add_bias(value)
        bias_seconds = clock() - start
        width = value.shape[-1] or 1
        outs = []
        for chain, (lo, hi) in zip(self.chains, self.columns, strict=True):
            share = (hi - lo) / width
            matmul, add = chain.head, chain.tails[0][0]
            made = product[..., lo:hi]
            tap(matmul, (a, self.weight[lo:hi]), (made,), product_seconds * share)
            part = value[..., lo:hi]
            tap(add, (made, self.bias[lo:hi]), (part,), bias_seconds * share)
            outs.append(run_links(chain.tails[1:], part, others, tap, copies))
        return tuple(outs)


def _parts(step: Step, constants: dict[int, np.ndarray]):
    """(input slot, ``[out, in]`` weight, bias) of a chain that begins with a linear layer."""
    chain = step.kernel
    if not isinstance(chain, InPlaceChain) or not chain.tails:
        return None
    head = chain.head
    if head.node.op.type != "MatMul" or len(head.inputs) != 2 or head.needed is not None:
        return None
    weight = constants.get(head.inputs[1])
    if weight is None or weight.ndim != 2 or head.attrs.transpose_a or not head.attrs.transpose_b:
        return None
    add_step, link = chain.tails[0]
    if not isinstance(link, _Binary) or add_step.node.op.type != "Add":
        return None
    bias_slot = add_step.inputs[1] if link.first else add_step.inputs[0]
    bias = constants.get(bias_slot)
    if (bias is None or weight.dtype not in (np.float32, np.float64) or bias.dtype != weight.dtype
            or bias.shape != (weight.shape[0],)):
        return None
    return head.inputs[0], weight, bias


def fuse_shared_inputs(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Run the linear-layer chains on one input as one step, where the first of them was.

    A later chain joins when every other input of its ops is made before that step.  The
    slots a joining chain was the last reader of are freed where it was (after the step
    before it), since steps between may still read them.
    """
    constants = known_constants(schedule)
    made_at = {slot: pos for pos, (step, _) in enumerate(schedule) for slot in step.outputs}
    parts = [_parts(step, constants) if step.outputs[0] not in keep else None
             for step, _ in schedule]  # fmt: skip
    groups: dict[int, list[int]] = {}
    joined: set[int] = set()
    for i, first in enumerate(parts):
        if first is None or i in joined:
            continue
        group = [i]
        for j in range(i + 1, len(schedule)):
            more = parts[j]
            if j in joined or more is None or more[0] != first[0]:
                continue
            if more[1].shape[1] != first[1].shape[1] or more[1].dtype != first[1].dtype:
                continue
            if all(made_at.get(s, -1) < i for s in schedule[j][0].inputs[2:]):
                group.append(j)
        if len(group) > 1:
            groups[i] = group
            joined.update(group[1:])
    if not groups:
        return schedule
    out: list[tuple[Step, tuple[int, ...]]] = []
    for pos, (step, frees) in enumerate(schedule):
        if pos in joined:
            last, last_frees = out[-1]
            out[-1] = (last, tuple(dict.fromkeys((*last_frees, *frees))))
        elif pos in groups:
            out.append((_fused([schedule[k][0] for k in groups[pos]], constants), frees))
        else:
            out.append((step, frees))
    return out


def _fused(steps: list[Step], constants: dict[int, np.ndarray]) -> Step:
    found = [_parts(step, constants) for step in steps]
    weight = np.concatenate([f[1] for f in found], axis=0)  # type: ignore[index]
    bias = np.concatenate([f[2] for f in found])  # type: ignore[index]
    edges = np.cumsum([0] + [f[1].shape[0] for f in found])  # type: ignore[index]
    columns = [(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
    chains = [step.kernel for step in steps]
    # The inputs each chain's ops after its Add read, in the order the kernel takes them.
    others = tuple(s for step in steps for s in step.inputs[2:])
    kernel = SharedInput(chains, weight, bias, columns)  # type: ignore[arg-type]
    outputs = tuple(step.outputs[0] for step in steps)
    return Step(steps[0].node, kernel, SimpleNamespace(), (found[0][0], *others), outputs)  # type: ignore[index]
