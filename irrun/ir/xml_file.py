"""An IR's .xml file: read within bounds, parsed safely, and told apart from what is not IR.

The parser is locked down: no entity expansion, no DTD, no network.  An IR
file never needs any of them, so a document type declaration is refused.
Memory is bounded by refusing files above a size limit (:func:`max_xml_bytes`),
and libxml2 refuses elements nested more than 256 deep.  A file that is not IR
(ONNX, a TensorFlow graph, a PyTorch checkpoint...) is named as what it is, with
the command that makes an IR of it (:func:`not_ir`).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from lxml import etree

from ..errors import IrrunError, Location, UsageError


def _parser(target: object = None) -> etree.XMLParser:
    """The locked-down parser; with a ``target``, libxml2 hands it the parse, not a tree."""
    return etree.XMLParser(
        target=target,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
        huge_tree=False,
        # Whitespace between elements is never read (libxml2 keeps blank text that is an
        # element's only content), and IR has no xml:id: fewer nodes to build and free.
        remove_blank_text=True,
        collect_ids=False,
    )


# Files above this size are refused: parsing holds the whole tree in memory, about
# fifteen times the file's size.  IRRUN_MAX_XML_MB overrides it.
DEFAULT_MAX_XML_MB = 64

_DOCTYPE_REFUSED = "document type declarations (<!DOCTYPE>, entities) are not allowed in IR files"


def max_xml_bytes() -> int:
    """The largest .xml irrun reads, in bytes: IRRUN_MAX_XML_MB megabytes, else 64 MB."""
    text = os.environ.get("IRRUN_MAX_XML_MB", "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_MAX_XML_MB
    except ValueError:
        megabytes = -1.0
    if not megabytes > 0:  # NaN too
        raise UsageError(f"IRRUN_MAX_XML_MB={text!r} is not a number of megabytes above 0")
    return int(megabytes * 1_000_000)


def _read_bounded(path: Path, loc: Location) -> bytes:
    """The file's bytes, refusing more than :func:`max_xml_bytes` without reading them."""
    limit = max_xml_bytes()
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            # A regular file's size is known; a pipe or device is read only up to the limit.
            data = b"" if size > limit else f.read(limit + 1)
    except FileNotFoundError:
        raise IrrunError("no such file", loc, code="unreadable") from None
    except IsADirectoryError:
        raise IrrunError("is a directory, expected an IR .xml file", loc,
                         code="unreadable") from None  # fmt: skip
    except OSError as exc:
        raise IrrunError(f"cannot read: {exc.strerror or exc}", loc, code="unreadable") from None
    if size > limit or len(data) > limit:
        foreign = not_ir(path, data[:64] or _head(path))
        if foreign is not None:  # an ONNX file is often larger than any .xml: say what it is
            raise foreign
        shown = f"{size / 1e6:.1f} MB" if size > limit else f"more than {limit / 1e6:g} MB"
        raise IrrunError(
            f"the file is {shown}, larger than irrun reads ({limit / 1e6:g} MB; set "
            "IRRUN_MAX_XML_MB to change the limit)", loc, code="too-large",
        )  # fmt: skip
    return data


def read_xml_bytes(path: str | Path) -> bytes:
    """The bytes of ``path``, refusing a file above :func:`max_xml_bytes` unread."""
    path = Path(path)
    return _read_bounded(path, Location(str(path)))


def parse_xml(path: str | Path, data: bytes | None = None) -> etree._Element:
    """Parse ``path`` (or ``data``, its bytes) with the locked-down parser into its root.

    Raises :class:`IrrunError` (with the line) for a missing, empty, binary, too large or
    malformed file, or one with a document type declaration; the root is not checked to
    be <net>.

    >>> parse_xml("models/pooling_chain.xml").tag
    'net'
    """
    path = Path(path)
    loc = Location(str(path))
    if data is None:
        data = _read_bounded(path, loc)
    if not data.strip():
        raise IrrunError("the file is empty, expected an OpenVINO IR <net> document", loc,
                         code="unreadable")  # fmt: skip
    foreign = not_ir(path, data)
    if foreign is not None:
        raise foreign
    if _looks_binary(data):
        raise IrrunError("binary data, not an IR .xml file", loc, code="unreadable")
    doctype_line = _doctype_line(data)
    if doctype_line:
        # Refused before libxml2 sees it: libxml2 expands entities in attribute values
        # even with resolve_entities=False, so a billion-laughs <net name="&lol9;"> would
        # be expanded up to its amplification limit.
        raise IrrunError(_DOCTYPE_REFUSED, Location(str(path), doctype_line), code="doctype")
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno or 0, 0)
        # lxml appends ", line L, column C" to libxml2's message; the location says it already.
        msg = " ".join((exc.msg if hasattr(exc, "msg") else str(exc)).split())
        msg = _LXML_POSITION.sub("", msg)
        depth = _EXCESSIVE_DEPTH.match(msg)
        if depth:  # libxml2's advice to turn on XML_PARSE_HUGE is not the user's to take
            msg = f"elements are nested more than {depth.group(1)} deep"
        col = f" (column {column})" if column else ""
        raise IrrunError(f"malformed XML: {msg}{col}", Location(str(path), line),
                         code="malformed-xml") from None  # fmt: skip
    except ValueError as exc:  # lxml refuses some inputs before libxml2 parses them
        raise IrrunError(f"malformed XML: {exc}", loc, code="malformed-xml") from None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise IrrunError(_DOCTYPE_REFUSED, loc, code="doctype")
    return root


# Files people pass for an IR: what each is, and how to make an IR of it ("ovc": OpenVINO's
# converter reads the file itself).
_FOREIGN_SUFFIXES = {
    ".onnx": ("an ONNX model", "ovc"),
    ".pb": ("a TensorFlow model", "ovc"),
    ".pbtxt": ("a TensorFlow model", "ovc"),
    ".tflite": ("a TensorFlow Lite model", "ovc"),
    ".pdmodel": ("a PaddlePaddle model", "ovc"),
    ".pdiparams": ("PaddlePaddle weights", "convert the .pdmodel beside them with ovc"),
    ".pt": ("a PyTorch file", "torch"),
    ".pth": ("a PyTorch file", "torch"),
    ".h5": ("a Keras model", "keras"),
    ".keras": ("a Keras model", "keras"),
    ".blob": ("a compiled OpenVINO blob", "pass the IR it was compiled from"),
}

# ONNX is protobuf, and every exporter writes ModelProto's ir_version (field 1, a varint)
# first, then another field: a producer name, the graph, the opsets...
_ONNX_SECOND_TAGS = frozenset(b"\x12\x1a\x22\x28\x32\x3a\x42\x72")


def not_ir(path: str | Path, data: bytes) -> IrrunError | None:
    """The error for a file that is not an IR .xml but another model format, or None.

    ``data`` is the file's start.  The content decides, so that an IR under any name is
    read; the extension names the format of a file that is not XML.

    >>> print(not_ir("model.onnx", b"\x08\x08\x12\x07pytorch"))  # doctest: +ELLIPSIS
    model.onnx: an ONNX model, not OpenVINO IR: irrun reads IR (.xml + .bin); convert it ...
    >>> not_ir("model.onnx", b"<?xml version='1.0'?><net/>") is None
    True
    """
    path = Path(path)
    head = data[:256].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<") or _wide_encoding(data) is not None:
        return None  # XML: whatever its name, it is read as an IR
    suffix = path.suffix.lower()
    xml = path.with_suffix(".xml")
    if suffix == ".bin":
        named = str(xml) if xml.is_file() else "the .xml"
        return IrrunError(
            f"binary data, not an IR .xml file (the weights file? pass {named}: irrun reads "
            "IR as the .xml with its .bin beside it)", Location(str(path)), code="not-ir",
        )  # fmt: skip
    what, how = _FOREIGN_SUFFIXES.get(suffix, (None, ""))
    if head[4:8] == b"TFL3":
        what, how = "a TensorFlow Lite model", "ovc"
    elif head.startswith(b"\x89HDF\r\n\x1a\n"):
        what, how = "an HDF5 file (a Keras model?)", "keras"
    elif what is None and len(head) >= 3 and head[0] == 0x08 and 1 <= head[1] <= 32 \
            and head[2] in _ONNX_SECOND_TAGS:
        # Other protobufs can start so too (a TensorFlow saved_model.pb does): the
        # extension, where it names a format, decides first.
        what, how = "an ONNX model", "ovc"
    if what is None:
        return None
    source = path
    if path.name == "saved_model.pb":  # ovc reads a SavedModel as its directory
        source, xml = path.parent, path.parent.with_suffix(".xml")
    if how == "ovc":
        how = (f"convert it with OpenVINO's converter: ovc {shlex.quote(str(source))}, or in "
               f'Python ov.save_model(ov.convert_model("{source}"), "{xml.name}")')  # fmt: skip
    elif how in ("torch", "keras"):
        module = "module" if how == "torch" else "keras_model"
        extra = ", example_input=..." if how == "torch" else ""
        how = (f"load the {'module' if how == 'torch' else 'model'} and convert it in Python: "
               f'ov.save_model(ov.convert_model({module}{extra}), "{xml.name}")')  # fmt: skip
    return IrrunError(f"{what}, not OpenVINO IR: irrun reads IR (.xml + .bin); {how}",
                      Location(str(path)), code="not-ir")  # fmt: skip


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(64)
    except OSError:
        return b""


_LXML_POSITION = re.compile(r", line \d+, column \d+$")

_EXCESSIVE_DEPTH = re.compile(r"Excessive depth in document: (\d+)")

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
