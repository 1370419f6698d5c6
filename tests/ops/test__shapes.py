"""Broadcasting shape rules (``irrun.ops._shapes.broadcast_shapes``) against OpenVINO's
shape inference of Add on static, interval and dynamic dims, and by hand.
"""

from __future__ import annotations

import random

import pytest
from support.ov_shapes import from_ov_shape

from irrun.ir.dims import Interval
from irrun.ir.registry import ShapeError
from irrun.ops._shapes import broadcast_shapes

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402

# --------------------------------------------------------------------------- broadcasting shapes


def _ov_dim(d):
    if isinstance(d, int):
        return ov.Dimension(d)
    return ov.Dimension(d.lo, -1 if d.hi is None else d.hi)




def _random_dim(rng: random.Random):
    kind = rng.random()
    if kind < 0.55:
        return rng.choice((1, 1, 2, 3, 4))
    lo = rng.choice((0, 1, 2, 3))
    hi = rng.choice((None, lo, lo + 1, lo + 3))
    return lo if hi == lo else Interval(lo, hi)


def _random_shape(rng: random.Random) -> tuple | None:
    if rng.random() < 0.05:
        return None  # unknown rank
    return tuple(_random_dim(rng) for _ in range(rng.randint(0, 4)))


def test_broadcast_shapes_match_openvino():
    rng = random.Random(7)
    checked = rejected = 0
    for _ in range(600):
        mode = rng.choice(("numpy", "pdpd", "none"))
        a, b = (_random_shape(rng) for _ in range(2))
        if mode == "none" and a is not None and b is not None and rng.random() < 0.5:
            b = a
        pa = ov.PartialShape.dynamic() if a is None else ov.PartialShape([_ov_dim(d) for d in a])
        pb = ov.PartialShape.dynamic() if b is None else ov.PartialShape([_ov_dim(d) for d in b])
        try:
            node = opset1.add(
                opset1.parameter(pa, ov.Type.f32), opset1.parameter(pb, ov.Type.f32), mode
            )
            want = from_ov_shape(node.get_output_partial_shape(0))
        except RuntimeError:
            with pytest.raises(ShapeError):
                broadcast_shapes(a, b, mode)
            rejected += 1
            continue
        assert broadcast_shapes(a, b, mode) == want, (a, b, mode)
        checked += 1
    assert checked > 200 and rejected > 50


def test_broadcast_shapes_by_hand():
    assert broadcast_shapes((8, 1, 6, 1), (7, 1, 5)) == (8, 7, 6, 5)
    assert broadcast_shapes((2, 3, 4, 5), (3, 4), "pdpd", axis=1) == (2, 3, 4, 5)
    assert broadcast_shapes((2, 3, 4, 5), (2, 3, 1), "pdpd") == (2, 3, 4, 5)
    with pytest.raises(ShapeError, match=r"\[2,3\] and \[3,2\]"):
        broadcast_shapes((2, 3), (3, 2), "numpy")
    with pytest.raises(ShapeError, match="none"):
        broadcast_shapes((2, 3), (1, 3), "none")
