"""Shapes between OpenVINO's PartialShape and irrun's (ints, Intervals, None), for the tests."""

from __future__ import annotations

import openvino as ov

from irrun.ir.dims import Interval


def from_ov_dim(d: ov.Dimension):
    """static -> int, dynamic -> Interval(0, None), interval -> Interval(lo, hi or None)."""
    if d.is_static:
        return d.get_length()
    hi = d.get_max_length()
    return Interval(d.get_min_length(), None if hi < 0 else hi)


def from_ov_shape(ps: ov.PartialShape):
    return None if ps.rank.is_dynamic else tuple(from_ov_dim(d) for d in ps)


def to_ov_shape(shape) -> ov.PartialShape:
    if shape is None:
        return ov.PartialShape.dynamic()
    return ov.PartialShape(
        [ov.Dimension(d) if isinstance(d, int) else ov.Dimension(d.lo, -1 if d.hi is None else d.hi)
         for d in shape]
    )
