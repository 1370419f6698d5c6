"""Constant folding at load: a layer whose inputs are all constants runs once, not at each run.

A weight-compressed model (NNCF's int8/int4) decompresses each weight in a chain
Const(u8/u4/i4) -> Convert -> Subtract(zero point) -> Multiply(scale) [-> Reshape]; an
f16 model converts each weight to f32; shape subgraphs compute from constants.  A layer
whose inputs are all constants (a Const, or a layer folded so) gives the same outputs at
every run: :func:`fold` runs these layers once, when the model is loaded, with the kernels
a run would use on the same inputs (so the values are the same, bit for bit).  It keeps
the values that a layer that does not fold reads; the plan gives them to each run as
constants (:attr:`irrun.core.executor.Plan.folded`), and the layers that made them no longer
run.  A value only folded layers read is dropped as soon as folding is done with it.

Not folded: ops whose OpDef is not ``foldable`` (Parameters, Results, Consts, and ops with
state or randomness), and layers with bodies (If, Loop, TensorIterator), which run as
before.

The cap.  Folded values live as long as the model, in memory of their own (a Const is a
view of the memory-mapped ``.bin``, which costs nothing until it is read).  Values are kept
in the model's order while their total stays within the cap; one that would pass it is left
to be computed at each run from the compact weights, as without folding.  The default cap
(:func:`default_cap`) is ``max(64 MiB, 8 x the .bin's size)``, at most half of the model's
memory budget (:attr:`irrun.Model.max_memory`, read once at load).  8x is the most that
decompressing grows a weight (u4 or i4 to f32), so every weight of a compressed or f16
model folds; a constant subgraph that grows the weights beyond that (a Broadcast or Tile of
a constant) costs less to compute than to hold for the model's life.  The other half of the
budget stays for the runs' tensors.  The planned peak of a run (:mod:`irrun.core.budget`)
counts folded values as it counts Consts: not as tensors of the run; ``validate`` plans
the runs of the loaded model, folded as load would fold it (:func:`plan_folding`, which
decides by size alone and computes nothing).

A layer whose kernel fails while folding is left unfolded, with all that depends on it: a
run that needs it reports the error at that layer as it always did.  A run that observes
every layer (``on_layer``, ``intermediate=True``, ``irrun run --dump``, ``irrun compare``)
reads the same folded values as any run, so its outputs are the same bits; the layers that
were folded into a later layer's value run after it, apart, to be seen.  A profile lists
the layers computed here as load-time work, with the times they took (:attr:`Folding.timings`).

Compressed weights.  A value that a decompression chain feeds into MatMuls or Gathers
(NNCF's int8/int4 weights, f16 ones) may be kept compressed instead of folded
(:mod:`irrun.core.compressed`, chosen by ``IRRUN_COMPRESSED``: by default where the cap
would not hold it): its readers' steps then read the packed weight, and what it holds of
its own (scales, zero points, look-up tables) counts in :attr:`Folding.bytes`.

Propagation's values (:attr:`irrun.ir.registry.TensorInfo.value`) are not reused: it folds
only up to 4096 elements, which cost microseconds, and a value there may come from a shape
rule rather than the kernel a run uses.
"""

from __future__ import annotations

import mmap
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..errors import UsageError
from ..ir.dims import is_static
from ..ir.registry import TensorInfo, resolve
from ..ir.weights import Weights
from ..text import count
from . import compressed as compressed_weights
from .binding import Node
from .executor import Plan
from .memory import available_memory, format_bytes, parse_size, tensor_bytes
from .propagation import Infos
from .steps import Step

MIN_CAP = 64 * 2**20
GROWTH = 8  # u4/i4 (half a byte) to f32: the most a decompression chain grows a weight

_CONST = resolve("Const", "opset1")


@dataclass
class Folding:
    """What folding did at load (``Model.folding``)."""

    cap: int | None  # bytes, None for no cap
    layers: int = 0  # layers that no longer run
    values: int = 0  # values kept for the runs
    bytes: int = 0  # the memory those hold
    over_cap: int = 0  # values left to the runs, above the cap
    over_cap_bytes: int = 0
    failed: list[Step] = field(default_factory=list)  # layers whose kernel failed at load
    # Weights kept compressed (see irrun.core.compressed): how many, their bytes in the
    # .bin (memory-mapped, not read at load), and the bytes of their scales and zero points
    # (counted in ``bytes`` too).
    compressed: int = 0
    compressed_bytes: int = 0
    compressed_held: int = 0
    seconds: float = 0.0
    # Each layer computed at load, with its kernel's seconds (a profile lists them apart).
    timings: list[tuple[Step, float]] = field(default_factory=list)

    def describe(self) -> list[str]:
        """A line for what was folded, and one for each reason something was not; none for
        a model with no layer to fold."""
        if not (self.values or self.over_cap or self.failed or self.compressed):
            return []
        folded = self.bytes - self.compressed_held
        lines = [] if not self.values else [f"folded {count(self.layers, 'constant layer')} into "
                 f"{count(self.values, 'value')} ({format_bytes(folded)}) at load in "
                 f"{self.seconds * 1e3:.1f} ms"]  # fmt: skip
        if self.compressed:
            lines.append(
                f"kept {count(self.compressed, 'weight')} compressed "
                f"({format_bytes(self.compressed_bytes)} read from the .bin, "
                f"{format_bytes(self.compressed_held)} of scales, zero points and tables)"
            )
        if self.over_cap:
            lines.append(
                f"kept {count(self.over_cap, 'constant subgraph')} "
                f"({format_bytes(self.over_cap_bytes)}) unfolded: above the "
                f"{format_bytes(self.cap or 0)} folding cap"
            )
        if self.failed:
            names = ", ".join(f"{s.node.ref}" for s in self.failed[:3])
            more = f" and {len(self.failed) - 3} more" if len(self.failed) > 3 else ""
            lines.append(f"kept the constant subgraphs through {names}{more} unfolded: their "
                         "kernel failed at load (a run that needs them says why)")  # fmt: skip
        return lines


def fold_option(value: bool | int | str | None) -> bool | int | None:
    """A ``fold_constants`` argument as True (the default cap), False (no folding), a cap
    in bytes, or None (no cap).

    >>> fold_option(True), fold_option("1K"), fold_option("none"), fold_option(0)
    (True, 1024, None, 0)
    """
    if isinstance(value, str):
        try:
            return parse_size(value)
        except ValueError as exc:
            raise UsageError(f"fold_constants: {exc}") from None
    if value is None or isinstance(value, bool) or (isinstance(value, int) and value >= 0):
        return value
    raise UsageError(f"fold_constants must be True, False, a cap in bytes, a size like '256M' "
                     f"or 'none', not {value!r}")  # fmt: skip


def default_cap(weights_bytes: int, budget: int | str | None) -> int:
    """``max(64 MiB, 8 x the .bin)``, at most half of ``budget`` (bytes, ``"available"``,
    read now, or None)."""
    cap = max(MIN_CAP, GROWTH * weights_bytes)
    if budget == "available":
        budget = available_memory()
    return cap if budget is None else min(cap, int(budget) // 2)  # type: ignore[arg-type]


def fold_model(plan: Plan, infos: Infos, option: bool | int | None, weights_bytes: int,
               budget: int | str | None, weights: Weights | None = None
               ) -> Folding | None:  # fmt: skip
    """Fold ``plan`` as ``option`` (see :func:`fold_option`) asks; None when it asks for none."""
    if option is False:
        return None
    cap = default_cap(weights_bytes, budget) if option is True else option
    return fold(plan, infos, cap, weights)  # type: ignore[arg-type]


def may_fold(step: Step) -> bool:
    """Whether the op of ``step`` may be computed once for constant inputs (no state, no
    randomness, no sub-graph), were they all constant."""
    return (step.node.op.foldable and getattr(step.attrs, "sub", None) is None
            and bool(step.inputs))


@dataclass
class _Choice:
    """Which layers fold, and which of their values are kept within the cap, by size."""

    foldable: list[bool]
    constant: set[int]  # slots known at load: Consts' and foldable layers'
    readers: dict[int, list[Step]]
    chosen: list[int]  # values to compute and keep, if they fit once computed
    left: list[int]  # values the runs compute
    folding: Folding
    # Weights kept compressed instead (see irrun.core.compressed).
    chains: list[compressed_weights.Chain] = field(default_factory=list)


def _choose(plan: Plan, infos: Infos, cap: int | None) -> _Choice:
    steps, producer = plan.steps, plan.producer
    foldable = [False] * len(steps)
    constant: set[int] = set()
    readers: dict[int, list[Step]] = {}
    for i, step in enumerate(steps):
        for s in step.inputs:
            readers.setdefault(s, []).append(step)
        if step.node.op.type == "Const":
            constant.update(step.outputs)
        elif may_fold(step) and all(s in constant for s in step.inputs):
            foldable[i] = True
            constant.update(step.outputs)
    # The values to keep: those a layer that does not fold reads, in the model's order.
    wanted = {s for i, step in enumerate(steps) if not foldable[i] for s in step.inputs
              if (p := producer.get(s)) is not None and foldable[p]}  # fmt: skip
    choice = _Choice(foldable, constant, readers, [], [], Folding(cap))
    if not wanted:
        return choice
    key_of = {slot: key for key, slot in plan.slots.items()}
    mode = "off" if plan.reference else compressed_weights.mode()
    chains = {} if mode == "off" else {c.slot: c for c in compressed_weights.find_chains(
        plan, infos, foldable, readers, sorted(wanted))}  # fmt: skip
    planned = 0
    for s in sorted(wanted, key=lambda s: (producer[s], s)):
        size = _static_bytes(infos.get(key_of[s]))
        over = cap is not None and size is not None and planned + size > cap
        if s in chains and (over or mode == "all" or (
                mode == "auto" and compressed_weights.engine_keeps(plan, chains[s], size))):
            choice.chains.append(chains[s])
        elif over:
            choice.folding.over_cap += 1
            choice.folding.over_cap_bytes += size  # type: ignore[operator]
            choice.left.append(s)
        else:  # a size not known beforehand is checked once computed
            choice.chosen.append(s)
            planned += size or 0
    return choice


def plan_folding(plan: Plan, infos: Infos, cap: int | None) -> None:
    """Mark in ``plan`` the values :func:`fold` would keep, without computing them: for a
    plan that only sizes a run's memory (``validate``'s), never one that runs."""
    choice = _choose(plan, infos, cap)
    key_of = {slot: key for key, slot in plan.slots.items()}
    kept = {}
    for s in choice.chosen:
        info = infos.get(key_of[s])
        if _static_bytes(info) is not None:
            kept[s] = _constant_step(plan.steps[plan.producer[s]], s,
                                     np.zeros((), info.element_type.dtype))  # type: ignore[union-attr]  # fmt: skip
    for chain in choice.chains:  # the reader reads the weight compressed, never the chain
        compressed_weights.install(plan, chain, None)
    plan.folded = kept
    plan._schedules.clear()


def _constant_step(step: Step, slot: int, value: np.ndarray) -> Step:
    """A step that gives ``value`` for ``slot``, as a Const of ``step``'s layer."""
    node = Node(step.node.layer, _CONST, SimpleNamespace(value=value), step.node.ref)
    return Step(node, _CONST.kernel, node.attrs, (), (slot,), folded=True)


def fold(plan: Plan, infos: Infos, cap: int | None, weights: Weights | None = None) -> Folding:
    """Compute the plan's constant layers once and give their values to its runs, and
    keep the weights that :mod:`irrun.core.compressed` can use compressed.

    ``infos`` (the propagated shapes) size the values before they are computed, so that
    one above the cap is never made.  ``weights`` is the ``.bin`` (where 4-bit weights
    are read from, packed).
    """
    start = time.perf_counter()
    steps, producer = plan.steps, plan.producer
    choice = _choose(plan, infos, cap)
    foldable = choice.foldable
    chosen, left, folding = choice.chosen, choice.left, choice.folding
    if not chosen and not left and not choice.chains:
        return folding
    leaves = [s for chain in choice.chains for s in chain.leaves]
    values, failed = _compute(plan, chosen + leaves, folding.timings)
    compressed = _compress(plan, infos, choice, values, weights)
    kept: dict[int, Step] = {}
    for s in chosen:
        value = values.pop(s, None)
        if value is None:  # it, or a layer it depends on, failed
            left.append(s)
            continue
        value = np.asarray(value)
        size = _held_bytes(value)
        if cap is not None and folding.bytes + size > cap:
            folding.over_cap += 1
            folding.over_cap_bytes += size
            left.append(s)
            continue
        folding.bytes += size
        if value.flags.writeable:  # a run's results may be views of it: none may write it
            value = value.view()
            value.flags.writeable = False
        kept[s] = _constant_step(steps[producer[s]], s, value)
    folding.failed = failed
    folding.values = len(kept)
    # Layers that still run: those the values left to the runs come from.
    still = _ancestors(plan, left, foldable)
    done = _ancestors(plan, list(kept) + compressed, foldable)
    folding.layers = len(done - still)
    plan.folded = kept
    plan._schedules.clear()  # schedules made before folding would run the layers
    folding.seconds = time.perf_counter() - start
    return folding


def _compress(plan: Plan, infos: Infos, choice: _Choice, values: dict[int, np.ndarray],
              weights: Weights | None) -> list[int]:  # fmt: skip
    """Give the readers of each chain chosen the weight kept compressed; the slots done.
    A chain whose small constants failed, or that cannot be built, is left to the runs."""
    done = []
    folding = choice.folding
    for chain in choice.chains:
        leaves = {s: values.get(s) for s in chain.leaves}
        weight = None
        if all(v is not None for v in leaves.values()):
            try:
                weight = compressed_weights.build(plan, chain, leaves, weights)  # type: ignore[arg-type]
            except (ValueError, OSError):
                weight = None
        if weight is None:
            choice.left.append(chain.slot)
            continue
        compressed_weights.install(plan, chain, weight)
        folding.compressed += 1
        folding.compressed_bytes += weight.packed
        folding.compressed_held += weight.held
        folding.bytes += weight.held
        done.append(chain.slot)
    for s in {s for chain in choice.chains for s in chain.leaves} - set(choice.chosen):
        values.pop(s, None)
    return done


def _ancestors(plan: Plan, slots: list[int], foldable: list[bool]) -> set[int]:
    """The foldable steps that the values of ``slots`` come from."""
    found: set[int] = set()
    stack = [plan.producer[s] for s in slots]
    while stack:
        i = stack.pop()
        if i in found or not foldable[i]:
            continue
        found.add(i)
        stack.extend(plan.producer[s] for s in plan.steps[i].inputs)
    return found


def _compute(plan: Plan, slots: list[int], timings: list[tuple[Step, float]]
             ) -> tuple[dict[int, np.ndarray], list[Step]]:
    """The values of ``slots``, computed from the Consts by the steps they need, each
    intermediate dropped after its last reader; and the steps whose kernel failed.

    The steps run one value's subgraph after the other (depth first), not in the model's
    order, which may convert every weight before it subtracts any zero point: so only one
    subgraph's intermediates are alive at a time beside the values kept.
    """
    steps, producer = plan.steps, plan.producer
    order: list[int] = []
    seen: set[int] = set()
    for slot in slots:
        stack = [(producer[slot], False)]
        while stack:
            i, inputs_done = stack.pop()
            if inputs_done:
                order.append(i)
            elif i not in seen:
                seen.add(i)
                stack.append((i, True))
                stack.extend((producer[s], False) for s in reversed(steps[i].inputs)
                             if producer[s] not in seen)  # fmt: skip
    reads: dict[int, int] = {}
    for i in order:
        for s in steps[i].inputs:
            reads[s] = reads.get(s, 0) + 1
    keep = set(slots)
    values: dict[int, np.ndarray] = {}
    broken: set[int] = set()  # slots of failed steps and of all that read them
    failed: list[Step] = []
    with np.errstate(all="ignore"):  # as in a run (see Plan.run)
        for i in order:
            step = steps[i]
            if any(s in broken for s in step.inputs):
                broken.update(step.outputs)
            else:
                start = time.perf_counter()
                try:
                    results = step.kernel(step.attrs, *[values[s] for s in step.inputs])
                except Exception:  # the run that needs it reports it
                    failed.append(step)
                    broken.update(step.outputs)
                else:
                    timings.append((step, time.perf_counter() - start))
                    for s, value in zip(step.outputs, results, strict=False):
                        if s in keep or reads.get(s):
                            values[s] = value
            for s in step.inputs:
                reads[s] -= 1
                if not reads[s] and s not in keep:
                    values.pop(s, None)
    return values, failed


def _held_bytes(value: np.ndarray) -> int:
    """The memory ``value`` keeps alive: that of the array it is a view of, and none for a
    view of the memory-mapped weights."""
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    # (An array NumPy derives from a memmap may be an np.memmap too, with memory of its own.)
    return 0 if isinstance(root.base, mmap.mmap) else root.nbytes


def _static_bytes(info: TensorInfo | None) -> int | None:
    """A tensor's bytes, when its shape and type are known (a constant's always are)."""
    if info is None or info.element_type is None or not is_static(info.shape):
        return None
    return tensor_bytes(info.shape, info.element_type.item_bytes)  # type: ignore[arg-type]
