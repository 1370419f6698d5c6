"""A plan's steps, and the passes that rewrite a schedule of them.

A step is one layer to run: its kernel, its parsed attributes, and the slots it
reads and writes.  A schedule is the steps a run needs, in order, each with the
slots it is the last reader of (dropped once it has run).  A pass takes a schedule
and the slots the run keeps, and returns a schedule that computes the same: it may
put one step in the place of several (see :mod:`irrun.core.passes`).

A step made of others whose kernel fails on one of them sets ``irrun_step`` on the
exception to that step, so that the error names the layer to blame.
"""

from __future__ import annotations

from collections.abc import Callable
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


# A schedule: each step with the slots it is the last reader of.
Schedule = tuple[tuple[Step, tuple[int, ...]], ...]
# A pass: (the schedule's steps, the slots the run keeps) -> the steps to run instead.
Pass = Callable[
    [list[tuple[Step, tuple[int, ...]]], set[int]], list[tuple[Step, tuple[int, ...]]]
]
