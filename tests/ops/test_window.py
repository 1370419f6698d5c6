"""irrun's pooling shape rules against the shapes OpenVINO itself infers.

Every expected shape here comes from OpenVINO: either the node's
``get_output_partial_shape`` for a randomly drawn configuration, or the
type_prop cases of OpenVINO's own test-suite (checked against OpenVINO too).
When OpenVINO refuses to build a node, irrun's attribute check or shape rule
must refuse the same configuration.

Three paths into irrun are exercised: a model saved by ``ov.save_model`` and
read back with :func:`irrun.load`, the registered op's ``check``/``infer``,
and :func:`irrun.ops.window.pooled_shape` itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from openvino import opset1, opset8, opset14, opset16
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.ir.attributes import parse_attributes
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import OpDef, ShapeError, TensorInfo, resolve
from irrun.ops import window

F32 = ELEMENT_TYPES["f32"]
I64 = ELEMENT_TYPES["i64"]
ROUNDINGS = ("floor", "ceil", "ceil_torch")
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")
POOL_OPS = (("MaxPool", 1), ("MaxPool", 8), ("MaxPool", 14),
            ("AvgPool", 1), ("AvgPool", 14), ("AvgPool", 16))  # fmt: skip
_BASE = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def examples(n: int) -> settings:
    return settings(_BASE, max_examples=n)


# --- converting shapes between OpenVINO and irrun ---------------------------------------------


def test_shape_conversion_helpers():
    ps = ov.PartialShape([1, -1, ov.Dimension(2, 8), ov.Dimension(3, -1)])
    assert from_ov_shape(ps) == (1, Interval(0, None), Interval(2, 8), Interval(3, None))
    assert to_ov_shape(from_ov_shape(ps)) == ps
    assert from_ov_shape(ov.PartialShape.dynamic()) is None


# --- one pooling configuration, buildable both ways --------------------------------------------


def _ints(values) -> str:
    return ", ".join(str(v) for v in values)  # as ov.save_model writes lists


@dataclass(frozen=True)
class Pool:
    op: str  # "MaxPool" or "AvgPool"
    version: int
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    dilations: tuple[int, ...] = ()  # MaxPool-8/14 and AvgPool-16 only
    rounding: str = "floor"
    auto_pad: str = "explicit"
    exclude_pad: bool = True  # AvgPool only
    axis: int = 0  # MaxPool-8/14 only
    index_type: str = "i64"  # MaxPool-8/14 only

    @property
    def opset(self) -> str:
        return f"opset{self.version}"

    @property
    def has_indices(self) -> bool:
        return self.op == "MaxPool" and self.version >= 8

    def ov_node(self, data: ov.Node) -> ov.Node:
        k, s = list(self.kernel), list(self.strides)
        pb, pe = list(self.pads_begin), list(self.pads_end)
        d, r, ap = list(self.dilations), self.rounding, self.auto_pad
        if self.op == "MaxPool":
            if self.version == 1:
                return opset1.max_pool(data, s, pb, pe, k, r, ap)
            mod = opset8 if self.version == 8 else opset14
            return mod.max_pool(data, s, d, pb, pe, k, r, ap, self.index_type, self.axis)
        if self.version == 16:
            return opset16.avg_pool(data, s, pb, pe, k, self.exclude_pad, r, ap, dilations=d)
        mod = opset1 if self.version == 1 else opset14
        return mod.avg_pool(data, s, pb, pe, k, self.exclude_pad, r, ap)

    def ir_data(self) -> dict[str, str]:
        """The ``<data>`` strings of this layer, spelled as ov.save_model spells them."""
        data = {"strides": _ints(self.strides), "pads_begin": _ints(self.pads_begin),
                "pads_end": _ints(self.pads_end), "kernel": _ints(self.kernel),
                "rounding_type": self.rounding, "auto_pad": self.auto_pad}  # fmt: skip
        if self.op == "AvgPool":
            data["exclude-pad"] = str(self.exclude_pad).lower()
        if self.has_indices or (self.op == "AvgPool" and self.version == 16):
            data["dilations"] = _ints(self.dilations)
        if self.has_indices:
            data["index_element_type"] = self.index_type
            data["axis"] = str(self.axis)
        return data

    def irrun_op(self) -> tuple[OpDef, SimpleNamespace]:
        op = resolve(self.op, self.opset)
        assert op.version == self.version
        parsed = parse_attributes(op.attrs, self.ir_data())
        return op, SimpleNamespace(**parsed.values)


def ov_shapes(pool: Pool, shape) -> list | None:
    """OpenVINO's output shapes (irrun form), or None when OpenVINO refuses the node."""
    param = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
    try:
        node = pool.ov_node(param)
    except RuntimeError:
        return None
    return [from_ov_shape(node.get_output_partial_shape(i)) for i in range(node.get_output_size())]


def irrun_shapes(pool: Pool, shape) -> list:
    """irrun's output shapes via the registered op; raises ValueError/ShapeError on refusal."""
    op, attrs = pool.irrun_op()
    assert op.check is not None
    op.check(attrs)
    outs = op.infer(attrs, [TensorInfo(shape, F32)])
    want_types = [F32, ELEMENT_TYPES[pool.index_type]] if pool.has_indices else [F32]
    assert [o.element_type for o in outs] == want_types
    return [o.shape for o in outs]


# --- hypothesis strategies ---------------------------------------------------------------------

_intervals = st.integers(0, 10).flatmap(
    lambda lo: st.one_of(
        st.integers(lo + 1, lo + 10).map(lambda hi: Interval(lo, hi)),
        st.just(Interval(lo, None)),
    )
)
spatial_dims = st.one_of(
    st.integers(1, 12), st.integers(1, 12), st.integers(0, 3), st.just(DYNAMIC), _intervals
)
outer_dims = st.one_of(
    st.integers(1, 3), st.integers(1, 3), st.just(0), st.just(DYNAMIC), _intervals
)


@st.composite
def pool_cases(draw, ops=POOL_OPS, corrupt: bool = True, rounding_by_version: bool = False):
    """A pooling op and an input shape; sometimes deliberately malformed."""
    op, version = draw(st.sampled_from(ops))
    rank = draw(st.integers(3, 5))
    n = rank - 2
    if draw(st.integers(0, 14)) == 0:
        shape = None
    else:
        shape = (draw(outer_dims), draw(outer_dims),
                 *draw(st.lists(spatial_dims, min_size=n, max_size=n)))  # fmt: skip

    def per_axis(lo, hi):
        return tuple(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)))

    has_dil = (op == "MaxPool" and version >= 8) or (op == "AvgPool" and version == 16)
    if rounding_by_version and not ((op == "MaxPool" and version == 14) or
                                    (op == "AvgPool" and version >= 14)):  # fmt: skip
        rounding = draw(st.sampled_from(ROUNDINGS[:2]))
    else:
        rounding = draw(st.sampled_from(ROUNDINGS))
    pool = Pool(
        op, version,
        kernel=per_axis(1, 4), strides=per_axis(1, 3),
        pads_begin=per_axis(0, 3), pads_end=per_axis(0, 3),
        dilations=per_axis(1, 3) if has_dil else (),
        rounding=rounding, auto_pad=draw(st.sampled_from(AUTO_PADS)),
        exclude_pad=draw(st.booleans()),
        axis=draw(st.integers(-rank - 1, rank)),
        index_type=draw(st.sampled_from(("i32", "i64"))),
    )  # fmt: skip
    if draw(st.integers(0, 5)) == 0:  # empty pad lists: OpenVINO reads them as zeros
        pool = replace(pool, pads_begin=(), pads_end=())
    if not corrupt:
        return pool, shape
    how = draw(st.sampled_from(("none",) * 6 + ("zero", "length", "rank")))
    names = ["kernel", "strides", "pads_begin", "pads_end"] + (["dilations"] if has_dil else [])
    if how == "zero":
        # A zero kernel is refused by OpenVINO only where the spatial dim is static;
        # irrun refuses it always (see test_zero_kernel_on_dynamic_dim_is_refused).
        all_static = shape is not None and all(isinstance(d, int) for d in shape[2:])
        name = draw(st.sampled_from(["strides", "dilations"] if has_dil else ["strides"]))
        if all_static and draw(st.booleans()):
            name = "kernel"
        values = list(getattr(pool, name))
        values[draw(st.integers(0, n - 1))] = 0
        pool = replace(pool, **{name: tuple(values)})
    elif how == "length":
        name = draw(st.sampled_from(names))
        values = getattr(pool, name)
        # (empty dilations mean "absent": see test_maxpool_with_empty_dilations_loads)
        shorten = draw(st.booleans()) and not (name == "dilations" and len(values) == 1)
        values = values[:-1] if shorten else (*values, 1)
        pool = replace(pool, **{name: values})
    elif how == "rank":
        # every list consistent, but sized for another rank
        m = draw(st.sampled_from([k for k in (1, 2, 3, 4) if k != n]))
        fix = {name: (tuple(getattr(pool, name)) * 4)[:m] or (1,) * m for name in names}
        pool = replace(pool, **fix)
    return pool, shape


def ceil_torch_at_zero(pool: Pool, shape) -> bool:
    """ceil_torch on a spatial dim whose (lower bound of) size is 0 with no begin pad.

    OpenVINO tests ``last_start > size + pad_begin - 1`` in unsigned arithmetic, so at
    size + pad_begin == 0 the right side wraps and the window is always kept
    (see test_ceil_torch_on_empty_axis); irrun does not copy that.
    """
    if pool.rounding != "ceil_torch" or shape is None:
        return False
    explicit = pool.auto_pad == "explicit" and pool.pads_begin
    begins = pool.pads_begin if explicit else (0,) * len(shape)  # same_*: may be 0 as well
    return any(
        (d == 0 or (isinstance(d, Interval) and d.lo == 0)) and p == 0
        for d, p in zip(shape[2:], begins, strict=False)
    )


# --- property tests ----------------------------------------------------------------------------


@examples(2000)
@given(pool_cases())
def test_registered_rule_matches_openvino(case):
    """Same shapes as OpenVINO where it builds the node; an irrun error where it refuses."""
    pool, shape = case
    expected = ov_shapes(pool, shape)
    assume(expected is None or not ceil_torch_at_zero(pool, shape))
    event("OpenVINO refuses" if expected is None else "OpenVINO builds")
    if expected is None:
        with pytest.raises(ValueError):  # ShapeError is a ValueError too
            irrun_shapes(pool, shape)
    else:
        assert irrun_shapes(pool, shape) == expected


@examples(1000)
@given(pool_cases(corrupt=False, rounding_by_version=True))
def test_pooled_shape_matches_openvino(case):
    """window.pooled_shape alone, for configurations every op version accepts."""
    pool, shape = case
    expected = ov_shapes(pool, shape)
    assume(expected is None or not ceil_torch_at_zero(pool, shape))
    _, attrs = pool.irrun_op()
    a = window.with_defaults(attrs)
    exclude = pool.exclude_pad if pool.op == "AvgPool" else None
    if expected is None:
        # The only refusals left are shape-dependent (and MaxPool-8/14's axis range).
        if pool.has_indices and shape is not None and not -len(shape) <= pool.axis < len(shape):
            return
        with pytest.raises(ShapeError):
            window.pooled_shape(shape, a, exclude_pad=exclude)
    else:
        assert window.pooled_shape(shape, a, exclude_pad=exclude) == expected[0]


@examples(120)
@given(pool_cases(corrupt=False, rounding_by_version=True))
def test_saved_model_output_shapes_match_openvino(tmp_path_factory, case):
    """ov.save_model, then irrun.load: model.outputs carry OpenVINO's shapes and no errors."""
    pool, shape = case
    assume(not ceil_torch_at_zero(pool, shape))
    param = opset1.parameter(to_ov_shape(shape), ov.Type.f32, name="x")
    try:
        node = pool.ov_node(param)
    except RuntimeError:
        assume(False)
        return
    results = [opset1.result(node.output(i)) for i in range(node.get_output_size())]
    path = tmp_path_factory.mktemp("pool") / "pool.xml"
    ov.save_model(ov.Model(results, [param]), path, compress_to_fp16=False)
    model = irrun.load(path)
    assert [o.shape for o in model.outputs] == [
        from_ov_shape(node.get_output_partial_shape(i)) for i in range(node.get_output_size())
    ]
    assert [o.element_type for o in model.outputs] == (
        ["f32", pool.index_type] if pool.has_indices else ["f32"]
    )
    assert [d for d in irrun.validate(path) if d.level == "error"] == []


# --- adaptive pools ----------------------------------------------------------------------------


@st.composite
def adaptive_cases(draw, allow_wrong_length: bool = True):
    rank = draw(st.integers(3, 5))
    shape = (draw(outer_dims), draw(outer_dims),
             *draw(st.lists(spatial_dims, min_size=rank - 2, max_size=rank - 2)))  # fmt: skip
    n = rank - 2
    if allow_wrong_length and draw(st.integers(0, 5)) == 0:
        n = draw(st.sampled_from([k for k in (1, 2, 3, 4) if k != rank - 2]))
    target = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
    target = target.astype(draw(st.sampled_from((np.int32, np.int64))))
    return draw(st.sampled_from(("AdaptiveAvgPool", "AdaptiveMaxPool"))), shape, target


def ov_adaptive(kind: str, data: ov.Node, target: np.ndarray, index_type: str = "i32") -> ov.Node:
    const = opset1.constant(target)
    if kind == "AdaptiveAvgPool":
        return opset8.adaptive_avg_pool(data, const)
    return opset8.adaptive_max_pool(data, const, index_type)


@examples(500)
@given(adaptive_cases(), st.sampled_from(("i32", "i64")))
def test_adaptive_rule_matches_openvino(case, index_type):
    kind, shape, target = case
    param = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
    op = resolve(kind, "opset8")
    attrs = SimpleNamespace(
        **parse_attributes(op.attrs, {"index_element_type": index_type}
                           if kind == "AdaptiveMaxPool" else {}).values
    )  # fmt: skip
    ets = ELEMENT_TYPES["i32"] if target.dtype == np.int32 else I64
    inputs = [TensorInfo(shape, F32), TensorInfo((len(target),), ets, target)]
    try:
        node = ov_adaptive(kind, param, target, index_type)
    except RuntimeError:
        event("OpenVINO refuses")
        with pytest.raises(ShapeError):
            op.infer(attrs, inputs)
        return
    event("OpenVINO builds")
    outs = op.infer(attrs, inputs)
    assert [o.shape for o in outs] == [
        from_ov_shape(node.get_output_partial_shape(i)) for i in range(node.get_output_size())
    ]
    if kind == "AdaptiveMaxPool":
        assert outs[1].element_type == ELEMENT_TYPES[index_type]


@examples(60)
@given(adaptive_cases(allow_wrong_length=False))
def test_adaptive_saved_model_shapes_match_openvino(tmp_path_factory, case):
    kind, shape, target = case
    param = opset1.parameter(to_ov_shape(shape), ov.Type.f32, name="x")
    node = ov_adaptive(kind, param, target)
    results = [opset1.result(node.output(i)) for i in range(node.get_output_size())]
    path = tmp_path_factory.mktemp("adaptive") / "adaptive.xml"
    ov.save_model(ov.Model(results, [param]), path, compress_to_fp16=False)
    model = irrun.load(path)
    assert [o.shape for o in model.outputs] == [
        from_ov_shape(node.get_output_partial_shape(i)) for i in range(node.get_output_size())
    ]
    assert [d for d in irrun.validate(path) if d.level == "error"] == []


@pytest.mark.parametrize("kind", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_adaptive_unknown_rank_input(tmp_path, kind):
    param = opset1.parameter(ov.PartialShape.dynamic(), ov.Type.f32, name="x")
    node = ov_adaptive(kind, param, np.array([3, 4], np.int64))
    assert from_ov_shape(node.get_output_partial_shape(0)) is None
    results = [opset1.result(node.output(i)) for i in range(node.get_output_size())]
    ov.save_model(ov.Model(results, [param]), tmp_path / "m.xml", compress_to_fp16=False)
    assert [o.shape for o in irrun.load(tmp_path / "m.xml").outputs] == [None] * len(results)
    assert [d for d in irrun.validate(tmp_path / "m.xml") if d.level == "error"] == []


# --- tables: OpenVINO's own type_prop cases (semantics notes §2.4 and §4.1) --------------------

I = Interval  # noqa: E741
D = DYNAMIC


def mp(version, kernel, strides=None, pb=None, pe=None, r="floor", pad="explicit", **kw) -> Pool:
    n = len(kernel)
    dil = kw.pop("dilations", (1,) * n if version >= 8 else ())
    return Pool(
        "MaxPool", version, tuple(kernel), tuple(strides or (1,) * n), tuple(pb or (0,) * n),
        tuple(pe or (0,) * n), dilations=tuple(dil), rounding=r, auto_pad=pad, **kw,
    )  # fmt: skip


def ap(version, kernel, strides=None, pb=None, pe=None, r="floor", pad="explicit", **kw) -> Pool:
    n = len(kernel)
    dil = kw.pop("dilations", (1,) * n if version == 16 else ())
    return Pool(
        "AvgPool", version, tuple(kernel), tuple(strides or (1,) * n), tuple(pb or (0,) * n),
        tuple(pe or (0,) * n), dilations=tuple(dil), rounding=r, auto_pad=pad, **kw,
    )  # fmt: skip


C, CT = "ceil", "ceil_torch"
TABLE = [
    # ceil vs ceil_torch on intervals: each bound on its own
    ("6..7 k2 s2 p1 ceil", mp(14, [2], [2], [1], [1], C), (1, 3, I(6, 7)), (1, 3, I(4, 5))),
    ("6..7 k2 s2 p1 ceil_torch", mp(14, [2], [2], [1], [1], CT), (1, 3, I(6, 7)), (1, 3, 4)),
    ("15..17 k3 s3 p1 ceil", mp(14, [3], [3], [1], [1], C), (1, 3, I(15, 17)), (1, 3, I(6, 7))),
    ("15..17 k3 s3 p1 ceil_torch", mp(14, [3], [3], [1], [1], CT), (1, 3, I(15, 17)), (1, 3, 6)),
    ("5.. k2 s2 p1 ceil", mp(14, [2], [2], [1], [1], C), (1, 3, I(5, None)), (1, 3, I(4, None))),
    ("5.. k2 s2 p1 ceil_torch", mp(14, [2], [2], [1], [1], CT),
     (1, 3, I(5, None)), (1, 3, I(3, None))),
    ("14..,15..17 k3 s3 p1 ceil", mp(14, [3, 3], [3, 3], [1, 1], [1, 1], C),
     (1, 3, I(14, None), I(15, 17)), (1, 3, I(6, None), I(6, 7))),
    ("14..,15..17 k3 s3 p1 ceil_torch", mp(14, [3, 3], [3, 3], [1, 1], [1, 1], CT),
     (1, 3, I(14, None), I(15, 17)), (1, 3, I(5, None), 6)),
    # end pads >= kernel: ceil_torch can give fewer windows than floor
    ("H3 k1 pe1 floor", mp(14, [1], [1], [0], [1]), (1, 1, 3), (1, 1, 4)),
    ("H3 k1 pe1 ceil", mp(14, [1], [1], [0], [1], C), (1, 1, 3), (1, 1, 4)),
    ("H3 k1 pe1 ceil_torch", mp(14, [1], [1], [0], [1], CT), (1, 1, 3), (1, 1, 3)),
    # same_upper + ceil is not always ceil(H/s)
    ("H5 k1 s3 same_upper floor", mp(14, [1], [3], pad="same_upper"), (1, 1, 5), (1, 1, 2)),
    ("H5 k1 s3 same_upper ceil", mp(14, [1], [3], r=C, pad="same_upper"), (1, 1, 5), (1, 1, 3)),
    ("H5 k1 s3 same_upper ceil_torch", mp(14, [1], [3], r=CT, pad="same_upper"),
     (1, 1, 5), (1, 1, 2)),
    ("valid + ceil: H3 k2 s2", mp(1, [2], [2], r=C, pad="valid"), (1, 1, 3), (1, 1, 2)),
    # MaxPool type_prop
    ("default_ctor valid ceil", mp(1, [2], [1], [2], [2], C, "valid"), (1, 3, 32), (1, 3, 31)),
    ("valid_auto_padding", mp(1, [2], pad="valid"), (1, 3, I(10, 32)), (1, 3, I(9, 31))),
    ("1D same_lower", mp(1, [2], pad="same_lower"), (1, 3, 32), (1, 3, 32)),
    ("nc dynamic same_upper", mp(1, [2, 2], pad="same_upper"), (D, D, 32, 32), (D, D, 32, 32)),
    ("interval dims same_upper", mp(8, [2, 2], pad="same_upper"),
     (I(1, 2), I(2, 3), I(16, 32), I(11, 32)), (I(1, 2), I(2, 3), D, D)),
    ("spatial dynamic same_lower", mp(8, [2, 2], pad="same_lower"),
     (1, 3, 32, D), (1, 3, 32, D)),
    ("v8 3D d1", mp(8, [3]), (1, 7, 13), (1, 7, 11)),
    ("v8 3D d2", mp(8, [3], dilations=[2]), (1, 7, 13), (1, 7, 9)),
    ("v8 3D d2 pads 1/2", mp(8, [3], pb=[1], pe=[2], dilations=[2]), (1, 7, 13), (1, 7, 12)),
    ("v8 4D dilations", mp(8, [2, 2], dilations=[2, 3]), (1, 3, 13, 13), (1, 3, 11, 10)),
    ("198.. s2 k2 floor", mp(8, [2, 2], [2, 2]), (1, 3, I(198, None), I(198, None)),
     (1, 3, I(99, None), I(99, None))),
    ("198.. s2 k2 ceil", mp(8, [2, 2], [2, 2], r=C), (1, 3, I(198, None), I(198, None)),
     (1, 3, I(99, None), I(99, None))),
    ("interval dims with dilations", mp(8, [2, 2], dilations=[2, 3]),
     (I(2, 3), I(1, 3), I(2, 13), I(6, 13)), (I(2, 3), I(1, 3), I(1, 11), I(3, 10))),
    ("dilations same_upper", mp(14, [3, 3], dilations=[2, 3], pad="same_upper"),
     (1, 3, 13, 13), (1, 3, 13, 13)),
    ("v14 5x5 ceil", mp(14, [2, 2], [2, 2], [1, 1], [1, 1], C), (1, 3, 5, 5), (1, 3, 4, 4)),
    ("v14 5x5 ceil_torch", mp(14, [2, 2], [2, 2], [1, 1], [1, 1], CT), (1, 3, 5, 5), (1, 3, 3, 3)),
    ("v14 9x9 ceil_torch", mp(14, [2, 2], [2, 2], [1, 1], [1, 1], CT), (1, 3, 9, 9), (1, 3, 5, 5)),
    # AvgPool type_prop
    ("avg dynamic ceil", ap(1, [4], [4], [2], [2], C), (D, D, D), (D, D, I(1, None))),
    ("avg 2d deduce", ap(1, [10, 20]), (64, 3, 100, 150), (64, 3, 91, 131)),
    ("avg 2d strided", ap(1, [10, 20], [2, 3]), (64, 3, 100, 150), (64, 3, 46, 44)),
    ("avg14 2d strided ceil_torch", ap(14, [10, 20], [2, 3], r=CT),
     (64, 3, 100, 150), (64, 3, 46, 45)),
    ("avg 3d strided padded small",
     ap(1, [2, 3, 2], [2, 3, 4], [5, 6, 4], [6, 4, 5], exclude_pad=False),
     (64, 3, 7, 8, 10), (64, 3, 9, 6, 5)),
    ("avg kernel fits in post padding", ap(1, [9, 9], pe=[1, 1]), (6, 2, 8, 8), (6, 2, 1, 1)),
    ("avg partial rank", ap(1, [2, 3, 4]), (5, D, 8, D, 4), (5, D, 7, I(1, None), 1)),
    ("avg unknown rank", ap(1, [2, 3, 4, 5]), None, (D,) * 6),
    ("avg14 same_lower ceil_torch", ap(14, [2, 2], r=CT, pad="same_lower"),
     (1, 3, 9, 9), (1, 3, 9, 9)),
    ("avg14 9x9 k2 s2 p1 ceil_torch", ap(14, [2, 2], [2, 2], [1, 1], [1, 1], CT),
     (1, 3, 9, 9), (1, 3, 5, 5)),
    ("avg14 9x9 k2 s1 p1 ceil_torch", ap(14, [2, 2], [1, 1], [1, 1], [1, 1], CT),
     (1, 3, 9, 9), (1, 3, 10, 10)),
    ("avg16 dilations", ap(16, [3], [2], [1], [1], dilations=[2]), (1, 1, 9), (1, 1, 4)),
    # pads wider than the kernel: legal for MaxPool, and for AvgPool on a non-static dim
    ("max pads > kernel", mp(1, [1], pb=[3], pe=[3]), (1, 1, 2), (1, 1, 8)),
    ("avg pads > kernel, dynamic dim", ap(1, [1], pb=[10], pe=[9]), (1, 3, D), (1, 3, I(19, None))),
    ("zero spatial dim padded", mp(1, [2], pb=[1], pe=[1]), (1, 1, 0), (1, 1, 1)),
]  # fmt: skip

ERRORS = [
    ("avg kernel larger than input", ap(1, [9, 9]), (1, 1, 8, 8)),
    ("avg kernel in begin padding", ap(1, [9], pb=[10]), (5, D, 8)),
    ("avg kernel in end padding", ap(1, [9], pe=[10]), (5, D, 8)),
    ("avg1 ceil_torch", ap(1, [2], r=CT), (1, 1, 4)),
    ("max1 ceil_torch", mp(1, [2], r=CT), (1, 1, 4)),
    ("max8 ceil_torch", mp(8, [2], r=CT), (1, 1, 4)),
    ("zero stride", mp(8, [2, 2], [0, 2]), (1, 1, 4, 4)),
    ("zero dilation", mp(8, [2, 2], dilations=[0, 1]), (1, 1, 4, 4)),
    ("zero batch", mp(1, [2]), (0, 1, 4)),
    ("zero channels", ap(1, [2]), (1, 0, 4)),
    ("kernel rank mismatch", mp(1, [2, 2]), (1, 1, 4)),
    ("rank 2 input", ap(1, []), (1, 1)),
    ("rank 6 input", mp(1, [1, 1, 1, 1]), (1, 1, 2, 2, 2, 2)),
    ("strides too short", replace(mp(1, [2, 2]), strides=(1,)), (1, 1, 4, 4)),
    ("pads_end too long", replace(ap(1, [2]), pads_end=(0, 0)), (1, 1, 4)),
    ("same_upper pads wrong length", replace(mp(1, [2], pad="same_upper"), pads_begin=(0, 0)),
     (1, 1, 4)),
    ("dilations too long", mp(14, [2], dilations=[1, 1]), (1, 1, 4)),
    ("axis out of range", mp(8, [2], axis=3), (1, 1, 4)),
    ("axis below range", mp(14, [2], axis=-4), (1, 1, 4)),
    ("zero spatial dim", mp(1, [1]), (1, 1, 0)),
]  # fmt: skip


@pytest.mark.parametrize(("pool", "shape", "expected"),
                         [pytest.param(*row[1:], id=row[0]) for row in TABLE])  # fmt: skip
def test_known_shapes(pool, shape, expected):
    # The table is OpenVINO's: check it against OpenVINO first, then irrun.
    assert ov_shapes(pool, shape)[0] == expected
    outs = irrun_shapes(pool, shape)
    assert outs[0] == expected
    assert all(o == expected for o in outs)


@pytest.mark.parametrize(("pool", "shape"), [pytest.param(*row[1:], id=row[0]) for row in ERRORS])
def test_known_errors(pool, shape):
    assert ov_shapes(pool, shape) is None  # OpenVINO refuses to build the node
    with pytest.raises(ValueError):
        irrun_shapes(pool, shape)


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "dilation", "pb", "pe", "floor", "ceil", "ceil_torch"),
    [
        # hand-computed from kd = d*(k-1)+1, n = H+pb+pe-kd (notes §2.4)
        (3, 1, 1, 1, 0, 1, 4, 4, 3),  # n=3: floor 4, ceil 4; q=3, 3 <= 2? no -> 3
        (6, 2, 2, 1, 1, 1, 4, 4, 4),  # n=6: 3+1; q=3, 6 <= 6 -> 4
        (7, 2, 2, 1, 1, 1, 4, 5, 4),  # n=7: 3+1, 4+1; q=4, 8 <= 7? no -> 4
        (9, 3, 2, 2, 1, 1, 4, 4, 4),  # kd=5, n=6: 3+1; ceil 3+1; q=3, 6 <= 9 -> 4
        (1, 1, 5, 1, 0, 0, 1, 1, 1),
        (10, 4, 3, 1, 0, 0, 3, 3, 3),  # n=6: 2+1 each
        (11, 4, 3, 1, 0, 0, 3, 4, 4),  # n=7: 2+1; ceil 3+1; q=3, 9 <= 10 -> 4
    ],
)
def test_output_size_by_hand(size, kernel, stride, dilation, pb, pe, floor, ceil, ceil_torch):
    got = [window.output_size(size, kernel, stride, dilation, pb, pe, r) for r in ROUNDINGS]
    assert got == [floor, ceil, ceil_torch]


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "dilation", "auto_pad", "pads"),
    [
        # total = max(0, (ceil(H/s)-1)*s + kd - H); same_upper puts the odd pad at the end
        (9, 2, 2, 1, "same_upper", (0, 1)),
        (9, 2, 2, 1, "same_lower", (1, 0)),
        (13, 3, 1, 2, "same_upper", (2, 2)),
        (13, 3, 1, 3, "same_lower", (3, 3)),
        (7, 3, 2, 1, "same_upper", (1, 1)),
        (8, 3, 2, 1, "same_upper", (0, 1)),
        (8, 3, 2, 1, "same_lower", (1, 0)),
        (5, 1, 3, 1, "same_upper", (0, 0)),
        (5, 3, 3, 1, "valid", (0, 0)),
        (5, 3, 3, 1, "explicit", (4, 7)),
    ],
)
def test_resolve_pads_by_hand(size, kernel, stride, dilation, auto_pad, pads):
    assert window.resolve_pads(size, kernel, stride, dilation, auto_pad, 4, 7) == pads


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower"])
@pytest.mark.parametrize("size", [7, 8, 9, 13])
def test_same_pads_are_what_openvino_saves(tmp_path, auto_pad, size):
    """ov.save_model writes the pads it computed for same_*; irrun computes the same ones."""
    param = opset1.parameter([1, 1, size], ov.Type.f32)
    node = opset8.max_pool(param, [2], [2], [0], [0], [3], "floor", auto_pad)
    attrs = node.get_attributes()
    assert window.resolve_pads(size, 3, 2, 2, auto_pad, 0, 0) == (
        attrs["pads_begin"][0], attrs["pads_end"][0],
    )  # fmt: skip


@pytest.mark.parametrize("version", [8, 14])
def test_maxpool_with_empty_dilations_loads(tmp_path, version):
    param = opset1.parameter([1, 2, 5], ov.Type.f32, name="x")
    node = mp(version, [2], dilations=[]).ov_node(param)
    assert from_ov_shape(node.get_output_partial_shape(0)) == (1, 2, 4)
    ov.save_model(ov.Model([opset1.result(node.output(0))], [param]), tmp_path / "m.xml",
                  compress_to_fp16=False)  # fmt: skip
    assert 'dilations=""' in (tmp_path / "m.xml").read_text()
    assert [o.shape for o in irrun.load(tmp_path / "m.xml").outputs] == [(1, 2, 4)]


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "pads_end", "expected"),
    [
        ((1, 1, D), 1, 1, 1, (1, 1, I(1, None))),
        ((1, 1, I(0, 4)), 1, 2, 3, (1, 1, I(2, 3))),
        ((1, 1, 0), 1, 1, 1, (1, 1, 1)),
        ((1, 1, 0), 1, 2, 3, (1, 1, 2)),
    ],
)
def test_ceil_torch_on_empty_axis(shape, kernel, stride, pads_end, expected):
    pool = mp(14, [kernel], [stride], [0], [pads_end], CT)
    assert ov_shapes(pool, shape)[0] == expected
    assert irrun_shapes(pool, shape)[0] == expected


def test_zero_kernel_on_dynamic_dim_is_refused():
    """A deliberate difference: OpenVINO builds a zero kernel over a dynamic dim, irrun refuses."""
    pool = mp(8, [0])
    assert ov_shapes(pool, (1, 3, D)) == [(1, 3, I(1, None))] * 2
    with pytest.raises(ValueError, match="kernel must be positive"):
        irrun_shapes(pool, (1, 3, D))
