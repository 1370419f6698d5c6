"""Reading IR v10/v11 XML into plain records that remember their source lines.

The file is read and parsed by :mod:`.xml_file`, into the records of :mod:`.records`.

:func:`read_document` reads what it can of a parsed file and lists what it could
not: an element missing a mandatory attribute is skipped (a layer without an id,
an edge without a port) or kept with a blank (a layer without a type), so that
the checker can go on and report every other problem too.  :func:`read_ir`
raises the first of them instead.

:func:`read_plain` reads a file laid out as OpenVINO writes it straight from its
bytes, without building a tree, into the same records; for any other file, or one
with a problem to report, it declines and the tree is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lxml import etree

from ..errors import IrrunError, Location
from . import element_types
from .dims import Dim, parse_dim
from .element_types import ElementType
from .records import Edge, IRDocument, Layer, MapEntry, Port, RtInfo
from .xml_file import _parser, parse_xml, read_xml_bytes

SUPPORTED_IR_VERSIONS = (10, 11)


def read_ir(path: str | Path) -> IRDocument:
    """Read ``path`` into an :class:`IRDocument`; raise :class:`IrrunError` on bad XML."""
    path = Path(path)
    data = read_xml_bytes(path)
    doc, problems = read_document(parse_xml(path, data), path, data)
    if problems:
        raise problems[0]
    assert doc is not None
    return doc


class _Reader:
    """Reads a parsed document into records, listing what it cannot read."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.path = path
        self.problems: list[IrrunError] = []
        # The file's lines, to know layers written alike by their text (see _bodies):
        # only when libxml2 counts its lines as split here, one per "\n".
        self.lines = data.split(b"\n") if data is not None and b"\r" not in data else None

    def problem(self, message: str, line: int, layer: Layer | None = None,
                port: int | None = None) -> None:  # fmt: skip
        ref = layer.ref() if layer is not None else None
        self.problems.append(
            IrrunError(message, Location(str(self.path), line), ref, port, code="structure")
        )

    def need(self, el: etree._Element, attr: str, what: str) -> str | None:
        value = el.get(attr)
        if value is None:
            self.problem(f"<{what}> is missing the mandatory attribute '{attr}'",
                         el.sourceline or 0)  # fmt: skip
        return value

    def integer(self, el: etree._Element, attr: str, what: str) -> int | None:
        text = self.need(el, attr, what)
        if text is None:
            return None
        if text.isdigit() and text.isascii():  # the common case, without the pattern
            return int(text)
        # OpenVINO reads an unsigned integer: blanks and a plus sign before the digits only.
        if not _UNSIGNED.fullmatch(text):
            self.problem(f'<{what}> attribute {attr}="{text}" is not an unsigned integer',
                         el.sourceline or 0)  # fmt: skip
            return None
        return int(text)

    def net(self, root: etree._Element) -> IRDocument | None:
        line = root.sourceline or 0
        if not isinstance(root.tag, str) or root.tag.lower() != "net":
            self.problem(f"root element is <{root.tag}>, expected <net>", line)
            return None
        version_text = root.get("version")
        if version_text is None or not (version_text.strip().isdigit() and version_text.isascii()):
            self.problem('<net> has no IR version (expected version="10" or "11")', line)
            return None
        version = int(version_text)
        if version not in SUPPORTED_IR_VERSIONS:
            self.problem(f"IR version {version} is not supported (expected 10 or 11)", line)
            return None
        layers_el = root.find("layers")
        if layers_el is None:
            self.problem("<net> has no <layers>", line)
            return None
        children = layers_el[:]
        layers = [
            layer for el, body in zip(children, self._bodies(children), strict=True)
            if el.tag == "layer" if (layer := self.layer(el, body)) is not None
        ]  # fmt: skip
        edges_el = root.find("edges")
        edges = [] if edges_el is None else self.edges(edges_el)
        rt = root.find("rt_info")
        return IRDocument(
            path=self.path,
            ir_version=version,
            name=root.get("name", self.path.stem),
            layers=layers,
            edges=edges,
            rt_info=_rt_info(rt) if rt is not None else {},
        )

    def body(self, el: etree._Element, tag: str) -> IRDocument:
        """A sub-graph op's ``<body>``, ``<then_body>`` or ``<else_body>``: a graph of its
        own (layer ids are its own), read as <net>'s layers and edges are."""
        layers_el = el.find("layers")
        children = layers_el[:] if layers_el is not None else []
        layers = [
            layer for child, text in zip(children, self._bodies(children), strict=True)
            if child.tag == "layer" if (layer := self.layer(child, text)) is not None
        ]  # fmt: skip
        edges_el = el.find("edges")
        edges = [] if edges_el is None else self.edges(edges_el)
        return IRDocument(self.path, 0, tag, layers, edges)

    def edges(self, edges_el: etree._Element) -> list[Edge]:
        edges = self._edges_from_lines(edges_el)
        if edges is None:
            edges = [self.edge(el) for el in edges_el if el.tag == "edge"]
        return edges

    def _edges_from_lines(self, edges_el: etree._Element) -> list[Edge] | None:
        """The edges read from the file's lines when each is alone on its own line, one
        after another, in the plain form OpenVINO writes; None when they are not.

        When every line from the first child's to the last child's holds one such
        <edge/> and nothing else, and there are as many lines as children, the children
        are those edges and each edge's line is known without asking lxml for it.
        """
        lines, count = self.lines, len(edges_el)
        if lines is None or count < 2:
            return None
        first_el, last_el = edges_el[0], edges_el[-1]
        first, last = first_el.sourceline or 0, last_el.sourceline or 0
        # The tag rules out a default namespace declared on <edges> or above it.
        if first_el.tag != "edge" or first < 1 or last != first + count - 1 or last > len(lines):
            return None
        # As many lines as children, each one edge: the children are those edges.
        return _edge_lines(b"\n".join(lines[first - 1 : last]).decode("latin-1"), first)

    def edge(self, el: etree._Element) -> Edge:
        get = el.get
        ids = get("from-layer"), get("from-port"), get("to-layer"), get("to-port")
        # all(): no attribute is missing or empty, so their digits joined are theirs.
        if all(ids) and (joined := "".join(ids)).isdigit() and joined.isascii():
            # The common case: plain numbers, so integer() has nothing to say, nor
            # _layer_id unless a layer id has a leading zero.
            fl, fp, tl, tp = ids
            if fl[0] == "0" or tl[0] == "0":
                fl, tl = _layer_id(fl), _layer_id(tl)
            return Edge(fl, int(fp), tl, int(tp), el.sourceline or 0)
        return Edge(
            from_layer=_layer_id(self.need(el, "from-layer", "edge")),
            from_port=self.integer(el, "from-port", "edge"),
            to_layer=_layer_id(self.need(el, "to-layer", "edge")),
            to_port=self.integer(el, "to-port", "edge"),
            line=el.sourceline or 0,
        )

    def _bodies(self, children: list[etree._Element]) -> list[bytes | None]:
        """The text of each child of <layers> after its start tag, up to the next child's;
        None where the lines do not show where it starts and ends.

        A <layer> alone on its line, followed by another alone on its line, has all its
        content in the lines between: two layers with the same such text have the same
        children on the same lines relative to their own, and are read alike.
        """
        lines = self.lines
        if lines is None or len(children) < 2:
            return [None] * len(children)
        starts = [el.sourceline or 0 for el in children]
        alone = [0 < n <= len(lines) and _LAYER_LINE.fullmatch(lines[n - 1]) is not None
                 for n in starts]  # fmt: skip
        bodies: list[bytes | None] = [None] * len(children)
        for i in range(len(children) - 1):
            if alone[i] and alone[i + 1]:
                bodies[i] = b"\n".join(lines[starts[i] : starts[i + 1] - 1])
        return bodies

    def layer(self, el: etree._Element, body: bytes | None = None) -> Layer | None:
        get = el.get
        lid, name, type_name, version = get("id"), get("name"), get("type"), get("version")
        if lid is None or name is None or type_name is None or version is None:
            # Report each missing one, in this order.
            lid, name, type_name, version = [
                self.need(el, attr, "layer") for attr in ("id", "name", "type", "version")
            ]
        lid = _layer_id(lid)
        if lid is None:  # nothing can refer to it
            return None
        line = el.sourceline or 0
        unnamed_op = type_name is None or version is None
        name, type_name, version = name or "", type_name or "", version or ""
        read = _BODIES.get(body) if body is not None else None
        # Four attributes are the usual ones unless one is missing.
        extra = {k: v for k, v in el.items() if k not in _USUAL_NAMES} \
            if len(el.attrib) > 4 or unnamed_op or not name else {}  # fmt: skip
        if read is not None:
            return _layer_as_read(read, lid, name, type_name, version, line, unnamed_op, extra)
        count = len(self.problems)
        layer = Layer(lid, name, type_name, version, line, unnamed_op=unnamed_op, extra=extra)
        self.children(el, layer)
        if body is not None and len(self.problems) == count and layer.bodies is None \
                and layer.port_maps is None:  # fmt: skip
            _remember_body(body, layer)
        return layer

    def children(self, el: etree._Element, layer: Layer) -> None:
        """Read a layer's <data>, ports and <rt_info> into ``layer``."""
        # One pass over the children; OpenVINO reads only the first <data>, <input>,
        # <output> and <rt_info> of a layer.  A slice makes the children's list in one
        # call, where iterating the element goes through lxml's iterator child by child.
        data = group_in = group_out = rt = None
        for child in el[:]:
            tag = child.tag
            if tag == "data":
                data = child if data is None else data
            elif tag == "input":
                group_in = child if group_in is None else group_in
            elif tag == "output":
                group_out = child if group_out is None else group_out
            elif tag == "rt_info":
                rt = child if rt is None else rt
            elif tag in _BODY_TAGS:
                if layer.bodies is None:
                    layer.bodies = {}
                if tag not in layer.bodies:
                    layer.bodies[tag] = self.body(child, tag)
            elif tag in _MAP_TAGS:
                if layer.port_maps is None:
                    layer.port_maps = {}
                if tag not in layer.port_maps:
                    layer.port_maps[tag] = [
                        MapEntry(e.tag, dict(e.items()), e.sourceline or 0)
                        for e in child[:] if isinstance(e.tag, str)
                    ]  # fmt: skip
        if data is not None:
            layer.data = _data_attributes(data)
            layer.data_line = data.sourceline or 0
        if group_in is not None:
            self.ports(group_in, layer, layer.inputs, False)
        if group_out is not None:
            self.ports(group_out, layer, layer.outputs, True)
        if rt is not None:
            layer.rt_info = _rt_info(rt)

    def ports(self, group: etree._Element, layer: Layer, ports: list[Port],
              is_output: bool) -> None:  # fmt: skip
        known = _PORTS
        for el in group[:]:
            if el.tag != "port":
                continue
            children = el[:]
            texts = tuple([d.text for d in children if d.tag == "dim"])
            # A port is read from its attributes and dims alone, so ports written alike
            # share what was read from the first of them (all immutable values).
            key = (tuple(el.items()), texts, is_output)
            read = known.get(key)
            if read is not None and len(children) == len(texts):
                ports.append(Port(read[0], el.sourceline or 0, read[1], read[2], read[3]))
                continue
            count = len(self.problems)
            port = self.port(el, layer, is_output, texts, len(children) > len(texts))
            if port is None:
                layer.unreadable_ports = True
                continue
            ports.append(port)
            # Only what reads without a problem is kept: problems name the port's line.
            if len(self.problems) == count and len(known) < 4096:
                known[key] = (port.id, port.precision, port.names, port.dims)

    def port(self, el: etree._Element, layer: Layer, is_output: bool,
             texts: tuple[str | None, ...], more: bool) -> Port | None:  # fmt: skip
        """Read a port whose <dim> texts are ``texts`` (``more``: it has other children)."""
        line = el.sourceline or 0
        text = el.get("id")
        if text is not None and text.isdigit() and text.isascii():
            port_id = int(text)
        else:
            port_id = self.integer(el, "id", "port")
            if port_id is None:
                return None
        port = Port(id=port_id, line=line)
        precision = el.get("precision")
        if precision is not None:
            et = _PRECISIONS.get(precision)
            if et is None:
                try:
                    et = _PRECISIONS[precision] = element_types.from_precision(precision)
                except ValueError as exc:
                    self.problem(str(exc), line, layer, port.id)
            port.precision = et
        elif is_output:
            self.problem("output <port> has no precision", line, layer, port.id)
        names = el.get("names")
        if names:
            port.names = (_split_names(names) if "\\" in names
                          else tuple(n for n in names.split(",") if n))  # fmt: skip
        dims = _DIMS.get(texts)
        if dims is None:
            dims = self.dims(el, layer, port)
            if dims is not None and len(_DIMS) < 4096:
                _DIMS[texts] = dims
        port.dims = dims
        if more:  # more than dims: maybe an <rt_info>
            rt = el.find("rt_info")
            if rt is not None:
                port.rt_info = _rt_info(rt)
        return port

    def dims(self, el: etree._Element, layer: Layer, port: Port) -> tuple[Dim, ...] | None:
        """A port's dims, or None (and a problem for each) when some cannot be read."""
        dims: list[Dim] = []
        ok = True
        for d in el.iterchildren("dim"):
            text = (d.text or "").strip()
            try:
                dims.append(parse_dim(text))
            except ValueError:
                self.problem(
                    f"<dim>{text}</dim> is not a dimension "
                    "(expected an integer >= -1 or a range a..b)",
                    d.sourceline or port.line, layer, port.id,
                )  # fmt: skip
                ok = False
        return tuple(dims) if ok else None


# What the reader has parsed before: the texts of a port's <dim>s, and precisions.
_DIMS: dict[tuple[str | None, ...], tuple[Dim, ...]] = {}
_PRECISIONS: dict[str, ElementType] = {}
# (attributes, dim texts, is output) of a port read without a problem -> its id,
# element type, names and dims.
_PORTS: dict[tuple, tuple[int, ElementType | None, tuple[str, ...], tuple[Dim, ...] | None]] = {}
# A <layer> start tag alone on its line (not an empty element), declaring no namespace:
# its children's tags, and so how they read, depend on nothing else in that line.
_LAYER_LINE = re.compile(rb"[ \t]*<layer[ \t](?![^<>]*xmlns)[^<>]*[^/<>]>[ \t]*")
# The text of a layer after its start tag (see _Reader._bodies), for layers read without
# a problem or an <rt_info> -> its <data> dict (copied for each layer) and the line of
# its <data> after the layer's (-1: none), and (id, line after the layer's, element
# type, names, dims) of each input and output port.
_PortReading = tuple[int, int, ElementType | None, tuple[str, ...], tuple[Dim, ...] | None]
_BODIES: dict[bytes, tuple[dict[str, str], int, tuple[_PortReading, ...],
                           tuple[_PortReading, ...]]] = {}  # fmt: skip


def _layer_as_read(read: tuple, lid: str, name: str, type_name: str, version: str, line: int,
                   unnamed_op: bool = False,
                   extra: dict[str, str] | None = None) -> Layer:  # fmt: skip
    """A layer at ``line`` whose body reads as ``read`` (an entry of ``_BODIES``)."""
    data, data_offset, inputs, outputs = read
    return Layer(lid, name, type_name, version, line, data.copy(),
                 line + data_offset if data_offset >= 0 else 0,
                 [Port(i, line + offset, et, names, dims) for i, offset, et, names, dims in inputs],
                 [Port(i, line + offset, et, names, dims)
                  for i, offset, et, names, dims in outputs],
                 unnamed_op=unnamed_op, extra=extra or {})  # fmt: skip


def _remember_body(body: bytes, layer: Layer) -> None:
    ports = (*layer.inputs, *layer.outputs)
    if layer.rt_info or any(p.rt_info for p in ports) or len(body) > 16384:
        return
    line = layer.line
    inputs, outputs = (tuple((p.id, p.line - line, p.precision, p.names, p.dims) for p in group)
                       for group in (layer.inputs, layer.outputs))  # fmt: skip
    data_offset = layer.data_line - line if layer.data_line else -1
    if len(_BODIES) >= 1024:  # start again for the model being read rather than keep old ones
        _BODIES.clear()
    _BODIES[body] = (dict(layer.data), data_offset, inputs, outputs)


# The items of a <data> element -> the dict read from them, copied for each layer.
_DATA: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}


def _data_attributes(el: etree._Element) -> dict[str, str]:
    # Most layers of a model share their <data> with others of their type, and copying a
    # dict costs less than making one from lxml's attributes.
    items = tuple(el.items())
    data = _DATA.get(items)
    if data is None:
        data = dict(items)
        if len(_DATA) < 4096:
            _DATA[items] = data
    return data.copy()
_UNSIGNED = re.compile(r"\s*\+?[0-9]+")
# The children of a sub-graph op's layer that hold its bodies, and its port maps.
_BODY_TAGS = frozenset(("body", "then_body", "else_body"))
_MAP_TAGS = frozenset(("port_map", "then_port_map", "else_port_map", "back_edges"))
# A line holding one <edge/> as OpenVINO writes it and nothing else: each line can match
# once at most, so as many matches as lines means every line is one.
_EDGE_LINE = re.compile(
    r'^[ \t]*<edge[ \t]+from-layer="([0-9]+)"[ \t]+from-port="([0-9]+)"[ \t]+'
    r'to-layer="([0-9]+)"[ \t]+to-port="([0-9]+)"[ \t]*/>[ \t]*$', re.MULTILINE
)


def _edge_lines(text: str, line: int) -> list[Edge] | None:
    """The edges of ``text``, whose lines from ``line`` on each hold one <edge/> as
    OpenVINO writes it; None when some line holds anything else.

    >>> _edge_lines('<edge from-layer="0" from-port="1" to-layer="07" to-port="0"/>', 5)
    [Edge(from_layer='0', from_port=1, to_layer='7', to_port=0, line=5)]
    """
    found = _EDGE_LINE.findall(text)
    if len(found) != text.count("\n") + (not text.endswith("\n")):
        return None
    edges = []
    for n, (fl, fp, tl, tp) in enumerate(found, line):
        if fl[0] == "0" or tl[0] == "0":
            fl, tl = _layer_id(fl), _layer_id(tl)
        edges.append(Edge(fl, int(fp), tl, int(tp), n))
    return edges


def _layer_id(text: str | None) -> str | None:
    """A layer id as OpenVINO compares them, as numbers: ``" +07"`` is ``"7"``.

    Anything else is kept as written (the structure check reports it).

    >>> _layer_id(" +07"), _layer_id("one")
    ('7', 'one')
    """
    if text is not None and text.isdigit() and text.isascii() and (text[0] != "0" or text == "0"):
        return text  # already as OpenVINO compares it
    return str(int(text)) if text is not None and _UNSIGNED.fullmatch(text) else text


def read_document(root: etree._Element, path: str | Path,
                  data: bytes | None = None) -> tuple[IRDocument | None, list]:  # fmt: skip
    """Read a parsed document; return it (None if not even a <net>) and the problems.

    ``data``, the bytes ``root`` was parsed from, lets layers written alike be read once.

    Each problem is an :class:`IrrunError` with the code ``structure``; the elements
    concerned are skipped or kept with a blank, as the module's docstring says.
    """
    reader = _Reader(Path(path), data)
    doc = reader.net(root)
    return doc, reader.problems


class _Discard:
    """A parser target that keeps nothing: libxml2 checks a document and builds no tree."""

    def close(self) -> None:
        return None


# What read_plain reads: the start of a file as OpenVINO writes it, up to the line after
# <layers>; a <layer> start tag ending its line (attributes in double quotes), with its
# usual attributes first when it has them as OpenVINO writes them (what follows them is
# not read); the end of <layers> and the start of <edges>.
_PLAIN_HEAD = re.compile(
    rb'(?:<\?xml version="1\.0"(?: encoding="(?i:utf-8)")?\?>\n)?'
    rb'<net name="([^"<\n]*)" version="([0-9]+)">\n[ \t]*<layers>\n'
)
_PLAIN_START = re.compile(
    rb'<layer(?=[ \t])(?:[ \t]+id="([0-9]+)"[ \t]+name="([^"<\n]*)"[ \t]+type="([^"<\n]*)"'
    rb'[ \t]+version="([^"<\n]*)"(?=[ \t>]))?((?:[ \t]+[^\s=<>"/]+="[^"<]*")*)[ \t]*>[ \t]*\n'
)
# What is well-formed XML by its form alone: a value with no references but these, the
# start tag's other attributes (plain names, values without references), and the bytes
# XML allows in a document (C0 controls but tab, newline and carriage return are not).
_PLAIN_VALUE = re.compile(rb'(?:[^"<&\n]|&(?:lt|gt|amp|quot|apos);)*')
_ODD_REFERENCE = re.compile(rb"&(?!(?:lt|gt|amp|quot|apos);)")
_PLAIN_EXTRA = re.compile(rb'[ \t]+([A-Za-z_][-A-Za-z0-9_.]*)="[^"<&]*"')
_USUAL = frozenset((b"id", b"name", b"type", b"version"))
_USUAL_NAMES = frozenset(("id", "name", "type", "version"))
# An attribute of a start tag, its value in double quotes.
_PLAIN_ATTRIBUTE = re.compile(rb'([^\s=<>"/]+)="([^"<]*)"')
_CONTROLS = bytes(c for c in range(32) if c not in b"\t\n\r")
# A part parsed on its own with more tags than this could be nested deeper than libxml2
# allows in the whole file (256): then libxml2 checks the file.
_SHALLOW = 200
# A start tag longer than this could hold a value or a name longer than libxml2 allows.
_LONGEST = 40_000
# An attribute value's entity and character references (a well-formed file has no other).
_REFERENCE = re.compile(r"&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _attribute(raw: bytes) -> str:
    """An attribute's value as libxml2 gives it: tabs as spaces, references replaced.

    >>> tab = chr(9)
    >>> _attribute(b"a&amp;b&#9;c" + tab.encode() + b"d&#x3c;") == f"a&b{tab}c d<"
    True
    """
    text = raw.decode()
    if "\t" in text:
        text = text.replace("\t", " ")  # a literal tab; a reference to one stays a tab
    if "&" in text:
        text = _REFERENCE.sub(lambda m: _ENTITIES.get(m[1]) or chr(
            int(m[1][2:], 16) if m[1][1] == "x" else int(m[1][1:])), text)  # fmt: skip
    return text


_PLAIN_TAIL = re.compile(rb"</layers>\n[ \t]*<edges>\n")


def read_plain(path: str | Path, data: bytes) -> IRDocument | None:
    """Read the bytes ``data`` of a file laid out as OpenVINO writes it, without a tree.

    The layers are cut out of the bytes at their start tags, each alone on its line.
    A layer's text after its start tag (its body) reads as the same text has read
    before (``_BODIES``); other bodies are parsed on their own, which also proves the
    cut right: a body that is not one whole element after its start tag (a cut
    inside a sub-graph or a comment) does not parse.  The edges are read from their
    lines.  Returns None for a file laid out otherwise, or one with something
    :func:`read_document` would report: it then reads the tree and says what.

    The file is then well-formed when every start tag, the <net> tag and the file's
    characters are of a form that is (:func:`_plain_tag`): the rest is bodies parsed
    now or before, and lines of fixed text.  Otherwise libxml2 checks the whole file
    as :func:`parse_xml` would, without building a tree.

    >>> data = read_xml_bytes("models/pooling_chain.xml")
    >>> read_plain("models/pooling_chain.xml", data) == read_ir("models/pooling_chain.xml")
    True
    """
    head = _PLAIN_HEAD.match(data)
    if head is None or b"\r" in data:  # libxml2 counts a lone \r as a line
        return None
    if b"port_map>" in data:  # a sub-graph op's layers are read from the tree
        return None
    version = int(head.group(2))
    end = data.rfind(b"</layers>")
    tail = _PLAIN_TAIL.match(data, end)
    layers_end = data.rfind(b"\n", 0, end) + 1
    if version not in SUPPORTED_IR_VERSIONS or tail is None or layers_end <= head.end() or \
            data[layers_end:end].strip(b" \t"):  # fmt: skip
        return None
    path = Path(path)
    found = list(_PLAIN_START.finditer(data, head.end(), layers_end))
    starts = [data.rfind(b"\n", 0, m.start()) + 1 for m in found]
    if not starts or starts[0] != head.end():
        return None
    # Whether the file is well-formed by its form; else libxml2 checks it, before any
    # value is read from it.
    checked = _PLAIN_VALUE.fullmatch(head.group(1)) is not None and _xml_characters(data) \
        and all(map(_plain_tag, found))  # fmt: skip
    if not checked and not _well_formed(data):
        return None
    layers = []
    line, pos = data.count(b"\n", 0, head.end()) + 1, head.end()
    for m, start, after in zip(found, starts, [*starts[1:], layers_end], strict=True):
        line += data.count(b"\n", pos, start)
        pos = start
        tag = m.group()
        if data[start : m.start()].strip(b" \t") or b"xmlns" in tag or b"/>" in tag:
            return None  # not alone on its line; names its own namespace; has no body
        body = data[m.end() : after - 1]
        lid = m.group(1)
        read = _BODIES.get(body) if lid is not None else None
        if read is not None:
            name, type_name, op_version = m.group(2, 3, 4)
            if b"&" in tag or b"\t" in tag:
                name, type_name, op_version = map(_attribute, (name, type_name, op_version))
            else:
                name, type_name, op_version = name.decode(), type_name.decode(), op_version.decode()
            lid = str(_layer_id(lid.decode()))
            extra = {k.decode(): _attribute(v) for k, v in _PLAIN_ATTRIBUTE.findall(m.group(5))} \
                if m.group(5) else None  # fmt: skip
            layers.append(_layer_as_read(read, lid, name, type_name, op_version, line,
                                         extra=extra))  # fmt: skip
            continue
        layer = _plain_layer(path, tag + body, body, line)
        if layer is None:
            return None
        layers.append(layer)
        if not checked and body.count(b"<") > _SHALLOW:
            if not _well_formed(data):
                return None
            checked = True
    edges = _plain_edges(data, tail.end(), line + data.count(b"\n", pos, tail.end()))
    if edges is None:
        return None
    edges_list, rest = edges
    rt_info = _plain_rt_info(data[rest:])
    if rt_info is None:
        return None
    if not checked and data.count(b"<", rest) > _SHALLOW and not _well_formed(data):
        return None
    return IRDocument(path, version, _attribute(head.group(1)), layers, edges_list, rt_info)


def _plain_tag(m: re.Match[bytes]) -> bool:
    """Whether the start tag ``m`` (of ``_PLAIN_START``) is well-formed by its form: its
    usual attributes first, then others with plain names, each once, and no reference
    in a value but to the five entities XML defines."""
    tag = m.group()
    if m.group(1) is None or len(tag) > _LONGEST or (b"&" in tag and _ODD_REFERENCE.search(tag)):
        return False
    extra = m.group(5)
    if not extra:
        return True
    names = _PLAIN_EXTRA.findall(extra)
    return len(names) == extra.count(b'="') and len(set(names)) == len(names) and \
        _USUAL.isdisjoint(names)  # fmt: skip


def _well_formed(data: bytes) -> bool:
    """Whether libxml2 parses ``data`` as :func:`parse_xml` does (no tree is built)."""
    try:
        etree.fromstring(data, _parser(_Discard()))
    except (etree.XMLSyntaxError, ValueError):
        return False
    return True


def _xml_characters(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 of characters that XML allows (no C0 control but tab,
    newline and carriage return; no U+FFFE or U+FFFF)."""
    if len(data.translate(None, _CONTROLS)) != len(data):
        return False
    if data.isascii():
        return True
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return False
    return "\ufffe" not in text and "\uffff" not in text


def _plain_layer(path: Path, text: bytes, body: bytes, line: int) -> Layer | None:
    """The layer whose start tag and body are ``text``, its start tag on ``line``, read
    on its own; None unless it is one element that reads without a problem."""
    try:
        el = etree.fromstring(text, _parser())
    except (etree.XMLSyntaxError, ValueError):
        return None
    reader = _Reader(path)
    layer = reader.layer(el) if el.tag == "layer" else None
    if layer is None or reader.problems:
        return None
    if body.count(b"<") <= _SHALLOW:  # else it may be too deep in the file: not kept
        _remember_body(body, layer)
    read = _BODIES.get(body)
    if read is not None:
        return _layer_as_read(read, layer.id, layer.name, layer.type, layer.version, line,
                              extra=layer.extra)  # fmt: skip
    # Not kept (an <rt_info>, a long body): its lines moved from the first to ``line``.
    by = line - 1
    layer.line += by
    layer.data_line += by if layer.data_line else 0
    for port in (*layer.inputs, *layer.outputs):
        port.line += by
    return layer


def _plain_edges(data: bytes, start: int, line: int) -> tuple[list[Edge], int] | None:
    """The <edge/>s from ``start`` (on ``line``), each alone on its line up to
    </edges>, and where the text after </edges> starts; None when they are not so."""
    end = data.find(b"</edges>", start)
    last = data.rfind(b"\n", 0, end) + 1
    if end < 0 or last < start or data[last:end].strip(b" \t"):
        return None
    edges = _edge_lines(data[start:last].decode("latin-1"), line)
    return None if edges is None else (edges, end + len(b"</edges>"))


def _plain_rt_info(rest: bytes) -> dict[str, Any] | None:
    """The <rt_info> of ``rest``, the text after </edges>: nothing or an <rt_info>, then
    </net>; None when it holds anything else."""
    rest = rest.strip()
    if not rest.endswith(b"</net>"):
        return None
    rest = rest[: -len(b"</net>")].strip()
    if not rest:
        return {}
    if not rest.startswith((b"<rt_info>", b"<rt_info ")):  # not a declaration parsed alone
        return None
    try:
        el = etree.fromstring(rest, _parser())
    except (etree.XMLSyntaxError, ValueError):
        return None
    return _rt_info(el) if el.tag == "rt_info" else None


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


def _rt_info(el: etree._Element) -> RtInfo:
    """An ``<rt_info>`` as a dict that keeps the element as written (see :class:`RtInfo`)."""
    return RtInfo(_read_rt_info(el), etree.tostring(el, with_tail=False))


def _read_rt_info(el: etree._Element) -> dict[str, Any]:
    """Keep ``<rt_info>`` as nested dicts: ``<attribute name= value=>`` and v11's free-form tags.

    OpenVINO writes a key that is not an XML name (``OpenVINO Runtime``) as
    ``<info name="OpenVINO Runtime" value=...>``, and reads it back by its name.

    >>> _read_rt_info(etree.fromstring(
    ...     '<rt_info><info name="a b" value="1"/><model_info><x value="2"/></model_info>'
    ...     '</rt_info>'))
    {'a b': '1', 'model_info': {'x': '2'}}
    """
    out: dict[str, Any] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "attribute" or (child.tag == "info" and child.get("name") is not None):
            key = child.get("name")
        else:
            key = child.tag
        if key is None:
            continue
        if len(child):
            out[key] = _read_rt_info(child)
        else:
            out[key] = child.get("value", (child.text or "").strip())
    return out
