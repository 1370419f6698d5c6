"""Declaring and parsing ``<data>`` attributes the way OpenVINO's IR reader does.

An op declares each attribute once with :class:`Attr`: its IR spelling, kind,
default and allowed values.  :func:`parse_attributes` turns a layer's ``<data>``
strings into Python values, raising :class:`AttrError` for values OpenVINO
would reject and returning a warning where OpenVINO silently falls back to a
default (an unparsable boolean keeps the default, as OpenVINO does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import AttrError as AttrError  # re-exported for the ops' checks
from ..errors import Level
from . import element_types
from .dims import parse_partial_shape


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

KINDS = ("ints", "int", "float", "floats", "bool", "enum", "element_type", "partial_shape", "str")


@dataclass(frozen=True)
class Attr:
    """One attribute of an op, as spelled in the IR.

    ``name`` is the Python name kernels receive (``exclude-pad`` becomes
    ``exclude_pad``); ``choices`` lists the lower-case values of an enum.
    """

    ir_name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TypeError(f"unknown attribute kind {self.kind!r}")

    @property
    def name(self) -> str:
        return self.ir_name.replace("-", "_")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def describe(self) -> str:
        """What a valid value looks like, for error messages."""
        if self.kind == "enum":
            return "one of " + ", ".join(self.choices)
        return {
            "ints": "a comma-separated list of integers",
            "int": "an integer",
            "float": "a number such as 0.5, 1e-05 or inf",
            "floats": "a comma-separated list of numbers",
            "bool": "true, false, 1 or 0",
            "element_type": "an element type such as f32 or i64",
            "partial_shape": "a shape such as 1,3,?,224",
            "str": "a string",
        }[self.kind]

    def parse(self, text: str) -> Any:
        """Parse ``text``; raises ValueError when OpenVINO would reject it."""
        if self.kind == "ints":
            return parse_int_list(text)
        if self.kind == "int":
            # int() also reads "1_0" and other scripts' digits ("٣"); OpenVINO does not.
            if not _INT.fullmatch(text.strip()):
                raise ValueError(f"'{text}' is not an integer")
            return _in_range(int(text), text.strip())
        if self.kind == "float":
            # float() also reads "1_0" and other scripts' digits; OpenVINO's stream parsing
            # does not.
            if "_" in text or not text.isascii():
                raise ValueError(f"'{text}' is not a number")
            return float(text)
        if self.kind == "floats":
            return parse_float_list(text)
        if self.kind == "bool":
            return parse_bool(text)
        if self.kind == "enum":
            # OpenVINO matches enum names without regard to case but does not trim them.
            value = text.lower()
            if value not in self.choices:
                raise ValueError(f"'{text}' is not {self.describe()}")
            return value
        if self.kind == "element_type":
            return element_types.from_attribute(text)
        if self.kind == "partial_shape":
            return parse_partial_shape(text)
        return text


def parse_int_list(text: str) -> tuple[int, ...]:
    """Parse ``"2, 2"``: commas separate, spaces around a number are allowed, and so is
    one trailing comma; an empty or blank field is an error, as in OpenVINO.

    OpenVINO also reads a numeric prefix (``"1.7"`` as 1, ``"2abc"`` as 2); irrun
    refuses those, since such a value is a mistake in the file.

    >>> parse_int_list(" 2 , 3,"), parse_int_list("")
    ((2, 3), ())
    """
    if text == "":
        return ()
    fields = text.split(",")
    if len(fields) > 1 and fields[-1] == "":
        fields.pop()
    out = []
    for f in fields:
        field = f.strip()
        if not _INT.fullmatch(field):
            raise ValueError(f"'{field}' is not an integer" if field else "an empty field")
        out.append(_in_range(int(f), field))
    return tuple(out)


def parse_float_list(text: str) -> tuple[float, ...]:
    """Parse ``"0.1,0.2"`` as :func:`parse_int_list` parses integers (a float each, as
    the kind "float" reads one).

    >>> parse_float_list("0.1, 2,"), parse_float_list("")
    ((0.1, 2.0), ())
    """
    if text == "":
        return ()
    fields = text.split(",")
    if len(fields) > 1 and fields[-1] == "":
        fields.pop()
    out = []
    for f in fields:
        field = f.strip()
        if not field or "_" in field or not field.isascii():
            raise ValueError(f"'{field}' is not a number" if field else "an empty field")
        out.append(float(field))
    return tuple(out)


_INT = re.compile(r"-?[0-9]+")
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _in_range(value: int, text: str) -> int:
    """``value``, if it fits the 64-bit integers OpenVINO reads every attribute into."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"'{text}' is out of range (not a 64-bit integer)")
    return value


def parse_bool(text: str) -> bool:
    t = text.lower()
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise ValueError(f"'{text}' is not true, false, 1 or 0")


@dataclass(frozen=True)
class ParsedAttributes:
    values: dict[str, Any]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class AttrFinding:
    """One problem with a layer's ``<data>``, for the checker.

    ``code`` is ``missing-attribute`` or ``bad-attribute`` (errors: OpenVINO refuses
    the layer), ``lenient-attribute`` or ``unknown-attribute`` (warnings: OpenVINO
    ignores the value), or ``absent-attribute`` (a warning: OpenVINO uses its default).
    """

    level: Level
    code: str
    attr: str
    message: str
    expected: Any = None
    actual: Any = None


def read_attributes(
    attrs: tuple[Attr, ...], data: Mapping[str, str]
) -> tuple[dict[str, Any], list[AttrFinding]]:
    """Parse a layer's ``<data>``, collecting a finding for every problem.

    Values that cannot be read are left out of the returned dict, so a dict holding
    every attribute means the layer's attributes are usable.

    >>> attrs = (Attr("kernel", "ints"), Attr("exclude-pad", "bool", True),
    ...          Attr("auto_pad", "enum", "explicit", ("explicit", "valid")))
    >>> values, found = read_attributes(attrs, {"auto_pad": "same", "colour": "blue"})
    >>> values
    {'exclude_pad': True}
    >>> for f in found:
    ...     print(f.level, f.code, f.message)
    error missing-attribute attribute 'kernel' is required
    warning absent-attribute exclude-pad is absent; OpenVINO uses true
    error bad-attribute attribute 'auto_pad'="same": expected one of explicit, valid
    warning unknown-attribute unknown attribute 'colour' is ignored
    """
    values: dict[str, Any] = {}
    found: list[AttrFinding] = []
    for attr in attrs:
        text = data.get(attr.ir_name)
        if text is None:
            if attr.required:
                found.append(AttrFinding("error", "missing-attribute", attr.ir_name,
                                         f"attribute '{attr.ir_name}' is required"))  # fmt: skip
                continue
            values[attr.name] = attr.default
            shown = _shown_default(attr)
            if shown is not None:
                found.append(AttrFinding("warning", "absent-attribute", attr.ir_name,
                                         f"{attr.ir_name} is absent; OpenVINO uses {shown}",
                                         expected=attr.ir_name))  # fmt: skip
            continue
        try:
            values[attr.name] = attr.parse(text)
        except ValueError as exc:
            if attr.kind == "bool" and not attr.required:
                # OpenVINO ignores a boolean it cannot read and keeps the default.
                values[attr.name] = attr.default
                found.append(AttrFinding(
                    "warning", "lenient-attribute", attr.ir_name,
                    f"attribute '{attr.ir_name}'=\"{text}\" is not true/false/1/0; "
                    f"OpenVINO ignores it and uses {str(attr.default).lower()}",
                    expected=attr.describe(), actual=text,
                ))  # fmt: skip
                continue
            detail = f" ({exc})" if attr.kind in ("ints", "floats") else ""
            found.append(AttrFinding(
                "error", "bad-attribute", attr.ir_name,
                f"attribute '{attr.ir_name}'=\"{text}\": expected {attr.describe()}{detail}",
                expected=attr.describe(), actual=text,
            ))  # fmt: skip
    known = {a.ir_name for a in attrs}
    for key in data:
        if key not in known:
            found.append(AttrFinding("warning", "unknown-attribute", key,
                                     f"unknown attribute '{key}' is ignored", actual=key))
    return values, found


def _shown_default(attr: Attr) -> str | None:
    """How an absent attribute's default reads in a warning, or None to stay silent.

    An empty list default means something op-specific (zeros for pads, ones for
    dilations), so only defaults that speak for themselves are shown.
    """
    default = attr.default
    if default is None or default == "":
        return None
    if isinstance(default, bool):
        return str(default).lower()
    if attr.kind == "partial_shape" and default == ():
        return "[] (a scalar)"
    if isinstance(default, tuple):
        return "[" + ", ".join(map(str, default)) + "]" if default else None
    return str(default)


def parse_attributes(attrs: tuple[Attr, ...], data: Mapping[str, str]) -> ParsedAttributes:
    """Parse a layer's ``<data>`` against an op's declared attributes.

    Raises :class:`AttrError` for the first value OpenVINO would refuse.  Unknown
    attributes are ignored, as OpenVINO ignores them, but reported as warnings, and so
    are booleans OpenVINO cannot read (it keeps the default).
    """
    values, found = read_attributes(attrs, data)
    for f in found:
        if f.level == "error":
            raise AttrError(f.attr, f.message)
    quiet = ("absent-attribute",)  # a default is what the op declares, not a problem here
    return ParsedAttributes(values, tuple(f.message for f in found if f.code not in quiet))
