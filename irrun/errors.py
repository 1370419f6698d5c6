"""Errors and diagnostics, each pinned to a place in the IR file.

Every problem irrun reports names where it comes from: the file, the line of
the XML element, and the layer (id, name, type and version).  One line, no
traceback: that is what a user of a command-line tool can act on.

The exceptions form one tree under :class:`IrrunException`::

    IrrunException
    ├── IrrunError          a problem with a model or its inputs, located (public)
    │   ├── UsageError      misuse of the command line or of an API argument (exit 2)
    │   ├── MissingFile     a file that is not there (also a FileNotFoundError)
    │   └── InternalError   a bug in irrun, never the model's fault
    ├── OpError             an op rejects what it was given (also a ValueError)
    │   ├── ShapeError      ... by its shape rule
    │   ├── AttrError       ... by its attributes
    │   └── KernelError     ... by its kernel, on the data at run time
    └── LookupFailure       no op for a layer's type and opset (also a LookupError)

The stages that call ops (binding, propagation, the executor) turn an
:class:`OpError` into an :class:`IrrunError` naming the layer; any other exception
from an op is an :class:`InternalError`.
"""

from __future__ import annotations

import copy
import errno
from dataclasses import dataclass, field
from typing import Any, Literal

from .frozen import fast_init


@fast_init  # one per layer
@dataclass(frozen=True)
class LayerRef:
    """Identity of a layer as it appears in the IR, for messages."""

    id: str
    name: str
    type: str
    version: int | None = None  # the op's own version, once resolved
    opset: str | None = None  # as written, shown while the op is unresolved

    def __str__(self) -> str:
        if self.version is not None:
            typever = f"{self.type}-v{self.version}"
        elif self.opset:
            # An op irrun cannot resolve is still named by what the file says it is.
            typever = f"{self.type}, {self.opset}"
        else:
            typever = self.type
        return f"layer {self.id} '{self.name}' ({typever})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "type": self.type,
            "version": self.version, "opset": self.opset,
        }  # fmt: skip


@fast_init
@dataclass(frozen=True)
class Location:
    """A file and a line in it (line 0 when unknown)."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def one_line(text: str) -> str:
    """``text`` with line breaks escaped: a layer's name or an attribute's value may hold
    them (written ``&#10;`` in the XML), and a finding must stay one line.

    >>> one_line('attribute "3\\n3"')
    'attribute "3\\\\n3"'
    """
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _prefix(location: Location | None, layer: LayerRef | None, port: int | None) -> str:
    parts = []
    if location is not None:
        parts.append(f"{location}:")
    if layer is not None:
        parts.append(str(layer) + (f" port {port}:" if port is not None else ":"))
    return " ".join(parts)


class IrrunException(Exception):
    """The root of every exception irrun raises on purpose."""


class IrrunError(IrrunException):
    """A problem with a model or its inputs, reported as one line.

    ``code`` is a short stable identifier of the kind of problem, for scripts: the code
    of the checker's finding (see :class:`Diagnostic`) where the error is one, else the
    class's own (``error`` when nothing finer is known).

    >>> pool = LayerRef("3", "pool", "MaxPool", 8)
    >>> err = IrrunError("kernel is required", Location("m.xml", 7), pool)
    >>> str(err), err.code
    ("m.xml:7: layer 3 'pool' (MaxPool-v8): kernel is required", 'error')
    """

    default_code = "error"

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        layer: LayerRef | None = None,
        port: int | None = None,
        code: str | None = None,
    ) -> None:
        self.message = message
        self.location = location
        self.layer = layer
        self.port = port
        self.code: str = code or self.default_code  # what kind of problem, for scripts
        super().__init__(self.__str__())

    def __str__(self) -> str:
        prefix = _prefix(self.location, self.layer, self.port)
        return one_line(f"{prefix} {self.message}" if prefix else self.message)

    def with_context(
        self, location: Location | None = None, layer: LayerRef | None = None
    ) -> IrrunError:
        """Fill in the location and layer where the raiser did not know them; the copy
        is of the same class (a :class:`UsageError` stays one)."""
        err = copy.copy(self)
        err.location = self.location or location
        err.layer = self.layer or layer
        err.args = (err.__str__(),)
        return err


class UsageError(IrrunError):
    """A malformed argument rather than a bad file: command-line misuse (exit code 2),
    or in Python a bad ``shapes``, tolerance or option value.

    >>> issubclass(UsageError, IrrunError), UsageError("bad --shape").code
    (True, 'usage')
    """

    default_code = "usage"


class MissingFile(IrrunError, FileNotFoundError):
    """A file that is not there: the model's ``.xml`` or ``.bin``, or an input file.
    Also a :class:`FileNotFoundError`, as ``open`` would raise, with its ``filename``
    (the location's file unless given: a missing ``.bin`` is reported where the
    ``.xml`` needs it).

    >>> err = MissingFile("no such file", Location("net.xml"))
    >>> isinstance(err, FileNotFoundError), err.filename, err.code, str(err)
    (True, 'net.xml', 'missing-file', 'net.xml: no such file')
    """

    default_code = "missing-file"

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        layer: LayerRef | None = None,
        port: int | None = None,
        code: str | None = None,
        filename: str | None = None,
    ) -> None:
        super().__init__(message, location, layer, port, code)
        self.errno = errno.ENOENT  # what OSError's constructor would have set
        self._filename = filename

    @property  # type: ignore[override]
    def filename(self) -> str | None:
        if self._filename is not None:
            return self._filename
        return self.location.file if self.location is not None else None

    @property  # type: ignore[override]
    def strerror(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # OSError's own would rebuild it from its text alone, losing the location.
        return (type(self), (self.message, self.location, self.layer, self.port, self.code,
                             self._filename))  # fmt: skip


class InternalError(IrrunError):
    """A bug in irrun, caught where it surfaced: the message names the layer that was
    running and the exception, and says whose fault it is (``--debug`` shows the
    traceback; the command line prints it as ``irrun: internal error: ...``).

    >>> err = InternalError.wrap(TypeError("bad operand"), Location("m.xml", 7),
    ...                          LayerRef("3", "clip", "Clamp", 1))
    >>> print(err)  # doctest: +NORMALIZE_WHITESPACE
    m.xml:7: layer 3 'clip' (Clamp-v1): TypeError: bad operand (a bug in irrun,
    not in the model: please report it; --debug shows the traceback)
    """

    default_code = "internal-error"

    @classmethod
    def wrap(
        cls, exc: BaseException, location: Location | None = None, layer: LayerRef | None = None
    ) -> InternalError:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return cls(
            f"{text} (a bug in irrun, not in the model: please report it; "
            "--debug shows the traceback)",
            location,
            layer,
        )


class OpError(IrrunException, ValueError):
    """An op rejects its attributes, input shapes or input values; the message names the
    values that broke it, and the caller adds the layer."""


class ShapeError(OpError):
    """A shape rule rejects its inputs; the message names the values that broke it."""


class AttrError(OpError):
    """A ``<data>`` attribute is missing or has a value OpenVINO would not accept."""

    def __init__(self, attr: str, message: str) -> None:
        self.attr = attr
        super().__init__(message)


class KernelError(OpError):
    """A kernel rejects the values it was given at run time (an index out of range, a
    shape read from a tensor that does not fit): the model's data, not irrun, is wrong."""


class LookupFailure(IrrunException, LookupError):
    """No op for a layer's type and opset; ``unsupported`` when OpenVINO has one irrun lacks."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


# "info" is what a converter normally writes (a multi-output op's port nothing reads):
# shown with ``validate -v``, never failing ``--strict``.
Level = Literal["error", "warning", "info"]


@fast_init  # a big model has thousands of warnings
@dataclass(frozen=True)
class Diagnostic:
    """One finding of the checker.

    ``level`` is ``error`` (OpenVINO refuses the file or runs it wrongly, or irrun cannot
    run it), ``warning`` (likely a mistake, though the model runs) or ``info`` (what
    converters normally write, such as an index output nothing reads).  ``code`` is a
    short stable identifier (``shape-mismatch``, ``bad-attribute``...) that scripts can
    match on; ``message`` is for people.  ``expected`` and ``actual`` hold the values
    compared, where there are two (shapes, types, byte counts).

    >>> d = Diagnostic("warning", "unknown-attribute", "unknown attribute 'colour' is ignored",
    ...                Location("m.xml", 7), LayerRef("3", "pool", "MaxPool", 8))
    >>> print(d)
    m.xml:7: warning: layer 3 'pool' (MaxPool-v8): unknown attribute 'colour' is ignored
    """

    level: Level
    code: str
    message: str
    location: Location | None = None
    layer: LayerRef | None = None
    port: int | None = None
    expected: Any = None
    actual: Any = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        """``FILE:LINE: LEVEL: layer ID 'NAME' (Type-vN) port P: message``."""
        where = f"{self.location}: " if self.location is not None else ""
        about = _prefix(None, self.layer, self.port)
        return one_line(f"{where}{self.level}: {about + ' ' if about else ''}{self.message}")

    @property
    def line(self) -> int:
        return self.location.line if self.location is not None else 0

    def as_error(self) -> IrrunError:
        """The error ``load`` raises for this finding."""
        return IrrunError(self.message, self.location, self.layer, self.port, self.code)

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data (``irrun validate --json``)."""
        return {
            "level": self.level,
            "code": self.code,
            "file": self.location.file if self.location is not None else None,
            "line": self.line or None,
            "layer": self.layer.as_dict() if self.layer is not None else None,
            "port": self.port,
            "message": self.message,
            "expected": _jsonable(self.expected),
            "actual": _jsonable(self.actual),
        }

    @classmethod
    def from_error(cls, err: IrrunError, code: str | None = None) -> Diagnostic:
        # ``code`` names what the caller knows for an error that came without its own.
        known = err.code if err.code != IrrunError.default_code else (code or err.code)
        return cls("error", known, err.message, err.location, err.layer, err.port)


def _jsonable(value: Any) -> Any:
    """Plain JSON values: tuples become lists, anything else unknown becomes its text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)
