"""ScaledDotProductAttention-13 against the CPU plugin, OpenVINO's reference and hand values.

OpenVINO has no reference kernel for the op itself (``ov.Model.evaluate`` refuses it);
its reference is the specification's pseudo-code, which the template plugin runs as a
decomposition into MatMul, Softmax and friends.  ``_decomposed`` builds that graph
and runs it on the reference kernels.

Tolerances: f32 rtol 1e-5 and atol 1e-6 times the largest |output| (both sides sum
Q·Kᵀ and P·V in their own order and use their own exp); f16 inputs atol 2e-3 times
the largest |output| (irrun and the plugin compute in f32 and round once to f16,
so they may differ by an ulp or two of the output).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8, opset13
from openvino.utils.node_factory import _get_node_factory
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve

FACTORY = _get_node_factory("opset13")
SDPA = resolve("ScaledDotProductAttention", "opset13")


def sdpa(causal: bool):
    """A builder of the op from any number of inputs (the Python API stops at five)."""
    return lambda *p: FACTORY.create("ScaledDotProductAttention", list(p), {"causal": causal})


def _decomposed(causal: bool, n_inputs: int):
    """The specification's pseudo-code as a graph of other ops (OpenVINO's reference)."""

    def build(*p):
        q, k, v = p[:3]
        et = q.get_output_element_type(0)
        dtype = {ov.Type.f32: np.float32, ov.Type.f16: np.float16}[et]
        if n_inputs > 4:
            scale = p[4]
        else:
            e = q.get_output_partial_shape(0)[-1].get_length()
            scale = opset1.constant(np.array(1 / math.sqrt(e), dtype))
        scores = opset1.multiply(opset1.matmul(q, k, False, True), scale)
        # OpenVINO refuses an f16 constant of -inf; a converted one is fine.
        ninf = opset1.convert(opset1.constant(np.array(-np.inf, np.float32)), et)
        zero = opset1.constant(np.array(0, dtype))
        if causal:
            rows = q.get_output_partial_shape(0)[-2].get_length()
            cols = k.get_output_partial_shape(0)[-2].get_length()
            tri = np.triu(np.full((rows, cols), -np.inf, np.float32), k=1)
            scores = opset1.add(scores, opset1.convert(opset1.constant(tri), et))
        elif n_inputs > 3:
            mask = p[3]
            if mask.get_output_element_type(0) == ov.Type.boolean:
                mask = opset1.select(opset1.logical_not(mask), ninf, zero)
            scores = opset1.add(scores, mask)
        if n_inputs > 5:
            rows = opset8.slice(opset1.shape_of(scores), [0], [-1], [1])
            full = opset1.concat([rows, opset1.constant(np.array([1], np.int64))], 0)
            sink = opset1.broadcast(p[5], full)
            probs = opset8.softmax(opset1.concat([scores, sink], -1), -1)
            cols = k.get_output_partial_shape(0)[-2].get_length()
            probs = opset8.gather(probs, opset1.constant(np.arange(cols)), -1)
        else:
            probs = opset8.softmax(scores, -1)
        return opset1.matmul(probs, v, False, False)

    return build


def reference(causal: bool, inputs: list[np.ndarray]) -> np.ndarray:
    """The decomposition run on OpenVINO's reference kernels (``ov.Model.evaluate``)."""
    model = one_op_model(_decomposed(causal, len(inputs)), inputs)
    # Not run_reference: its np.ascontiguousarray turns a 0-d scale into shape [1].
    out = ov.Tensor(model.output(0).get_element_type(), [0])
    model.evaluate([out], [ov.Tensor(np.require(x, requirements="C")) for x in inputs])
    return np.array(out.data, copy=True).reshape(tuple(out.shape))


def _tol(dtype) -> dict:
    if np.dtype(dtype) == np.float16:
        return dict(rtol=0, atol=2e-3, scaled_atol=True)
    return dict(rtol=1e-5, atol=1e-6, scaled_atol=True)


# --- seeded sweep ------------------------------------------------------------------------------


def _case(seed: int) -> tuple[str, bool, list[np.ndarray]]:
    """A random configuration: batch broadcasting, L != S, Ev != E, mask, scale, sink."""
    rng = np.random.default_rng(seed)
    dtype = np.float16 if seed % 5 == 4 else np.float32
    rank = int(rng.choice([3, 4, 4, 5]))
    batch = [int(x) for x in rng.integers(1, 4, rank - 2)]

    def thin(b):  # some batch dims of 1, for numpy broadcasting
        return [d if rng.random() < 0.6 else 1 for d in b]

    length, source = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    e, ev = int(rng.choice([1, 4, 8])), int(rng.choice([3, 8]))
    causal = bool(rng.random() < 0.3)
    q = rng.standard_normal((*thin(batch), length, e)).astype(dtype)
    k = rng.standard_normal((*thin(batch), source, e)).astype(dtype)
    v = rng.standard_normal((*thin(batch), source, ev)).astype(dtype)
    inputs = [q, k, v]
    kind = rng.choice(["none", "bool", "float", "scalar", "bool", "float"])
    with_sink = rng.random() < 0.25
    if kind != "none" or rng.random() < 0.5 or with_sink:
        mask_rank = int(rng.integers(2, rank + 2))
        mshape = [*thin(batch[len(batch) - min(mask_rank - 2, len(batch)) :]), length, source]
        if mask_rank > rank:  # a leading dim of 1 before the batch dims
            mshape = [1, *thin(batch), length, source]
        mshape[-2] = mshape[-2] if rng.random() < 0.7 else 1
        if kind == "bool" or (kind == "none" and causal):
            mask = rng.random(mshape) < 0.7
            mask[..., 0] = True  # no row fully masked (that case has its own test)
        elif kind == "scalar":
            mask = np.array(0, dtype)
        else:
            mask = (rng.standard_normal(mshape) * 2).astype(dtype)
        inputs.append(mask)
        if rng.random() < 0.6 or with_sink:
            inputs.append(np.array(rng.uniform(0.05, 1.0), dtype).reshape(
                () if rng.random() < 0.5 else (1,)))  # fmt: skip
        if with_sink:
            # The plugin's decomposition cannot broadcast a sink's batch dims: give them all.
            full = np.broadcast_shapes(*(x.shape[:-2] for x in inputs[:3]))
            if mask.ndim > 2:
                full = np.broadcast_shapes(full, mask.shape[:-2])
            # Nor one whose batch dims exceed the query's (openvino: see the report).
            sink_shape = (*full, length, 1) if full == q.shape[:-2] else None
            if sink_shape is not None:
                inputs.append(rng.standard_normal(sink_shape).astype(dtype))
    desc = f"seed{seed}-{np.dtype(dtype).name}-causal{int(causal)}-" + "-".join(
        "x".join(map(str, x.shape)) or "scalar" for x in inputs
    )
    return desc, causal, inputs


CASES = [_case(seed) for seed in range(40)]


@pytest.mark.parametrize("desc,causal,inputs", CASES, ids=[c[0] for c in CASES])
def test_sweep_against_plugin_and_reference(desc, causal, inputs, tmp_path):
    got, want = run_both(sdpa(causal), inputs, tmp_path)
    tol = _tol(inputs[0].dtype)
    assert_close(got, want, **tol, what=f"{desc} vs CPU plugin")
    ref = reference(causal, inputs)
    assert_close(got, ref, **tol, what=f"{desc} vs reference")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("batch,heads,e", [(1, 2, 32), (4, 4, 64)])
def test_bert_tiny_sized_layer(batch, heads, e, causal, tmp_path):
    rng = np.random.default_rng(batch * 100 + e)
    q, k, v = (rng.standard_normal((batch, heads, 128, e)).astype(np.float32) for _ in range(3))
    mask = np.zeros((batch, 1, 1, 128), np.float32)
    mask[..., 100:] = -10000.0  # padding as BERT encodes it
    got, want = run_both(sdpa(causal), [q, k, v, mask], tmp_path)
    assert_close(got, want, rtol=1e-5, atol=1e-6, scaled_atol=True)


def test_bf16_computes_in_f32_and_rounds_once(tmp_path):
    rng = np.random.default_rng(7)
    bf16 = ELEMENT_TYPES["bf16"].dtype
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    params = []
    for i in range(3):  # one_op_model cannot name bf16 (ov.Type knows no NumPy bfloat16)
        params.append(opset1.parameter([1, 2, 3, 4], ov.Type.bf16, name=f"in{i}"))
        params[-1].output(0).get_tensor().set_names({f"in{i}"})
    model = ov.Model([sdpa(False)(*params).output(0)], params, "bf16")
    got = run_saved(model, [q.astype(bf16), k.astype(bf16), v.astype(bf16)], tmp_path)[0]
    exact = _by_hand(*(x.astype(bf16).astype(np.float64) for x in (q, k, v)))
    assert got.dtype == bf16
    np.testing.assert_array_equal(got, exact.astype(np.float32).astype(bf16))


# --- hand-checked values -----------------------------------------------------------------------


def _by_hand(q, k, v, bias=0.0, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    p = np.exp(s + bias - np.max(s + bias, axis=-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


# With scale ln 3 and identity Q, K, a kept pair of logits (ln 3, 0) weighs 3/4 and 1/4.
EYE = np.eye(2, dtype=np.float32).reshape(1, 1, 2, 2)
VALUES = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
LN3 = np.array(math.log(3), np.float32)


@pytest.mark.parametrize(
    "causal,mask,want",
    [
        (False, None, [[1.5, 2.5], [2.5, 3.5]]),  # 3/4·v0 + 1/4·v1, 1/4·v0 + 3/4·v1
        (True, None, [[1, 2], [2.5, 3.5]]),  # row 0 sees only key 0
        (False, np.array([[False, True], [True, True]]), [[3, 4], [2.5, 3.5]]),
        # A float mask of +ln 3 on (0, 1) makes row 0's logits (ln 3, ln 3): equal weights.
        (False, np.array([[0, math.log(3)], [0, 0]], np.float32), [[2, 3], [2.5, 3.5]]),
        # causal ignores the mask, even one that would mask everything
        (True, np.array([[False, False], [False, False]]), [[1, 2], [2.5, 3.5]]),
    ],
)
def test_two_by_two_by_hand(causal, mask, want, tmp_path):
    inputs = [EYE, EYE, VALUES, np.array(0, np.float32) if mask is None else mask, LN3]
    got, plugin = run_both(sdpa(causal), inputs, tmp_path)
    expected = np.array(want, np.float32).reshape(1, 1, 2, 2)
    assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert_close(plugin, expected, rtol=1e-6, atol=1e-6)


def test_sink_by_hand(tmp_path):
    # Row 0: logits (ln 3, 0) and a sink of ln 4: weights 3/8 and 1/8 (the sink takes 4/8).
    # Row 1: logits (0, ln 3) and a sink of ln 0 = -inf: weights 1/4 and 3/4, as without one.
    sink = np.array([math.log(4), -np.inf], np.float32).reshape(1, 1, 2, 1)
    inputs = [EYE, EYE, VALUES, np.array(0, np.float32), LN3, sink]
    got, plugin = run_both(sdpa(False), inputs, tmp_path)
    expected = np.array([[0.75, 1.25], [2.5, 3.5]], np.float32).reshape(1, 1, 2, 2)
    assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert_close(plugin, expected, rtol=1e-6, atol=1e-6)


def test_default_scale_is_one_over_sqrt_e(tmp_path):
    # E = 4, so the default scale is 1/2: logits (1, 0) for q = k = e0 -> weights e/(e+1).
    q = np.zeros((1, 1, 4), np.float32)
    q[0, 0, 0] = 2.0
    k = np.zeros((1, 2, 4), np.float32)
    k[0, 0, 0] = 1.0
    v = np.array([[[1.0], [0.0]]], np.float32)
    got, plugin = run_both(sdpa(False), [q, k, v], tmp_path)
    expected = np.array([[[math.e / (math.e + 1)]]], np.float32)
    assert_close(got, expected, rtol=1e-6)
    assert_close(plugin, expected, rtol=1e-6)


def test_causal_triangle_is_anchored_top_left_when_l_differs_from_s(tmp_path):
    # L = 2, S = 3, v = identity: each output row is the attention row itself.
    q = np.zeros((1, 2, 1), np.float32)
    k = np.zeros((1, 3, 1), np.float32)
    v = np.eye(3, dtype=np.float32).reshape(1, 3, 3)
    got, plugin = run_both(sdpa(True), [q, k, v], tmp_path)
    expected = np.array([[[1, 0, 0], [0.5, 0.5, 0]]], np.float32)
    assert_close(got, expected, rtol=1e-6, atol=1e-7)
    assert_close(plugin, expected, rtol=1e-6, atol=1e-7)


def test_a_sink_broadcasts_over_heads_and_rows(tmp_path):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    mask = rng.standard_normal((4, 4)).astype(np.float32)
    sink = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    inputs = [q, k, v, mask, np.array(0.5, np.float32), sink]
    got, plugin = run_both(sdpa(False), inputs, tmp_path)
    assert_close(got, plugin, rtol=1e-5, atol=1e-6, scaled_atol=True)
    assert_close(got, reference(False, inputs), rtol=1e-5, atol=1e-6, scaled_atol=True)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_row_gives_nan_and_zero_with_a_sink(kind, tmp_path):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for _ in range(3))
    keep = np.ones((4, 4), bool)
    keep[1] = False
    mask = keep if kind == "bool" else np.where(keep, 0, -np.inf).astype(np.float32)
    got, plugin = run_both(sdpa(False), [q, k, v, mask], tmp_path)
    ref = reference(False, [q, k, v, mask])
    for out in (got, plugin, ref):
        assert np.isnan(out[:, :, 1]).all() and not np.isnan(out[:, :, [0, 2, 3]]).any()
    assert_close(got[:, :, [0, 2, 3]], plugin[:, :, [0, 2, 3]], rtol=1e-5, atol=1e-6)
    sink = np.zeros((1, 2, 4, 1), np.float32)
    inputs = [q, k, v, mask, np.array(0.3, np.float32), sink]
    got, plugin = run_both(sdpa(False), inputs, tmp_path)
    assert (got[:, :, 1] == 0).all() and (plugin[:, :, 1] == 0).all()
    assert_close(got, plugin, rtol=1e-5, atol=1e-6, scaled_atol=True)


# --- shape rule --------------------------------------------------------------------------------


def _ov_shape(shapes, types, causal):
    params = [opset1.parameter(to_ov_shape(s), t) for s, t in zip(shapes, types, strict=True)]
    try:
        node = FACTORY.create("ScaledDotProductAttention", params, {"causal": causal})
    except RuntimeError:
        return "error"
    return from_ov_shape(node.get_output_partial_shape(0))


def _irrun_shape(shapes, types, causal):
    infos = [TensorInfo(s, ELEMENT_TYPES[t]) for s, t in zip(shapes, types, strict=True)]
    try:
        return SDPA.infer(SimpleNamespace(causal=causal), infos)[0].shape
    except ShapeError:
        return "error"


Q, K, V = (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6)
R = Interval(2, 8)
SHAPE_CASES = [
    # (shapes, types (default all f32), causal)
    ([Q, K, V], None, False),
    ([(3, 4), (5, 4), (5, 6)], None, False),  # rank 2
    ([(2, 3, 4), (1, 2, 5, 4), (2, 5, 6)], None, False),  # key adds a batch dim
    ([Q, (3, 1, 5, 4), V], None, False),
    ([Q, (1, 3, 5, 4), V], None, False),  # batch 2 vs 3
    ([Q, (1, 2, 5, 3), V], None, False),  # E differs
    ([Q, (1, 2, 5, 1), V], None, False),  # E of 1 broadcasts in OpenVINO's check
    ([Q, K, (1, 2, 4, 6)], None, False),  # S differs
    ([Q, K, V, ()], None, False),
    ([Q, K, V, (5,)], None, False),
    ([Q, K, V, (3, 5)], None, False),
    ([Q, K, V, (1, 1)], None, False),
    ([Q, K, V, (4, 5)], None, False),
    ([Q, K, V, (3, 6)], None, False),
    ([Q, K, V, (3, 6)], None, True),  # causal ignores the mask's shape
    ([Q, K, V, (2, 1, 1, 2, 3, 5)], None, False),  # the mask adds output dims
    ([(1, 2, 1, 4), K, V, (3, 5)], None, False),  # the mask's L wins over a query L of 1
    ([(1, 2, DYNAMIC, 4), (1, 2, DYNAMIC, 4), (1, 2, DYNAMIC, 6), (3, 5)], None, False),
    ([(DYNAMIC,) * 4] * 3, None, False),
    ([None, K, V], None, False),
    ([Q, None, V], None, False),
    ([Q, K, None], None, False),
    ([(R, 2, 3, 4), (4, 2, 5, 4), V], None, False),
    ([Q, K, V, (3, 5), ()], None, False),
    ([Q, K, V, (3, 5), (1,)], None, False),
    ([Q, K, V, (3, 5), (2,)], None, False),
    ([Q, K, V, (3, 5), (1, 1)], None, False),
    ([Q, K, V, (3, 5), (), (1, 2, 3, 1)], None, False),
    ([Q, K, V, (3, 5), (), (1, 1, 1, 1)], None, False),
    ([Q, K, V, (3, 5), (), (1, 2, 4, 1)], None, False),
    ([Q, K, V, (3, 5), (), (1, 3, 1, 1)], None, False),
    ([Q, K, V, (3, 5), (), (1, 2, 3, 2)], None, False),
    ([Q, K, V, (3, 5), (), (2, 3, 1)], None, False),  # sink rank differs from the query's
    ([Q, K, V, (3, 5), (), (DYNAMIC,) * 4], None, False),
    ([Q, K, V, (3, 5), (), None], None, False),
    ([Q, K, V, (3, 5)], ["f32", "f32", "f32", "boolean"], False),
    ([Q, K, V, (3, 5)], ["f32", "f32", "f32", "i32"], False),
    ([Q, K, V, (3, 5)], ["f32", "f32", "f32", "i32"], True),
    ([Q, K, V, (3, 5)], ["f32", "f32", "f32", "f16"], False),
    ([Q, K, V, (3, 5), ()], ["f32", "f32", "f32", "f32", "f16"], False),
    ([Q, K, V], ["f16"] * 3, False),
    ([Q, K, V], ["bf16"] * 3, False),
    ([Q, K, V], ["i32"] * 3, False),
    ([Q, K, V], ["f32", "f16", "f32"], False),
]


@pytest.mark.parametrize(
    "shapes,types,causal", SHAPE_CASES, ids=[str(i) for i in range(len(SHAPE_CASES))]
)
def test_shape_rule_matches_openvino(shapes, types, causal):
    types = types or ["f32"] * len(shapes)
    want = _ov_shape(shapes, [ov.Type(ELEMENT_TYPES[t].dtype) if t != "bf16" else ov.Type.bf16
                              for t in types], causal)  # fmt: skip
    assert _irrun_shape(shapes, types, causal) == want


def test_shape_errors_name_the_inputs():
    def err(shapes, causal=False, types=None):
        with pytest.raises(ShapeError) as info:
            infos = [TensorInfo(s, ELEMENT_TYPES[t]) for s, t in
                     zip(shapes, types or ["f32"] * len(shapes), strict=True)]  # fmt: skip
            SDPA.infer(SimpleNamespace(causal=causal), infos)
        return str(info.value)

    assert "query must have rank >= 3, got [3,4]" in err([(3, 4), (5, 4), (5, 6)])
    assert "key [1,2,5,3] does not match query [1,2,3,4]" in err([Q, (1, 2, 5, 3), V])
    assert "attention_mask [4,5]" in err([Q, K, V, (4, 5)])
    assert "scale must be a scalar or have one element, got [2]" in err([Q, K, V, (3, 5), (2,)])
    assert "sink must have the query's rank 4" in err([Q, K, V, (3, 5), (), (2, 3, 1)])
    assert "attention_mask is i32" in err([Q, K, V, (3, 5)], types=["f32"] * 3 + ["i32"])
    assert "query f32, key f16" in err([Q, K, V], types=["f32", "f16", "f32"])


# --- validate ----------------------------------------------------------------------------------


def _saved(tmp_path, causal=False):
    x = np.zeros((1, 2, 3, 4), np.float32)
    model = one_op_model(sdpa(causal), [x, x, x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path


def test_validate_reports_a_wrong_declared_output_dim(tmp_path):
    path = _saved(tmp_path)
    text = path.read_text()
    layer = text.index('type="ScaledDotProductAttention"')
    out = text.index("<output>", layer)
    last = text.index("<dim>4</dim>", out)
    path.write_text(text[:last] + "<dim>5</dim>" + text[last + len("<dim>4</dim>") :])
    errors = [d for d in irrun.validate(path) if d.level == "error"]
    assert len(errors) == 1
    assert errors[0].code == "shape-mismatch"
    assert "(ScaledDotProductAttention-v13) port 3: declared [1,2,3,5], inferred [1,2,3,4]" in str(
        errors[0]
    )


def test_validate_reports_a_key_that_does_not_match_the_query(tmp_path):
    path = _saved(tmp_path)
    (error,) = [d for d in irrun.validate(path, shapes="in1[1,2,3,7]") if d.level == "error"]
    assert str(error).endswith(
        "(ScaledDotProductAttention-v13): key [1,2,3,7] does not match query [1,2,3,4] "
        "(input [1,2,3,4], [1,2,3,7], [1,2,3,4]; causal=false)"
    )


def test_validate_warns_about_an_unreadable_causal(tmp_path):
    path = _saved(tmp_path)
    path.write_text(path.read_text().replace('causal="false"', 'causal="maybe"'))
    (warning,) = [d for d in irrun.validate(path) if d.level != "info"]
    assert warning.code == "lenient-attribute" and "ScaledDotProductAttention" in str(warning)


def test_reads_an_ir_written_by_openvino_and_runs_it(tmp_path):
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 2, 5, 8)).astype(np.float32) for _ in range(3))
    model = one_op_model(
        lambda *p: opset13.scaled_dot_product_attention(*p, causal=True), [q, k, v]
    )
    got = run_saved(model, [q, k, v], tmp_path)[0]
    assert_close(got, run_cpu(model, [q, k, v])[0], rtol=1e-5, atol=1e-6, scaled_atol=True)


@pytest.mark.parametrize("n_inputs", [3, 4, 5, 6])
def test_ir_saved_by_openvino_validates_without_findings(n_inputs, tmp_path):
    x = np.zeros((1, 2, 3, 4), np.float32)
    extra = [np.zeros((3, 3), bool), np.array(0.5, np.float32), np.zeros((1, 2, 3, 1), np.float32)]
    inputs = [x, x, x, *extra[: n_inputs - 3]]
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(sdpa(True), inputs), path, compress_to_fp16=False)
    assert [str(d) for d in irrun.validate(path)] == []


# --------------------------------------------------------------------------- element types
# Every type of query, key, value, mask, scale and sink (one type; the sweep above runs
# f32 and f16 against the plugin, bf16 is checked by hand above), against OpenVINO's
# reference (or the attention in f32 rounded once, for the f8 floats); a boolean mask
# with each; causal=true takes a mask of any type, which it ignores; validate names the
# types it does not take.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.attention import REAL_TYPES  # noqa: E402

# An f8 result may be a step of its own apart (OpenVINO rounds to f8 through f16, twice).
F8_RTOL = {"f8e4m3": 2.0**-3, "f8e5m2": 2.0**-2}


@pytest.mark.parametrize("et", REAL_TYPES)
@pytest.mark.parametrize("mask", ["same", "boolean"])
def test_element_types(et, mask, tmp_path):
    q, k, v = (convertible(et, (1, 2, 3, 4), seed=i, low=-1, high=1) for i in range(3))
    m = (convertible("boolean", (3, 3), seed=4) if mask == "boolean"
         else convertible(et, (3, 3), seed=4, low=-1, high=1))  # fmt: skip
    m[:, 0] = 1
    s, sink = np.float32([0.5]), convertible(et, (1, 2, 3, 1), seed=5, low=-1, high=1)
    types = [et, et, et, et if mask == "same" else "boolean", et, et]
    got, want = typed_runs(_sdpa_with_sink, [q, k, v, m, s, sink], types, tmp_path)
    # OpenVINO's reference computes bf16 in bf16, irrun in f32 rounded once: where terms
    # cancel they part by an ulp of the terms (values here are at most 1).
    assert_typed_close(got, want, rtol=F8_RTOL.get(et, 2.0**-7),
                       atol=2.0**-8 if et == "bf16" else 1e-6)


def _sdpa_with_sink(q, k, v, m, s, sink):
    node = _get_node_factory("opset13").create("ScaledDotProductAttention", [q, k, v, m, s, sink],
                                               {"causal": False})  # fmt: skip
    return node


@pytest.mark.parametrize("mask_type", ["i32", "u8", "f16", "i64"])
def test_causal_ignores_a_mask_of_any_type(mask_type, tmp_path):
    q, k, v = (convertible("f32", (1, 2, 3, 4), seed=i, low=-1, high=1) for i in range(3))
    m = convertible(mask_type, (3, 3), seed=4)
    build = lambda *p: opset13.scaled_dot_product_attention(*p, causal=True)  # noqa: E731
    got, want = typed_runs(build, [q, k, v, m], ["f32", "f32", "f32", mask_type], tmp_path)
    plain, _ = typed_runs(lambda *p: opset13.scaled_dot_product_attention(*p[:3], causal=True),
                          [q, k, v], ["f32"] * 3, tmp_path)  # fmt: skip
    assert_typed_close(got, want)
    np.testing.assert_array_equal(got[0], plain[0])


@pytest.mark.parametrize(("port", "et"), [(0, "i32"), (0, "f8e8m0"), (1, "u8"), (2, "boolean"),
                                          (3, "i32"), (4, "i64"), (4, "f4e2m1")])  # fmt: skip
def test_validate_names_a_type_it_does_not_take(port, et, tmp_path):
    q = np.zeros((1, 2, 2), np.float32)
    m, s = np.zeros((2, 2), np.float32), np.float32([1])
    label = "ScaledDotProductAttention-v13"

    def errors_for(*p):
        return opset13.scaled_dot_product_attention(*p, causal=False)

    if port == 3:  # not a type the declaration refuses: the shape rule's (causal=false)
        from support.ov_oneop import one_op_model
        from support.typed import refusals

        errors = refusals(one_op_model(errors_for, [q, q, q, m, s]), tmp_path, {port: et})
        assert [f.code for f in errors] == ["shape-error"], errors
        assert "attention_mask is i32; it must be boolean" in errors[0].message
        return
    assert_refused(errors_for, [q, q, q, m, s], port, et, tmp_path, label)
