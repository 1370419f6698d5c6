"""Loading a model to run its reference kernels only (see :mod:`irrun.fast`).

``irrun.load(..., reference=True)`` where the package has it; else the same plan built
here: every op's reference kernel, no passes (:class:`irrun.core.executor.Plan`).
"""

from __future__ import annotations

import inspect

import irrun
from irrun.core.executor import Plan

MODES = ["fast", "reference"]


def load(path, mode: str = "fast", **kwargs) -> irrun.Model:
    """``irrun.load(path)``, running only reference kernels when ``mode`` is "reference"."""
    reference = mode == "reference"
    if not reference:
        return irrun.load(path, **kwargs)
    if "reference" in inspect.signature(irrun.load).parameters:
        return irrun.load(path, reference=True, **kwargs)
    model = irrun.load(path, fold_constants=False, **kwargs)
    model._plan = Plan(model._graph, model._nodes, reference=True)
    return model
