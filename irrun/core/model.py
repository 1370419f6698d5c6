"""The public face of irrun: :func:`load` a model, :meth:`Model.run` it, :func:`validate` it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from .. import (
    ops,  # noqa: F401  (ops registers every kernel)
    threads,
)
from ..errors import Diagnostic, IrrunError, LayerRef, Location, MissingFile, UsageError
from ..ir import element_types
from ..ir.dims import Shape, format_shape, parse_partial_shape, shape_fits
from ..ir.records import IRDocument
from ..ir.registry import TensorInfo
from ..ir.weights import Weights
from ..ir.writer import write_ir
from .binding import Node
from .budget import RunBudget, budget_findings
from .check import _by_line, _weights_path, check_ir, collection_paused, internal_error
from .documents import copy_document, with_inferred_shapes
from .executor import Observer, Plan
from .folding import Folding, fold_model, fold_option
from .graph import LayerGraph
from .graph_view import model_graph
from .inputs import random_array as random_array  # where callers have imported it from
from .inputs import random_inputs
from .memory import (
    Peak,
    available_memory,
    parse_size,
)
from .names import TensorNames, tensor_name
from .propagation import propagate
from .reshape import ShapeSpec, input_shapes, reshape_infos
from .state import Request
from .steps import Step


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name, all its tensor names, shape and element type.

    ``shape`` is a tuple of sizes, where a dynamic dim is an
    :class:`~irrun.ir.dims.Interval` (printed ``?`` or ``1..10``), or None when even the
    rank is unknown; ``partial_shape`` is the text OpenVINO prints for it, ``dtype`` the
    NumPy dtype its values have:

    >>> spec = load("models/demo.xml").inputs[0]
    >>> spec.shape, spec.partial_shape, spec.dtype, spec.element_type
    ((1, 3, 32, 32), '[1,3,32,32]', dtype('float32'), 'f32')
    """

    name: str
    shape: Shape | None
    element_type: str
    names: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (
            f"TensorSpec(name={self.name!r}, shape={format_shape(self.shape)}, "
            f"element_type={self.element_type!r})"
        )

    @property
    def dtype(self) -> np.dtype | None:
        """The NumPy dtype of its values (``float32`` for f32), None for a dynamic type."""
        et = element_types.ELEMENT_TYPES.get(self.element_type)
        return et.dtype if et is not None else None

    @property
    def partial_shape(self) -> str:
        """Its shape as OpenVINO prints a partial shape: ``[?,3,224,224]``, ``[...]``."""
        return format_shape(self.shape)

    @property
    def any_name(self) -> str:
        """Its name (OpenVINO's ``any_name``)."""
        return self.name

    def get_any_name(self) -> str:
        """Its name, as OpenVINO's ``Output.get_any_name()`` gives it."""
        return self.name


class Results(dict):  # type: ignore[type-arg]
    """What :meth:`Model.run` returns: a dict of arrays by name, which can also be indexed
    as OpenVINO's result is, by position (``res[0]``), by any tensor name of an output or
    its Result layer's name (``res["logits"]``), or by an output itself
    (``res[m.outputs[0]]``).

    Iteration, ``keys()``, ``items()`` and ``len`` are those of the dict: one entry per
    value, under the name it was asked by (see :meth:`Model.run`).  Positions count the
    outputs asked for, in the order asked (the model's outputs by default, also with
    ``intermediate=True``).

    >>> m = load("models/pooling_chain.xml")
    >>> res = m.run(np.ones((1, 3, 16, 16), np.float32))
    >>> list(res)
    ['pooled', 'indices']
    >>> res[1] is res["indices"] is res[m.outputs[1]] is res[-1]
    True
    """

    _order: tuple[str, ...] = ()
    _aliases: dict[str, str] = {}  # noqa: RUF012  (never changed: each instance gets its own)

    @classmethod
    def _made(cls, values: dict[str, np.ndarray], order: Sequence[str],
              aliases: dict[str, str]) -> Results:  # fmt: skip
        res = cls(values)
        res._order = tuple(order)
        res._aliases = aliases
        return res

    def _key(self, key: Any) -> Any:
        """The dict's key that ``key`` stands for (itself when it is one)."""
        if isinstance(key, str):
            if dict.__contains__(self, key):
                return key
            return self._aliases.get(key, key)
        if isinstance(key, TensorSpec):
            for name in (key.name, *key.names):
                found = self._key(name)
                if dict.__contains__(self, found):
                    return found
            return key.name
        if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
            i = int(key)
            if not -len(self._order) <= i < len(self._order):
                raise IndexError(
                    f"output {i} is out of range: {len(self._order)} outputs "
                    f"({', '.join(self._order)})"
                )
            return self._order[i]
        return key

    def __getitem__(self, key: Any) -> np.ndarray:
        found = self._key(key)
        try:
            return dict.__getitem__(self, found)
        except KeyError:
            raise KeyError(f"no value named {found!r} (values: {', '.join(self)})") from None

    def __contains__(self, key: Any) -> bool:
        try:
            return dict.__contains__(self, self._key(key))
        except (IndexError, TypeError):
            return False

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except (KeyError, IndexError, TypeError):
            return default

    def to_tuple(self) -> tuple[np.ndarray, ...]:
        """The outputs asked for, by position."""
        return tuple(self[i] for i in range(len(self._order)))


# What Model.run takes: arrays by input (name, position or spec), by position, or one array.
Feeds = Mapping[Any, Any] | Sequence[Any] | np.ndarray
OutputKey = str | int | TensorSpec  # an output, or any tensor by name


@dataclass(frozen=True)
class LayerRun:
    """One layer as a run computed it, given to the ``on_layer`` callback of :meth:`Model.run`.

    ``outputs`` maps each output's tensor name (see :attr:`Model.tensor_names`) to its
    value, ``ports`` gives their port ids in the same order; ``seconds`` is the time its
    kernel took, ``end`` the :func:`time.perf_counter` reading when it finished.
    ``folded``: its value was computed at load (``seconds`` is then 0: see
    :attr:`Model.folding`).  ``apart``: the run did not need it, or it was folded into a
    later layer's value at load; it ran after the run, only to be seen.
    """

    ref: LayerRef
    line: int
    outputs: dict[str, np.ndarray]
    ports: tuple[int, ...]
    inputs: tuple[tuple[int, ...], ...]  # the shapes of its inputs
    seconds: float
    end: float
    folded: bool = False
    apart: bool = False


class Model:
    """A loaded IR model, planned and ready to run.

    Its layers of constants were run once at load (``fold_constants`` of :func:`load`);
    ``folding`` says what was folded (:class:`~irrun.core.folding.Folding`), or is None.

    >>> m = load("models/pooling_chain.xml")
    >>> m.inputs
    [TensorSpec(name='image', shape=[1,3,16,16], element_type='f32')]
    >>> outs = m.run({"image": np.ones((1, 3, 16, 16), np.float32)})
    >>> sorted(outs), outs["pooled"].shape
    (['indices', 'pooled'], (1, 3, 2, 2))
    """

    def __init__(
        self, xml: str | Path, weights: str | Path | None = None,
        max_memory: int | str | None = "available", fold_constants: bool | int | str | None = True,
        threads: int | None = None, reference: bool = False,
    ) -> None:  # fmt: skip
        self.path = Path(xml)
        self._weights_arg = weights
        self.max_memory = max_memory
        # Reference kernels only, no pass, one thread (see irrun.fast): what irrun's values are.
        self.reference = bool(reference)
        self.threads = 1 if reference and threads is None else threads  # type: ignore[assignment]
        self._fold_arg = fold_option(fold_constants)
        self.weights = Weights(_weights_path(self.path, weights))
        if not os.path.lexists(self.path):
            raise MissingFile("no such file", Location(str(self.path)))
        with collection_paused():
            checked = check_ir(self.path, self.weights, complete=False)
            try:
                checked.refuse()
            except IrrunError as exc:
                if not self.weights.exists and exc.code in ("bad-weights", "missing-file"):
                    # Its Consts need the .bin: a FileNotFoundError naming it, said where
                    # the .xml needs it, as validate says it.
                    raise MissingFile(exc.message, exc.location, exc.layer, exc.port,
                                      filename=str(self.weights.path)) from None  # fmt: skip
                raise
            assert checked.graph is not None and checked.nodes is not None
            assert checked.infos is not None
            self._checked = checked
            self.ir_version = checked.graph.doc.ir_version
            self.rt_info: dict[str, Any] = checked.graph.doc.rt_info
            self._graph: LayerGraph = checked.graph
            self._nodes: dict[str, Node] = checked.nodes
            self._infos = checked.infos
            # Parameter id -> shape, after reshape
            self._input_shapes: dict[str, Shape | None] = {}
            self._plan = Plan(self._graph, self._nodes, reference=self.reference)
            # Layers of constants run once, here (see irrun.core.folding); None: not asked.
            self.folding: Folding | None = fold_model(
                self._plan, self._infos, self._fold_arg, self.weights.size, self._budget_arg,
                self.weights)
            self._index_names()

    def __getstate__(self) -> dict[str, Any]:
        # A pickle names the files and the shapes given; unpickling reads them again and
        # maps the weights anew, so a Model travels to worker processes in a few hundred bytes.
        # Paths are kept as given (for messages) and absolute (for a worker started in
        # another directory); shapes by Parameter layer id, since a layer's name may hold
        # the commas and brackets of the --shape syntax, or be shared by two Parameters.
        weights = self._weights_arg
        return {
            "path": (str(self.path), os.path.abspath(self.path)),
            "weights": None if weights is None else (str(weights), os.path.abspath(weights)),
            "shapes": {lid: format_shape(shape) for lid, shape in self._input_shapes.items()},
            "max_memory": self._budget_arg,
            "fold_constants": self._fold_arg,
            "threads": self._threads_arg,  # None: the cores of the process that unpickles
            "reference": self.reference,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        weights = state["weights"]
        self.__init__(  # type: ignore[misc]
            _reopened(*state["path"]), None if weights is None else _reopened(*weights),
            state.get("max_memory", "available"), state.get("fold_constants", True),
            state.get("threads"), state.get("reference", False),
        )
        if state["shapes"]:
            types = {lid: self._nodes[lid].attrs.element_type for lid in state["shapes"]}  # type: ignore[union-attr]
            self._reshape(
                {lid: TensorInfo(parse_partial_shape(text), types[lid])
                 for lid, text in state["shapes"].items()}
            )  # fmt: skip

    def __repr__(self) -> str:
        n_in, n_out = len(self.inputs), len(self.outputs)
        return f"<irrun.Model {str(self.path)!r}: {n_in} inputs, {n_out} outputs>"

    @property
    def threads(self) -> int:
        """The threads a run uses: BLAS's, and the other kernels' blocks (see
        :mod:`irrun.threads`).  Set it to a count, or None for the cores this process may
        use that other work does not keep busy (the default, :func:`irrun.threads.default`;
        no more than ``OMP_NUM_THREADS`` and the like say, when set).
        Results do not depend on it, but for the order of BLAS's sums.  During a run BLAS
        has this many threads; after it, what it had before.
        """
        return self._threads_arg if self._threads_arg is not None else threads.default()

    @threads.setter
    def threads(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):  # fmt: skip
            raise UsageError(f"threads must be a count of at least 1, or None, not {value!r}")
        if self.reference and value != 1:
            raise UsageError(f"a reference model runs on one thread, not {value!r}")
        self._threads_arg: int | None = value

    @property
    def max_memory(self) -> int | None:
        """The most bytes of tensors a run may hold at once, or None for no limit.

        Set it to a number of bytes, a size such as ``"4G"``, ``"available"`` (the
        default: the memory this process may still use, read at each run that needs
        more than 16 MiB) or None.  A run whose planned peak is larger is refused before
        anything is computed, naming the layer where it peaks:

        >>> m = load("models/demo.xml", max_memory="64K")
        >>> try:
        ...     m.run(np.zeros((1, 3, 32, 32), np.float32))
        ... except IrrunError as exc:
        ...     print(f"{exc.layer}: {exc.message.split(',')[0]}")
        layer 5 'pool1' (MaxPool-v1): the run needs 800 KiB of tensors at this layer
        >>> m.max_memory = None  # no limit
        >>> m.run(np.zeros((1, 3, 32, 32), np.float32))["probabilities"].shape
        (1, 10)

        (The first pool holds its input, ``[1,16,32,32]`` floats of 64 KiB, its output of
        16 KiB, and the scratch space its kernel declares, 720 KiB.)
        """
        budget = self._budget_arg
        if isinstance(budget, int):
            return budget
        return available_memory() if budget == "available" else None

    @max_memory.setter
    def max_memory(self, value: int | str | None) -> None:
        self._budget_arg: int | str | None = _budget(value)

    def _plan_peak(self, shapes: dict[str, tuple[int, ...]], wanted: tuple[int, ...],
                   observed: bool) -> tuple[Peak, str, Node | None]:  # fmt: skip
        """The run's peak, the largest thing it holds there, and its layer (see
        :meth:`~irrun.core.budget.RunBudget.peak`)."""
        return self._run_budget.peak(shapes, wanted, observed)

    @property
    def tensor_names(self) -> dict[tuple[str, int], str]:
        """The name irrun gives each layer output, by (layer id, port id).

        A port's first tensor name, else the name of the Result it feeds, else the layer's
        name (``NAME:PORT`` for a layer with several outputs): the rule of every file irrun
        writes (:func:`irrun.core.names.tensor_name`).  :meth:`run` accepts these names in
        ``outputs`` and returns intermediate values under them.
        """
        return dict(self._port_names)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The model as a networkx ``MultiDiGraph``: a node per layer id with its op,
        ``<data>`` and inferred output shapes and types, an edge per ``<edge>`` keyed
        ``(from_port, to_port)`` with the tensor it carries (the attributes are listed in
        :mod:`irrun.core.graph_view`).  Built when first asked for and kept until
        :meth:`reshape` changes the shapes; copy it (``.copy()``) before changing it.

        >>> g = load("models/pooling_chain.xml").graph
        >>> [(g.nodes[n]["type"], g.nodes[n]["version"]) for n in g.predecessors("2")]
        [('MaxPool', 8)]
        >>> g.nodes["1"]["shape_texts"], g.edges["0", "1", (0, 0)]["shape_text"]
        (('[1,3,8,8]', '[1,3,8,8]'), '[1,3,16,16]')
        """
        made = self.__dict__.get("_nx")
        # Keyed by the inferred shapes' dict: reshape replaces it.
        if made is None or made[0] is not self._infos:
            made = self._nx = (
                self._infos,
                model_graph(self._graph, self._nodes, self._infos, self._port_names),
            )
        return made[1]

    def layers(self) -> list[tuple[LayerRef, int, tuple[str, ...]]]:
        """Every layer in run (topological) order: its identity, its line in the XML and
        the names of its outputs port by port (as in :attr:`tensor_names`).

        >>> [(ref.name, names) for ref, _, names in load("models/pooling_chain.xml").layers()][:2]
        [('image', ('image',)), ('stem_pool', ('stem_pool:1', 'stem_pool:2'))]
        """
        return [
            (self._nodes[lid].ref, self._graph.layers[lid].line,
             tuple(self._port_names[(lid, p.id)] for p in self._graph.layers[lid].outputs))
            for lid in self._graph.order
        ]  # fmt: skip

    def _index_names(self) -> None:
        """The model's inputs and outputs, by every name they answer to."""
        lg, nodes = self._graph, self._nodes
        self._run_budget = RunBudget(self._plan, lg, nodes, self._infos, self.path)
        self.inputs: list[TensorSpec] = []
        self._input_ids: dict[str, str] = {}  # any accepted name -> Parameter layer id
        self.outputs: list[TensorSpec] = []
        self._output_slots: dict[str, int] = {}
        # Every tensor name of an output and its Result's name -> the output's name.
        self._output_aliases: dict[str, str] = {}
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
                producer_port = lg.layers[src.layer].output_port(src.port)
                names = producer_port.names if producer_port is not None else ()
                name = (tensor_name(lg.layers[src.layer], producer_port, layer.name)
                        if producer_port is not None else layer.name)  # fmt: skip
                info = self._infos.get((src.layer, src.port), TensorInfo(None, None))
                self.outputs.append(TensorSpec(name, info.shape, _et_name(info), names))
                self._output_slots[name] = self._plan.slots[(src.layer, src.port)]
                for alias in (*names, layer.name):
                    self._output_aliases.setdefault(alias, name)

    @cached_property
    def _names(self) -> TensorNames:
        # Built when first asked for: a run of the model's outputs needs none of it, and a
        # big model has names for thousands of tensors.
        return TensorNames.index(self._graph, self._plan.slots)

    @property
    def _port_names(self) -> dict[tuple[str, int], str]:
        return self._names.by_port

    @property
    def _slot_names(self) -> dict[int, str]:
        return self._names.by_slot

    @property
    def _tensor_slots(self) -> dict[str, int]:
        return self._names.slots

    def input_spec(self, name: str) -> TensorSpec | None:
        """The input ``name`` denotes (its Parameter's name or any tensor name), or None."""
        lid = self._input_ids.get(name)
        if lid is None:
            return None
        return next(s for s in self.inputs if self._input_ids[s.name] == lid)

    def validate(self, shapes: ShapeSpec | None = None) -> list[Diagnostic]:
        """Every problem found in the model, errors and warnings, in file order.

        The same findings as :func:`validate` gives for the file.  A model that loaded
        has no error that stops it from running, but may have others (a declared dim
        that disagrees with the inferred one).  With ``shapes`` the inputs get new shapes
        first (``{"x": [8, 3, 224, 224]}`` or ``"x[8,3,224,224]"``), and what breaks is
        reported instead of the comparisons with the declared dims.
        """
        self._checked.complete()  # the structure check load put off
        if shapes is None:
            sizes = budget_findings(self._graph, self._nodes, self._checked.infos or {},
                                    self._budget_arg, True)  # fmt: skip
            return _by_line(self._checked.findings + sizes)
        new_shapes = input_shapes(self._graph, self._nodes, self._shape_spec(shapes))
        infos, propagated = propagate(self._graph, self._nodes, new_shapes)
        kept = [d for d in self._checked.findings if d.code not in _PROPAGATION_CODES]
        sizes = budget_findings(self._graph, self._nodes, infos, self._budget_arg,
                                not any(d.level == "error" for d in propagated))  # fmt: skip
        return _by_line(kept + propagated + sizes)

    def reshape(self, shapes: ShapeSpec) -> None:
        """Give the inputs new shapes, as OpenVINO's ``Model.reshape`` does, in place.

        ``shapes`` is ``{"x": [8, 3, 224, 224]}`` (dims may be ``"?"``, -1 or ``"1..10"``),
        or the text of ``--shape``: ``"x[8,3,224,224]"``.  Every tensor's shape is
        inferred again; raises :class:`~irrun.errors.IrrunError` naming the first layer
        the new shapes break (and :class:`~irrun.errors.UsageError` for a bad ``shapes``).
        Runs then check their inputs against the new shapes.

        >>> m = load("models/pooling_chain.xml")
        >>> m.reshape({"image": [4, 3, 32, 32]})
        >>> m.inputs[0].shape, m.outputs[0].shape
        ((4, 3, 32, 32), (4, 3, 2, 2))
        >>> m.run(np.zeros((4, 3, 32, 32), np.float32))["pooled"].shape
        (4, 3, 2, 2)

        As with OpenVINO, a model with one input also takes its shape alone, and any
        model a list of shapes by position, or a dict by position or :class:`TensorSpec`
        (a dim None is dynamic):

        >>> m.reshape([2, 3, 16, 16])
        >>> m.reshape({0: (1, 3, None, None)})
        >>> m.inputs[0].partial_shape
        '[1,3,?,?]'
        """
        self._reshape(input_shapes(self._graph, self._nodes, self._shape_spec(shapes)))

    def save(self, xml: str | Path, weights: str | Path | None = None) -> tuple[Path, Path]:
        """Write the model as IR v11: ``xml`` and its weights (``weights``, by default
        beside it with the suffix ``.bin``); return both paths.

        Everything read is written back as it was (attributes in OpenVINO's spellings,
        tensor names, rt_info, compressed weights as they lay, sub-graphs); a model
        :meth:`reshape` d has its new shapes written into every port.  The ``.bin`` of a
        model saved as loaded is its own, byte for byte.  Neither file is written unless
        both are whole (see :mod:`irrun.ir.writer`).

        >>> import tempfile, filecmp
        >>> m = load("models/demo.xml")
        >>> with tempfile.TemporaryDirectory() as d:
        ...     xml, bin_ = m.save(f"{d}/copy.xml")
        ...     same = filecmp.cmp(bin_, "models/demo.bin", shallow=False)
        ...     again = load(xml)
        >>> same, [o.name for o in again.outputs] == [o.name for o in m.outputs]
        (True, True)
        """
        return write_ir(self.document(), xml, self.weights, weights)

    def document(self) -> IRDocument:
        """The records :meth:`save` writes: a copy of those read, with the inferred shapes
        written in once the model was reshaped (see :mod:`irrun.core.documents`)."""
        if not self._input_shapes:
            return copy_document(self._graph.doc)
        return with_inferred_shapes(self._graph, self._infos, self._input_shapes)

    def _shape_spec(self, shapes: Any) -> ShapeSpec:
        """``shapes`` of :meth:`reshape` as a dict by name, or the ``--shape`` text."""
        if isinstance(shapes, str):
            return shapes
        listed = ", ".join(s.name for s in self.inputs)
        if isinstance(shapes, Mapping):
            return {self._reshape_name(k, listed): _dims(v) for k, v in shapes.items()}
        if not isinstance(shapes, Sequence | np.ndarray):
            raise UsageError(f"shapes: expected a shape, a list of shapes or a dict of them by "
                             f"input, not {shapes!r}")  # fmt: skip
        if all(not isinstance(d, Sequence | np.ndarray) or isinstance(d, str) for d in shapes):
            if len(self.inputs) != 1:
                raise UsageError(
                    f"shapes: one shape given, but the model has {len(self.inputs)} inputs "
                    f"({listed}): give a dict by name or a list of shapes by position"
                )
            return {self.inputs[0].name: _dims(shapes)}
        if len(shapes) != len(self.inputs):
            raise UsageError(f"shapes: {len(shapes)} shapes given by position, but the model has "
                             f"{_count(len(self.inputs), 'input')} ({listed})")  # fmt: skip
        return {spec.name: _dims(shape) for spec, shape in zip(self.inputs, shapes, strict=True)}

    def _reshape_name(self, key: Any, listed: str) -> str:
        if isinstance(key, TensorSpec):
            return key.name
        if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
            if not 0 <= key < len(self.inputs):
                raise UsageError(f"shapes: no input {key}: the model has {len(self.inputs)} "
                                 f"inputs ({listed})")  # fmt: skip
            return self.inputs[key].name
        return key  # type: ignore[no-any-return]  # a name, checked with the shapes

    def _reshape(self, new_shapes: dict[str, TensorInfo]) -> None:
        infos, merged = reshape_infos(self._graph, self._nodes, self._input_shapes, new_shapes)
        self._infos = infos
        self._input_shapes = {lid: info.shape for lid, info in merged.items()}
        self._index_names()

    def run(
        self,
        feeds: Feeds,
        outputs: Sequence[OutputKey] | None = None,
        intermediate: bool = False,
        on_layer: Callable[[LayerRun], None] | None = None,
        cast: bool = False,
    ) -> Results:
        """Run the model on ``feeds``; ``model(feeds)`` is the same.

        ``feeds`` is a dict of arrays by input (its name, any of its tensor names, its
        position in :attr:`inputs` or its :class:`TensorSpec`), a list or tuple of arrays
        by position, or one array for a model with one input.  Each array must have the
        input's dtype (see :attr:`TensorSpec.dtype`) unless ``cast=True``: then other
        numbers are converted, and an input refused whose values the input's type cannot
        hold (out of its range, or with a fraction for an integer type).

        ``outputs`` picks what to compute and return: outputs (by name, position or
        :class:`TensorSpec`), or the name of any tensor or layer in the graph.  By default
        all of the model's outputs.
        ``intermediate=True`` returns every tensor the run computes as well (all layers
        but Parameters, Consts and Assigns, under :attr:`tensor_names`), model outputs
        included.
        ``on_layer`` is called with a :class:`LayerRun` as each layer finishes; every
        layer then runs, also those no output needs.

        The values come back as :class:`Results`: a dict by name that also answers to
        positions and the outputs' other names, as OpenVINO's result does.

        >>> m = load("models/pooling_chain.xml")
        >>> x = np.arange(768, dtype=np.float32).reshape(1, 3, 16, 16)
        >>> values = m.run({"image": x}, intermediate=True)
        >>> for name, value in values.items():
        ...     print(name, value.shape)
        stem_pool:1 (1, 3, 8, 8)
        stem_pool:2 (1, 3, 8, 8)
        avg_pool (1, 3, 4, 4)
        pooled (1, 3, 2, 2)
        indices (1, 3, 2, 2)
        >>> m.run({"image": x}, outputs=["avg_pool"])["avg_pool"][0, 0, 0]
        array([34., 38., 42., 46.], dtype=float32)
        >>> m([x])[0][0, 0]  # by position: the first output, pooled
        array([[102., 110.],
               [230., 238.]], dtype=float32)
        """
        return self._execute(feeds, outputs, intermediate, on_layer, cast=cast)[0]

    __call__ = run

    def _execute(
        self,
        feeds: Feeds,
        outputs: Sequence[OutputKey] | None = None,
        intermediate: bool = False,
        on_layer: Callable[[LayerRun], None] | None = None,
        state: Mapping[str, np.ndarray | None] | None = None,
        every_layer: bool = True,
        values: bool = True,
        cast: bool = False,
    ) -> tuple[Results, dict[str, np.ndarray]]:
        """:meth:`run`, and with ``state`` (variable id -> value, None while unset) the
        variables' next values as well (see :class:`irrun.core.state.Request`).

        ``every_layer`` and ``values`` say what ``on_layer`` needs (see
        :class:`~irrun.core.executor.Observer`): a profile needs neither the layers a run
        does not execute nor the values of those it does."""
        by_layer = self._check_feeds(feeds, cast)
        if outputs is None:
            wanted = dict(self._output_slots)
        else:
            if isinstance(outputs, str | TensorSpec):
                outputs = [outputs]  # type: ignore[list-item]  # one name, not its letters
            names = [self._output_name(key) for key in outputs]
            wanted = {name: self._slot_of(name) for name in names}
        feed_slots: dict[int, np.ndarray | None] = {
            self._plan.parameters[lid]: arr for lid, arr in by_layer.items()
        }
        assigns = self._plan.assigns if state is not None else {}
        if state is not None:
            feed_slots.update((slot, state.get(var)) for var, slot in self._plan.variables.items())
        kept: dict[str, np.ndarray] = {}
        slots = tuple(sorted(set(wanted.values()) | set(assigns.values())))
        observe = None
        if intermediate or on_layer is not None:
            every_layer = every_layer or intermediate
            observe = self._observer(kept if intermediate else None, on_layer, slots,
                                     every_layer, values or intermediate)
        self._run_budget.check(self._budget_arg, {lid: a.shape for lid, a in by_layer.items()},
                               slots, observe is not None and every_layer)
        with threads.running(self.threads):
            found = self._plan.run(feed_slots, slots, observe)  # type: ignore[arg-type]
        result = {name: _own(found[slot]) for name, slot in wanted.items()}
        if intermediate:
            result = {**kept, **result}
        made = Results._made(result, list(wanted), self._output_aliases)
        return made, {var: found[slot] for var, slot in assigns.items()}

    @property
    def variables(self) -> list[TensorSpec]:
        """The variables a stateful model keeps between runs of a request (see
        :meth:`create_request`): their ids, shapes and element types, in file order.

        >>> [(v.name, v.shape) for v in load("models/running_sum.xml").variables]
        [('total', (1, 4))]
        """
        found: dict[str, TensorSpec] = {}
        for lid in self._graph.order:
            node = self._nodes[lid]
            if node.op is not None and node.op.type == "ReadValue":
                var = node.attrs.variable_id  # type: ignore[union-attr]
                info = self._infos.get((lid, node.layer.outputs[0].id), TensorInfo(None, None))
                found.setdefault(var, TensorSpec(var, info.shape, _et_name(info)))
        return list(found.values())

    def create_request(self) -> Request:
        """A request that keeps the model's variables from one run to the next, as
        OpenVINO's ``InferRequest`` does; see :class:`irrun.core.state.Request`.

        :meth:`run` keeps no state: each of its runs reads every variable's initial value.
        """
        return Request(self)

    def _observer(
        self, kept: dict[str, np.ndarray] | None, on_layer: Callable[[LayerRun], None] | None,
        wanted: tuple[int, ...], every_layer: bool, values: bool,
    ) -> Observer:
        names = self._slot_names
        ports = {slot: port for (_, port), slot in self._plan.slots.items()}
        apart = {step.node.layer.id for step in self._plan.observed_schedule(wanted)[1]}

        def report(
            step: Step,
            args: Sequence[np.ndarray | None],
            results: tuple[np.ndarray | None, ...],
            seconds: float,
        ) -> None:
            pairs = [(s, v) for s, v in zip(step.outputs, results, strict=True) if v is not None]
            outs = {names[slot]: value for slot, value in pairs}
            # An Assign's output is its input, kept under its producer's name already.
            # A value folded at load is its layer's output, given as a Const gives its own.
            if kept is not None and (step.folded or step.node.op.type not in ("Const", "Assign")):
                kept.update((name, _own(value)) for name, value in outs.items())
            if on_layer is not None:
                node = step.node
                shapes = tuple(np.shape(a) for a in args)
                out_ports = tuple(ports[slot] for slot, _ in pairs)
                end = time.perf_counter()
                on_layer(LayerRun(node.ref, node.layer.line, outs, out_ports, shapes, seconds, end,
                                  step.folded, node.layer.id in apart))

        return Observer(report, values, every_layer)

    def _output_name(self, key: OutputKey) -> str:
        """The name an ``outputs`` entry asks by: an output's position is its name."""
        if isinstance(key, TensorSpec):
            return key.name
        if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
            if not -len(self.outputs) <= key < len(self.outputs):
                raise UsageError(
                    f"outputs: no output {key}: the model has {len(self.outputs)} "
                    f"({', '.join(s.name for s in self.outputs)})"
                )
            return self.outputs[key].name
        if not isinstance(key, str):
            raise UsageError(f"outputs: expected names, positions or outputs, not {key!r}")
        return key

    def _slot_of(self, name: str) -> int:
        if name in self._output_slots:
            return self._output_slots[name]
        if name in self._tensor_slots:
            return self._tensor_slots[name]
        known = ", ".join(self._output_slots)
        raise IrrunError(
            f"no output, tensor or layer named '{name}' (outputs: {known})",
            Location(str(self.path)),
            code="unknown-name",
        )

    def _check_feeds(self, feeds: Feeds, cast: bool = False) -> dict[str, np.ndarray]:
        """The arrays of ``feeds`` by Parameter id, checked against the inputs (see :meth:`run`)."""
        if not cast and type(feeds) is dict:
            found = self._plain_feeds(feeds)
            if found is not None:
                return found
        loc = Location(str(self.path))
        listed = ", ".join(s.name for s in self.inputs)
        if isinstance(feeds, Mapping):
            items = [(self._input_name(key, loc), value) for key, value in feeds.items()]
        elif isinstance(feeds, list | tuple):
            if len(feeds) != len(self.inputs):
                raise IrrunError(
                    f"{len(feeds)} values given by position, but the model has "
                    f"{_count(len(self.inputs), 'input')} ({listed}); give one array per input, in "
                    "that order (an input's values as one array, not a list)",
                    loc, code="bad-input",
                )  # fmt: skip
            items = [(spec.name, value) for spec, value in zip(self.inputs, feeds, strict=True)]
        else:
            if len(self.inputs) != 1:
                raise IrrunError(
                    f"one array given, but the model has {len(self.inputs)} inputs "
                    f"({listed}): pass a dict by name or a list by position", loc,
                    code="bad-input",
                )  # fmt: skip
            items = [(self.inputs[0].name, feeds)]
        by_layer: dict[str, np.ndarray] = {}
        for name, value in items:
            lid = self._input_ids.get(name)
            if lid is None:
                raise IrrunError(f"no input named '{name}' (inputs: {listed})", loc,
                                 code="bad-input")  # fmt: skip
            if lid in by_layer:
                raise IrrunError(f"input '{name}' is given twice (under two of its names)", loc,
                                 code="bad-input")  # fmt: skip
            by_layer[lid] = self._check_array(lid, name, value, cast)
        missing = [s.name for s in self.inputs if self._input_ids[s.name] not in by_layer]
        if missing:
            raise IrrunError(f"no value given for input {', '.join(map(repr, missing))}", loc,
                             code="bad-input")  # fmt: skip
        return by_layer

    def _plain_feeds(self, feeds: dict) -> dict[str, np.ndarray] | None:
        """``feeds`` by Parameter id when each is an array (not a subclass) by one of its
        input's names, of its element type (not a string) and of a shape that fits (each
        shape checked once per set of input shapes the model has); else None, for the
        checks and messages of :meth:`_check_feeds`.  A decode step's check, in a few
        microseconds instead of tens."""
        seen = self.__dict__.get("_fitted")
        if seen is None or seen[0] is not self._input_shapes:  # made, or reshaped since
            types = {}
            for name, lid in self._input_ids.items():
                et = self._nodes[lid].attrs.element_type  # type: ignore[union-attr]
                if et.name != "string":
                    types[name] = (lid, et.dtype)
            seen = self._fitted = (self._input_shapes, types, set())
        _, types, fitted = seen
        by_layer: dict[str, np.ndarray] = {}
        for name, value in feeds.items():
            known = types.get(name) if type(name) is str else None
            if known is None or type(value) is not np.ndarray or value.dtype != known[1]:
                return None
            lid = known[0]
            if lid in by_layer:
                return None
            if (lid, value.shape) not in fitted:
                declared = self._input_shapes.get(lid, self._nodes[lid].attrs.shape)  # type: ignore[union-attr]
                if not shape_fits(declared, value.shape):
                    return None
                if len(fitted) >= 4096:
                    fitted.clear()
                fitted.add((lid, value.shape))
            by_layer[lid] = value
        return by_layer if len(by_layer) == len(self.inputs) else None

    def cast_inputs(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``feeds`` (arrays by input name) with each converted to its input's dtype as
        ``cast=True`` of :meth:`run` converts it, refused naming the input when a value
        does not fit; names that are no input's are left for :meth:`run` to report.

        >>> m = load("models/demo.xml")
        >>> m.cast_inputs({"image": np.zeros((1, 3, 32, 32))})["image"].dtype
        dtype('float32')
        """
        out: dict[str, np.ndarray] = {}
        for name, value in feeds.items():
            lid = self._input_ids.get(name)
            arr = np.asarray(value)
            if lid is not None:
                node = self._nodes[lid]
                et = node.attrs.element_type  # type: ignore[union-attr]
                if et.name == "string":
                    arr = self._check_array(lid, name, arr)  # str and bytes, no numbers
                elif arr.dtype != et.dtype:
                    where = Location(str(self.path), node.layer.line)
                    arr = _cast(arr, et, name, where, node.ref)
            out[name] = arr
        return out

    def _input_name(self, key: Any, loc: Location) -> str:
        """The name a key of ``feeds`` stands for: an input's position is its name."""
        if isinstance(key, TensorSpec):
            return key.name
        if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
            if not 0 <= key < len(self.inputs):
                raise IrrunError(
                    f"no input {key}: the model has {len(self.inputs)} inputs "
                    f"({', '.join(s.name for s in self.inputs)})", loc, code="bad-input",
                )  # fmt: skip
            return self.inputs[key].name
        if not isinstance(key, str):
            raise UsageError(f"feeds: expected input names or positions as keys, not {key!r}")
        return key

    def _check_array(self, lid: str, name: str, value: Any, cast: bool = False) -> np.ndarray:
        node = self._nodes[lid]
        where = Location(str(self.path), node.layer.line)
        assert node.attrs is not None
        arr = np.asarray(value)
        et = node.attrs.element_type
        if et.name == "string":
            try:  # str, bytes: object arrays of str (irrun.ir.element_types)
                arr = element_types.as_strings(arr)
            except ValueError as e:
                raise IrrunError(f"input '{name}' is a string tensor: {e}", where, node.ref,
                                 code="bad-input") from None  # fmt: skip
        elif arr.dtype != et.dtype:
            if not cast:
                got = element_types.of_array(arr)
                raise IrrunError(
                    f"input '{name}' has element type {got or arr.dtype}, expected {et.name} "
                    f"(numpy {et.dtype}): convert it, or pass cast=True (--cast on the command "
                    "line) to have it converted with a check of its range",
                    where, node.ref, code="bad-input",
                )  # fmt: skip
            arr = _cast(arr, et, name, where, node.ref)
        shape = self._input_shapes.get(lid, node.attrs.shape)
        if not shape_fits(shape, arr.shape):
            got, want = format_shape(arr.shape), format_shape(shape)
            raise IrrunError(f"input '{name}' has shape {got}, expected {want}", where, node.ref,
                             code="bad-input")  # fmt: skip
        return arr

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Seeded random values for every input; dynamic dims become their lower bound or 1.

        Refused, naming the largest input, when they would not fit in :attr:`max_memory`.
        """
        given: list[tuple[str, Node, Shape | None]] = []
        for spec in self.inputs:
            node = self._nodes[self._input_ids[spec.name]]
            assert node.attrs is not None
            given.append((spec.name, node, self._input_shapes.get(node.layer.id, node.attrs.shape)))
        wanted = tuple(sorted(set(self._output_slots.values())))
        return random_inputs(given, seed, self._budget_arg, self.path,
                             lambda shapes: self._run_budget.check(self._budget_arg, shapes,
                                                                   wanted, False),
                             (self._graph, self._nodes, self._infos))


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _dims(shape: Any) -> str | list[str]:
    """A shape of :meth:`Model.reshape` in the dims ``--shape`` reads (None is ``?``)."""
    if isinstance(shape, str):
        return shape
    if not isinstance(shape, Sequence | np.ndarray):
        raise UsageError(f"shapes: expected a list of dims, not {shape!r}")
    return ["?" if d is None else str(d) for d in shape]


def _reopened(given: str, absolute: str) -> Path:
    """The path as first given, if it still names the same file here, else the absolute one.

    A worker started in the same directory then names the model in its messages as the
    parent does; one started elsewhere still finds it.
    """
    try:
        if os.path.samefile(given, absolute):
            return Path(given)
    except OSError:
        pass
    return Path(absolute)


def _own(array: np.ndarray) -> np.ndarray:
    """A plain, writable array: no np.memmap subclass, no read-only view of the weights."""
    array = np.asarray(array)
    return array if array.flags.writeable else array.copy()


def _cast(arr: np.ndarray, et: element_types.ElementType, name: str, where: Location,
          ref: LayerRef) -> np.ndarray:  # fmt: skip
    """``arr`` as values of ``et`` (``cast=True`` of :meth:`Model.run`), refused naming the
    input when a value cannot be one: out of the type's range, or not whole for an integer
    type (a float that rounds to a nearby value, as f64 to f32 does, is kept)."""
    shown = element_types.of_array(arr) or arr.dtype

    def refuse(why: str) -> IrrunError:
        return IrrunError(f"input '{name}': cannot cast {shown} to {et.name}: {why}", where, ref,
                          code="bad-input")  # fmt: skip

    if arr.dtype.kind == "V":  # bfloat16 and the other ml_dtypes floats read as numbers
        try:
            arr = arr.astype(np.float32)
        except (TypeError, ValueError):
            raise refuse("its values are not numbers") from None
    if arr.dtype.kind not in "biuf":
        raise refuse("its values are not numbers")
    if et.name == "nf4":
        raise refuse("nf4 elements are 4-bit codes, not numbers: pass an array of "
                     "irrun.ir.element_types.NF4")  # fmt: skip
    if arr.size == 0:
        return arr.astype(et.dtype)
    target = et.dtype
    if target.kind == "f" or target.kind == "V":
        with np.errstate(over="ignore", invalid="ignore"):  # found below, and named
            out = arr.astype(target)
            wide = out.astype(np.float64)
        # Non-finite where the value was not (f8e4m3 has no infinity: NaN), beyond
        # f4e2m1's last rounding step (it saturates at 6), negative for f8e8m0.
        overflow = ~np.isfinite(wide) & np.isfinite(arr)
        if et.name == "f4e2m1":
            overflow |= np.abs(arr) > 7
        if et.name == "f8e8m0":
            overflow |= arr < 0
        if overflow.any():
            value = arr[overflow].flat[0].item()
            becomes = "inf" if np.isinf(wide[overflow].flat[0]) else wide[overflow].flat[0].item()
            raise refuse(f"value {value!r} is out of {et.name}'s range "
                         f"(it would become {becomes})")  # fmt: skip
        return out
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise refuse(f"value {arr[bad].flat[0].item()!r} is not an integer")
        bad = arr != np.trunc(arr)
        if bad.any():
            raise refuse(f"value {arr[bad].flat[0].item()!r} is not an integer")
    if target.kind == "b":
        low, high = 0, 1
    elif et.bits < 8:  # packed: u1, u4, i4 hold fewer values than their dtype
        signed = target.kind == "i"
        low, high = (-(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1) if signed else (
            0, (1 << et.bits) - 1)  # fmt: skip
    else:
        info = np.iinfo(target)
        low, high = int(info.min), int(info.max)
    # As Python numbers, compared exactly (a float64 cannot hold int64's maximum).
    least, most = arr.min().item(), arr.max().item()
    for value in (least, most):
        if not low <= value <= high:
            raise refuse(f"value {value!r} is outside {et.name}'s range [{low}, {high}]")
    return arr.astype(target)


def _et_name(info: TensorInfo) -> str:
    return info.element_type.name if info.element_type is not None else "dynamic"


def load(
    xml: str | Path, weights: str | Path | None = None, max_memory: int | str | None = "available",
    fold_constants: bool | int | str | None = True, threads: int | None = None,
    reference: bool = False,
) -> Model:  # fmt: skip
    """Read, check and plan the model in ``xml`` (weights from ``weights`` or beside it).

    ``max_memory`` bounds the tensors a run may hold at once (see :attr:`Model.max_memory`).
    ``fold_constants`` computes the layers whose inputs are all constants (decompressed
    weights, shape subgraphs) once, here, rather than at each run: True for the default
    cap on the memory their values keep, a cap (bytes, or a size such as ``"256M"``;
    ``"none"`` for no cap), or False (see :mod:`irrun.core.folding`).  A weight that a
    decompression chain feeds into a MatMul or Gather and that the cap would not hold is
    kept compressed instead; ``IRRUN_COMPRESSED=1`` in the environment keeps every such
    weight compressed, ``0`` none (see :mod:`irrun.core.compressed`).
    ``threads`` is how many threads runs use (None: the cores this process may use that
    the machine's load leaves idle; see :attr:`Model.threads`).
    ``reference=True`` runs each op's reference kernel (:mod:`irrun.ops`), with no pass
    rewriting the plan and on one thread: the values that define irrun's, slower.  A
    default run computes the same within the bounds its fast kernels state (:mod:`irrun.fast`).
    Raises :class:`~irrun.errors.IrrunError` naming the file, line and layer when the
    model cannot be run.
    """
    return Model(xml, weights, max_memory, fold_constants, threads, reference)


def save(model: Model, xml: str | Path, weights: str | Path | None = None) -> tuple[Path, Path]:
    """Write ``model`` as IR v11 (see :meth:`Model.save`)."""
    return model.save(xml, weights)


# Findings of shape and type propagation, which new input shapes replace.
_PROPAGATION_CODES = ("shape-error", "internal-error", "empty-window", "output-count",
                      "shape-mismatch", "type-mismatch", "impossible-size",
                      "over-budget")  # fmt: skip


def _budget(value: int | str | None) -> int | str | None:
    """A ``max_memory`` argument as bytes, ``"available"`` or None (see Model.max_memory)."""
    if isinstance(value, str) and value != "available":
        try:
            value = parse_size(value)
        except ValueError as exc:
            raise UsageError(f"max_memory: {exc}") from None
    if isinstance(value, bool) or not (value is None or value == "available" or (
            isinstance(value, int) and value >= 0)):  # fmt: skip
        raise UsageError(f"max_memory must be bytes, a size like '4G', 'available' or None, "
                         f"not {value!r}")  # fmt: skip
    return value


def validate(
    xml: str | Path,
    weights: str | Path | None = None,
    shapes: ShapeSpec | None = None,
    max_memory: int | str | None = "available",
) -> list[Diagnostic]:
    """Every problem in an IR file, as diagnostics in file order; never raises for a bad file.

    ``shapes`` gives the inputs new shapes, as :meth:`Model.validate` does (a bad
    ``shapes`` raises :class:`~irrun.errors.UsageError`).  Tensors, and runs, larger
    than ``max_memory`` (see :attr:`Model.max_memory`) are warnings (``over-budget``);
    tensors no machine can hold are errors (``impossible-size``).

    >>> validate("models/maxpool_example1.xml")
    []
    >>> for d in validate("models/pooling_chain.xml", shapes="image[1,3,2,2]"):
    ...     print(d.level, d.code, d.layer.name)
    info unused-output stem_pool
    error shape-error avg_pool
    """
    try:
        return check_ir(xml, weights, shapes, max_memory=_budget(max_memory)).findings
    except UsageError:
        raise
    except Exception as exc:  # a bug in irrun is reported, not raised, like the file's problems
        return [internal_error(xml, exc)]


