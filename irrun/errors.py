"""Errors and diagnostics, each pinned to a place in the IR file.

Every problem irrun reports names where it comes from: the file, the line of
the XML element, and the layer (id, name, type and version).  One line, no
traceback: that is what a user of a command-line tool can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class LayerRef:
    """Identity of a layer as it appears in the IR, for messages."""

    id: str
    name: str
    type: str
    version: int | None = None  # the op's own version, once resolved

    def __str__(self) -> str:
        typever = self.type if self.version is None else f"{self.type}-v{self.version}"
        return f"layer {self.id} '{self.name}' ({typever})"


@dataclass(frozen=True)
class Location:
    """A file and a line in it (line 0 when unknown)."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def _prefix(location: Location | None, layer: LayerRef | None, port: int | None) -> str:
    parts = []
    if location is not None:
        parts.append(f"{location}:")
    if layer is not None:
        parts.append(str(layer) + (f" port {port}:" if port is not None else ":"))
    return " ".join(parts)


class IrrunError(Exception):
    """A problem with a model or its inputs, reported as one line.

    >>> pool = LayerRef("3", "pool", "MaxPool", 8)
    >>> str(IrrunError("kernel is required", Location("m.xml", 7), pool))
    "m.xml:7: layer 3 'pool' (MaxPool-v8): kernel is required"
    """

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        layer: LayerRef | None = None,
        port: int | None = None,
    ) -> None:
        self.message = message
        self.location = location
        self.layer = layer
        self.port = port
        super().__init__(self.__str__())

    def __str__(self) -> str:
        prefix = _prefix(self.location, self.layer, self.port)
        return f"{prefix} {self.message}" if prefix else self.message

    def with_context(
        self, location: Location | None = None, layer: LayerRef | None = None
    ) -> IrrunError:
        """Fill in the location and layer where the raiser did not know them."""
        return IrrunError(
            self.message,
            self.location or location,
            self.layer or layer,
            self.port,
        )


class UsageError(IrrunError):
    """Command-line misuse (exit code 2)."""


@dataclass(frozen=True)
class Diagnostic:
    """One finding of the checker.

    ``code`` is a short stable identifier (``shape-mismatch``, ``bad-attribute``...)
    that scripts can match on; ``message`` is for people.
    """

    level: Literal["error", "warning"]
    code: str
    message: str
    location: Location | None = None
    layer: LayerRef | None = None
    port: int | None = None
    expected: Any = None
    actual: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        prefix = _prefix(self.location, self.layer, self.port)
        return f"{prefix} {self.message}" if prefix else self.message

    @classmethod
    def from_error(cls, err: IrrunError, code: str) -> Diagnostic:
        return cls("error", code, err.message, err.location, err.layer, err.port)
