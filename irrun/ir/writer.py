"""Writing records back to IR v11: an ``.xml`` and its ``.bin``, as OpenVINO lays them out.

:func:`write_ir` writes an :class:`~.records.IRDocument` (what :mod:`.reader` read, or
what surgery made of it).  Everything the reader keeps goes back as it was read: a
layer's ``<data>`` strings in their own spellings, its other start-tag attributes, port
names, ``<rt_info>`` elements as written (see :class:`~.records.RtInfo`), sub-graph
bodies with their port maps and back edges, and every constant's bytes as they lay in
the source ``.bin`` (f16, i8/u8, packed i4/u4/nf4, strings), never decoded.

The ``.bin`` holds the constants' byte ranges in the order they had in the source,
ranges that overlap (constants sharing bytes) kept overlapping, then the bytes of
constants surgery made (:attr:`~.records.Layer.blob`), each distinct content once.  A
document whose constants cover their source ``.bin`` without a gap so gets that file
back byte for byte; one whose layers were removed gets the bytes still used, packed.

Both files are written beside their destinations under temporary names and moved into
place only when both are whole, the ``.bin`` first; should moving the ``.xml`` fail, the
old ``.bin`` is put back.  A failure leaves neither file half-written, nor a new ``.bin``
beside an old ``.xml``.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from lxml import etree

from ..errors import IrrunError, Location
from ..files import mode_for
from .dims import DYNAMIC, Dim
from .element_types import ElementType, from_attribute
from .reader import _read_rt_info
from .records import IRDocument, Layer, MapEntry, Port, RtInfo
from .weights import Weights

# A port's precision as OpenVINO writes it (FP32, I64, BOOL...).
_PRECISION = {
    "f64": "FP64", "f32": "FP32", "f16": "FP16", "bf16": "BF16", "boolean": "BOOL",
}  # fmt: skip
# rt_info attributes OpenVINO reads by name and version; others go by name alone.
_VERSIONED = frozenset((
    "fused_names", "old_api_map_order", "old_api_map_element_type", "decompression",
    "dequantization", "disable_fp16_compression", "keep_const_precision", "preprocessing_attribute",
    "DisablePrecisionConversion",
))  # fmt: skip
_XML_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9_.]*")
_CONSTANT_TYPES = frozenset(("const", "constant"))


def precision(et: ElementType) -> str:
    """A port's ``precision`` for ``et``, as OpenVINO writes it.

    >>> from .element_types import ELEMENT_TYPES
    >>> precision(ELEMENT_TYPES["f16"]), precision(ELEMENT_TYPES["u4"])
    ('FP16', 'U4')
    """
    return _PRECISION.get(et.name, et.name.upper())


def format_port_dim(d: Dim) -> str:
    """A ``<dim>`` as OpenVINO writes it: a number, -1 for a dynamic one, a range as read.

    >>> from .dims import Interval
    >>> format_port_dim(3), format_port_dim(DYNAMIC), format_port_dim(Interval(1, 10))
    ('3', '-1', '1..10')
    """
    return "-1" if d == DYNAMIC else str(d)


def is_constant(layer: Layer) -> bool:
    return layer.type.lower() in _CONSTANT_TYPES


def constants(doc: IRDocument) -> Iterator[Layer]:
    """The Const layers of ``doc`` and of its layers' bodies, at any depth, in file order."""
    for layer in doc.layers:
        if is_constant(layer):
            yield layer
        for body in (layer.bodies or {}).values():
            yield from constants(body)


def source_range(layer: Layer) -> tuple[int, int] | None:
    """``(offset, size)`` of a constant's bytes in its source ``.bin``; None when it has a
    :attr:`~.records.Layer.blob` of its own or no offset and size (an empty constant)."""
    if layer.blob is not None:
        return None
    try:
        return int(layer.data["offset"]), int(layer.data["size"])
    except (KeyError, ValueError):
        return None


class _Layout:
    """Where each constant's bytes go in the new ``.bin`` (see the module's docstring)."""

    def __init__(self, doc: IRDocument) -> None:
        ranges = sorted({r for layer in constants(doc) if (r := source_range(layer))})
        # Overlapping source ranges become one span, copied whole.
        self.spans: list[tuple[int, int, int]] = []  # (source start, source end, new start)
        at = 0
        for start, size in ranges:
            end = start + size
            if self.spans and start < self.spans[-1][1]:
                s, e, new = self.spans[-1]
                if end > e:
                    self.spans[-1] = (s, end, new)
                    at += end - e
                continue
            self.spans.append((start, end, at))
            at += size
        self.blobs: dict[bytes, tuple[int, bytes]] = {}  # digest -> (new offset, bytes)
        for layer in constants(doc):
            if layer.blob is not None and layer.blob:
                digest = hashlib.sha256(layer.blob).digest()
                if digest not in self.blobs:
                    self.blobs[digest] = (at, layer.blob)
                    at += len(layer.blob)
        self.size = at
        self._starts = [s for s, _, _ in self.spans]

    def place(self, layer: Layer) -> tuple[int, int] | None:
        """The constant's new ``(offset, size)``, or None when it has no bytes."""
        if layer.blob is not None:
            if not layer.blob:
                return 0, 0
            return self.blobs[hashlib.sha256(layer.blob).digest()][0], len(layer.blob)
        r = source_range(layer)
        if r is None:
            return None
        i = bisect.bisect_right(self._starts, r[0]) - 1
        start, _, new = self.spans[i]
        return new + r[0] - start, r[1]

    def write(self, out: BinaryIO, weights: Weights | None, path: Path) -> None:
        for start, end, _ in self.spans:
            if weights is None or not weights.exists:
                raise IrrunError(
                    f"cannot save {path.name}: its constants' weights file "
                    f"{weights.path if weights else '(none)'} does not exist",
                    Location(str(path)),
                )  # fmt: skip
            try:
                out.write(weights.raw(start, end - start))
            except ValueError as e:
                raise IrrunError(f"cannot save {path.name}: {e}",
                                 Location(str(weights.path))) from None  # fmt: skip
        for _, blob in self.blobs.values():
            out.write(blob)


def write_ir(doc: IRDocument, xml_path: str | Path, weights: Weights | None = None,
             bin_path: str | Path | None = None) -> tuple[Path, Path]:  # fmt: skip
    """Write ``doc`` as IR v11 to ``xml_path`` and its ``.bin`` (``bin_path``, by default
    beside it with the suffix ``.bin``); return both paths.

    ``weights`` is the source ``.bin`` of the constants that have no
    :attr:`~.records.Layer.blob`.  Raises :class:`IrrunError` when a constant's bytes
    cannot be read or a file cannot be written; neither file is then changed.
    """
    xml_path = Path(xml_path)
    bin_path = Path(bin_path) if bin_path is not None else xml_path.with_suffix(".bin")
    layout = _Layout(doc)
    root = _net(doc, layout)
    etree.indent(root, space="\t")
    text = b'<?xml version="1.0"?>\n' + etree.tostring(root, encoding="utf-8") + b"\n"
    with _pair(xml_path, bin_path) as (xml_out, bin_out):
        layout.write(bin_out, weights, xml_path)
        xml_out.write(text)
    return xml_path, bin_path


@contextlib.contextmanager
def _pair(xml_path: Path, bin_path: Path) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Two files written under temporary names beside their destinations, moved into
    place (the ``.bin`` first) only when the block ends without an exception."""
    made: list[str] = []
    try:
        files = []
        for path in (xml_path, bin_path):
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            made.append(tmp)
            files.append(os.fdopen(fd, "wb"))
        try:
            yield files[0], files[1]
        finally:
            for f in files:
                f.close()
        for tmp, path in zip(made, (xml_path, bin_path), strict=True):
            os.chmod(tmp, mode_for(path))
        # The old .bin stays reachable until the new .xml is in place, so that a failure
        # between the two moves puts it back rather than pair the old .xml with a new .bin.
        backup = None
        if bin_path.exists():
            backup = f"{made[1]}.old"
            try:
                os.link(bin_path, backup)
            except OSError:
                backup = None
        os.replace(made[1], bin_path)
        try:
            os.replace(made[0], xml_path)
        except OSError:
            if backup is not None:
                os.replace(backup, bin_path)
            raise
        finally:
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)
        made.clear()
    except OSError as e:
        raise IrrunError(f"cannot write {xml_path.name}: {e.strerror or e}",
                         Location(str(xml_path))) from None  # fmt: skip
    finally:
        for tmp in made:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _net(doc: IRDocument, layout: _Layout) -> etree._Element:
    net = etree.Element("net", name=doc.name, version="11")
    if doc.ir_version == 10:
        doc = _v10_names(doc)
    _graph(net, doc, layout)
    if doc.rt_info:
        net.append(_rt_element(doc.rt_info, model=True))
    return net


def _v10_names(doc: IRDocument) -> IRDocument:
    """``doc`` with the names OpenVINO gives a v10 model's outputs written out for v11.

    OpenVINO names the tensor a Result of IR v10 takes after the layer making it as
    well (``head_pool``, or ``head_pool.1`` for its second output when it has several);
    v11 names tensors by their ports' names alone, so these go into the port's names.
    """
    layers = {layer.id: layer for layer in doc.layers}
    renamed: dict[tuple[str, int], tuple[str, ...]] = {}
    results: dict[str, str] = {}  # Result id -> its output_names
    for e in doc.edges:
        producer, consumer = layers.get(e.from_layer or ""), layers.get(e.to_layer or "")
        if producer is None or consumer is None or consumer.type.lower() != "result":
            continue
        index = next((i for i, p in enumerate(producer.outputs) if p.id == e.from_port), None)
        if index is None:
            continue
        port = producer.outputs[index]
        legacy = producer.name if len(producer.outputs) == 1 else f"{producer.name}.{index}"
        names = renamed.get((producer.id, port.id), port.names)
        if legacy not in names:
            renamed[(producer.id, port.id)] = (*names, legacy)
        # OpenVINO 2025 and later name a Result's tensor by its output_names, when it has them.
        listed = consumer.extra.get("output_names")
        if listed is not None and legacy not in listed.split(","):
            results[consumer.id] = f"{listed},{_escaped(legacy)}" if listed else _escaped(legacy)
    if not renamed and not results:
        return doc
    new_layers = []
    for layer in doc.layers:
        if layer.id in results:
            layer = dataclasses.replace(layer, extra={**layer.extra,
                                                      "output_names": results[layer.id]})
        if any(lid == layer.id for lid, _ in renamed):
            layer = dataclasses.replace(layer, outputs=[
                dataclasses.replace(p, names=renamed.get((layer.id, p.id), p.names))
                for p in layer.outputs
            ])  # fmt: skip
        new_layers.append(layer)
    return dataclasses.replace(doc, layers=new_layers)


def _graph(parent: etree._Element, doc: IRDocument, layout: _Layout) -> None:
    layers = etree.SubElement(parent, "layers")
    for layer in doc.layers:
        layers.append(_layer(layer, layout))
    edges = etree.SubElement(parent, "edges")
    for e in doc.edges:
        etree.SubElement(edges, "edge", {
            "from-layer": str(e.from_layer), "from-port": str(e.from_port),
            "to-layer": str(e.to_layer), "to-port": str(e.to_port),
        })  # fmt: skip


def _layer(layer: Layer, layout: _Layout) -> etree._Element:
    el = etree.Element("layer", id=layer.id, name=layer.name, type=layer.type,
                       version=layer.version)  # fmt: skip
    for key, value in layer.extra.items():
        el.set(key, value)
    data = dict(layer.data)
    if is_constant(layer):
        placed = layout.place(layer)
        if placed is not None:
            data["offset"], data["size"] = str(placed[0]), str(placed[1])
    if data or layer.data_line:
        etree.SubElement(el, "data", data)
    if layer.rt_info:
        el.append(_rt_element(layer.rt_info))
    for tag, ports in (("input", layer.inputs), ("output", layer.outputs)):
        if ports:
            group = etree.SubElement(el, tag)
            for port in ports:
                group.append(_port(port))
    for tag, entries in (layer.port_maps or {}).items():
        group = etree.SubElement(el, tag)
        for entry in entries:
            _map_entry(group, entry)
    for tag, body in (layer.bodies or {}).items():
        _graph(etree.SubElement(el, tag), body, layout)
    return el


def _map_entry(group: etree._Element, entry: MapEntry) -> None:
    etree.SubElement(group, entry.tag, entry.attributes)


def _port(port: Port) -> etree._Element:
    el = etree.Element("port", id=str(port.id))
    if port.precision is not None:
        el.set("precision", precision(port.precision))
    if port.names:
        el.set("names", ",".join(map(_escaped, port.names)))
    for d in port.dims or ():
        etree.SubElement(el, "dim").text = format_port_dim(d)
    if port.rt_info:
        el.append(_rt_element(port.rt_info))
    return el


def _escaped(name: str) -> str:
    """A tensor name in a list of names: a comma, and the backslash, after a backslash."""
    return name.replace("\\", "\\\\").replace(",", "\\,")


def _rt_element(rt: dict[str, Any], model: bool = False) -> etree._Element:
    """``<rt_info>`` for ``rt``: the element it was read from while the dict still says
    what that element says, else one made from the dict."""
    if isinstance(rt, RtInfo) and rt.xml is not None:
        el = etree.fromstring(rt.xml)
        if _read_rt_info(el) == rt:
            return el
    el = etree.Element("rt_info")
    _rt_items(el, rt, model)
    return el


def _rt_items(parent: etree._Element, rt: dict[str, Any], model: bool) -> None:
    for key, value in rt.items():
        if isinstance(value, dict):
            child = etree.SubElement(parent, key if _XML_NAME.fullmatch(key) else "info")
            if child.tag == "info":
                child.set("name", key)
            _rt_items(child, value, model)
        elif model:
            if _XML_NAME.fullmatch(key):
                etree.SubElement(parent, key, value=str(value))
            else:
                etree.SubElement(parent, "info", name=key, value=str(value))
        else:
            child = etree.SubElement(parent, "attribute", name=key)
            if key in _VERSIONED:
                child.set("version", "0")
            child.set("value", str(value))


def constant_bytes(layer: Layer, weights: Weights | None) -> bytes:
    """A constant's bytes as they lie in a ``.bin``: its blob, or its source range."""
    if layer.blob is not None:
        return layer.blob
    r = source_range(layer)
    if r is None or weights is None:
        return b""
    return weights.raw(*r).tobytes()


def constant_type(layer: Layer) -> ElementType:
    return from_attribute(layer.data.get("element_type", ""))
