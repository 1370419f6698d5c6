"""NormalizeL2-0, LRN-0, MVN-0 and GroupNormalization-12 against the CPU plugin and by hand;
and, at the end, BatchNormInference (rtol 1e-5, atol 1e-6: the plugin folds it into one
scale and shift) and MVN-6 (the tolerances below).

OpenVINO's ``Model.evaluate`` has no kernel for any of these four ops (it raises "Evaluation
failed"), so the CPU plugin is the oracle here, and OpenVINO's reference kernels (read in its
sources) decide where the plugin has no kernel (LRN over axes other than {1} or all spatial).

Tolerances: irrun sums in a different order than the plugin's vectorized loops, so f32
results differ in the last bits: 1e-5 relative to the output's largest magnitude covers a
sum of a few hundred terms (n * eps_f32 ~ 100 * 1.2e-7).  For f16 both compute in f32 and
round once to f16; a result near a rounding boundary may round the other way: one f16 ulp,
2e-3 relative.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset2, opset5, opset6, opset12
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_irrun, run_saved

import irrun
from irrun.ir.attributes import parse_attributes
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve

F32, F16, I64 = (ELEMENT_TYPES[n] for n in ("f32", "f16", "i64"))
TOL = {"f32": 1e-5, "f16": 2e-3}


def axes_const(values) -> ov.Node:
    values = list(values) if isinstance(values, (list, tuple)) else values
    if isinstance(values, list):
        return ov.op.Constant(ov.Type.i64, ov.Shape([len(values)]), values)
    return opset1.constant(np.int64(values))


def data(shape, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2 + 0.5).astype(np.dtype(dtype.replace("f", "float")))


def close(got, want, dtype: str, what: str = "") -> None:
    tol = TOL[dtype]
    assert_close(got, want, rtol=tol, atol=tol, scaled_atol=True, what=what)


def infer(op_type: str, opset: str, attrs: dict[str, str], *inputs: TensorInfo):
    op = resolve(op_type, opset)
    a = SimpleNamespace(**parse_attributes(op.attrs, attrs).values)
    if op.check is not None:
        op.check(a)
    return op.infer(a, list(inputs))


def const_info(values) -> TensorInfo:
    v = np.asarray(values, np.int64)
    return TensorInfo(v.shape, I64, v)


def fresh(tmp_path):
    """A new directory per saved model: irrun caches what it read by path."""
    fresh.count = getattr(fresh, "count", 0) + 1
    d = tmp_path / f"m{fresh.count}"
    d.mkdir()
    return d


def ir_text(build, x: np.ndarray, tmp_path) -> tuple[str, object]:
    """The IR text OpenVINO saves for ``build``, and the directory holding its weights."""
    directory = fresh(tmp_path)
    path = directory / "m.xml"
    ov.save_model(one_op_model(build, [x]), path, compress_to_fp16=False)
    return path.read_text(), directory


def run_ir_text(text: str, x: np.ndarray, directory):
    """irrun's and the CPU plugin's output of an IR file given as text (weights beside it)."""
    path = directory / "edited.xml"
    (directory / "edited.bin").write_bytes((directory / "m.bin").read_bytes())
    path.write_text(text)
    want = ov.Core().compile_model(ov.Core().read_model(path), "CPU",
                                   {"INFERENCE_PRECISION_HINT": "f32"})([x])[0]  # fmt: skip
    got = next(iter(irrun.load(path).run({"in0": x}).values()))
    return got, np.asarray(want)


# --------------------------------------------------------------------------- NormalizeL2-0

L2_CASES = [  # shape, axes, eps, eps_mode
    ((2, 6, 5, 4), [1], 1e-6, "add"), ((2, 6, 5, 4), [1], 1e-6, "max"),
    ((2, 6, 5, 4), [2, 3], 0.5, "add"), ((2, 6, 5, 4), [3, 1], 30.0, "max"),
    ((2, 6, 5, 4), [1, 2, 3], 1e-3, "max"), ((2, 6, 5, 4), [-1], 1e-2, "add"),
    ((2, 6, 5, 4), [0], 1e-2, "max"), ((2, 6, 5, 4), [1, -3], 1e-2, "add"),
    ((2, 6, 5, 4), 1, 1e-2, "add"), ((3, 7), [1], 1e-4, "max"), ((3, 7), [0, 1], 1e-4, "add"),
    ((4,), [0], 1e-4, "add"), ((1, 1, 1), [2], 1e-4, "max"), ((2, 3, 2, 2, 3), [2, 4], 0.1, "add"),
    ((2, 6, 5, 4), [], 1e-2, "add"), ((2, 6, 5, 4), [], 1e-2, "max"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize(("shape", "axes", "eps", "mode"), L2_CASES, ids=str)
def test_normalize_l2_matches_cpu(shape, axes, eps, mode, dtype, tmp_path):
    x = data(shape, dtype, len(shape) + len(str(axes)))
    x.flat[0] = 0  # zero elements: 0 out, with or without axes
    got, want = run_ir_text(*l2_ir(x, axes, eps, mode, tmp_path))
    close(got, want, dtype, f"{axes} {mode}")


def l2_ir(x, axes, eps, mode, tmp_path):
    """NormalizeL2's IR text, x and its directory.  OpenVINO's Python factory drops
    ``eps_mode`` (it passes it as "mode"), so the mode is written into the text."""
    build = lambda p: opset1.normalize_l2(p, axes_const(axes), eps, mode)  # noqa: E731
    text, directory = ir_text(build, x, tmp_path)
    assert 'eps_mode="add"' in text
    return text.replace('eps_mode="add"', f'eps_mode="{mode}"'), x, directory


def test_normalize_l2_by_hand(tmp_path):
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]], np.float32)

    def run(axes, eps, mode):
        return run_ir_text(*l2_ir(x, axes, eps, mode, tmp_path))[0]

    # Row 0: sqrt(9 + 16) = 5; eps 11 added makes it 6, as a floor it leaves 5.
    np.testing.assert_allclose(run([1], 11.0, "add")[0], [0.5, 4 / 6], rtol=1e-6)
    np.testing.assert_allclose(run([1], 11.0, "max")[0], [0.6, 0.8], rtol=1e-6)
    # A zero row: 0 / sqrt(eps).  eps 0 with "max" gives 0 / 0.
    assert run([1], 4.0, "max")[1].tolist() == [0, 0]
    assert np.isnan(run([1], 0.0, "max")[1]).all()
    # eps 30 as a floor over 1 + 0 (row 2): 1 / sqrt(30).
    np.testing.assert_allclose(run([1], 30.0, "max")[2], [1 / math.sqrt(30), 0], rtol=1e-6)
    # No axes: each element divided by itself, whatever eps.
    assert run([], 100.0, "add").tolist() == [[1, 1], [0, 0], [1, 0]]


@pytest.mark.parametrize("shape", [(6,), (1, 1, 2, 1, 3)], ids=str)
def test_normalize_l2_without_axes_follows_the_reference(shape, tmp_path):
    """No axes: OpenVINO's reference divides each element by itself (1, or 0 for 0), as the
    plugin does at ranks 2 to 4; at rank 1 and 5 the plugin computes x / sqrt(x**2 + eps)."""
    x = np.array([-2.0, 0.0, 0.5, -0.1, 3.0, 1.0], np.float32).reshape(shape)
    got, cpu = run_ir_text(*l2_ir(x, [], 0.25, "add", tmp_path))
    assert got.ravel().tolist() == [1, 0, 1, 1, 1, 1]
    np.testing.assert_allclose(cpu.ravel(), (x / np.sqrt(x * x + 0.25)).ravel(), rtol=1e-5)


def test_normalize_l2_shape_rule():
    x = TensorInfo((2, Interval(1, 8), DYNAMIC), F32)
    attrs = {"eps": "1e-6", "eps_mode": "add"}
    assert infer("NormalizeL2", "opset1", attrs, x, const_info([1, -1]))[0].shape == x.shape
    assert infer("NormalizeL2", "opset16", attrs, TensorInfo(None, F16), const_info([5]))[0] == (
        TensorInfo(None, F16)
    )
    with pytest.raises(ShapeError, match="axes value 3 is out of range for rank 3"):
        infer("NormalizeL2", "opset1", attrs, x, const_info([3]))
    with pytest.raises(ShapeError, match="axes must be a constant"):
        infer("NormalizeL2", "opset1", attrs, x, TensorInfo((1,), I64))
    with pytest.raises(ShapeError, match="axes must be 0-D or 1-D"):
        infer("NormalizeL2", "opset1", attrs, x, const_info([[1]]))
    with pytest.raises(ShapeError, match="input 0 is i32, which NormalizeL2-v0 does not take"):
        infer("NormalizeL2", "opset1", attrs, TensorInfo((2, 3), ELEMENT_TYPES["i32"]),
              const_info([1]))  # fmt: skip
    with pytest.raises(ValueError, match=r'eps_mode.="sum": expected one of add, max'):
        infer("NormalizeL2", "opset1", {"eps": "1", "eps_mode": "sum"}, x, const_info([1]))


# --------------------------------------------------------------------------- LRN-0

# The CPU plugin runs LRN over the channels ({1}) or over all spatial axes ({2, ..}), with
# non-negative axes, and truncates bias to an integer: the sweep keeps to what it computes.
LRN_CASES = [  # shape, axes, alpha, beta, bias, size
    ((2, 6, 5, 4), [1], 1e-4, 0.75, 1.0, 5), ((2, 6, 5, 4), [1], 0.3, 0.75, 2.0, 1),
    ((2, 6, 5, 4), [1], 0.3, 0.5, 2.0, 2), ((2, 6, 5, 4), [1], 0.3, 1.0, 3.0, 3),
    ((2, 6, 5, 4), [1], 2.0, 0.75, 1.0, 4), ((2, 6, 5, 4), [1], 0.3, 0.75, 1.0, 13),
    ((2, 6, 5, 4), [2, 3], 0.3, 0.75, 2.0, 1), ((2, 6, 5, 4), [2, 3], 0.3, 0.75, 2.0, 2),
    ((2, 6, 5, 4), [3, 2], 1.0, 0.6, 1.0, 3), ((2, 6, 5, 4), [2, 3], 0.3, 0.75, 2.0, 4),
    ((2, 6, 5, 4), [3, 2], 0.3, 0.75, 0.0, 5), ((1, 3, 7), [1], 0.3, 0.75, 1.0, 3),
    ((1, 3, 7), [2], 0.3, 0.75, 1.0, 3), ((2, 4, 3, 3, 3), [1], 0.5, 0.75, 1.0, 3),
    ((2, 4, 3, 3, 3), [2, 3, 4], 0.5, 0.75, 1.0, 3), ((2, 6, 1, 1), [1], 1e-4, 0.75, 1.0, 5),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize(("shape", "axes", "alpha", "beta", "bias", "size"), LRN_CASES, ids=str)
def test_lrn_matches_cpu(shape, axes, alpha, beta, bias, size, dtype, tmp_path):
    x = data(shape, dtype, size + len(axes))
    build = lambda p: opset1.lrn(p, axes_const(axes), alpha, beta, bias, size)  # noqa: E731
    got, want = run_both(build, [x], tmp_path)
    close(got, want, dtype, f"{axes} size={size}")


def test_lrn_by_hand(tmp_path):
    x = np.array([[[1.0], [2.0], [2.0], [4.0]]], np.float32)  # (1, 4, 1)

    def run(axes, alpha, beta, bias, size):
        build = lambda p: opset1.lrn(p, axes_const(axes), alpha, beta, bias, size)  # noqa: E731
        return run_saved(one_op_model(build, [x]), [x], fresh(tmp_path))[0].ravel()

    # size 3 over the channels: squares 1, 4, 4, 16; window sums 5, 9, 24, 20; alpha / 3.
    want = [v / (1 + 3 / 3 * s) for v, s in zip([1, 2, 2, 4], [5, 9, 24, 20], strict=True)]
    np.testing.assert_allclose(run([1], 3.0, 1.0, 1.0, 3), want, rtol=1e-6)
    # size 4: the window is still (4 - 1) // 2 = 1 either side, but alpha is divided by 4.
    want = [v / (2 + 4 / 4 * s) ** 0.5 for v, s in zip([1, 2, 2, 4], [5, 9, 24, 20], strict=True)]
    np.testing.assert_allclose(run([1], 4.0, 0.5, 2.0, 4), want, rtol=1e-6)
    # Over channels and the length-1 axis 2: the box is the same, alpha / 3**2.
    want = [v / (1 + 9 / 9 * s) for v, s in zip([1, 2, 2, 4], [5, 9, 24, 20], strict=True)]
    np.testing.assert_allclose(run([1, 2], 9.0, 1.0, 1.0, 3), want, rtol=1e-6)
    # Over axis 0 (one sample): each element with itself only.
    want = [v / (1 + 5 / 5 * v * v) for v in [1, 2, 2, 4]]
    np.testing.assert_allclose(run([0], 5.0, 1.0, 1.0, 5), want, rtol=1e-6)


def test_lrn_over_channels_and_space_follows_the_reference(tmp_path):
    """The CPU plugin computes something else for axes {1, 2, 3}; irrun follows the
    reference kernel (one box over all three axes, alpha / size**3)."""
    x = data((1, 3, 4, 4), "f32", 3)
    build = lambda p: opset1.lrn(p, axes_const([1, 2, 3]), 0.5, 0.75, 1.0, 3)  # noqa: E731
    got, cpu = run_both(build, [x], tmp_path)
    sq = np.pad(x.astype(np.float64) ** 2, [(0, 0), (1, 1), (1, 1), (1, 1)])
    box = sum(sq[:, i:i + 3, j:j + 4, k:k + 4] for i in range(3) for j in range(3)
              for k in range(3))  # fmt: skip
    want = x / (1 + 0.5 / 27 * box) ** 0.75
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert not np.allclose(cpu, want, rtol=1e-3)  # the plugin deviation, documented


def test_lrn_bias_is_not_truncated(tmp_path):
    """The CPU plugin computes with bias 1.5 as if it were 1; irrun uses 1.5, as OpenVINO's
    reference kernel and specification do."""
    x = data((1, 6, 2, 2), "f32", 1)
    got, cpu = run_both(lambda p: opset1.lrn(p, axes_const([1]), 0.3, 0.75, 1.5, 3), [x],
                        tmp_path)  # fmt: skip
    truncated = run_cpu(one_op_model(lambda p: opset1.lrn(p, axes_const([1]), 0.3, 0.75, 1.0, 3),
                                     [x]), [x])[0]  # fmt: skip
    close(cpu, truncated, "f32")
    sq = np.pad(x.astype(np.float64) ** 2, [(0, 0), (1, 1), (0, 0), (0, 0)])
    want = x / (1.5 + 0.1 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.75
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_lrn_shape_rule():
    attrs = {"alpha": "1e-4", "beta": "0.75", "bias": "1", "size": "5"}
    x = TensorInfo((DYNAMIC, 16, Interval(2, 9), 9), F32)
    assert infer("LRN", "opset1", attrs, x, const_info([1]))[0].shape == x.shape
    assert infer("LRN", "opset1", attrs, x, TensorInfo((2,), I64))[0].shape == x.shape
    with pytest.raises(ShapeError, match="axes value 4 is out of range for rank 4"):
        infer("LRN", "opset1", attrs, x, const_info([1, 4]))
    with pytest.raises(ShapeError, match="axes has 5 values but data has rank 4"):
        infer("LRN", "opset1", attrs, x, TensorInfo((5,), I64))
    with pytest.raises(ShapeError, match="axes must be 1-D"):
        infer("LRN", "opset1", attrs, x, const_info(1))
    with pytest.raises(ValueError, match="size must be at least 1, got 0"):
        infer("LRN", "opset1", {**attrs, "size": "0"}, x, const_info([1]))


# --------------------------------------------------------------------------- MVN-0

MVN0_SHAPES = [(2, 6, 5, 4), (3, 4, 7), (2, 3, 2, 3, 4), (1, 5, 1, 1)]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("eps", [1e-9, 0.5])
@pytest.mark.parametrize("variance", [True, False])
@pytest.mark.parametrize("across", [True, False])
@pytest.mark.parametrize("shape", MVN0_SHAPES, ids=str)
def test_mvn0_matches_cpu(shape, across, variance, eps, dtype, tmp_path):
    x = data(shape, dtype, len(shape) * 4 + across * 2 + variance)
    got, want = run_both(lambda p: opset2.mvn(p, across, variance, eps), [x], tmp_path)
    close(got, want, dtype, f"across={across} variance={variance}")


def _mvn0_ir(text: str, data_attrs: str) -> str:
    start = text.index("<data eps=")
    end = text.index("/>", start)
    return text[:start] + f"<data {data_attrs} " + text[end:]


@pytest.mark.parametrize(("attrs", "axes"), [
    ('eps="0.01" normalize_variance="true" reduction_axes="2,3"', (2, 3)),
    # reduction_axes given: across_channels is ignored.
    ('eps="0.01" across_channels="true" normalize_variance="true" reduction_axes="2,3"', (2, 3)),
    ('eps="0.01" across_channels="false" normalize_variance="true" reduction_axes="1,2,3"',
     (1, 2, 3)),
    # An empty reduction_axes: across_channels decides.
    ('eps="0.01" across_channels="true" normalize_variance="false" reduction_axes=""', (1, 2, 3)),
    ('eps="0.01" across_channels="false" normalize_variance="true"', (2, 3)),
])  # fmt: skip
def test_mvn0_reduction_axes_win_over_across_channels(attrs, axes, tmp_path):
    x = data((2, 3, 4, 5), "f32", 7)
    text, directory = ir_text(lambda p: opset2.mvn(p, True, True, 0.01), x, tmp_path)
    got, want = run_ir_text(_mvn0_ir(text, attrs), x, directory)
    close(got, want, "f32", attrs)
    d = x - x.mean(axis=axes, keepdims=True)
    if 'normalize_variance="true"' in attrs:
        d = d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + 0.01)
    np.testing.assert_allclose(got, d, rtol=1e-5, atol=1e-5)


def test_mvn0_by_hand(tmp_path):
    x = np.array([[[1.0, 3.0], [5.0, 7.0]]], np.float32)  # (1, 2, 2)
    got = run_saved(one_op_model(lambda p: opset2.mvn(p, False, True, 1.0), [x]), [x],
                    fresh(tmp_path))[0]  # fmt: skip
    # Per channel: mean 2 and 6, variance 1; eps inside the root: / sqrt(2).
    np.testing.assert_allclose(got, [[[-1 / math.sqrt(2), 1 / math.sqrt(2)]] * 2], rtol=1e-6)
    got = run_saved(one_op_model(lambda p: opset2.mvn(p, True, False, 1.0), [x]), [x],
                    fresh(tmp_path))[0]  # fmt: skip
    assert got.tolist() == [[[-3, -1], [1, 3]]]  # mean 4 over channels and length


def test_mvn0_shape_rule_and_versions():
    assert resolve("MVN", "opset2").label == resolve("MVN", "opset5").label == "MVN-v0"
    assert resolve("MVN", "opset6").label == "MVN-v6"
    attrs = {"eps": "1e-9", "across_channels": "false", "normalize_variance": "true"}
    x = TensorInfo((DYNAMIC, 3, Interval(1, 4)), F32)
    assert infer("MVN", "opset2", attrs, x)[0].shape == x.shape
    assert infer("MVN", "opset2", attrs, TensorInfo(None, F16))[0] == TensorInfo(None, F16)
    with pytest.raises(ShapeError, match="reduction_axes value 3 is out of range for rank 3"):
        infer("MVN", "opset2", {**attrs, "reduction_axes": "1,3"}, x)
    with pytest.raises(ValueError, match="needs across_channels or reduction_axes"):
        infer("MVN", "opset2", {"eps": "1e-9", "normalize_variance": "true"}, x)
    with pytest.raises(ValueError, match="eps must be at least 0"):
        infer("MVN", "opset2", {**attrs, "eps": "-1"}, x)


# --------------------------------------------------------------------------- GroupNormalization-12

GN_CASES = [  # shape, groups, epsilon
    ((2, 6, 5, 4), 1, 1e-5), ((2, 6, 5, 4), 2, 1e-5), ((2, 6, 5, 4), 3, 0.5),
    ((2, 6, 5, 4), 6, 1e-3), ((3, 4), 2, 1e-5), ((3, 4), 4, 0.1), ((2, 8, 3), 4, 1e-5),
    ((1, 4, 2, 3, 2), 2, 1e-5), ((2, 6, 1, 1), 3, 1e-2), ((2, 6, 1, 1), 6, 1e-2),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize(("shape", "groups", "eps"), GN_CASES, ids=str)
def test_group_normalization_matches_cpu(shape, groups, eps, dtype, tmp_path):
    x = data(shape, dtype, groups + len(shape))
    rng = np.random.default_rng(groups)
    scale, bias = (rng.standard_normal(shape[1]).astype(x.dtype) for _ in range(2))

    def build(p):
        return opset12.group_normalization(p, opset1.constant(scale), opset1.constant(bias),
                                           groups, eps)  # fmt: skip

    got, want = run_both(build, [x], tmp_path)
    close(got, want, dtype, f"groups={groups}")


def test_group_normalization_by_hand(tmp_path):
    x = np.array([[[1.0, 3.0], [5.0, 7.0], [2.0, 2.0], [0.0, 4.0]]], np.float32)  # (1, 4, 2)
    scale = np.float32([1, 2, 1, 1])
    bias = np.float32([0, 0, 10, 0])

    def build(p):
        return opset12.group_normalization(p, opset1.constant(scale), opset1.constant(bias), 2,
                                           0.0)  # fmt: skip

    got = run_saved(one_op_model(build, [x]), [x], fresh(tmp_path))[0]
    # Group 0 (1, 3, 5, 7): mean 4, variance 5.  Group 1 (2, 2, 0, 4): mean 2, variance 2.
    r5, r2 = math.sqrt(5), math.sqrt(2)
    want = [[-3 / r5, -1 / r5], [2 / r5, 6 / r5], [10, 10], [-2 / r2, 2 / r2]]
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    assert np.allclose(got, run_cpu(one_op_model(build, [x]), [x])[0], rtol=1e-5)


def test_group_normalization_shape_rule():
    attrs = {"num_groups": "2", "epsilon": "1e-5"}
    vec = TensorInfo((6,), F32)
    x = TensorInfo((DYNAMIC, 6, 4), F32)
    assert infer("GroupNormalization", "opset12", attrs, x, vec, vec)[0].shape == x.shape
    # The channel dim comes from scale or bias when data does not know it.
    x = TensorInfo((2, DYNAMIC, 4), F32)
    assert infer("GroupNormalization", "opset16", attrs, x, vec, TensorInfo(None, F32))[0].shape == (
        2, 6, 4)  # fmt: skip
    with pytest.raises(ShapeError, match="6 channels do not split into num_groups 4 groups"):
        infer("GroupNormalization", "opset12", {**attrs, "num_groups": "4"},
              TensorInfo((1, 6, 2), F32), vec, vec)  # fmt: skip
    with pytest.raises(ShapeError, match="num_groups 8 exceeds the 6 channels"):
        infer("GroupNormalization", "opset12", {**attrs, "num_groups": "8"},
              TensorInfo((1, 6, 2), F32), vec, vec)  # fmt: skip
    with pytest.raises(ShapeError, match="bias has 5 values but data has 6 channels"):
        infer("GroupNormalization", "opset12", attrs, TensorInfo((1, 6), F32), vec,
              TensorInfo((5,), F32))  # fmt: skip
    with pytest.raises(ShapeError, match="scale must be 1-D"):
        infer("GroupNormalization", "opset12", attrs, TensorInfo((1, 6), F32),
              TensorInfo((6, 1), F32), vec)  # fmt: skip
    with pytest.raises(ShapeError, match="rank 2 or more"):
        infer("GroupNormalization", "opset12", attrs, TensorInfo((6,), F32), vec, vec)
    with pytest.raises(ShapeError, match="different element types: f16, f32"):
        infer("GroupNormalization", "opset12", attrs, TensorInfo((1, 6), F16), vec, vec)
    with pytest.raises(ValueError, match="num_groups must be a positive integer, got 0"):
        infer("GroupNormalization", "opset12", {**attrs, "num_groups": "0"}, x, vec, vec)


# --------------------------------------------------------------------------- validate


def _validate_edit(build, x, tmp_path, old: str, new: str) -> list[str]:
    text, directory = ir_text(build, x, tmp_path)
    assert old in text
    path = directory / "edited.xml"
    (directory / "edited.bin").write_bytes((directory / "m.bin").read_bytes())
    path.write_text(text.replace(old, new, 1))
    return [str(d) for d in irrun.validate(path) if d.level == "error"]


def test_validate_names_the_layer_with_a_bad_attribute(tmp_path):
    x = data((1, 4, 3, 3), "f32", 0)
    found = _validate_edit(lambda p: opset1.normalize_l2(p, axes_const([1]), 1e-6, "add"), x,
                           tmp_path, 'eps_mode="add"', 'eps_mode="mul"')  # fmt: skip
    assert len(found) == 1 and "NormalizeL2" in found[0] and "eps_mode" in found[0]
    found = _validate_edit(lambda p: opset12.group_normalization(
        p, opset1.constant(np.ones(4, np.float32)), opset1.constant(np.ones(4, np.float32)), 2,
        1e-5), x, tmp_path, 'num_groups="2"', 'num_groups="3"')  # fmt: skip
    assert len(found) == 1 and "GroupNormalization" in found[0] and "num_groups 3" in found[0]
    found = _validate_edit(lambda p: opset1.lrn(p, axes_const([1]), 1e-4, 0.75, 1.0, 5), x,
                           tmp_path, 'size="5"', 'size="0"')  # fmt: skip
    assert len(found) == 1 and "LRN" in found[0] and "size" in found[0]


def test_validate_names_the_layer_with_a_wrong_declared_dim(tmp_path):
    x = data((1, 4, 3, 3), "f32", 0)
    text, _ = ir_text(lambda p: opset2.mvn(p, True, True, 1e-9), x, tmp_path)
    start = text.index('type="MVN"')
    port = text.index("<output>", start)
    dim = text.index("<dim>4</dim>", port)
    path = tmp_path / "bad.xml"
    path.write_text(text[:dim] + "<dim>5</dim>" + text[dim + len("<dim>4</dim>") :])
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert len(found) == 1 and "MVN" in found[0] and "5" in found[0] and "4" in found[0]


# --------------------------------------------------------------------------- empty tensors

EMPTY_BUILDERS = {
    "NormalizeL2": lambda p: opset1.normalize_l2(p, axes_const([1]), 1e-6, "add"),
    "LRN": lambda p: opset1.lrn(p, axes_const([1]), 1e-4, 0.75, 1.0, 3),
    "MVN": lambda p: opset2.mvn(p, True, True, 1e-9),
    "GroupNormalization": lambda p: opset12.group_normalization(
        p, opset1.constant(np.ones(4, np.float32)), opset1.constant(np.ones(4, np.float32)), 2, 1e-5
    ),
}


@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 4, 0)], ids=str)
@pytest.mark.parametrize("op", sorted(EMPTY_BUILDERS))
def test_empty_tensors_match_cpu(op, shape, tmp_path):
    x = np.zeros(shape, np.float32)
    got, want = run_both(EMPTY_BUILDERS[op], [x], tmp_path)
    assert_close(got, want)


# --------------------------------------------------------------------------- seeded random sweep


def _draw_norm(rng):
    rank = rng.randint(2, 5)
    shape = [rng.randint(1, 4) for _ in range(rank)]
    op = rng.choice(("NormalizeL2", "LRN", "MVN", "GroupNormalization"))
    if op == "NormalizeL2":
        # No axes only at ranks 2-4: the plugin's answer for it depends on the rank
        # (test_normalize_l2_without_axes_follows_the_reference).
        axes = sorted(rng.sample(range(rank), rng.randint(1, rank)))
        eps, mode = rng.choice((1e-6, 0.1, 5.0)), rng.choice(("add", "max"))
        return op, shape, (axes, eps, mode)
    if op == "LRN":
        axes = [1] if rank < 3 or rng.random() < 0.5 else list(range(2, rank))
        return op, shape, (axes, rng.uniform(1e-4, 2), rng.uniform(0.5, 1), rng.randint(0, 3),
                           rng.randint(1, 6))  # fmt: skip
    if op == "MVN":
        return op, shape, (rng.random() < 0.5, rng.random() < 0.5, rng.choice((1e-9, 0.1)))
    groups = rng.choice([g for g in range(1, shape[1] + 1) if shape[1] % g == 0])
    return op, shape, (groups, rng.choice((1e-5, 0.5)))


@pytest.mark.parametrize("seed", range(16))
def test_random_norm_ops_against_cpu(seed, tmp_path):
    rng = random.Random(seed)
    for _ in range(4):
        op, shape, args = _draw_norm(rng)
        dtype = rng.choice(("f32", "f16"))
        x = data(shape, dtype, seed)
        what = f"{op} {shape} {args} {dtype}"
        if op == "NormalizeL2":
            got, want = run_ir_text(*l2_ir(x, *args, tmp_path))
        elif op == "LRN":
            got, want = run_both(
                lambda p, a=args: opset1.lrn(p, axes_const(a[0]), *a[1:]), [x], fresh(tmp_path)
            )
        elif op == "MVN":
            got, want = run_both(lambda p, a=args: opset2.mvn(p, *a), [x], fresh(tmp_path))
        else:
            # Two constants: one node as both scale and bias trips the plugin's compiler.
            w = np.linspace(-1, 2, shape[1]).astype(x.dtype)
            got, want = run_both(
                lambda p, a=args, w=w: opset12.group_normalization(
                    p, opset1.constant(w), opset1.constant(w[::-1].copy()), *a), [x],
                fresh(tmp_path))  # fmt: skip
        close(got, want, dtype, what)


# --------------------------------------------------------------------------- BatchNormInference


@pytest.mark.parametrize("module", [opset1, opset5], ids=["v1", "v5"])
@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 5), (2, 3, 4, 5), (1, 2, 3, 2, 4)])
def test_batch_norm_matches_cpu(module, shape, tmp_path):
    rng = np.random.default_rng(shape[1] * 7 + len(shape))
    c = shape[1]
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    gamma, beta, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.01, 4, c).astype(np.float32)
    stats = [opset1.constant(v) for v in (gamma, beta, mean, var)]
    got, want = run_both(lambda p: module.batch_norm_inference(p, *stats, 1e-3), [x], tmp_path)
    assert_close(got, want, rtol=1e-5, atol=1e-6, what=str(shape))


@pytest.mark.parametrize("module", [opset1, opset5], ids=["v1", "v5"])
def test_batch_norm_by_hand(module, tmp_path):
    x = np.array([[1.0, 4.0], [3.0, 0.0]], np.float32)
    c = [opset1.constant(np.array(v, np.float32)) for v in ([2, 2], [1, 1], [2, 2], [3, 3])]
    got = run_irrun(lambda p: module.batch_norm_inference(p, *c, 1.0), [x], tmp_path)
    # gamma * (x - mean) / sqrt(var + eps) + beta with sqrt(4) = 2: x - 1.
    assert got.tolist() == [[0.0, 3.0], [2.0, -1.0]]


# --------------------------------------------------------------------------- MVN-6

MVN_CASES = [  # axes, normalize_variance, eps, eps_mode, dtype
    ([-1], True, 1e-5, "inside_sqrt", "f32"), ([2, 3], True, 1e-3, "outside_sqrt", "f32"),
    ([1, 2, 3], False, 1e-5, "inside_sqrt", "f32"), ([0], True, 1e-5, "outside_sqrt", "f32"),
    ([3, 1], True, 0.5, "inside_sqrt", "f32"), ([-1], True, 1e-5, "inside_sqrt", "f16"),
    ([1], False, 1e-9, "outside_sqrt", "f16"),
]  # fmt: skip


@pytest.mark.parametrize(("axes", "variance", "eps", "mode", "dtype"), MVN_CASES, ids=str)
def test_mvn_matches_cpu(axes, variance, eps, mode, dtype, tmp_path):
    rng = np.random.default_rng(len(axes) * 5 + int(variance))
    x = (rng.standard_normal((2, 3, 4, 5)) * 3 + 1).astype(dtype.replace("f", "float"))
    build = lambda p: opset6.mvn(p, opset1.constant(np.int64(axes)), variance, eps, mode)  # noqa: E731
    got, want = run_both(build, [x], tmp_path)
    rtol = 2e-3 if dtype == "f16" else 1e-5
    assert_close(got, want, rtol=rtol, atol=rtol, scaled_atol=True, what=str(axes))


def test_mvn_by_hand(tmp_path):
    x = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 2.0]], np.float32)
    axes = opset1.constant(np.int32([1]))
    got = run_irrun(lambda p: opset6.mvn(p, axes, True, 0.25, "outside_sqrt"), [x], tmp_path)
    # Row 0: mean 3, variance 8/3; row 1: all at its mean.
    want = [[v / (math.sqrt(8 / 3) + 0.25) for v in (-2, 0, 2)], [0, 0, 0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = run_irrun(lambda p: opset6.mvn(p, axes, False, 0.25, "inside_sqrt"), [x], tmp_path)
    assert got.tolist() == [[-2, 0, 2], [0, 0, 0]]
    assert resolve("MVN", "opset6").label == resolve("MVN", "opset16").label == "MVN-v6"
    # An axis named twice counts once, as in the plugin; one out of range is refused.
    twice = run_irrun(lambda p: opset6.mvn(p, opset1.constant(np.int32([1, -1])), False, 0.0,
                                            "inside_sqrt"), [x], tmp_path)  # fmt: skip
    assert twice.tolist() == [[-2, 0, 2], [0, 0, 0]]
    with pytest.raises(irrun.IrrunError, match=r"axes value 2 is out of range for rank 2"):
        run_irrun(lambda p: opset6.mvn(p, opset1.constant(np.int32([2])), True, 1e-5,
                                        "inside_sqrt"), [x], tmp_path)  # fmt: skip


# --------------------------------------------------------------------------- element types

from support.typed import assert_not_taken, check_types, const_like, numbers, refused  # noqa: E402


def _stats(p, t, values_e8m0, values):
    """A constant of the data's type: ``values_e8m0`` when the swept type ``t`` is f8e8m0 (no
    zero, no sign; the same values in the f32 model OpenVINO runs in its stead)."""
    return const_like(values_e8m0 if t == "f8e8m0" else values, p)


def _bn(version: int, t: str):
    def build(p):
        g = _stats(p, t, [0.5, 1, 2, 1], [0.5, 1, 2, -1])
        b = _stats(p, t, [0.5, 1, 0.25, 2], [0, 0.5, -1, 0])
        m = _stats(p, t, [0.5, 1, 0.25, 2], [0, 0.5, 1, -0.5])
        v = _stats(p, t, [1, 4, 0.5, 1], [1, 4, 0.5, 1])  # every value f4e2m1 holds too
        if version == 1:
            return opset1.batch_norm_inference(p, g, b, m, v, 1e-5)
        return opset5.batch_norm_inference(p, g, b, m, v, 1e-5)

    return build


def _typed_axes(t: str, values) -> ov.Node:
    return ov.op.Constant(getattr(ov.Type, t), ov.Shape([len(values)]), list(values))


# label: (type, opset, port of the sweep, build of the data parameter for axes of type t)
TYPED = {
    "BatchNormInference-1": ("BatchNormInference", "opset1", 2, lambda t: _bn(1, t)),
    "BatchNormInference-5": ("BatchNormInference", "opset5", 0, lambda t: _bn(5, t)),
    "MVN-6": ("MVN", "opset6", 0,
              lambda t: lambda p: opset6.mvn(p, _typed_axes(t, [1]), True, 1e-5, "inside_sqrt")),
    "MVN-6-axes": ("MVN", "opset6", 1,
                   lambda t: lambda p: opset6.mvn(p, _typed_axes(t, [1]), True, 1e-5,
                                                  "outside_sqrt")),
    "MVN-0": ("MVN", "opset2", 0, lambda t: lambda p: opset2.mvn(p, True, True, 1e-5)),
    "NormalizeL2": ("NormalizeL2", "opset1", 0,
                    lambda t: lambda p: opset1.normalize_l2(p, _typed_axes(t, [1]), 1e-5, "add")),
    "NormalizeL2-axes": ("NormalizeL2", "opset1", 1,
                         lambda t: lambda p: opset1.normalize_l2(p, _typed_axes(t, [1]), 1e-5,
                                                                 "max")),
    "LRN": ("LRN", "opset1", 0,
            lambda t: lambda p: opset1.lrn(p, _typed_axes(t, [1]), 0.5, 0.75, 1.0, 3)),
    "LRN-axes": ("LRN", "opset1", 1,
                 lambda t: lambda p: opset1.lrn(p, _typed_axes(t, [1]), 0.5, 0.75, 1.0, 3)),
    "GroupNormalization": ("GroupNormalization", "opset12", 0, lambda t: lambda p: (
        opset12.group_normalization(p, _stats(p, t, [0.5, 1, 2, 1], [0.5, 1, 2, -1]),
                                    _stats(p, t, [0.5, 1, 0.25, 2], [0, 0.5, -1, 0]), 2, 1e-5))),
}
FAST_TYPES = ("f32", "f16", "bf16", "f8e8m0", "f4e2m1", "i64", "u8")


def _typed_cases():
    for label, (op_type, opset, port, _) in TYPED.items():
        for t in resolve(op_type, opset).input_types[port]:
            marks = () if t in FAST_TYPES else (pytest.mark.slow,)
            yield pytest.param(label, t, id=f"{label}-{t}", marks=marks)


@pytest.mark.parametrize(("label", "t"), list(_typed_cases()))
def test_every_declared_type_matches_openvino(label, t, tmp_path):
    """Each type a data port takes (its statistics of the same type), and each type of the
    axes (with f32 data): the CPU plugin's values, or its f32 values converted to the type by
    OpenVINO where it has no kernel of the type (f8 and f4 floats)."""
    make = TYPED[label][3]
    data_type = "f32" if label.endswith("-axes") else t
    # The makers of the ops with axes take the axes' type, the others the data's.
    made = make(t if label.endswith("-axes") else "i64" if "-axes" in label or label in (
        "MVN-6", "NormalizeL2", "LRN") else t)  # fmt: skip
    values = numbers(data_type).reshape(2, 4)
    # atol: the plugin folds BatchNormInference into one scale and shift (a result of 0 is
    # some 1e-6 off); the others' outputs are of magnitude 1.
    check_types(made, [values], [data_type], tmp_path, oracles=("cpu",), rtol=1e-5, atol=1e-4,
                what=label)


@pytest.mark.parametrize(("label", "bad"), [
    ("BatchNormInference-5", "i32"), ("MVN-6", "u8"), ("MVN-0", "i64"), ("NormalizeL2", "i32"),
    ("LRN", "boolean"), ("GroupNormalization", "i8"),
])  # fmt: skip
def test_a_type_not_taken_is_an_error_of_validate(label, bad, tmp_path):
    op_type, opset, port, make = TYPED[label]
    op = resolve(op_type, opset)
    assert bad not in op.input_types[port]

    build = make("i64" if label in ("MVN-6", "NormalizeL2", "LRN") else "f32")
    found = refused(build, ["f32"], 0, bad, tmp_path, shape=(2, 4))
    assert_not_taken(found, port, bad, op.label)


@pytest.mark.parametrize(("label", "bad"), [("MVN-6", "f32"), ("NormalizeL2", "boolean"),
                                            ("LRN", "f16")])
def test_axes_of_a_type_not_taken_are_an_error_of_validate(label, bad, tmp_path):
    op = resolve(*TYPED[label][:2])
    assert bad not in op.input_types[1]
    # The axes a parameter of i16, retyped.
    build = {
        "MVN-6": lambda p, a: opset6.mvn(p, a, True, 1e-5, "inside_sqrt"),
        "NormalizeL2": lambda p, a: opset1.normalize_l2(p, a, 1e-5, "add"),
        "LRN": lambda p, a: opset1.lrn(p, a, 0.5, 0.75, 1.0, 3),
    }[label]
    found = refused(build, ["f32", "i16"], 1, bad, tmp_path, shapes=[(2, 3), (1,)])
    assert_not_taken(found, 1, bad, op.label)
