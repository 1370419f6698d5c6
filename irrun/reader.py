"""Reading IR v10/v11 XML into plain records that remember their source lines.

The parser is locked down: no entity expansion, no DTD, no network.  An IR
file never needs any of them, so a document type declaration is refused.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from . import element_types, registry
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
        if version is None:
            # Name the op version wherever the layer's type resolves, so that every
            # message about a layer reads the same, not only those issued after binding.
            with contextlib.suppress(registry.LookupFailure):
                version = registry.resolve(self.type, self.version).version
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
    return _read_net(parse_xml(path), path)


def parse_xml(path: str | Path) -> etree._Element:
    """Parse ``path`` with the locked-down parser into its root element.

    Raises :class:`IrrunError` (with the line) for a missing, empty, binary or malformed
    file, or one with a document type declaration; the root is not checked to be <net>.

    >>> parse_xml("models/demo.xml").tag
    'net'
    """
    path = Path(path)
    loc = Location(str(path))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise IrrunError("no such file", loc) from None
    except IsADirectoryError:
        raise IrrunError("is a directory, expected an IR .xml file", loc) from None
    except OSError as exc:
        raise IrrunError(f"cannot read: {exc.strerror or exc}", loc) from None
    if not data.strip():
        raise IrrunError("the file is empty, expected an OpenVINO IR <net> document", loc)
    if _looks_binary(data):
        hint = " (the weights file? pass the .xml)" if path.suffix.lower() == ".bin" else ""
        raise IrrunError(f"binary data, not an IR .xml file{hint}", loc)
    doctype_line = _doctype_line(data)
    if doctype_line:
        # Refused before libxml2 sees it: libxml2 expands entities in attribute values
        # even with resolve_entities=False, so a billion-laughs <net name="&lol9;"> would
        # be expanded up to its amplification limit.
        raise IrrunError(
            "document type declarations (<!DOCTYPE>, entities) are not allowed in IR files",
            Location(str(path), doctype_line),
        )
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno or 0, 0)
        # lxml appends ", line L, column C" to libxml2's message; the location says it already.
        msg = _LXML_POSITION.sub("", exc.msg if hasattr(exc, "msg") else str(exc))
        col = f" (column {column})" if column else ""
        raise IrrunError(f"malformed XML: {msg}{col}", Location(str(path), line)) from None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise IrrunError(
            "document type declarations (<!DOCTYPE>, entities) are not allowed in IR files", loc
        )
    return root


_LXML_POSITION = re.compile(r", line \d+, column \d+$")

# Byte-order marks and the first bytes of '<?' in the wide encodings libxml2 detects.
_WIDE_ENCODINGS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\x00<", "utf-32-be"), (b"<\x00\x00\x00", "utf-32-le"),
    (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"),
    (b"\x00<", "utf-16-be"), (b"<\x00", "utf-16-le"),
)  # fmt: skip


def _wide_encoding(data: bytes) -> str | None:
    return next((enc for bom, enc in _WIDE_ENCODINGS if data.startswith(bom)), None)


def _looks_binary(data: bytes) -> bool:
    """NUL bytes near the start mean a binary file, unless the text is UTF-16 or UTF-32."""
    return _wide_encoding(data) is None and b"\x00" in data[:4096]


def _doctype_line(data: bytes) -> int:
    """The line of a ``<!DOCTYPE`` in the prolog, or 0 when there is none.

    Only an XML declaration, processing instructions, comments and white space may
    precede it, so a linear scan over them finds it without parsing anything.

    >>> _doctype_line(b'<?xml version="1.0"?>\\n<!-- c -->\\n<!DOCTYPE x []><x/>')
    3
    >>> _doctype_line(b'<net version="11"><!-- <!DOCTYPE --></net>')
    0
    """
    enc = _wide_encoding(data)
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8's byte-order mark
        data = data[3:]
    # The prolog is short: decode a head of the file first, all of it only if needed.
    for head in (data[:65536], data):
        # Latin-1 keeps every byte, and the ASCII markers looked for are the same in UTF-8.
        line = _scan_prolog(head.decode(enc or "latin-1", errors="replace"))
        if line >= 0 or len(head) == len(data):
            return max(line, 0)
    return 0


def _scan_prolog(text: str) -> int:
    """``<!DOCTYPE``'s line, 0 if the prolog has none, -1 if ``text`` ends inside it."""
    pos = 1 if text.startswith("\ufeff") else 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
        elif text.startswith("<?", pos) or text.startswith("<!--", pos):
            close = "?>" if text[pos + 1] == "?" else "-->"
            end = text.find(close, pos + 2)
            if end < 0:
                return -1
            pos = end + len(close)
        elif text.startswith("<!DOCTYPE", pos):
            return text.count("\n", 0, pos) + 1
        elif text.startswith("<!DOCTYPE"[: len(text) - pos], pos):
            return -1
        else:
            return 0
    return -1


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
