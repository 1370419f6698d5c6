"""The plain records an IR file is read into: layers, ports, edges, the document.

Each remembers the line it was read from, so that every message can point at it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LayerRef, Location
from ..frozen import fast_init
from . import registry
from .dims import Dim
from .element_types import ElementType


@dataclass(slots=True)
class Port:
    id: int
    line: int
    precision: ElementType | None = None
    names: tuple[str, ...] = ()
    dims: tuple[Dim, ...] | None = ()  # None: a <dim> could not be read
    rt_info: dict[str, Any] = field(default_factory=dict)


# (type, version) of the layers whose op has resolved -> the op's version.
_RESOLVED: dict[tuple[str, str], int] = {}


@dataclass(slots=True)
class Layer:
    id: str
    name: str
    type: str
    version: str  # as written: "opset8"
    line: int
    data: dict[str, str] = field(default_factory=dict)
    data_line: int = 0
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    rt_info: dict[str, Any] = field(default_factory=dict)
    # The reader already reported that its type or version is missing: nothing to resolve.
    unnamed_op: bool = False
    # A port could not be read (no id): port counts and positions are unknown.
    unreadable_ports: bool = False
    # A sub-graph op's (If, Loop, TensorIterator) bodies by tag (body, then_body,
    # else_body), and its port maps and back edges by tag (port_map, then_port_map,
    # else_port_map, back_edges); None for every other layer.
    bodies: dict[str, IRDocument] | None = None
    port_maps: dict[str, list[MapEntry]] | None = None
    # The start tag's other attributes, as written (OpenVINO writes output_names on a
    # Result), so that a saved model keeps them.
    extra: dict[str, str] = field(default_factory=dict)
    # A constant's new bytes, packed as its element type lies in a .bin, for a layer that
    # surgery made or changed: the writer stores them in place of its offset and size.
    blob: bytes | None = field(default=None, repr=False, compare=False)
    _ref: LayerRef | None = field(default=None, init=False, repr=False, compare=False)

    def ref(self, version: int | None = None) -> LayerRef:
        ref = self._ref
        if ref is not None and (version is None or version == ref.version):
            return ref
        if version is None:
            # Name the op version wherever the layer's type resolves, so that every
            # message about a layer reads the same, not only those issued after binding.
            key = (self.type, self.version)
            version = _RESOLVED.get(key)
            if version is None:
                with contextlib.suppress(registry.LookupFailure):
                    version = _RESOLVED[key] = registry.resolve(self.type, self.version).version
        ref = LayerRef(self.id, self.name, self.type, version,
                       None if version is not None else self.version or None)  # fmt: skip
        if version is not None and version == _RESOLVED.get((self.type, self.version)):
            self._ref = ref  # what any later call returns, with or without the version
        return ref

    def output_port(self, port_id: int) -> Port | None:
        """The first output port with this id (input and output ids may overlap)."""
        return next((p for p in self.outputs if p.id == port_id), None)

    def input_port(self, port_id: int) -> Port | None:
        return next((p for p in self.inputs if p.id == port_id), None)


@fast_init  # a model has as many edges as layers
@dataclass(frozen=True)
class Edge:
    """An ``<edge>``; a part is None when its attribute is missing or unreadable."""

    from_layer: str | None
    from_port: int | None
    to_layer: str | None
    to_port: int | None
    line: int

    @property
    def complete(self) -> bool:
        return None not in (self.from_layer, self.from_port, self.to_layer, self.to_port)


@dataclass(frozen=True)
class MapEntry:
    """One ``<input>``/``<output>`` of a port map or one ``<edge>`` of ``<back_edges>``,
    its attributes as written (the sub-graph ops read and check them)."""

    tag: str
    attributes: dict[str, str]
    line: int


class RtInfo(dict):  # type: ignore[type-arg]
    """An ``<rt_info>`` read as a dict, which also keeps the element as written.

    The dict is what irrun reads (``{"fused_names": "a,b"}``); the element keeps what
    the dict drops (an attribute's ``version``, whether it had a ``value``), so that the
    writer puts back the same element while the dict still says what the element says.
    """

    __slots__ = ("xml",)

    def __init__(self, items: Any = (), xml: bytes | None = None) -> None:
        super().__init__(items)
        self.xml = xml


@dataclass(slots=True)
class IRDocument:
    path: Path
    ir_version: int
    name: str
    layers: list[Layer]
    edges: list[Edge]
    rt_info: dict[str, Any] = field(default_factory=dict)

    def location(self, line: int = 0) -> Location:
        return Location(str(self.path), line)
