"""The structure of an IR file, checked against irrun's XML Schema of IR v10/v11.

OpenVINO publishes no schema for its IR; ``schemas/ir.xsd`` (installed as the package
``irrun.schemas``) is irrun's own, written from OpenVINO's reader and documented in its
header.  :func:`check_structure` validates a parsed document against it with lxml and
turns each of libxml2's findings into a one-line :class:`~irrun.errors.Diagnostic` with
the code ``schema``, the line of the offending element, and the enclosing layer and port.

libxml2's wording is rewritten for people, for instance::

    Element 'port', attribute 'precision': [facet 'enumeration'] The value 'FP33' is
    not an element of the set {'FP32', 'f32', ...}.

becomes ``<port> attribute precision="FP33" is not an element type (expected FP32, f32,
FP16, ...)``.
"""

from __future__ import annotations

import contextlib
import functools
import re
from importlib.resources import files
from pathlib import Path

from lxml import etree

from ..errors import Diagnostic, LayerRef, Location
from . import registry

CODE = "schema"
SCHEMA_PACKAGE = "irrun.schemas"
SCHEMA_FILE = "ir.xsd"

_XS = "{http://www.w3.org/2001/XMLSchema}"

# Elements whose children may come in any order (an xs:all in the schema), by the
# schema component that declares that group: the global element net, or a named type.
_ALL_GROUP_OWNERS = {
    "net": "net",
    "layer": "layer",
    "body": "graph",
    "then_body": "graph",
    "else_body": "graph",
}

_UNSIGNED = "an unsigned integer"
_ATTRIBUTE_KINDS = {
    "id": _UNSIGNED,
    "from-layer": _UNSIGNED,
    "from-port": _UNSIGNED,
    "to-layer": _UNSIGNED,
    "to-port": _UNSIGNED,
    "internal_layer_id": _UNSIGNED,
    "external_port_id": "an integer",
    "axis": "an integer",
    "start": "an integer",
    "end": "an integer",
    "stride": "an integer",
    "part_size": "an integer",
}
_SHOWN_PRECISIONS = 16  # how many of the legal precisions a message lists


class _Schema:
    """The compiled schema, and what messages need to know of it."""

    def __init__(self, xsd: bytes) -> None:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        doc = etree.fromstring(xsd, parser)
        self.xml_schema = etree.XMLSchema(doc)
        self.children = {
            tag: _all_group_children(doc, owner) for tag, owner in _ALL_GROUP_OWNERS.items()
        }
        # Elements of which a parent holds at most one (OpenVINO reads the first).
        self.singletons = frozenset(n for names in self.children.values() for n in names)
        self.precisions = tuple(
            e.get("value", "")
            for e in doc.iterfind(
                f"{_XS}simpleType[@name='precision']/{_XS}restriction/{_XS}enumeration"
            )
        )


def _all_group_children(doc: etree._Element, owner: str) -> tuple[str, ...]:
    """Names of the elements in the xs:all of the global element or named type ``owner``."""
    decl = doc.find(f"{_XS}element[@name='{owner}']/{_XS}complexType")
    if decl is None:
        decl = doc.find(f"{_XS}complexType[@name='{owner}']")
    group = decl.find(f"{_XS}all") if decl is not None else None
    if group is None:
        return ()
    return tuple(e.get("name", "") for e in group.iterfind(f"{_XS}element"))


@functools.cache
def _schema() -> _Schema:
    """Load and compile ``ir.xsd`` once, on first use."""
    return _Schema(_schema_bytes())


def _schema_bytes() -> bytes:
    try:
        return files(SCHEMA_PACKAGE).joinpath(SCHEMA_FILE).read_bytes()
    except ModuleNotFoundError:
        # irrun imported from a source checkout (python -m pytest in the repository, with
        # irrun installed normally): the schema sits beside the package, not inside it.
        return (Path(__file__).resolve().parents[2] / "schemas" / SCHEMA_FILE).read_bytes()


def check_structure(
    root_or_tree: etree._Element | etree._ElementTree, path: str | Path
) -> list[Diagnostic]:
    """Validate a parsed IR document against irrun's schema; one diagnostic per finding.

    ``root_or_tree`` is the document as :func:`irrun.ir.xml_file.parse_xml` returns it (its
    root element) or an element tree; ``path`` names the file in the diagnostics.  An
    empty list means the structure is valid.

    >>> from lxml import etree
    >>> root = etree.fromstring(b'''<net name="m" version="11">
    ...   <layers>
    ...     <layer id="0" name="x" type="Parameter" version="opset1">
    ...       <output><port id="0"><dim>1</dim><dim>-2</dim></port></output>
    ...     </layer>
    ...   </layers>
    ...   <edges><edge from-layer="0" from-port="0" to-layer="one" to-port="0"/></edges>
    ... </net>''')
    >>> for d in check_structure(root, "m.xml"):
    ...     print(d.location.line, d.message)
    4 output <port> is missing the mandatory attribute 'precision'
    4 <dim>-2</dim> is not a dimension (expected an integer >= -1 or a range a..b)
    7 <edge> attribute to-layer="one" is not an unsigned integer
    >>> print(check_structure(root, "m.xml")[1])  # doctest: +NORMALIZE_WHITESPACE
    m.xml:4: error: layer 0 'x' (Parameter-v1) port 0: <dim>-2</dim> is not a dimension
    (expected an integer >= -1 or a range a..b)
    >>> check_structure(etree.parse("models/pooling_chain.xml"), "models/pooling_chain.xml")
    []
    """
    if isinstance(root_or_tree, etree._ElementTree):
        root_or_tree = root_or_tree.getroot()
    root = root_or_tree
    schema = _schema()
    if schema.xml_schema.validate(root):
        return []
    tree = root.getroottree()
    found = []
    for entry in schema.xml_schema.error_log:
        el = _element_at(tree, entry)
        line = (el.sourceline if el is not None else 0) or entry.line or 0
        found.append(
            Diagnostic(
                "error",
                CODE,
                _message(entry.message, el, schema),
                Location(str(path), line),
                _layer_of(el),
                _port_of(el),
            )
        )
    return found


def _element_at(tree: etree._ElementTree, entry: etree._LogEntry) -> etree._Element | None:
    """The element an error is about, by its path in the document (else by its line)."""
    if entry.path:
        with contextlib.suppress(etree.XPathError, ValueError):
            hits = tree.xpath(entry.path)
            if isinstance(hits, list) and len(hits) == 1 and isinstance(hits[0], etree._Element):
                return hits[0]
    if entry.line:
        for el in tree.iter():
            if el.sourceline == entry.line and isinstance(el.tag, str):
                return el
    return None


def _tag(el: etree._Element | None) -> str:
    return etree.QName(el).localname if el is not None and isinstance(el.tag, str) else "?"


def _enclosing(el: etree._Element | None, tag: str) -> etree._Element | None:
    while el is not None:
        if _tag(el) == tag:
            return el
        el = el.getparent()
    return None


def _layer_of(el: etree._Element | None) -> LayerRef | None:
    """The innermost <layer> holding ``el`` (or ``el`` itself), as messages name it."""
    layer = _enclosing(el, "layer")
    if layer is None:
        return None
    type_name, opset = layer.get("type"), layer.get("version")
    version = None
    if type_name and opset:
        with contextlib.suppress(registry.LookupFailure):
            version = registry.resolve(type_name, opset).version
    # Named as irrun.ir.records.Layer.ref names it, so that every finding about it reads alike.
    return LayerRef(layer.get("id", "?"), layer.get("name", "?"), type_name or "?", version,
                    opset or None if version is None else None)  # fmt: skip


def _port_of(el: etree._Element | None) -> int | None:
    """The id of the <port> of an <input>/<output> list holding ``el``, when it is readable."""
    port = _enclosing(el, "port")
    if port is None or _tag(port.getparent()) not in ("input", "output"):
        return None
    text = port.get("id", "").strip()
    return int(text) if text.isdigit() else None


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return f'"{text[:limit]}..."' if len(text) > limit else f'"{text}"'


def _text_in(el: etree._Element) -> str:
    """The first non-blank text directly inside ``el``."""
    pieces = [el.text, *(child.tail for child in el)]
    return next((p for p in pieces if p and p.strip()), "")


_NAMESPACE = re.compile(r"\{[^}]*\}")
_ELEMENT_ATTRIBUTE = re.compile(r"^Element '([^']*)', attribute '([^']*)': (.*)$", re.S)
_ELEMENT = re.compile(r"^Element '([^']*)': (.*)$", re.S)
_EXPECTED = re.compile(r"Expected is (?:one of )?\( ?(.*?) ?\)")
_FACET = re.compile(r"^\[facet [^\]]*\] ")
_REQUIRED = re.compile(r"The attribute '([^']*)' is required but missing")


def _expected(message: str) -> list[str]:
    m = _EXPECTED.search(message)
    return [_NAMESPACE.sub("", n.strip()) for n in m.group(1).split(",")] if m else []


def _message(raw: str, el: etree._Element | None, schema: _Schema) -> str:
    """libxml2's message about ``el``, rewritten as one line for people."""
    raw = " ".join(_NAMESPACE.sub("", raw).split())
    m = _ELEMENT_ATTRIBUTE.match(raw)
    if m:
        return _attribute_message(m.group(1), m.group(2), m.group(3), el, schema)
    m = _ELEMENT.match(raw)
    if not m:
        return raw.rstrip(".")
    tag, detail = m.group(1), m.group(2)
    if "No matching global declaration" in detail:
        namespace = etree.QName(el).namespace if el is not None else None
        if namespace:
            return f"root element <{tag}> is in the namespace '{namespace}', IR uses none"
        return f"root element is <{tag}>, expected <net>"
    m = _REQUIRED.search(detail)
    if m:
        attr = m.group(1)
        where = "output " if _tag(el) == "port" and _tag(el.getparent()) == "output" else ""
        return f"{where}<{tag}> is missing the mandatory attribute '{attr}'"
    if "is not a valid value of" in detail or "[facet" in detail:
        text = (el.text or "").strip() if el is not None else ""
        if tag == "dim":
            return (
                f"<dim>{text}</dim> is not a dimension "
                "(expected an integer >= -1 or a range a..b)"
            )
        return f"<{tag}>{text}</{tag}> is not a valid value"
    if "This element is not expected" in detail:
        return _unexpected_message(tag, detail, el, schema)
    if "Missing child element" in detail:
        if tag in schema.children and el is not None and el.find("layers") is None:
            return f"<{tag}> has no <layers>"
        names = ", ".join(_expected(detail))
        return f"<{tag}> is missing a child element (expected {names})"
    if "Character content other than whitespace" in detail:
        text = _quote(_text_in(el)) if el is not None else "text"
        return f"<{tag}> contains text {text} (only elements are allowed in it)"
    if "Element content is not allowed" in detail:
        child = next((c for c in el if isinstance(c.tag, str)), None) if el is not None else None
        inside = f"<{_tag(child)}>" if child is not None else "elements"
        return f"<{tag}> must be empty, but contains {inside}"
    if "Character content is not allowed" in detail:
        text = _quote(_text_in(el)) if el is not None else "text"
        return f"<{tag}> must be empty, but contains text {text}"
    return f"<{tag}> {detail.rstrip('.')}"


def _attribute_message(
    tag: str, attr: str, detail: str, el: etree._Element | None, schema: _Schema
) -> str:
    value = el.get(attr) if el is not None else None
    if value is None:  # not found by path: take it from libxml2's text
        m = re.search(r"(?:The value |^)'([^']*)'", detail)
        value = m.group(1) if m else "?"
    head = f"<{tag}> attribute {attr}={_quote(value)}"
    if "is not allowed" in detail:
        return f"<{tag}> has an unknown attribute {attr}={_quote(value)}"
    if attr == "precision":
        shown = ", ".join(schema.precisions[:_SHOWN_PRECISIONS])
        more = ", ..." if len(schema.precisions) > _SHOWN_PRECISIONS else ""
        return f"{head} is not an element type (expected {shown}{more})"
    if tag == "net" and attr == "version":
        return f"{head} is not a supported IR version (expected 10 or 11)"
    if "minLength" in detail and not value:
        return f"<{tag}> attribute {attr} is empty"
    kind = _ATTRIBUTE_KINDS.get(attr)
    if kind:
        return f"{head} is not {kind}"
    return f"{head}: {_FACET.sub('', detail).rstrip('.')}"


def _unexpected_message(
    tag: str, detail: str, el: etree._Element | None, schema: _Schema
) -> str:
    parent = el.getparent() if el is not None else None
    ptag = _tag(parent)
    allowed = schema.children.get(ptag, ())
    if tag in schema.singletons and parent is not None:
        earlier = [c for c in parent if c is not el and _tag(c) == tag]
        if earlier and earlier[0].sourceline and earlier[0].sourceline <= (el.sourceline or 0):
            return (
                f"<{ptag}> has a second <{tag}> (first at line {earlier[0].sourceline}); "
                "OpenVINO reads only the first"
            )
    if tag == "dim" and ptag == "port":
        return "<dim> is not allowed here: a port's dims come together, before or after <rt_info>"
    names = _expected(detail) or list(allowed)
    where = f" in <{ptag}>" if parent is not None else ""
    expected = f" (expected {', '.join(names)})" if names else ""
    return f"<{tag}> is not allowed{where}{expected}"
