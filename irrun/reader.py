"""Reading IR v10/v11 XML into plain records that remember their source lines.

The parser is locked down: no entity expansion, no DTD, no network.  An IR
file never needs any of them, so a document type declaration is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from . import element_types
from .dims import Dim, parse_dim
from .element_types import ElementType
from .errors import IrrunError, LayerRef, Location

SUPPORTED_IR_VERSIONS = (10, 11)


@dataclass
class Port:
    id: int
    line: int
    precision: ElementType | None = None
    names: tuple[str, ...] = ()
    dims: tuple[Dim, ...] = ()
    rt_info: dict[str, Any] = field(default_factory=dict)


@dataclass
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

    def ref(self, version: int | None = None) -> LayerRef:
        return LayerRef(self.id, self.name, self.type, version)

    def port(self, port_id: int) -> Port | None:
        for p in (*self.inputs, *self.outputs):
            if p.id == port_id:
                return p
        return None


@dataclass(frozen=True)
class Edge:
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int
    line: int


@dataclass
class IRDocument:
    path: Path
    ir_version: int
    name: str
    layers: list[Layer]
    edges: list[Edge]
    rt_info: dict[str, Any] = field(default_factory=dict)

    def location(self, line: int = 0) -> Location:
        return Location(str(self.path), line)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
        huge_tree=False,
    )


def read_ir(path: str | Path) -> IRDocument:
    """Read ``path`` into an :class:`IRDocument`; raise :class:`IrrunError` on bad XML."""
    path = Path(path)
    loc = Location(str(path))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise IrrunError("no such file", loc) from None
    except OSError as exc:
        raise IrrunError(f"cannot read: {exc.strerror or exc}", loc) from None
    if not data.strip():
        raise IrrunError("the file is empty, expected an OpenVINO IR <net> document", loc)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or 0
        msg = exc.msg if hasattr(exc, "msg") else str(exc)
        raise IrrunError(f"malformed XML: {msg}", Location(str(path), line)) from None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise IrrunError(
            "document type declarations (DTD, entities) are not allowed in IR files", loc
        )
    return _read_net(root, path)


def _need(el: etree._Element, attr: str, path: Path, what: str) -> str:
    value = el.get(attr)
    if value is None:
        raise IrrunError(
            f"<{what}> is missing the mandatory attribute '{attr}'",
            Location(str(path), el.sourceline or 0),
        )
    return value


def _int_attr(el: etree._Element, attr: str, path: Path, what: str) -> int:
    text = _need(el, attr, path, what)
    try:
        return int(text)
    except ValueError:
        raise IrrunError(
            f"<{what}> attribute {attr}=\"{text}\" is not an integer",
            Location(str(path), el.sourceline or 0),
        ) from None


def _read_net(root: etree._Element, path: Path) -> IRDocument:
    loc = Location(str(path), root.sourceline or 0)
    if not isinstance(root.tag, str) or root.tag.lower() != "net":
        raise IrrunError(f"root element is <{root.tag}>, expected <net>", loc)
    version_text = root.get("version")
    if version_text is None or not version_text.strip().isdigit():
        raise IrrunError("<net> has no IR version (expected version=\"10\" or \"11\")", loc)
    version = int(version_text)
    if version not in SUPPORTED_IR_VERSIONS:
        raise IrrunError(f"IR version {version} is not supported (expected 10 or 11)", loc)

    layers_el = root.find("layers")
    if layers_el is None:
        raise IrrunError("<net> has no <layers>", loc)
    layers = [_read_layer(el, path) for el in layers_el if el.tag == "layer"]

    edges: list[Edge] = []
    edges_el = root.find("edges")
    if edges_el is not None:
        for el in edges_el:
            if el.tag != "edge":
                continue
            edges.append(
                Edge(
                    from_layer=_need(el, "from-layer", path, "edge"),
                    from_port=_int_attr(el, "from-port", path, "edge"),
                    to_layer=_need(el, "to-layer", path, "edge"),
                    to_port=_int_attr(el, "to-port", path, "edge"),
                    line=el.sourceline or 0,
                )
            )
    rt = root.find("rt_info")
    return IRDocument(
        path=path,
        ir_version=version,
        name=root.get("name", path.stem),
        layers=layers,
        edges=edges,
        rt_info=_read_rt_info(rt) if rt is not None else {},
    )


def _read_layer(el: etree._Element, path: Path) -> Layer:
    layer = Layer(
        id=_need(el, "id", path, "layer"),
        name=_need(el, "name", path, "layer"),
        type=_need(el, "type", path, "layer"),
        version=_need(el, "version", path, "layer"),
        line=el.sourceline or 0,
    )
    data = el.find("data")
    if data is not None:
        layer.data = dict(data.attrib)
        layer.data_line = data.sourceline or 0
    # OpenVINO reads only the first <input> and <output> lists.
    inp = el.find("input")
    if inp is not None:
        layer.inputs = [_read_port(p, path, layer, is_output=False) for p in inp if p.tag == "port"]
    out = el.find("output")
    if out is not None:
        layer.outputs = [_read_port(p, path, layer, is_output=True) for p in out if p.tag == "port"]
    rt = el.find("rt_info")
    if rt is not None:
        layer.rt_info = _read_rt_info(rt)
    return layer


def _split_names(text: str) -> tuple[str, ...]:
    """Split ``names="a,b\\,c"``: a backslash escapes a comma; empty names are dropped."""
    names, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            names.append("".join(current))
            current = []
        else:
            current.append(ch)
    names.append("".join(current))
    return tuple(n for n in names if n)


def _read_port(el: etree._Element, path: Path, layer: Layer, is_output: bool) -> Port:
    line = el.sourceline or 0
    where = Location(str(path), line)
    port = Port(id=_int_attr(el, "id", path, "port"), line=line)
    precision = el.get("precision")
    if precision is not None:
        try:
            port.precision = element_types.from_precision(precision)
        except ValueError as exc:
            raise IrrunError(str(exc), where, layer.ref(), port.id) from None
    elif is_output:
        raise IrrunError("output <port> has no precision", where, layer.ref(), port.id)
    names = el.get("names")
    if names:
        port.names = _split_names(names)
    dims = []
    for d in el.findall("dim"):
        text = (d.text or "").strip()
        try:
            dims.append(parse_dim(text))
        except ValueError:
            raise IrrunError(
                f"<dim>{text}</dim> is not a dimension (expected an integer >= -1 or a range a..b)",
                Location(str(path), d.sourceline or line),
                layer.ref(),
                port.id,
            ) from None
    port.dims = tuple(dims)
    rt = el.find("rt_info")
    if rt is not None:
        port.rt_info = _read_rt_info(rt)
    return port


def _read_rt_info(el: etree._Element) -> dict[str, Any]:
    """Keep ``<rt_info>`` as nested dicts: ``<attribute name= value=>`` and v11's free-form tags."""
    out: dict[str, Any] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue
        key = child.get("name") if child.tag == "attribute" else child.tag
        if key is None:
            continue
        if len(child):
            out[key] = _read_rt_info(child)
        else:
            out[key] = child.get("value", (child.text or "").strip())
    return out
