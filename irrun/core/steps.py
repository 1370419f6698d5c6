"""A plan's steps, and the passes that rewrite a schedule of them.

A step is one layer to run: its kernel, its parsed attributes, and the slots it
reads and writes.  A schedule is the steps a run needs, in order, each with the
slots it is the last reader of (dropped once it has run).  A pass takes a schedule
and the slots the run keeps, and returns a schedule that computes the same: it may
put one step in the place of several (see :mod:`irrun.core.passes`).

A fused step (made of others by a pass) has a kernel that lists the layers' steps it
runs (``parts``) and can run observed (``observed``): it computes the same outputs, bit
for bit, and reports each part to a :data:`Tap` as it finishes, so that a dump, a profile
or ``intermediate=True`` sees every layer of the very plan a plain run executes.  A part
that fails is named by :func:`run_step`, so that the error blames its layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..frozen import fast_init
from .binding import Node


@fast_init  # one per layer
@dataclass(frozen=True)
class Step:
    node: Node
    kernel: Callable[..., tuple[np.ndarray | None, ...]]
    attrs: SimpleNamespace
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # Which outputs a scheduled run uses, when the op can skip the others (None: all).
    needed: tuple[bool, ...] | None = None
    # Gives the value its layer computed at load (see irrun.core.folding), as a Const does.
    folded: bool = False


def run_step(step: Step, args) -> tuple[np.ndarray | None, ...]:
    """``step``'s kernel on ``args``; an exception from it names ``step`` as the layer to
    blame (``irrun_step``), unless a part deeper down named one already."""
    try:
        if step.needed is None:
            return step.kernel(step.attrs, *args)
        return step.kernel(step.attrs, *args, needed=step.needed)
    except Exception as exc:
        if not hasattr(exc, "irrun_step"):
            exc.irrun_step = step  # type: ignore[attr-defined]
        raise


# Reports one layer of an observed run: its step, inputs, outputs and its own seconds.
Tap = Callable[[Step, Sequence[np.ndarray | None], tuple[np.ndarray | None, ...], float], None]


def parts(step: Step) -> tuple[Step, ...]:
    """The steps of the IR's layers that ``step`` runs: itself, or a fused step's parts."""
    return getattr(step.kernel, "parts", None) or (step,)


# A schedule: each step with the slots it is the last reader of.
Schedule = tuple[tuple[Step, tuple[int, ...]], ...]
# A pass: (the schedule's steps, the slots the run keeps) -> the steps to run instead.
Pass = Callable[
    [list[tuple[Step, tuple[int, ...]]], set[int]], list[tuple[Step, tuple[int, ...]]]
]
