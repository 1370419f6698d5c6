"""GatherElements, GatherND, ScatterUpdate, ScatterElementsUpdate and ScatterNDUpdate
against OpenVINO: seeded sweeps against the CPU plugin and the reference kernels
(``ov.Model.evaluate``), hand-checked cases, shape rules and validate findings.

Every comparison is exact, floats included: irrun applies duplicate indices one
by one in the reference's order and rounds after every step in the data's type,
as both OpenVINO kernels do, so sums of arbitrary f32 and f16 values agree bit
for bit.  Where the plugin departs from the reference (integer means, i64 data,
booleans, index tuples of length 0) the sweep compares with the reference.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset4, opset5, opset6, opset8, opset12, opset15
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_reference, run_saved

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

F32, I32 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"]
DTYPES = ["f32", "f16", "i32", "i64", "u8", "boolean"]
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
      "i8": np.int8, "boolean": np.bool_}  # fmt: skip


def values(rng, shape, dt: str, small: bool = False) -> np.ndarray:
    """Random data of type ``dt``; ``small`` keeps products of a few of them in range."""
    if dt == "boolean":
        return rng.random(shape) < 0.5
    if dt in ("f32", "f16"):
        if small:
            return rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], shape).astype(NP[dt])
        return rng.normal(0, 3, shape).astype(NP[dt])
    lo, hi = (0, 6) if dt == "u8" else (-5, 6)
    if small:
        lo, hi = (0, 3) if dt == "u8" else (-2, 3)
    return rng.integers(lo, hi, shape).astype(NP[dt])


def indices(rng, shape, n: int, dt, negative: bool = True) -> np.ndarray:
    """Indices into an axis of ``n``, duplicates likely, negative ones too."""
    lo = -n if negative else 0
    return rng.integers(lo, n, shape).astype(dt)


def compare(build, inputs, tmp_path, oracle: str):
    """irrun against the plugin ("cpu"), the reference ("ref") or both ("both")."""
    model = one_op_model(build, inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    if oracle in ("cpu", "both"):
        assert_close(got, run_cpu(model, inputs)[0], what="cpu")
    if oracle in ("ref", "both"):
        assert_close(got, run_reference(model, inputs)[0], what="ref")


def run_irrun(build, inputs, tmp_path):
    return run_saved(one_op_model(build, inputs), inputs, tmp_path)[0]


# --------------------------------------------------------------------------- GatherElements


@pytest.mark.parametrize("dt", DTYPES)
def test_gather_elements_sweep(dt, tmp_path):
    # OpenVINO's reference has no evaluate for GatherElements: the plugin is the oracle.
    rng = np.random.default_rng([6, DTYPES.index(dt)])
    for shape in [(5,), (3, 4), (2, 1, 3, 2)]:
        for axis in range(-len(shape), len(shape)):
            idx_dt = [np.int32, np.int64][axis % 2]
            data = values(rng, shape, dt)
            ishape = list(shape)
            ishape[axis] = int(rng.integers(1, 6))
            idx = indices(rng, ishape, shape[axis], idx_dt)
            got, want = run_both(lambda d, i, axis=axis: opset6.gather_elements(d, i, axis),
                                 [data, idx], tmp_path)  # fmt: skip
            assert_close(got, want, what=f"{shape} axis {axis}")


def test_gather_elements_by_hand(tmp_path):
    data = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    idx = np.array([[2, -1, 0, 1], [-3, 0, 0, 2]], np.int32)
    got = run_irrun(lambda d, i: opset6.gather_elements(d, i, -1), [data, idx], tmp_path)
    np.testing.assert_array_equal(got, [[3, 3, 1, 2], [4, 4, 4, 6]])


# --------------------------------------------------------------------------- GatherND

GATHER_ND = {5: opset5.gather_nd, 8: opset8.gather_nd}


@pytest.mark.parametrize("version", [5, 8])
@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_nd_sweep(version, batch_dims, tmp_path):
    rng = np.random.default_rng([version, batch_dims])
    make = GATHER_ND[version]
    for case in range(6):
        dt, idx_dt = DTYPES[case % len(DTYPES)], [np.int32, np.int64][case % 2]
        rank = int(rng.integers(batch_dims + 1, batch_dims + 4))
        shape = tuple(int(v) for v in rng.integers(1, 4, rank))
        k = int(rng.integers(1, rank - batch_dims + 1))
        middle = tuple(int(v) for v in rng.integers(1, 3, int(rng.integers(0, 3))))
        ishape = (*shape[:batch_dims], *middle, k)
        cols = [indices(rng, (*ishape[:-1], 1), shape[batch_dims + j], idx_dt)
                for j in range(k)]  # fmt: skip
        idx = np.concatenate(cols, axis=-1)
        data = values(rng, shape, dt)
        got, want = run_both(lambda d, i: make(d, i, batch_dims), [data, idx], tmp_path)
        assert_close(got, want, what=f"{dt} data {shape} indices {ishape}")


def test_gather_nd_versions_differ_in_the_batch_dims_by_hand(tmp_path):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[[1], [0], [3]], [[2], [2], [-1]]], np.int64)
    v8 = run_irrun(lambda d, i: opset8.gather_nd(d, i, 2), [data, idx], tmp_path)
    v5 = run_irrun(lambda d, i: opset5.gather_nd(d, i, 2), [data, idx], tmp_path)
    np.testing.assert_array_equal(v8, [[1, 4, 11], [14, 18, 23]])
    np.testing.assert_array_equal(v5, [1, 4, 11, 14, 18, 23])


def test_gather_nd_of_empty_tuples_copies_the_data(tmp_path):
    # The CPU plugin returns unspecified memory here; each empty tuple picks all the data.
    data = np.arange(4, dtype=np.float32).reshape(2, 2)
    got = run_irrun(lambda d, i: opset8.gather_nd(d, i, 0), [data, np.zeros((3, 0), np.int32)],
                    tmp_path)  # fmt: skip
    np.testing.assert_array_equal(got, np.stack([data] * 3))


# --------------------------------------------------------------------------- ScatterUpdate


@pytest.mark.parametrize("dt", DTYPES)
def test_scatter_update_sweep(dt, tmp_path):
    rng = np.random.default_rng([3, DTYPES.index(dt)])
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        for axis in range(-len(shape), len(shape)):
            n = shape[axis]
            ishape = tuple(int(v) for v in rng.integers(1, 4, int(rng.integers(1, 3))))
            idx = indices(rng, ishape, n, [np.int32, np.int64][axis % 2], negative=False)
            a = axis % len(shape)
            upd = values(rng, (*shape[:a], *ishape, *shape[a + 1 :]), dt)
            data = values(rng, shape, dt)
            axis_dt = [np.int64, np.int32][axis % 2]

            def build(d, i, u, axis=axis, axis_dt=axis_dt):
                return opset3.scatter_update(d, i, u, np.array(axis, axis_dt))

            # The reference mixes up updates for indices of rank 2 or more (see below).
            compare(build, [data, idx, upd], tmp_path, "cpu" if idx.ndim > 1 else "ref")


def test_scatter_update_reference_mixes_up_updates_of_2d_indices(tmp_path):
    # updates[:, m, n, :] goes to data[:, indices[m, n], :]: the last of three
    # duplicates wins, as in the CPU plugin.  OpenVINO's reference kernel walks the
    # updates along another dim when indices have a dim of 1 and takes the middle one.
    data = np.zeros((2, 3, 2), np.float32)
    idx = np.full((3, 1), 2, np.int32)
    upd = np.arange(12, dtype=np.float32).reshape(2, 3, 1, 2)
    build = lambda d, i, u: opset3.scatter_update(d, i, u, np.int64(1))  # noqa: E731
    got = run_irrun(build, [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got[:, 2], [[4, 5], [10, 11]])
    model = one_op_model(build, [data, idx, upd])
    np.testing.assert_array_equal(run_cpu(model, [data, idx, upd])[0], got)
    np.testing.assert_array_equal(run_reference(model, [data, idx, upd])[0][:, 2], [[2, 3], [8, 9]])


def test_scatter_update_by_hand(tmp_path):
    # The last of duplicate indices wins.
    data = np.zeros((3, 2), np.float32)
    idx = np.array([2, 0, 2], np.int32)
    upd = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    got = run_irrun(lambda d, i, u: opset3.scatter_update(d, i, u, np.int64(0)),
                    [data, idx, upd], tmp_path)  # fmt: skip
    np.testing.assert_array_equal(got, [[3, 4], [0, 0], [5, 6]])


# --------------------------------------------------------------------------- ScatterElementsUpdate


def seu_case(rng, dt, idx_dt, small):
    rank = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 5, rank))
    axis = int(rng.integers(-rank, rank))
    # Indices may be smaller than the data in every dim and longer on the axis.
    ishape = [int(rng.integers(1, d + 1)) for d in shape]
    ishape[axis] = int(rng.integers(1, 7))
    return (shape, axis, values(rng, shape, dt, small),
            indices(rng, ishape, shape[axis], idx_dt), values(rng, ishape, dt, small))  # fmt: skip


def seu_oracle(dt: str, reduction: str) -> str:
    # The plugin runs i64 as i32, reduces booleans as numbers and truncates integer
    # means (which rounds down as the reference does for u8); the reference has no
    # u8 evaluate.
    if dt in ("i64", "boolean") or (reduction == "mean" and dt in ("i32", "i64")):
        return "ref"
    # Both fold f16 in f32: irrun must agree with both.
    return "both" if dt == "f16" else "cpu"


@pytest.mark.parametrize("dt", DTYPES)
def test_scatter_elements_update_3_sweep(dt, tmp_path):
    rng = np.random.default_rng([33, DTYPES.index(dt)])
    for case in range(3):
        idx_dt = [np.int32, np.int64][case % 2]
        _, axis, data, idx, upd = seu_case(rng, dt, idx_dt, False)
        compare(lambda d, i, u, axis=axis: opset3.scatter_elements_update(d, i, u, np.int64(axis)),
                [data, idx, upd], tmp_path, seu_oracle(dt, "none"))  # fmt: skip


# OpenVINO refuses mean on booleans (test_seu_mean_of_booleans_is_refused).
SEU12_CASES = [(r, dt) for r in ["none", "sum", "prod", "min", "max", "mean"] for dt in DTYPES
               if (r, dt) != ("mean", "boolean")]  # fmt: skip


@pytest.mark.parametrize(("reduction", "dt"), SEU12_CASES)
@pytest.mark.parametrize("use_init_val", [True, False])
def test_scatter_elements_update_12_sweep(reduction, use_init_val, dt, tmp_path):
    rng = np.random.default_rng([12, len(reduction), use_init_val, DTYPES.index(dt)])
    oracle = seu_oracle(dt, reduction)
    for case in range(2):
        idx_dt = [np.int32, np.int64][case % 2]
        _, axis, data, idx, upd = seu_case(rng, dt, idx_dt, reduction == "prod")

        def build(d, i, u, axis=axis):
            return opset12.scatter_elements_update(d, i, u, np.int64(axis), reduction,
                                                   use_init_val)  # fmt: skip

        compare(build, [data, idx, upd], tmp_path, oracle)


def seu12(reduction, use_init_val=True):
    return lambda d, i, u: opset12.scatter_elements_update(d, i, u, np.int64(0), reduction,
                                                           use_init_val)  # fmt: skip


def test_seu_integer_mean_rounds_down_as_the_reference_does(tmp_path):
    data = np.array([0, 5, 7, 0], np.int32)
    idx = np.array([0, 0, 1, 1, 2, 2], np.int32)
    upd = np.array([-1, -2, 1, 2, -1, -2], np.int32)
    # (-1-2)/2 = -1.5 -> -2 (the plugin truncates to -1); with the initial value
    # (5+1+2)/3 = 2.67 -> 2 and (7-1-2)/3 = 1.33 -> 1.
    got = run_irrun(seu12("mean", False), [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got, [-2, 1, -2, 0])
    got = run_irrun(seu12("mean", True), [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got, [-1, 2, 1, 0])
    model = one_op_model(seu12("mean", False), [data, idx, upd])
    np.testing.assert_array_equal(run_reference(model, [data, idx, upd])[0], [-2, 1, -2, 0])
    assert run_cpu(model, [data, idx, upd])[0].tolist() == [-1, 1, -1, 0]


def test_seu_reductions_by_hand(tmp_path):
    data = np.array([10, 20, 30], np.float32)
    idx = np.array([0, 0, -1, 2], np.int64)
    upd = np.array([1, 2, 3, 4], np.float32)
    want = {("sum", True): [13, 20, 37], ("sum", False): [3, 20, 7],
            ("prod", True): [20, 20, 360], ("prod", False): [2, 20, 12],
            ("min", True): [1, 20, 3], ("max", True): [10, 20, 30], ("max", False): [2, 20, 4],
            ("mean", True): [13 / 3, 20, 37 / 3], ("mean", False): [1.5, 20, 3.5],
            ("none", True): [2, 20, 4]}  # fmt: skip
    for (reduction, init), expected in want.items():
        got = run_irrun(seu12(reduction, init), [data, idx, upd], tmp_path)
        np.testing.assert_array_equal(got, np.array(expected, np.float32), err_msg=reduction)


def test_seu_max_without_init_starts_at_the_lowest_finite_value(tmp_path):
    data = np.zeros(2, np.float32)
    idx = np.array([0, 0], np.int32)
    upd = np.full(2, -np.inf, np.float32)
    got = run_irrun(seu12("max", False), [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got, [np.finfo(np.float32).min, 0])
    compare(seu12("max", False), [data, idx, upd], tmp_path, "ref")


def test_seu_integers_wrap(tmp_path):
    data = np.array([250, 255], np.uint8)
    idx = np.array([0, 1, 1], np.int32)
    upd = np.array([10, 254, 254], np.uint8)
    got = run_irrun(seu12("sum"), [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got, [4, 251])
    # The mean divides the wrapped sum: 260 % 256 = 4, 4 // 2 = 2; 763 % 256 = 251, 251 // 3 = 83.
    got = run_irrun(seu12("mean"), [data, idx, upd], tmp_path)
    np.testing.assert_array_equal(got, [2, 83])
    compare(seu12("mean"), [data, idx, upd], tmp_path, "cpu")


def test_seu_booleans_reduce_logically(tmp_path):
    data = np.array([1, 1, 0, 0, 1, 0], bool)
    idx = np.array([0, 0, 1, 1, 2, 3, 4, 5], np.int32)
    upd = np.array([1, 1, 1, 0, 0, 1, 1, 0], bool)
    want = {"sum": [1, 1, 0, 1, 1, 0], "max": [1, 1, 0, 1, 1, 0], "prod": [1, 0, 0, 0, 1, 0],
            "min": [1, 0, 0, 0, 1, 0], "none": [1, 0, 0, 1, 1, 0]}  # fmt: skip
    for reduction, expected in want.items():
        got = run_irrun(seu12(reduction), [data, idx, upd], tmp_path)
        np.testing.assert_array_equal(got, np.array(expected, bool), err_msg=reduction)


def test_seu_mean_of_booleans_is_refused():
    op = resolve("ScatterElementsUpdate", "opset12")
    a = attrs_namespace({"reduction": "mean", "use_init_val": True})
    b = ELEMENT_TYPES["boolean"]
    with pytest.raises(ShapeError, match="mean does not take boolean"):
        op.infer(a, [TensorInfo((3,), b), TensorInfo((2,), I32), TensorInfo((2,), b),
                     TensorInfo((), I32, np.array(0))])  # fmt: skip


# --------------------------------------------------------------------------- ScatterNDUpdate


def snd_case(rng, dt, idx_dt, small):
    rank = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 4, rank))
    k = int(rng.integers(1, rank + 1))
    lead = tuple(int(v) for v in rng.integers(1, 4, int(rng.integers(1, 3))))
    cols = [indices(rng, (*lead, 1), shape[j], idx_dt) for j in range(k)]
    idx = np.concatenate(cols, axis=-1)
    upd = values(rng, (*lead, *shape[k:]), dt, small)
    return values(rng, shape, dt, small), idx, upd


@pytest.mark.parametrize("dt", DTYPES)
def test_scatter_nd_update_4_sweep(dt, tmp_path):
    rng = np.random.default_rng([4, DTYPES.index(dt)])
    for case in range(3):
        data, idx, upd = snd_case(rng, dt, [np.int32, np.int64][case % 2], False)
        compare(opset4.scatter_nd_update, [data, idx, upd], tmp_path, seu_oracle(dt, "none"))


@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "min", "max"])
@pytest.mark.parametrize("dt", DTYPES)
def test_scatter_nd_update_15_sweep(reduction, dt, tmp_path):
    rng = np.random.default_rng([15, len(reduction), DTYPES.index(dt)])
    oracle = seu_oracle(dt, reduction)
    for case in range(2):
        data, idx, upd = snd_case(rng, dt, [np.int32, np.int64][case % 2], reduction == "prod")
        compare(lambda d, i, u: opset15.scatter_nd_update(d, i, u, reduction), [data, idx, upd],
                tmp_path, oracle)  # fmt: skip


def snd15(reduction):
    return lambda d, i, u: opset15.scatter_nd_update(d, i, u, reduction)


def test_snd_duplicates_by_hand(tmp_path):
    data = np.full(4, 10, np.int32)
    idx = np.array([[1], [-3], [2]], np.int64)
    upd = np.array([7, 8, 9], np.int32)
    want = {
        "none": [10, 8, 9, 10],
        "sum": [10, 25, 19, 10],
        "sub": [10, -5, 1, 10],
        "prod": [10, 560, 90, 10],
        "min": [10, 7, 9, 10],
        "max": [10, 10, 10, 10],
    }
    for reduction, expected in want.items():
        got = run_irrun(snd15(reduction), [data, idx, upd], tmp_path)
        np.testing.assert_array_equal(got, expected, err_msg=reduction)


def test_snd_booleans_reduce_logically(tmp_path):
    data = np.array([1, 1, 0, 0, 1, 0], bool)
    idx = np.array([[0], [0], [1], [1], [2], [3], [4], [5]], np.int32)
    upd = np.array([1, 1, 1, 0, 0, 1, 1, 0], bool)
    want = {"sum": [1, 1, 0, 1, 1, 0], "max": [1, 1, 0, 1, 1, 0], "prod": [1, 0, 0, 0, 1, 0],
            "min": [1, 0, 0, 0, 1, 0], "sub": [1, 0, 0, 1, 0, 0]}  # fmt: skip
    for reduction, expected in want.items():
        got = run_irrun(snd15(reduction), [data, idx, upd], tmp_path)
        np.testing.assert_array_equal(got, np.array(expected, bool), err_msg=reduction)


def test_plugin_departures_from_the_reference(tmp_path):
    # i64 data: the plugin runs it as i32; irrun keeps all 64 bits, as the reference.
    inputs = [np.array([2**33 + 5, 7], np.int64), np.array([0], np.int32), np.ones(1, np.int64)]
    model = one_op_model(seu12("sum"), inputs)
    np.testing.assert_array_equal(run_saved(model, inputs, tmp_path)[0], [2**33 + 6, 7])
    np.testing.assert_array_equal(run_reference(model, inputs)[0], [2**33 + 6, 7])
    assert run_cpu(model, inputs)[0].tolist() == [6, 7]
    # Boolean sub is xor in the reference; the plugin subtracts numbers (0 - 1 - 1).
    inputs = [np.array([0], bool), np.array([[0], [0]], np.int32), np.array([1, 1], bool)]
    model = one_op_model(snd15("sub"), inputs)
    assert run_saved(model, inputs, tmp_path)[0].tolist() == [False]
    assert run_reference(model, inputs)[0].tolist() == [False]
    assert run_cpu(model, inputs)[0].tolist() == [True]


def test_snd_slices_and_empty_tuples(tmp_path):
    data = np.zeros((2, 3), np.float32)
    got = run_irrun(opset4.scatter_nd_update,
                    [data, np.array([[1], [-2]], np.int32), np.array([[1, 2, 3], [4, 5, 6]],
                                                                     np.float32)], tmp_path)  # fmt: skip
    np.testing.assert_array_equal(got, [[4, 5, 6], [1, 2, 3]])
    # Tuples of length 0 address the whole tensor: the last update replaces it (the
    # reference; the CPU plugin leaves the data as it was).
    upd = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    inputs = [data, np.zeros((2, 0), np.int32), upd]
    np.testing.assert_array_equal(run_irrun(opset4.scatter_nd_update, inputs, tmp_path), upd[1])
    compare(opset4.scatter_nd_update, inputs, tmp_path, "ref")


def test_snd_scalar_update_of_a_full_tuple(tmp_path):
    data = np.zeros((2, 2), np.float32)
    inputs = [data, np.array([1, -1], np.int32), np.array(7, np.float32)]
    got = run_irrun(opset4.scatter_nd_update, inputs, tmp_path)
    np.testing.assert_array_equal(got, [[0, 0], [0, 7]])
    compare(opset4.scatter_nd_update, inputs, tmp_path, "cpu")


# --------------------------------------------------------------------------- edge sizes

EMPTY = [
    ("gather_elements", lambda d, i: opset6.gather_elements(d, i, 0),
     [np.ones((3, 4), np.float32), np.zeros((0, 4), np.int32)], np.zeros((0, 4), np.float32)),
    ("gather_nd", lambda d, i: opset8.gather_nd(d, i, 0),
     [np.ones((3, 4), np.float32), np.zeros((0, 2), np.int64)], np.zeros((0,), np.float32)),
    ("scatter_update", lambda d, i, u: opset3.scatter_update(d, i, u, np.int64(1)),
     [np.ones((3, 4), np.float32), np.zeros((0,), np.int32), np.zeros((3, 0), np.float32)],
     np.ones((3, 4), np.float32)),
]  # fmt: skip


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_no_updates_leave_the_data(reduction, tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run_irrun(
        lambda d, i, u: opset12.scatter_elements_update(d, i, u, np.int64(-1), reduction, False),
        [data, np.zeros((3, 0), np.int32), np.zeros((3, 0), np.float32)],
        tmp_path,
    )
    np.testing.assert_array_equal(got, data)
    got = run_irrun(
        lambda d, i, u: opset15.scatter_nd_update(d, i, u, "sum"),
        [data, np.zeros((0, 1), np.int32), np.zeros((0, 4), np.float32)],
        tmp_path,
    )
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("case", [c for c in EMPTY if c[2] is not None], ids=lambda c: c[0])
def test_empty_indices(case, tmp_path):
    _, build, inputs, want = case
    assert_close(run_irrun(build, inputs, tmp_path), want)


def test_scalar_indices_of_scatter_update(tmp_path):
    data = np.zeros((4, 2), np.float32)
    got = run_irrun(
        lambda d, i, u: opset3.scatter_update(d, i, u, np.int64(0)),
        [data, np.array(2, np.int32), np.array([1, 2], np.float32)],
        tmp_path,
    )
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [1, 2], [0, 0]])


def test_dynamic_dims_in_the_file(tmp_path):
    """Parameters with dynamic dims: validate infers what it can, the run matches the plugin."""
    data = opset1.parameter(ov.PartialShape([-1, 4]), ov.Type.f32, name="in0")
    idx = opset1.parameter(ov.PartialShape([-1, 1]), ov.Type.i64, name="in1")
    upd = opset1.parameter(ov.PartialShape([-1, 4]), ov.Type.f32, name="in2")
    gathered = opset8.gather_nd(data, idx, 0)
    scattered = opset15.scatter_nd_update(data, idx, gathered, "sum")
    for k, node in enumerate((gathered, scattered)):
        node.output(0).get_tensor().set_names({f"out{k}"})
    model = ov.Model([gathered.output(0), scattered.output(0)], [data, idx, upd], "dyn")
    del upd  # a parameter the model does not read is still an input
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    rng = np.random.default_rng(7)
    inputs = [values(rng, (5, 4), "f32"), indices(rng, (6, 1), 5, np.int64),
              values(rng, (6, 4), "f32")]  # fmt: skip
    got = run_saved(model, inputs, tmp_path)
    want = run_cpu(model, inputs)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


# --------------------------------------------------------------------------- out of range


OUT_OF_RANGE = [
    ("gather_elements", lambda d, i: opset6.gather_elements(d, i, 0),
     [np.zeros(4, np.float32), np.array([1, 4], np.int32)], "index 4 at \\[1\\]"),
    ("gather_elements_negative", lambda d, i: opset6.gather_elements(d, i, 0),
     [np.zeros(4, np.float32), np.array([-5], np.int32)], "index -5 at \\[0\\]"),
    ("gather_nd", lambda d, i: opset8.gather_nd(d, i, 0),
     [np.zeros((3, 4), np.float32), np.array([[0, 5]], np.int32)], "index 5 at \\[0, 1\\]"),
    ("scatter_update_negative", lambda d, i, u: opset3.scatter_update(d, i, u, np.int64(0)),
     [np.zeros(4, np.float32), np.array([-1], np.int32), np.ones(1, np.float32)],
     "allowed 0..3"),
    ("scatter_elements", lambda d, i, u: opset3.scatter_elements_update(d, i, u, np.int64(0)),
     [np.zeros(4, np.float32), np.array([4], np.int32), np.ones(1, np.float32)], "index 4"),
    ("scatter_nd_flat_offset_in_range", opset4.scatter_nd_update,
     [np.zeros((3, 4), np.float32), np.array([[0, 5]], np.int32), np.ones(1, np.float32)],
     "index 5 at \\[0, 1\\] is out of range for a dim of size 4"),
]  # fmt: skip


@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=lambda c: c[0])
def test_out_of_range_indices_are_one_line_errors(case, tmp_path):
    _, build, inputs, message = case
    with pytest.raises(Exception, match=message) as info:
        run_irrun(build, inputs, tmp_path)
    assert "\n" not in str(info.value)


def test_the_reference_refuses_out_of_range_indices_too():
    for _, build, inputs, _ in OUT_OF_RANGE[3:5]:
        with pytest.raises(RuntimeError):
            run_reference(one_op_model(build, inputs), inputs)


# --------------------------------------------------------------------------- shape rules


def infer(type_, opset, attrs, *infos):
    return resolve(type_, opset).infer(attrs_namespace(attrs), list(infos))


def test_shape_rules_with_dynamic_dims():
    I = Interval  # noqa: E741
    d = TensorInfo((2, I(1, 4), 5), F32)
    # GatherElements takes the axis dim from indices and merges the others.
    out = infer("GatherElements", "opset6", {"axis": 1}, d, TensorInfo((DYNAMIC, 7, I(3, 9)), I32))
    assert out[0].shape == (2, 7, 5)
    out = infer("GatherElements", "opset6", {"axis": -1}, d, TensorInfo(None, I32))
    assert out[0].shape == (2, I(1, 4), DYNAMIC)
    # GatherND-5 folds the batch dims into their product, GatherND-8 keeps them.
    idx = TensorInfo((2, I(2, 3), 6, 1), I32)
    assert infer("GatherND", "opset8", {"batch_dims": 2}, d, idx)[0].shape == (2, I(2, 3), 6)
    assert infer("GatherND", "opset5", {"batch_dims": 2}, d, idx)[0].shape == (I(4, 6), 6)
    assert infer("GatherND", "opset5", {"batch_dims": 1}, d,
                 TensorInfo((2, 2), I32))[0].shape == (2,)  # fmt: skip
    assert infer("GatherND", "opset8", {"batch_dims": 0}, d,
                 TensorInfo((3, DYNAMIC), I32))[0].shape is None  # fmt: skip
    # Scatters keep the data's shape.
    axis = TensorInfo((), I32, np.array(-1))
    out = infer("ScatterUpdate", "opset3", {}, d, TensorInfo((DYNAMIC,), I32),
                TensorInfo((2, I(1, 4), 3), F32), axis)  # fmt: skip
    assert out[0].shape == d.shape
    out = infer("ScatterNDUpdate", "opset15", {"reduction": "sum"}, d,
                TensorInfo((DYNAMIC, 2), I32), TensorInfo((7, 5), F32))  # fmt: skip
    assert out[0].shape == d.shape


SHAPE_ERRORS = [
        ("GatherElements", "opset6", {"axis": 0},
     [TensorInfo((2, 3), F32), TensorInfo((2, 4), I32)], "differ in dim 1"),
    ("GatherElements", "opset6", {"axis": 2},
     [TensorInfo((2, 3), F32), TensorInfo((2, 3), I32)], "axis 2 is out of range"),
    ("GatherND", "opset8", {"batch_dims": 1},
     [TensorInfo((2, 3, 4), F32), TensorInfo((2, 3), I32)], "length 3 with batch_dims 1"),
    ("GatherND", "opset8", {"batch_dims": 1},
     [TensorInfo((2, 3, 4), F32), TensorInfo((3, 1), I32)], "differ in batch dim 0"),
    ("GatherND", "opset8", {"batch_dims": 2},
     [TensorInfo((2, 3, 4), F32), TensorInfo((2, 3), I32)], "less than the rank of indices"),
    ("GatherND", "opset8", {"batch_dims": 0},
     [TensorInfo((3,), F32), TensorInfo((1,), ELEMENT_TYPES["f32"])], "does not take"),
    ("ScatterUpdate", "opset3", {},
     [TensorInfo((3, 4), F32), TensorInfo((2,), I32), TensorInfo((2,), F32),
      TensorInfo((), I32, np.array(0))], "must have rank 2"),
    ("ScatterUpdate", "opset3", {},
     [TensorInfo((3, 4), F32), TensorInfo((2,), I32), TensorInfo((2, 4), F32),
      TensorInfo((), I32, np.array(1))], "must be [3,2]"),
    ("ScatterUpdate", "opset3", {},
     [TensorInfo((3, 4), F32), TensorInfo((2,), I32), TensorInfo((2, 4), ELEMENT_TYPES["f16"]),
      TensorInfo((), I32, np.array(0))], "updates are f16 but data is f32"),
    ("ScatterElementsUpdate", "opset3", {},
     [TensorInfo((3, 4), F32), TensorInfo((2,), I32), TensorInfo((2,), F32),
      TensorInfo((), I32, np.array(0))], "same rank"),
    ("ScatterElementsUpdate", "opset12", {"reduction": "sum", "use_init_val": True},
     [TensorInfo((3, 4), F32), TensorInfo((2, 4), I32), TensorInfo((2, 3), F32),
      TensorInfo((), I32, np.array(0))], "same shape"),
    ("ScatterElementsUpdate", "opset3", {},
     [TensorInfo((3, 4), F32), TensorInfo((2, 4), I32), TensorInfo((2, 4), F32),
      TensorInfo((), I32, np.array(-3))], "axis -3 is out of range"),
    ("ScatterNDUpdate", "opset4", {},
     [TensorInfo((3, 4), F32), TensorInfo((2, 3), I32), TensorInfo((2,), F32)],
     "length 3"),
    ("ScatterNDUpdate", "opset4", {},
     [TensorInfo((3, 4), F32), TensorInfo((2, 1), I32), TensorInfo((2, 5), F32)],
     "must be [2,4]"),
    ("ScatterNDUpdate", "opset15", {"reduction": "none"},
     [TensorInfo((3, 4), F32), TensorInfo((2, 1), ELEMENT_TYPES["u8"]),
      TensorInfo((2, 4), F32)], "does not take"),
    ]  # fmt: skip


@pytest.mark.parametrize(("type_", "opset", "attrs", "infos", "message"), SHAPE_ERRORS)
def test_shape_rule_errors(type_, opset, attrs, infos, message):
    with pytest.raises(ShapeError, match=pytest_escape(message)):
        infer(type_, opset, attrs, *infos)


def pytest_escape(text: str) -> str:
    import re

    return re.escape(text)


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    data = np.zeros((3, 4), np.float32)
    model = one_op_model(lambda d, i: opset8.gather_nd(d, i, 1),
                         [data, np.zeros((3, 1), np.int32)])  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    text = path.read_text()
    assert 'batch_dims="1"' in text
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace('batch_dims="1"', 'batch_dims="x"'))
    (tmp_path / "bad.bin").write_bytes(b"")
    found = [d for d in irrun.validate(bad) if d.level == "error"]
    assert found and found[0].layer is not None and found[0].layer.type == "GatherND"
    assert "batch_dims" in found[0].message
    # A wrong declared output dim is found against the inferred [3].
    wrong = tmp_path / "wrong.xml"
    wrong.write_text(
        text.replace(
            "<dim>3</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
            "<dim>5</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
            1,
        )
    )
    (tmp_path / "wrong.bin").write_bytes(b"")
    found = [d for d in irrun.validate(wrong) if d.code == "shape-mismatch"]
    assert found and found[0].layer.type == "GatherND"


def test_validate_names_a_bad_reduction(tmp_path):
    inputs = [np.zeros(3, np.float32), np.zeros(2, np.int32), np.zeros(2, np.float32)]
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(seu12("sum"), inputs), path, compress_to_fp16=False)
    text = path.read_text()
    assert 'reduction="sum"' in text
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace('reduction="sum"', 'reduction="avg"'))
    (tmp_path / "bad.bin").write_bytes((tmp_path / "m.bin").read_bytes())
    found = [d for d in irrun.validate(bad) if d.level == "error"]
    assert found and found[0].layer.type == "ScatterElementsUpdate"
    assert "reduction" in found[0].message and "avg" in found[0].message


# --------------------------------------------------------------------------- element types

from support.ov_oneop import const  # noqa: E402
from support.typed import Case, assert_not_taken, assert_same, run_pairs  # noqa: E402

from irrun.ir.element_types import ANY, NUMBERS  # noqa: E402

TYPE_CASES = {
    "ScatterUpdate-3": Case(lambda x, i, u, a: opset3.scatter_update(x, i, u, a), (3, 2), [2, 0],
                            (2, 2), np.array(0)),
    "ScatterUpdate-3/axis": Case(lambda x, i, u, a: opset3.scatter_update(x, i, u, a), (2, 3),
                                 [[1], [2]], (2, 2, 1), np.array(-1)),
    "ScatterElementsUpdate-3": Case(lambda x, i, u, a: opset3.scatter_elements_update(x, i, u, a),
                                    (3, 2), [[2, 0]], (1, 2), np.array(0)),
    "ScatterElementsUpdate-12": Case(
        lambda x, i, u, a: opset12.scatter_elements_update(x, i, u, a, "none"), (3, 2),
        [[2, -1]], (1, 2), np.array(-2)),
    "ScatterElementsUpdate-12/positive": Case(
        lambda x, i, u, a: opset12.scatter_elements_update(x, i, u, a, "none"), (2, 3),
        [[2], [0]], (2, 1), np.array(1)),
    "ScatterNDUpdate-4": Case(lambda x, i, u: opset4.scatter_nd_update(x, i, u), (3, 2),
                              [[2], [0]], (2, 2)),
    "ScatterNDUpdate-15": Case(lambda x, i, u: opset15.scatter_nd_update(x, i, u, "none"), (3, 2),
                               [[2, 1], [-3, 0]], (2,)),
}  # fmt: skip


def _declared(op: str):
    type_, version = op.split("/")[0].split("-")
    return resolve(type_, f"opset{version}")


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("op", [op for op in TYPE_CASES if "/" not in op])
def test_every_data_type(op, t, tmp_path):
    """Data and updates of every element type, strings and packed types included, as
    OpenVINO moves them without a reduction (support.typed)."""
    TYPE_CASES[op].check_data_type(t, tmp_path)


INDEX_CASES = [(op, t) for op, case in TYPE_CASES.items() for t in case.index_types(_declared(op))]


@pytest.mark.parametrize(("op", "t"), INDEX_CASES)
def test_every_index_type(op, t, tmp_path):
    TYPE_CASES[op].check_index_type(t, tmp_path, data_type="f32")


def test_index_cases_cover_the_declared_types():
    for op in TYPE_CASES:
        label = _declared(op).label
        swept = {t for o, t in INDEX_CASES if _declared(o).label == label}
        assert swept >= set(_declared(op).port_types(1)) - {"u1", "boolean"}, (label, swept)


def test_seu_takes_boolean_indices(tmp_path):
    """OpenVINO's check lets boolean indices through (0 and 1)."""
    data, upd = np.arange(6, dtype=np.float32).reshape(3, 2), np.float32([[10, 20]])
    for version in (3, 12):
        build = (lambda x, i, u: opset3.scatter_elements_update(x, i, u, const(0))) if (
            version == 3) else (lambda x, i, u: opset12.scatter_elements_update(
                x, i, u, const(0), "sum"))  # fmt: skip
        (got,) = run_pairs(build, [(data, "f32"), (np.array([[True, False]]), "boolean"),
                                   (upd, "f32")], tmp_path)  # fmt: skip
        ints = [data, np.int64([[1, 0]]), upd]
        (want,) = run_cpu(one_op_model(build, ints), ints)
        assert_same(got, want, f"v{version}")


REFUSED = [("ScatterUpdate-3", 1, "f32"), ("ScatterUpdate-3", 3, "boolean"),
           ("ScatterElementsUpdate-3", 1, "f16"), ("ScatterElementsUpdate-3", 3, "boolean"),
           ("ScatterElementsUpdate-12", 1, "string"), ("ScatterNDUpdate-4", 1, "i16"),
           ("ScatterNDUpdate-15", 1, "u4")]  # fmt: skip


@pytest.mark.parametrize(("op", "port", "t"), REFUSED)
def test_a_type_not_taken_is_a_validate_error(op, port, t, tmp_path):
    errors = TYPE_CASES[op].refused(port, t, tmp_path)
    label = _declared(op).label
    assert_not_taken(errors, port, t, label)


@pytest.mark.parametrize("t", ["string", "nf4", "i4", "u1", "f8e4m3", "f4e2m1"])
def test_a_reduction_takes_numbers_and_booleans(t):
    """OpenVINO builds a reduction over any type; irrun reduces numbers and booleans only."""
    et, i64 = ELEMENT_TYPES[t], ELEMENT_TYPES["i64"]
    seu = resolve("ScatterElementsUpdate", "opset12")
    infos = [TensorInfo((3,), et), TensorInfo((1,), i64), TensorInfo((1,), et),
             TensorInfo((), i64)]  # fmt: skip
    with pytest.raises(ShapeError, match=f"reduction sum does not take {t} data"):
        seu.infer(attrs_namespace({"reduction": "sum", "use_init_val": True}), infos)
    seu.infer(attrs_namespace({"reduction": "none", "use_init_val": True}), infos)
    snd = resolve("ScatterNDUpdate", "opset15")
    infos = [TensorInfo((3,), et), TensorInfo((1, 1), i64), TensorInfo((1,), et)]
    with pytest.raises(ShapeError, match=f"reduction max does not take {t} data"):
        snd.infer(attrs_namespace({"reduction": "max"}), infos)
    snd.infer(attrs_namespace({"reduction": "none"}), infos)


@pytest.mark.parametrize("t", [t for t in NUMBERS if t not in DTYPES])
def test_reductions_of_the_other_number_types(t, tmp_path):
    """sum and max in the number types the reduction sweeps above leave out, by hand (small
    whole numbers, exact in every type)."""
    dtype = ELEMENT_TYPES[t].dtype
    data = np.array([1, 5, 2, 7, 3, 4]).astype(dtype)
    upd = np.array([2, 6, 1, 3]).astype(dtype)
    idx = np.int64([1, 4, 1, 0])
    for reduction in ("sum", "max"):
        build = lambda x, u, r=reduction: opset12.scatter_elements_update(  # noqa: E731
            x, const(idx), u, const(0), r)
        (got,) = run_pairs(build, [(data, t), (upd, t)], tmp_path)
        want = {"sum": [4, 8, 2, 7, 9, 4], "max": [3, 5, 2, 7, 6, 4]}[reduction]
        assert_same(got, np.array(want).astype(dtype), f"{t} {reduction}")


def test_bf16_reductions_fold_in_f32_as_the_reference_does(tmp_path):
    """Rounding after every step would leave 256 + 1 + ... at 256 (the plugin does)."""
    from support.typed import one_op, run_openvino

    bf16 = ELEMENT_TYPES["bf16"].dtype
    data = np.array([1.0, 256.0]).astype(bf16)
    upd = np.array([1.0] * 8 + [0.5] * 8).astype(bf16)
    idx = np.ones(16, np.int64)
    for reduction in ("sum", "mean"):
        builds = [lambda x, u, r=reduction: opset12.scatter_elements_update(
                      x, const(idx), u, const(0), r),
                  lambda x, u, r=reduction: opset15.scatter_nd_update(
                      x, const(idx.reshape(16, 1)), u, "sum")]  # fmt: skip
        for build in builds[: 1 if reduction == "mean" else 2]:
            inputs = [(data, "bf16"), (upd, "bf16")]
            (got,) = run_pairs(build, inputs, tmp_path)
            (want,) = run_openvino(one_op(build, ["bf16"] * 2, [data.shape, upd.shape]),
                                   [data, upd], ["bf16"] * 2)
            assert_same(got, want, reduction)
            assert float(got[1]) == float(np.array([268.0 / (17 if reduction == "mean" else 1)])
                                          .astype(bf16)[0]), reduction  # fmt: skip
