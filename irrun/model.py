"""The public face of irrun: :func:`load` a model, :meth:`Model.run` it, :func:`validate` it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import element_types, ops  # noqa: F401  (ops registers every kernel)
from .binding import Node, bind
from .dims import Shape, format_shape, shape_fits
from .errors import Diagnostic, IrrunError, Location
from .executor import Plan
from .graph import LayerGraph, build_graph
from .propagation import propagate
from .reader import read_ir
from .registry import TensorInfo
from .weights import Weights


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name, all its tensor names, shape and element type."""

    name: str
    shape: Shape | None
    element_type: str
    names: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (
            f"TensorSpec(name={self.name!r}, shape={format_shape(self.shape)}, "
            f"element_type={self.element_type!r})"
        )


_FATAL_SHAPE_PROBLEMS = ("shape-error", "output-count")


def _weights_path(xml: Path, weights: str | Path | None) -> Path:
    # Not with_suffix: it raises for a path with no name ("."), which read_ir reports better.
    return Path(weights) if weights is not None else xml.parent / f"{xml.stem}.bin"


class Model:
    """A loaded IR model, planned and ready to run.

    >>> m = load("models/demo.xml")
    >>> m.inputs
    [TensorSpec(name='image', shape=[1,3,16,16], element_type='f32')]
    >>> outs = m.run({"image": np.ones((1, 3, 16, 16), np.float32)})
    >>> sorted(outs), outs["pooled"].shape
    (['indices', 'pooled'], (1, 3, 2, 2))
    """

    def __init__(self, xml: str | Path, weights: str | Path | None = None) -> None:
        self.path = Path(xml)
        self.weights = Weights(_weights_path(self.path, weights))
        self._build()

    def _build(self) -> None:
        doc = read_ir(self.path)
        self.ir_version = doc.ir_version
        self.rt_info: dict[str, Any] = doc.rt_info
        self._graph: LayerGraph = build_graph(doc)
        self._nodes, bind_problems = bind(self._graph, self.weights)
        problems = self._graph.problems + bind_problems
        errors = [p for p in problems if p.level == "error"]
        if errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more: run 'irrun validate')" if len(errors) > 1 else ""
            raise IrrunError(first.message + more, first.location, first.layer, first.port)
        self._infos, shape_problems = propagate(self._graph, self._nodes)
        # A layer whose shape rule fails cannot run on any input the model accepts (OpenVINO
        # refuses it at read_model); a declared <dim> that disagrees is only informational.
        fatal = [p for p in shape_problems if p.code in _FATAL_SHAPE_PROBLEMS]
        if fatal:
            first = fatal[0]
            raise IrrunError(first.message, first.location, first.layer, first.port)
        self._diagnostics = problems + shape_problems
        self._plan = Plan(self._graph, self._nodes)
        self._index_names()

    def _index_names(self) -> None:
        lg, nodes = self._graph, self._nodes
        self.inputs: list[TensorSpec] = []
        self._input_ids: dict[str, str] = {}  # any accepted name -> Parameter layer id
        self.outputs: list[TensorSpec] = []
        self._output_slots: dict[str, int] = {}
        tensor_slots: dict[str, int] = {}
        for lid in lg.order:
            layer = lg.layers[lid]
            for port in layer.outputs:
                for name in port.names:
                    tensor_slots.setdefault(name, self._plan.slots[(lid, port.id)])
            if layer.outputs:
                tensor_slots.setdefault(layer.name, self._plan.slots[(lid, layer.outputs[0].id)])
        for lid in lg.order:
            node: Node = nodes[lid]
            layer = node.layer
            if node.op is not None and node.op.type == "Parameter":
                port = layer.outputs[0]
                info = self._infos.get((lid, port.id), TensorInfo(None, None))
                name = port.names[0] if port.names else layer.name
                self.inputs.append(TensorSpec(name, info.shape, _et_name(info), port.names))
                for alias in (name, layer.name, *port.names):
                    self._input_ids.setdefault(alias, lid)
            elif node.op is not None and node.op.type == "Result":
                src = lg.sources[(lid, layer.inputs[0].id)]
                producer_port = lg.layers[src.layer].port(src.port)
                names = producer_port.names if producer_port is not None else ()
                name = names[0] if names else layer.name
                info = self._infos.get((src.layer, src.port), TensorInfo(None, None))
                self.outputs.append(TensorSpec(name, info.shape, _et_name(info), names))
                self._output_slots[name] = self._plan.slots[(src.layer, src.port)]
        self._tensor_slots = tensor_slots

    def input_spec(self, name: str) -> TensorSpec | None:
        """The input ``name`` denotes (its Parameter's name or any tensor name), or None."""
        lid = self._input_ids.get(name)
        if lid is None:
            return None
        return next(s for s in self.inputs if self._input_ids[s.name] == lid)

    def validate(self) -> list[Diagnostic]:
        """Every problem found in the model, errors and warnings, in file order."""
        return sorted(self._diagnostics, key=lambda d: d.location.line if d.location else 0)

    def run(
        self,
        feeds: Mapping[str, Any] | np.ndarray,
        outputs: Sequence[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Run the model on ``feeds`` (input name -> array, or one array for one input).

        ``outputs`` picks what to compute and return: output names, or the name of any
        tensor or layer in the graph.  By default all of the model's outputs.
        """
        by_layer = self._check_feeds(feeds)
        if outputs is None:
            wanted = dict(self._output_slots)
        else:
            wanted = {name: self._slot_of(name) for name in outputs}
        slots = sorted(set(wanted.values()))
        feed_slots = {self._plan.parameters[lid]: arr for lid, arr in by_layer.items()}
        values = self._plan.run(feed_slots, slots)
        return {name: _own(values[slot]) for name, slot in wanted.items()}

    def _slot_of(self, name: str) -> int:
        if name in self._output_slots:
            return self._output_slots[name]
        if name in self._tensor_slots:
            return self._tensor_slots[name]
        known = ", ".join(self._output_slots)
        raise IrrunError(
            f"no output, tensor or layer named '{name}' (outputs: {known})",
            Location(str(self.path)),
        )

    def _check_feeds(self, feeds: Mapping[str, Any] | np.ndarray) -> dict[str, np.ndarray]:
        loc = Location(str(self.path))
        if isinstance(feeds, np.ndarray):
            if len(self.inputs) != 1:
                raise IrrunError(
                    f"one array given, but the model has {len(self.inputs)} inputs "
                    f"({', '.join(s.name for s in self.inputs)}): pass a dict", loc
                )
            feeds = {self.inputs[0].name: feeds}
        by_layer: dict[str, np.ndarray] = {}
        for name, value in feeds.items():
            lid = self._input_ids.get(name)
            if lid is None:
                valid = ", ".join(s.name for s in self.inputs)
                raise IrrunError(f"no input named '{name}' (inputs: {valid})", loc)
            if lid in by_layer:
                raise IrrunError(f"input '{name}' is given twice (under two of its names)", loc)
            by_layer[lid] = self._check_array(lid, name, value)
        missing = [s.name for s in self.inputs if self._input_ids[s.name] not in by_layer]
        if missing:
            raise IrrunError(f"no value given for input {', '.join(map(repr, missing))}", loc)
        return by_layer

    def _check_array(self, lid: str, name: str, value: Any) -> np.ndarray:
        node = self._nodes[lid]
        where = Location(str(self.path), node.layer.line)
        assert node.attrs is not None
        arr = np.asarray(value)
        et = node.attrs.element_type
        if arr.dtype != et.dtype:
            got = element_types.of_array(arr)
            raise IrrunError(
                f"input '{name}' has element type {got or arr.dtype}, expected {et.name} "
                f"(numpy {et.dtype})", where, node.ref,
            )  # fmt: skip
        shape = node.attrs.shape
        if not shape_fits(shape, arr.shape):
            got, want = format_shape(arr.shape), format_shape(shape)
            raise IrrunError(f"input '{name}' has shape {got}, expected {want}", where, node.ref)
        return arr

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Seeded random values for every input; dynamic dims become their lower bound or 1."""
        rng = np.random.default_rng(seed)
        feeds = {}
        for spec in self.inputs:
            lid = self._input_ids[spec.name]
            attrs = self._nodes[lid].attrs
            assert attrs is not None
            shape = tuple(
                d if isinstance(d, int) else max(1, d.lo) for d in (attrs.shape or ())
            )
            feeds[spec.name] = random_array(rng, shape, attrs.element_type.dtype)
        return feeds


def _own(array: np.ndarray) -> np.ndarray:
    """A plain, writable array: no np.memmap subclass, no read-only view of the weights."""
    array = np.asarray(array)
    return array if array.flags.writeable else array.copy()


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -10
        return rng.integers(lo, lo + 21, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _et_name(info: TensorInfo) -> str:
    return info.element_type.name if info.element_type is not None else "dynamic"


def load(xml: str | Path, weights: str | Path | None = None) -> Model:
    """Read, check and plan the model in ``xml`` (weights from ``weights`` or beside it).

    Raises :class:`~irrun.errors.IrrunError` naming the file, line and layer when the
    model cannot be run.
    """
    return Model(xml, weights)


def validate(xml: str | Path, weights: str | Path | None = None) -> list[Diagnostic]:
    """Every problem in an IR file, as diagnostics; never raises for a bad file.

    >>> validate("models/demo.xml")
    []
    """
    xml = Path(xml)
    try:
        doc = read_ir(xml)
    except IrrunError as exc:
        return [Diagnostic.from_error(exc, "unreadable")]
    try:
        lg = build_graph(doc)
    except IrrunError as exc:
        return [Diagnostic.from_error(exc, "cycle")]
    w = Weights(_weights_path(xml, weights))
    nodes, bind_problems = bind(lg, w)
    _, shape_problems = propagate(lg, nodes)
    found = lg.problems + bind_problems + shape_problems
    return sorted(found, key=lambda d: d.location.line if d.location else 0)
