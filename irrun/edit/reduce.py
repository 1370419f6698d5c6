"""Reducing a failing model: the smallest subgraph that still fails a check, as
Polygraphy's ``debug reduce`` finds it for ONNX.

A check is a function of a candidate model's ``.xml`` and its inputs' ``.npz`` (arrays
by input name) that returns True when the candidate is *bad* (still shows the failure).
Candidates are subgraphs cut at tensors (see :mod:`irrun.edit.extract`) whose cut
tensors are fed the values the full model computes there, computed once with irrun's
reference kernels, so that every candidate sees realistic inputs.

The search, over the layers that compute something (Parameters, Results and constants
aside) in run order:

1. *outputs*: the shortest prefix of the model that fails, its outputs being every
   tensor the rest of the model reads: the prefix that passes one layer earlier leaves
   the last layer of the failing one as the first whose output goes wrong;
2. *inputs*: that layer's outputs alone, computed from the latest cut among its
   ancestors that still fails (the first layers are cut away);
3. *layers*: each layer left but the last is cut away in turn (its outputs fed as
   inputs), and stays away when the candidate still fails.

Steps 1 and 2 bisect (``mode="bisect"``: O(log N) checks, assuming that a failure,
once it shows, stays visible in the layers after it) or scan one layer at a time
(``mode="linear"``: O(N) checks, which finds the earliest failure even when a later
layer hides it).  Each distinct candidate is checked once.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.model import Model
from ..errors import IrrunError, UsageError
from ..ir.records import IRDocument
from ..ir.writer import write_ir
from .extract import (
    Tensor,
    constant_layers,
    extract_tensors,
    label,
    source_document,
    walk_back,
)

# (candidate .xml, its inputs .npz) -> True when the candidate still fails
Check = Callable[[Path, Path], bool]
MODES = ("bisect", "linear")


@dataclass
class Step:
    """One check: what was tried, how big it was, what the check said."""

    phase: str  # "full", "outputs", "inputs" or "layers"
    layers: int  # the candidate's layers that compute something
    bad: bool
    seconds: float
    description: str

    def __str__(self) -> str:
        verdict = "fails" if self.bad else "passes"
        return f"{self.description} ({_count(self.layers, 'layer')}): {verdict}"


@dataclass
class Reduction:
    """The smallest failing subgraph :func:`reduce` found, and what it tried."""

    model: Model
    doc: IRDocument
    inputs: dict[str, np.ndarray]  # its inputs, by tensor name
    layers: list[tuple[str, str]]  # (name, type) of the layers that compute something
    full_layers: int
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    def save(self, xml: str | Path) -> tuple[Path, Path, Path]:
        """Write the reproducer: ``xml``, its ``.bin`` and ``.inputs.npz`` beside it;
        return the three paths."""
        xml = Path(xml)
        npz = inputs_path(xml)
        _save_npz(npz, self.inputs)
        xml_path, bin_path = write_ir(self.doc, xml, self.model.weights)
        return xml_path, bin_path, npz

    def summary(self) -> str:
        """``tried 7 subgraphs in 1.2 s: 38 layers -> 1 (aten::relu6/Clamp Clamp)``."""
        kept = ", ".join(f"{name} ({kind})" for name, kind in self.layers[:6])
        more = f", ... {len(self.layers) - 6} more" if len(self.layers) > 6 else ""
        return (
            f"tried {_count(len(self.steps), 'subgraph')} in {self.seconds:.1f} s: "
            f"{_count(self.full_layers, 'layer')} -> {len(self.layers)}: {kept}{more}"
        )


def inputs_path(xml: Path) -> Path:
    """``repro.inputs.npz`` for ``repro.xml``."""
    return xml.with_name(xml.stem + ".inputs.npz")


def reduce(
    model: Model,
    check: Check,
    feeds: Mapping[str, np.ndarray] | None = None,
    *,
    mode: str = "bisect",
    seed: int = 0,
    progress: Callable[[Step], None] | None = None,
) -> Reduction | None:
    """The smallest subgraph of ``model`` that ``check`` still finds bad, or None when
    the full model passes it.

    ``feeds`` are the model's inputs (by default its random inputs of ``seed``);
    ``progress`` is called after each check with its :class:`Step`.  See the module's
    docstring for the search and ``mode``.
    """
    if mode not in MODES:
        raise UsageError(f"mode '{mode}' is not one of {', '.join(MODES)}")
    started = time.perf_counter()
    if feeds is None:
        feeds = model.random_inputs(seed)
    with tempfile.TemporaryDirectory(prefix="irrun-reduce-") as work:
        search = _Search(model, check, dict(feeds), Path(work), progress)
        found = search.run(mode)
    if found is None:
        return None
    doc, inputs, compute = found
    layers = [(model._graph.layers[lid].name, model._graph.layers[lid].type) for lid in compute]
    return Reduction(model, doc, inputs, layers, len(search.order), search.steps,
                     time.perf_counter() - started)  # fmt: skip


class _Search:
    def __init__(self, model: Model, check: Check, feeds: dict[str, np.ndarray], work: Path,
                 progress: Callable[[Step], None] | None) -> None:  # fmt: skip
        self.model, self.check, self.work, self.progress = model, check, work, progress
        lg = self.lg = model._graph
        self.consts = constant_layers(model)
        skip = ("Parameter", "Result", "Assign")
        self.order = [lid for lid in lg.order
                      if lid not in self.consts and lg.layers[lid].type not in skip]  # fmt: skip
        self.position = {lid: i for i, lid in enumerate(self.order)}
        self.steps: list[Step] = []
        self.seen: dict[tuple[frozenset[str], tuple[Tensor, ...]], bool] = {}
        self.readers: dict[Tensor, list[str]] = {}  # tensor -> the layers that read it
        for (lid, _), src in lg.sources.items():
            self.readers.setdefault((src.layer, src.port), []).append(lid)
        self.values = self._reference_values(feeds)
        self.source = source_document(model)
        # The smallest failing candidate so far: (doc, inputs, compute layers).
        self.best: tuple[IRDocument, dict[str, np.ndarray], list[str]] | None = None
        self.tried: list[str] = []  # the compute layers of the last candidate tried

    def _reference_values(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every tensor of the full model, as irrun's reference kernels compute it."""
        state = self.model.__getstate__()
        state["reference"], state["threads"] = True, None
        twin = Model.__new__(Model)
        twin.__setstate__(state)
        values = dict(twin.run(feeds, intermediate=True))
        for spec in self.model.inputs:
            name = next((k for k in (spec.name, *spec.names) if k in feeds), None)
            if name is None:
                name = next(k for k in feeds if self.model.input_spec(k) is spec)
            values[spec.name] = np.asarray(feeds[name])
        return values

    # ----------------------------------------------------------------- the search

    def run(self, mode: str) -> tuple[IRDocument, dict[str, np.ndarray], list[str]] | None:
        if not self._full():
            return None
        n = len(self.order)
        if n == 0:
            return self.best
        # 1. outputs: the first layer whose outputs go wrong.
        if mode == "linear":
            last = next((i for i in range(n) if self._prefix(i)), n - 1)
        else:
            good, last = -1, n - 1
            while last - good > 1:
                mid = (good + last) // 2
                if self._prefix(mid):
                    last = mid
                else:
                    good = mid
        culprit = self.order[last]
        outputs = [t for t in self._frontier(last) if t[0] == culprit]
        if not outputs or not self._try("inputs", set(self.order[: last + 1]), outputs):
            outputs = self._frontier(last)  # it fails only with the other outputs
            if not self._try("inputs", set(self.order[: last + 1]), outputs):
                return self.best  # not reproducible from the prefix alone
        # 2. inputs: the first layers cut away.
        ancestors = self._ancestors(outputs)
        if mode == "linear":
            start = next((lo for lo in range(len(ancestors) - 1, 0, -1)
                          if self._try("inputs", set(ancestors[lo:]), outputs)), 0)  # fmt: skip
        else:
            start, empty = 0, len(ancestors)
            while empty - start > 1:
                mid = (start + empty) // 2
                if self._try("inputs", set(ancestors[mid:]), outputs):
                    start = mid
                else:
                    empty = mid
        kept = set(ancestors[start:])
        # 3. layers: each one cut away in turn, but those that make the outputs.
        makers = {lid for lid, _ in outputs}
        for lid in sorted(kept - makers, key=self.position.__getitem__):
            name = self.lg.layers[lid].name
            if lid in kept and self._try("layers", kept - {lid}, outputs, name):
                kept = set(self.tried)  # what the outputs still need of the others
        return self.best

    def _full(self) -> bool:
        """Whether the full model fails the check, as it is (its own outputs)."""
        xml = self.work / "full.xml"
        write_ir(self.model.document(), xml, self.model.weights)
        inputs = {spec.name: self.values[spec.name] for spec in self.model.inputs}
        bad = self._run_check("full", "the full model", xml, inputs, len(self.order))
        if bad:
            self.best = (self.model.document(), inputs, list(self.order))
        return bad

    def _prefix(self, last: int) -> bool:
        allowed = set(self.order[: last + 1])
        return self._try("outputs", allowed, self._frontier(last))

    def _frontier(self, last: int) -> list[Tensor]:
        """The tensors of the first ``last + 1`` layers that the rest of the model reads."""
        inside = set(self.order[: last + 1]) | self.consts
        found = []
        for lid in self.order[: last + 1]:
            for port in self.lg.layers[lid].outputs:
                tensor = (lid, port.id)
                if any(r not in inside for r in self.readers.get(tensor, ())):
                    found.append(tensor)
        return found

    def _ancestors(self, outputs: list[Tensor]) -> list[str]:
        """The layers that compute something on the way to ``outputs``, in run order."""
        # Constants and Parameters (not in position) end the walk: nothing before them computes.
        met, _ = walk_back(self.lg, outputs, lambda t: t[0] in self.position)
        return sorted(met & self.position.keys(), key=self.position.__getitem__)

    def _cuts(self, allowed: set[str], outputs: list[Tensor]) -> list[Tensor]:
        """The tensors a subgraph of the ``allowed`` layers computing ``outputs`` reads
        from layers outside it (Parameters and constants aside)."""
        # Inside: the allowed layers, constants and Parameters.
        _, cuts = walk_back(self.lg, outputs,
                            lambda t: t[0] in allowed or t[0] not in self.position)  # fmt: skip
        return sorted(cuts, key=lambda t: (self.position[t[0]], t[1]))

    def _try(self, phase: str, allowed: set[str], outputs: list[Tensor],
             removed: str | None = None) -> bool:  # fmt: skip
        """Whether the subgraph of ``allowed`` computing ``outputs`` fails the check
        (``removed``: the layer the "layers" phase cut away)."""
        cuts = self._cuts(allowed, outputs)
        try:
            made = extract_tensors(self.model, cuts, outputs, source=self.source)
        except UsageError:  # a cut irrun cannot make a Parameter of (no element type)
            return False
        compute = self.tried = [lid for lid in made.layers if lid in self.position]
        key = (frozenset(made.layers), tuple(outputs))
        if key in self.seen:
            return self.seen[key]
        shown = self.model.tensor_names
        inputs = {shown[t]: self.values[shown[t]] for t in cuts}
        for lid in made.layers:
            if self.lg.layers[lid].type == "Parameter":
                name = shown[(lid, self.lg.layers[lid].outputs[0].id)]
                inputs[name] = self.values[name]
        xml = self.work / f"candidate{len(self.steps)}.xml"
        write_ir(made.doc, xml, self.model.weights)
        outs = ", ".join(label(self.model, t) for t in outputs[:3])
        more = f" and {len(outputs) - 3} more" if len(outputs) > 3 else ""
        if phase == "outputs":
            what = f"the model up to {outs}{more}"
        elif not cuts:
            what = f"{outs}{more} from the model's inputs"
        else:
            what = f"{outs}{more} from {_count(len(cuts), 'cut tensor')}"
        if removed is not None:
            what += f", without {removed}"
        bad = self._run_check(phase, what, xml, inputs, len(compute))
        self.seen[key] = bad
        if bad and (self.best is None or len(compute) <= len(self.best[2])):
            self.best = (made.doc, inputs, compute)
        for path in (xml, xml.with_suffix(".bin"), inputs_path(xml)):
            path.unlink(missing_ok=True)
        return bad

    def _run_check(self, phase: str, what: str, xml: Path, inputs: dict[str, np.ndarray],
                   layers: int) -> bool:  # fmt: skip
        npz = inputs_path(xml)
        np.savez(npz, **inputs)
        began = time.perf_counter()
        bad = bool(self.check(xml, npz))
        step = Step(phase, layers, bad, time.perf_counter() - began, what)
        self.steps.append(step)
        if self.progress is not None:
            self.progress(step)
        return bad


def _save_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``arrays`` in ``path`` as np.savez writes them, whole or not at all."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise IrrunError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"
