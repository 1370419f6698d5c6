"""The table of fast kernels: each registered against the op versions it implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir.registry import Kernel, OpDef, Scratch

# Computes an op into the memory of its first argument where it may; says whether it did.
Into = Callable[..., bool]
# Whether a fast kernel runs on tensors of these infos: (attributes, inputs, outputs) -> bool.
Takes = Callable[..., bool]


@dataclass(frozen=True)
class FastKernel:
    """A faster way to compute some versions of one op type."""

    op: str  # the op type, as registered
    versions: tuple[int, ...]
    applies: str  # when it runs, in words (``irrun ops --fast`` lists it)
    run: Kernel  # the reference's arguments; its outputs, or NotImplemented
    # Bit-identical to the reference where it applies; else ``bound`` says how close.
    exact: bool = True
    bound: str = ""
    # Scratch bytes beyond what the reference declares (see OpDef.scratch); None: none.
    scratch: Scratch | None = None
    # The op computed into the memory of its first argument (an in-place pass's link).
    into: Into | None = None
    # Whether it runs on tensors of these infos (attributes, input infos, output infos),
    # never giving way to the reference: decided from shapes, types and attributes alone.
    # The memory plan then counts its scratch only.  None: not known before the run.
    takes: Takes | None = None


_FAST: dict[tuple[str, int], FastKernel] = {}


def register_fast(fast: FastKernel) -> FastKernel:
    """Add ``fast`` for each of its versions; each may have one fast kernel."""
    for version in fast.versions:
        key = (fast.op.lower(), version)
        if key in _FAST:
            raise ValueError(f"{fast.op}-v{version} has two fast kernels")
        _FAST[key] = fast
    return fast


def fast_kernel(op: OpDef) -> FastKernel | None:
    """The fast kernel registered for ``op``'s type and version, if any."""
    return _FAST.get((op.type.lower(), op.version))


def fast_kernels() -> list[FastKernel]:
    """Every fast kernel, once each."""
    return list({id(f): f for f in _FAST.values()}.values())


class Dispatch:
    """An op's kernel in a default run: the fast kernel where it applies, else the
    reference.  ``needed=`` (optional outputs) goes to both alike."""

    __slots__ = ("fast", "reference", "run")

    def __init__(self, fast: FastKernel, reference: Kernel) -> None:
        self.fast, self.reference, self.run = fast, reference, fast.run

    def __call__(self, attrs: object, *args: np.ndarray | None, **kw: object):
        out = self.run(attrs, *args, **kw)
        if out is NotImplemented:
            return self.reference(attrs, *args, **kw)
        return out


def kernel_for(op: OpDef, reference: bool = False) -> Kernel:
    """The kernel a run calls for ``op``: its reference kernel in a reference run or when
    no fast kernel is registered, else a :class:`Dispatch` of the two."""
    fast = None if reference else fast_kernel(op)
    return op.kernel if fast is None else Dispatch(fast, op.kernel)


def scratch_bytes(op: OpDef, attrs, inputs, outputs, reference: bool = False) -> int:
    """The scratch bytes a run's kernel for ``op`` may hold: the reference's, and the fast
    kernel's too where one may run (it falls back to the reference where it does not
    apply, so a plan counts the larger)."""
    fast = None if reference else fast_kernel(op)
    fast_need = 0 if fast is None or fast.scratch is None else fast.scratch(attrs, inputs, outputs)
    if fast is not None and fast.takes is not None and fast.takes(attrs, inputs, outputs):
        return fast_need
    need = op.scratch(attrs, inputs, outputs) if op.scratch is not None else 0
    return max(need, fast_need)
