"""Dimensions and partial shapes: static sizes, intervals and fully dynamic dims.

A dimension is a plain ``int`` when it is known, or an :class:`Interval` when it
is not (``?`` is ``Interval(0, None)``).  A shape is a tuple of them; ``None``
stands for a shape of unknown rank.  Shape rules work on these tuples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A dimension known only to lie in ``[lo, hi]`` (``hi=None``: no upper bound)."""

    lo: int = 0
    hi: int | None = None

    def __str__(self) -> str:
        if self.lo == 0 and self.hi is None:
            return "?"
        return f"{self.lo}..{'' if self.hi is None else self.hi}"

    def contains(self, value: int) -> bool:
        return self.lo <= value and (self.hi is None or value <= self.hi)


Dim = int | Interval
Shape = tuple[Dim, ...]
DYNAMIC = Interval()


def is_static(shape: Shape | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def format_dim(d: Dim) -> str:
    return str(d)


def format_shape(shape: Shape | None) -> str:
    """OpenVINO-style text: ``[1,3,?,4..10]``; ``[...]`` for an unknown rank."""
    if shape is None:
        return "[...]"
    return "[" + ",".join(format_dim(d) for d in shape) + "]"


def parse_dim(text: str) -> Dim:
    """Parse one dimension: ``3``, ``-1`` or ``?``, ``2..8``, ``..8``, ``2..``.

    >>> parse_dim("4..10"), parse_dim("-1"), parse_dim("7")
    (Interval(lo=4, hi=10), Interval(lo=0, hi=None), 7)
    """
    t = text.strip()
    if t in ("?", "-1"):
        return DYNAMIC
    if ".." in t:
        lo_s, hi_s = t.split("..", 1)
        lo = _int(lo_s) if lo_s.strip() else 0
        hi = _int(hi_s) if hi_s.strip() else None
        if lo < 0 or (hi is not None and hi < lo):
            raise ValueError(f"'{text}' is not a valid dimension range")
        return lo if lo == hi else Interval(lo, hi)
    value = _int(t)
    if value < -1:
        raise ValueError(f"dimension {value} must be >= -1")
    return value


def _int(text: str) -> int:
    """An integer in ASCII digits: int() also reads "1_0" and other scripts' digits."""
    if not _INT.fullmatch(text.strip()):
        raise ValueError(f"invalid literal for int() with base 10: {text!r}")
    value = int(text)
    if value > (1 << 63) - 1:
        raise ValueError(f"dimension {text.strip()} is out of range (not a 64-bit integer)")
    return value


_INT = re.compile(r"[-+]?[0-9]+")


def parse_partial_shape(text: str) -> Shape | None:
    """Parse a partial shape as OpenVINO writes it; ``...`` means unknown rank.

    >>> parse_partial_shape("1,3,?,4..10")
    (1, 3, Interval(lo=0, hi=None), Interval(lo=4, hi=10))
    >>> parse_partial_shape("[2, 3]"), parse_partial_shape(""), parse_partial_shape("...")
    ((2, 3), (), None)
    """
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].strip()
    if t == "...":
        return None
    if not t:
        return ()
    return tuple(parse_dim(part) for part in t.split(","))


def compatible(declared: Dim, actual: int) -> bool:
    """Whether a concrete size fits a declared dimension."""
    return declared == actual if isinstance(declared, int) else declared.contains(actual)


def dims_agree(declared: Dim, inferred: Dim) -> bool:
    """Whether a declared dim is consistent with an inferred one.

    Two sizes must be equal; where either side is an interval it is enough that
    the two can hold the same size (``-1`` agrees with anything).

    >>> dims_agree(5, 5), dims_agree(5, Interval(1, 8)), dims_agree(9, Interval(1, 8))
    (True, True, False)
    """
    if isinstance(declared, int) and isinstance(inferred, int):
        return declared == inferred
    lo_d, hi_d = _bounds(declared)
    lo_i, hi_i = _bounds(inferred)
    return (hi_d is None or lo_i <= hi_d) and (hi_i is None or lo_d <= hi_i)


def _bounds(d: Dim) -> tuple[int, int | None]:
    return (d, d) if isinstance(d, int) else (d.lo, d.hi)


def map_bounds(d: Dim, fn: Callable[[int], int]) -> Dim:
    """Apply a monotonic size function to a dim: to the value, or to each bound."""
    if isinstance(d, int):
        return fn(d)
    lo = max(fn(d.lo), 0)
    hi = None if d.hi is None else max(fn(d.hi), 0)
    return lo if lo == hi else Interval(lo, hi)


def shape_fits(declared: Shape | None, actual: Sequence[int]) -> bool:
    """Whether a concrete shape fits a declared partial shape."""
    if declared is None:
        return True
    return len(declared) == len(actual) and all(
        compatible(d, a) for d, a in zip(declared, actual, strict=True)
    )
