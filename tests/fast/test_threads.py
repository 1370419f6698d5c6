"""Runs on several threads (irrun.threads): the same results for any thread count, BLAS
limited to the run's count during the run and given back after, and ``--threads``.

The kernels split over threads (pools, elementwise binary ops, unary activations) work
plane by plane or element by element, so their results must be bit-identical for 1, 2,
3 and 4 threads.  The sizes below which they do not split are lowered here (the
``small_blocks`` fixture) so that small tensors of odd sizes split too, into blocks of
a plane or a few elements; a few cases keep the real thresholds with tensors above
them.  Pools are also checked against OpenVINO's CPU plugin bit for bit, as
tests/ops/test_pool_*.py do on one thread.  Nothing here times anything.
"""

from __future__ import annotations

import itertools
import pickle
import threading
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
import threadpoolctl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openvino import opset1, opset4, opset5, opset8, opset14
from support.ov_oneop import one_op_model, run_cpu

import irrun
from irrun import threads
from irrun.cli import main
from irrun.errors import UsageError
from irrun.fast import blocks, chunks

THREADS = (1, 2, 3, 4)
ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "models" / "demo.xml")
CHAIN = str(ROOT / "models" / "pooling_chain.xml")
LLAMA = str(ROOT / "tests" / "stateful" / "llama")


@pytest.fixture
def small_blocks(monkeypatch):
    """Split work of any size: blocks of one plane, pieces of a few elements.

    Yields the number of blocks of each split, to check that the work did split.
    """
    monkeypatch.setattr(chunks, "MIN_BLOCK_BYTES", 1)
    monkeypatch.setattr(blocks, "MIN_SPLIT", 2)
    monkeypatch.setattr(blocks, "MIN_BLOCK", 6)
    monkeypatch.setattr(blocks, "PIECE", 3)
    splits = []
    real = threads.map_blocks

    def counted(fn, n, min_block=1):
        got = real(fn, n, min_block)
        splits.append(len(got))
        return got

    monkeypatch.setattr(threads, "map_blocks", counted)
    yield splits


def _saved(build, inputs, tmp_path, outputs=1, name="m"):
    model = one_op_model(build, inputs, outputs)
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return model, path


def _runs(path, inputs):
    """irrun's outputs with each thread count."""
    m = irrun.load(path)
    feeds = {f"in{i}": x for i, x in enumerate(inputs)}
    found = {}
    for n in THREADS:
        m.threads = n
        found[n] = m.run(feeds)
    return found


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    width = f"u{a.dtype.itemsize}" if a.dtype != np.bool_ else "u1"
    return bool((np.ascontiguousarray(a).view(width) == np.ascontiguousarray(b).view(width)).all())


def _assert_identical(found):
    one = found[1]
    for n, outs in found.items():
        assert list(outs) == list(one)
        for k in one:
            assert _same_bits(outs[k], one[k]), f"{k} differs with {n} threads"


def _data(shape, dtype=np.float32, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        if specials and x.size >= 8:  # ties, signed zeros and NaN, where pools decide
            flat = x.reshape(-1)
            flat[::7] = 0.0
            flat[3::11] = -0.0
            flat[5::13] = np.nan
            flat[1::5] = flat[0]
        return x
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(
        dtype
    )


# ---------------------------------------------------------------------- split, map_blocks


@given(n=st.integers(0, 200), parts=st.integers(1, 20))
def test_split_covers_the_range_in_near_equal_contiguous_blocks(n, parts):
    got = threads.split(n, parts)
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(got))
    sizes = [b - a for a, b in got]
    assert len(got) == max(1, min(parts, n))
    assert max(sizes) - min(sizes) <= 1


@settings(deadline=None, max_examples=60)
@given(n=st.integers(0, 300), count=st.sampled_from(THREADS), min_block=st.integers(1, 50))
def test_map_blocks_covers_the_range_in_order_on_one_thread_each(n, count, min_block):
    seen = []

    def fn(a, b):
        seen.append(threads.current())
        return a, b

    with threads.using(count):
        got = threads.map_blocks(fn, n, min_block)
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(got))
    if len(got) > 1:
        assert all(b - a >= min_block for a, b in got)
        assert len(got) <= count * threads.BLOCKS_PER_THREAD
        assert seen == [1] * len(got)  # blocks never split again
    else:
        assert got == [(0, n)] and seen == [count]  # not split: the caller's own call
    if count == 1 or n < 2 * min_block:
        assert len(got) == 1


def test_map_blocks_raises_the_first_failure_after_every_block_ended():
    ended = []

    def fn(a, b):
        if a in (2, 5):
            raise ValueError(f"block {a}")
        ended.append(a)
        return a

    with threads.using(2), pytest.raises(ValueError, match="block 2"):
        threads.map_blocks(fn, 8)
    assert sorted(ended) == [0, 1, 3, 4, 6, 7]


def test_blocks_see_the_callers_numpy_error_state():
    def fn(a, b):
        return np.float32(1) / np.float32(0)  # warns unless the caller's state ignores it

    with threads.using(2), np.errstate(all="raise"), pytest.raises(FloatingPointError):
        threads.map_blocks(fn, 4)
    with threads.using(2), np.errstate(all="ignore"):
        assert threads.map_blocks(fn, 4) == [np.inf] * 4


def test_outside_a_run_kernels_use_one_thread():
    assert threads.current() == 1
    assert threads.available() >= 1


# ---------------------------------------------------------------------- the default on a busy machine


@pytest.mark.parametrize(("usable", "cores", "load", "want"), [
    (2, 2, 0.0, 2),  # idle
    (2, 2, 0.4, 2),  # 1.6 cores idle, rounded
    (2, 2, 0.6, 1),  # 1.4
    (2, 2, 1.5, 1),  # 0.5 rounds half up, to 1
    (2, 2, 6.0, 1),  # the machine of the report: never less than one
    (8, 8, 2.4, 6),  # 5.6
    (4, 64, 10.0, 4),  # this process may use 4 of 54 idle cores
    (2, 2, None, 2),  # no load average (not on Unix)
    (2, 2, float("nan"), 2),
])  # fmt: skip
def test_the_default_is_the_idle_cores(usable, cores, load, want):
    assert threads.choose(usable, cores, load) == want


@pytest.fixture
def load_of(monkeypatch):
    """Set the machine's load average as os.getloadavg reports it; the default is worked
    out again with it, and again after the test with the real one."""

    def set_load(value):
        monkeypatch.setattr(threads.os, "getloadavg", lambda: (value, value, value))
        threads.default.cache_clear()

    yield set_load
    monkeypatch.undo()
    threads.default.cache_clear()


def test_a_busy_machine_runs_the_default_on_one_thread_blas_too(load_of, blas):
    load_of(threads.available() + 4.0)
    assert threads.default() == 1
    m = irrun.load(DEMO)
    assert m.threads == 1
    inside = []
    m.run(m.random_inputs(0), on_layer=lambda _: inside.append(_blas_counts()))
    # BLAS's spinning threads are what made conv2 200 times slower on a busy machine.
    assert inside and all(c == [1] * len(blas) for c in inside)
    assert _blas_counts() == blas
    load_of(0.0)
    assert threads.default() == threads.available() == irrun.load(DEMO).threads


@pytest.mark.parametrize(("load", "cores", "busy"), [
    (3.2, 2, True), (2.01, 2, True), (2.0, 2, False), (1.5, 2, False), (0.0, 1, False),
    (1.5, 1, True),
])  # fmt: skip
def test_the_busy_warning_is_for_a_load_above_the_cores(load, cores, busy):
    message = threads.busy_warning(load, cores)
    if busy:
        plural = "s" if cores != 1 else ""
        assert message == (f"the machine is busy (load {load:.1f} on {cores} core{plural}): "
                           "timings are unreliable")  # fmt: skip
    else:
        assert message is None


def test_no_busy_warning_without_a_load_average(monkeypatch):
    def unavailable():
        raise OSError("no load average")

    monkeypatch.setattr(threads.os, "getloadavg", unavailable)
    assert threads.machine_load() is None
    assert threads.busy_warning(cores=1) is None


# ---------------------------------------------------------------------- the model's threads


def test_threads_default_to_the_idle_cores_and_are_checked(tmp_path):
    _, path = _saved(lambda x: opset1.relu(x), [np.zeros((1, 2), np.float32)], tmp_path)
    m = irrun.load(path)
    assert m.threads == threads.default()
    m.threads = 3
    assert m.threads == 3
    m.threads = None
    assert m.threads == threads.default()
    assert irrun.load(path, threads=2).threads == 2
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(UsageError, match="threads must be a count of at least 1"):
            m.threads = bad
        with pytest.raises(UsageError):
            irrun.load(path, threads=bad)


def test_a_pickle_keeps_the_threads(tmp_path):
    _, path = _saved(lambda x: opset1.relu(x), [np.zeros((1, 2), np.float32)], tmp_path)
    assert pickle.loads(pickle.dumps(irrun.load(path, threads=3))).threads == 3
    # None travels as None: the cores of the process that unpickles.
    back = pickle.loads(pickle.dumps(irrun.load(path)))
    assert back._threads_arg is None and back.threads == threads.default()


def test_a_run_sets_the_kernels_thread_count(tmp_path):
    _, path = _saved(lambda x: opset1.relu(x), [np.zeros((1, 2), np.float32)], tmp_path)
    seen = []
    m = irrun.load(path, threads=3)
    m.run({"in0": np.ones((1, 2), np.float32)}, on_layer=lambda _: seen.append(threads.current()))
    assert seen and set(seen) == {3}
    assert threads.current() == 1


# ---------------------------------------------------------------------- BLAS


def _blas_counts():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def blas():
    if not _blas_counts():
        pytest.skip("NumPy's BLAS is not one threadpoolctl can see (no thread pool to limit)")
    # The test changes BLAS's count: it gives back what it found, as irrun must.
    before = _blas_counts()
    yield before
    assert _blas_counts() == before


def test_blas_has_the_runs_threads_during_a_run_and_its_own_after(tmp_path, blas):
    a = np.ones((4, 8), np.float32)
    _, path = _saved(lambda x: opset1.matmul(x, opset1.constant(np.ones((8, 3), np.float32)),
                                             False, False), [a], tmp_path)  # fmt: skip
    m = irrun.load(path, threads=1)
    inside = []
    m.run({"in0": a}, on_layer=lambda _: inside.append(_blas_counts()))
    assert inside and all(c == [1] * len(blas) for c in inside)
    assert _blas_counts() == blas
    # Set by the user to one thread, BLAS gets the run's two and its one back.
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        m.threads = 2
        inside.clear()
        m.run({"in0": a}, on_layer=lambda _: inside.append(_blas_counts()))
        assert inside and all(c == [2] * len(blas) for c in inside)
        assert _blas_counts() == [1] * len(blas)


def test_blas_has_one_thread_while_blocks_run(blas):
    seen = []
    with threads.running(2):
        threads.map_blocks(lambda a, b: seen.append(_blas_counts()), 4)
        assert _blas_counts() == [2] * len(blas)
    assert seen and all(c == [1] * len(blas) for c in seen)


def test_limits_held_at_once_give_blas_the_smallest(blas):
    with threads.running(2):
        assert _blas_counts() == [2] * len(blas)
        with threads.blas_limit(1):
            assert _blas_counts() == [1] * len(blas)
            with threads.running(3):
                assert _blas_counts() == [1] * len(blas)
        assert _blas_counts() == [2] * len(blas)


def test_runs_in_several_python_threads_give_blas_back(tmp_path, blas):
    x = np.ones((2, 8), np.float32)
    _, path = _saved(lambda v: opset1.matmul(v, opset1.constant(np.ones((8, 8), np.float32)),
                                             False, False), [x], tmp_path)  # fmt: skip
    models = [irrun.load(path, threads=n) for n in (1, 2)]
    errors = []

    def work(m):
        try:
            for _ in range(30):
                m.run({"in0": x})
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    pool = [threading.Thread(target=work, args=(m,)) for m in models * 2]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors


# ---------------------------------------------------------------------- pools

POOL_CASES = [
    # (shape, build): odd sizes, batch 1 with few channels, padding, dilations, 3-D, ceil
    ((1, 3, 17, 19), lambda x: opset1.max_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], "ceil")),
    ((2, 5, 9, 11), lambda x: opset8.max_pool(x, [2, 1], [2, 1], [1, 0], [0, 1], [3, 2],
                                              index_element_type="i64")),
    ((1, 7, 13, 13), lambda x: opset14.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3],
                                                rounding_type="ceil_torch",
                                                index_element_type="i32", axis=2)),
    ((3, 2, 5, 6, 7), lambda x: opset8.max_pool(x, [2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 1, 1],
                                                [2, 2, 2])),
    ((1, 4, 6, 5), lambda x: opset8.max_pool(x, [1, 1], [2, 2], [0, 0], [0, 0], [3, 3])),
    ((1, 4, 3, 3), lambda x: opset8.max_pool(x, [1, 1], [1, 1], [1, 1], [1, 1], [4, 4])),  # past
    ((2, 3, 15, 14), lambda x: opset1.avg_pool(x, [1, 1], [1, 1], [1, 1], [3, 3], True)),
    ((1, 6, 11, 9), lambda x: opset1.avg_pool(x, [2, 2], [1, 0], [1, 2], [3, 2], False)),
    ((1, 5, 7, 7), lambda x: opset1.avg_pool(x, [1, 1], [0, 0], [0, 0], [7, 7], True)),
    ((2, 3, 5, 4, 6), lambda x: opset1.avg_pool(x, [2, 1, 2], [0, 1, 0], [1, 0, 1], [2, 2, 3],
                                                True)),
    ((1, 4, 3, 3), lambda x: opset1.avg_pool(x, [1, 1], [2, 2], [2, 2], [4, 4], False)),  # past
    ((1, 3, 13, 10), lambda x: opset8.adaptive_avg_pool(
        x, opset1.constant(np.array([5, 4], np.int64)))),
    ((2, 5, 9, 8), lambda x: opset8.adaptive_max_pool(
        x, opset1.constant(np.array([4, 3], np.int64)), "i32")),
    ((1, 2, 3, 4), lambda x: opset8.adaptive_avg_pool(
        x, opset1.constant(np.array([5, 7], np.int64)))),  # windows overlap
]
PAST_THE_INPUT = {5, 10}


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pools_are_identical_for_any_thread_count_and_exact(case, tmp_path, small_blocks):
    shape, build = POOL_CASES[case]
    x = _data(shape, seed=case)
    model = one_op_model(build, [x], outputs=len(build(opset1.parameter(list(shape))).outputs()))
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    found = _runs(path, [x])
    _assert_identical(found)
    # Windows past the input go to the reference kernel, which never splits.
    assert max(small_blocks, default=1) > 1 or case in PAST_THE_INPUT
    # Bit for bit the plugin's, on one thread as tests/ops/test_pool_*.py check it.
    want = run_cpu(model, [x])
    for got, w in zip(found[4].values(), want, strict=True):
        assert _same_bits(got, w.astype(got.dtype)), "differs from OpenVINO"


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.uint8, np.int8])
def test_pools_of_other_types_are_identical_for_any_thread_count(dtype, tmp_path, small_blocks):
    x = _data((2, 3, 9, 10), dtype)

    def build(p):
        return opset8.max_pool(p, [2, 2], [1, 1], [1, 1], [0, 0], [3, 3],
                               index_element_type="i64")  # fmt: skip

    _, path = _saved(build, [x], tmp_path, outputs=2)
    _assert_identical(_runs(path, [x]))
    _, path = _saved(lambda p: opset1.avg_pool(p, [1, 1], [1, 1], [1, 1], [3, 3], True), [x],
                     tmp_path, name="avg")  # fmt: skip
    _assert_identical(_runs(path, [x]))


@settings(deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    n=st.integers(1, 3), c=st.integers(1, 9), h=st.integers(1, 12), w=st.integers(1, 12),
    k=st.integers(1, 4), s=st.integers(1, 3), pad=st.integers(0, 1), avg=st.booleans(),
)
def test_pools_of_any_size_are_identical_for_any_thread_count(tmp_path, small_blocks, n, c, h,
                                                              w, k, s, pad, avg):  # fmt: skip
    x = _data((n, c, h, w), seed=h * w + k)
    if avg:
        def build(p):
            return opset1.avg_pool(p, [s, s], [pad, pad], [pad, pad], [k, k], True, "ceil")
        outputs = 1
    else:
        def build(p):
            return opset8.max_pool(p, [s, s], [1, 1], [pad, pad], [pad, pad], [k, k], "ceil",
                                   index_element_type="i64")  # fmt: skip
        outputs = 2
    if min(h, w) + 2 * pad < k or (avg and pad >= k):
        return  # no window fits, or one lies in the padding: OpenVINO refuses the shape
    _, path = _saved(build, [x], tmp_path, outputs=outputs)
    _assert_identical(_runs(path, [x]))


def test_a_pool_above_the_real_threshold_is_identical(tmp_path):
    # 2x64x128x128 f32 is 8 MiB: split with the real MIN_BLOCK_BYTES into blocks of planes.
    x = _data((2, 64, 128, 128))
    assert x.nbytes >= 2 * chunks.MIN_BLOCK_BYTES
    model, path = _saved(lambda p: opset8.max_pool(p, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                                                   index_element_type="i64"), [x], tmp_path,
                         outputs=2)  # fmt: skip
    found = _runs(path, [x])
    _assert_identical(found)
    for got, w in zip(found[2].values(), run_cpu(model, [x]), strict=True):
        assert _same_bits(got, w)


# ---------------------------------------------------------------------- elementwise

BINARY = [
    ("add", lambda a, b: opset1.add(a, b)),
    ("subtract", lambda a, b: opset1.subtract(a, b)),
    ("multiply", lambda a, b: opset1.multiply(a, b)),
    ("divide", lambda a, b: opset1.divide(a, b)),
    ("power", lambda a, b: opset1.power(a, b)),
    ("maximum", lambda a, b: opset1.maximum(a, b)),
    ("greater", lambda a, b: opset1.greater(a, b)),
    ("squared_difference", lambda a, b: opset1.squared_difference(a, b)),
]
# (x's shape, y's shape): same shapes, numpy broadcasting both ways, batch 1, odd sizes
BINARY_SHAPES = [((1, 3, 7, 5), (1, 3, 7, 5)), ((2, 5, 3), (5, 1)), ((1, 1, 9), (4, 1, 1)),
                 ((3, 1, 6), (1, 7, 1)), ((23,), ())]  # fmt: skip


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("name", [n for n, _ in BINARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_binary_ops_are_identical_for_any_thread_count(name, shapes, dtype, tmp_path,
                                                       small_blocks):  # fmt: skip
    build = dict(BINARY)[name]
    x, y = _data(shapes[0], dtype, 1, specials=False), _data(shapes[1], dtype, 2, specials=False)
    if dtype == np.int32 and name == "divide":
        y[y == 0] = 3
    if dtype == np.int32 and name == "power":  # small exponents: no overflow to argue about
        y = np.abs(y) % 4
    _, path = _saved(build, [x, y], tmp_path)
    _assert_identical(_runs(path, [x, y]))
    assert max(small_blocks) > 1


UNARY = [
    ("relu", opset1.relu), ("sigmoid", opset1.sigmoid), ("tanh", opset1.tanh),
    ("exp", opset1.exp), ("sqrt", opset1.sqrt), ("elu", lambda x: opset1.elu(x, 0.5)),
    ("swish", opset4.swish), ("hswish", opset4.hswish), ("mish", opset4.mish),
    ("softplus", opset4.softplus), ("sin", opset1.sin), ("atan", opset1.atan),
    ("round", lambda x: opset5.round(x, "half_away_from_zero")),
]


@pytest.mark.parametrize("shape", [(1, 3, 7, 5), (2, 1, 13), (1, 1, 1, 17), (19,)], ids=str)
@pytest.mark.parametrize("name", [n for n, _ in UNARY])
def test_unary_ops_are_identical_for_any_thread_count(name, shape, tmp_path, small_blocks):
    x = _data(shape, np.float32, 3)
    _, path = _saved(dict(UNARY)[name], [x], tmp_path)
    _assert_identical(_runs(path, [x]))
    assert max(small_blocks) > 1


SOFTMAX = [
    ("softmax1", lambda x, axis: opset1.softmax(x, axis % 4)),
    ("softmax8", lambda x, axis: opset8.softmax(x, axis)),
    ("log_softmax", lambda x, axis: opset5.log_softmax(x, axis)),
]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("shape", [(1, 3, 7, 5), (2, 5, 1, 13), (3, 1, 1, 17)], ids=str)
@pytest.mark.parametrize("name", [n for n, _ in SOFTMAX])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax_is_identical_for_any_thread_count(name, shape, axis, dtype, tmp_path,
                                                   small_blocks):  # fmt: skip
    x = _data(shape, dtype, 4, specials=False) * 4
    _, path = _saved(lambda p: dict(SOFTMAX)[name](p, axis), [x], tmp_path)
    _assert_identical(_runs(path, [x]))
    if any(d > 1 for d in shape[: axis % 4]):  # split only along an axis before the softmax's
        assert max(small_blocks) > 1


REDUCE = [
    ("sum", opset1.reduce_sum), ("mean", opset1.reduce_mean), ("max", opset1.reduce_max),
    ("prod", opset1.reduce_prod), ("l2", opset4.reduce_l2),
]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("axes", [[1], [2, 3], [-1], [3, 1]], ids=str)
@pytest.mark.parametrize("name", [n for n, _ in REDUCE])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_reductions_are_identical_for_any_thread_count(name, axes, keep, dtype, tmp_path,
                                                       small_blocks):  # fmt: skip
    if name == "l2" and dtype == np.int32:
        return  # ReduceL2 takes floats only
    x = _data((3, 4, 5, 7), dtype, 6, specials=False)
    if name == "prod":
        x = (x % 3 + 1) if dtype == np.int32 else (x / 4 + 1).astype(dtype)
    build = dict(REDUCE)[name]
    _, path = _saved(lambda p: build(p, opset1.constant(np.array(axes, np.int64)), keep), [x],
                     tmp_path)  # fmt: skip
    _assert_identical(_runs(path, [x]))
    assert max(small_blocks) > 1


def test_softmax_above_the_real_threshold_is_identical(tmp_path):
    x = _data((1, 12, 256, 352), specials=False)  # attention scores: rows of 352
    _, path = _saved(lambda p: opset8.softmax(p, -1), [x], tmp_path)
    found = _runs(path, [x])
    _assert_identical(found)
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(found[2]["out"], want, rtol=1e-5, atol=1e-7)  # f32 exp, sums


def test_elementwise_above_the_real_threshold_is_identical(tmp_path):
    x = _data((1, 64, 128, 128), specials=False)  # 2**20 elements: split for real
    assert x.size >= blocks.MIN_SPLIT
    y = _data((64, 1, 128), seed=5, specials=False)

    def build(a, b):
        return opset1.sigmoid(opset1.multiply(a, b))

    _, path = _saved(build, [x, y], tmp_path)
    found = _runs(path, [x, y])
    _assert_identical(found)
    want = 1 / (1 + np.exp(-(x.astype(np.float64) * y)))
    np.testing.assert_allclose(found[2]["out"], want, rtol=1e-6, atol=1e-7)  # f32 sigmoid


# ---------------------------------------------------------------------- --threads


@pytest.mark.parametrize("command", [
    ["run", DEMO],
    ["compare", CHAIN, "--ref-backend", "openvino"],
])  # fmt: skip
@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_a_usage_error(command, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--threads", bad])
    assert exc.value.code == 2
    assert f"invalid --threads value: '{bad}'" in capsys.readouterr().err


def test_generate_refuses_a_bad_thread_count(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["generate", LLAMA, "--input-ids", "1,2", "--threads", "0"])
    assert exc.value.code == 2
    assert "invalid --threads value: '0'" in capsys.readouterr().err


def test_run_with_threads_gives_the_same_outputs_and_says_it(tmp_path, capsys):
    outs = {}
    for n in ("1", "3"):
        out = tmp_path / f"{n}.npz"
        assert main(["run", DEMO, "--threads", n, "-v", "-o", str(out)]) == 0
        thread_s = "thread" if n == "1" else "threads"
        assert f" ms on {n} {thread_s}\n" in capsys.readouterr().err
        with np.load(out) as f:
            outs[n] = dict(f)
    assert outs["1"].keys() == outs["3"].keys()
    for k in outs["1"]:
        # The demo's convolutions go through BLAS, which with 3 threads may add up a
        # product in another order (measured: 1e-6 relative under OpenBLAS's Haswell and
        # Zen kernels); the kernels irrun splits itself are compared bit for bit above.
        np.testing.assert_allclose(outs["1"][k], outs["3"][k], rtol=1e-5, atol=1e-8)
    assert main(["run", DEMO, "-v"]) == 0  # the cores this process may use
    assert f" on {threads.default()} thread" in capsys.readouterr().err


def test_compare_takes_threads(capsys):
    assert main(["compare", CHAIN, "--ref-backend", "openvino",
                 "--threads", "2"]) == 0  # fmt: skip
    assert "PASSED" in capsys.readouterr().out


def test_generate_takes_threads(capsys):
    assert main(["generate", LLAMA, "--input-ids", "1,2,3", "--max-new-tokens",
                 "2", "--ignore-eos", "--threads", "1", "--json"]) == 0  # fmt: skip
    assert '"tokens"' in capsys.readouterr().out


@pytest.mark.parametrize(("jobs", "given", "want"), [
    ("2", None, "half the default"),
    ("2", "3", 3),
    ("1", None, None),
    ("1", "2", 2),
])  # fmt: skip
def test_batch_workers_share_the_cores_unless_told(jobs, given, want, tmp_path, monkeypatch,
                                                   capsys):  # fmt: skip
    from irrun.tools import batch

    seen = []
    real = batch.run_batch

    def spy(model, *args, **kwargs):
        seen.append(model._threads_arg)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(batch, "run_batch", spy)
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(2):
        np.save(inputs / f"{i}.npy", np.ones((1, 3, 16, 16), np.float32))
    extra = [] if given is None else ["--threads", given]
    assert main(["run", CHAIN, "--input-dir", str(inputs), "--output-dir",
                 str(tmp_path / "out"), "--jobs", jobs, "-q", *extra]) == 0  # fmt: skip
    assert seen == [max(1, threads.default() // 2) if want == "half the default" else want]


@pytest.mark.parametrize(("name", "value", "cap"), [
    ("OMP_NUM_THREADS", "1", 1), ("OPENBLAS_NUM_THREADS", "1", 1), ("MKL_NUM_THREADS", "1", 1),
    ("OMP_NUM_THREADS", "", None), ("OMP_NUM_THREADS", "many", None),
    ("OMP_NUM_THREADS", "0", None), ("OMP_NUM_THREADS", "100000", None),
])  # fmt: skip
def test_the_default_keeps_to_the_environments_thread_count(name, value, cap, monkeypatch):
    # A Dask worker or a job's slot says so; BLAS keeps to it too.
    for other in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(other, raising=False)
    threads.available.cache_clear()
    cores = threads.available()
    monkeypatch.setenv(name, value)
    threads.available.cache_clear()
    try:
        assert threads.available() == (cores if cap is None else min(cap, cores))
    finally:
        monkeypatch.undo()
        threads.available.cache_clear()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX's")
# Python 3.12+ warns of fork in a process with threads: the point of this test.
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*:DeprecationWarning")
def test_a_forked_child_splits_work_on_threads_of_its_own():
    import multiprocessing

    with threads.using(2):
        assert len(threads.map_blocks(lambda a, b: a, 8)) > 1  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply(_blocks_in_child) == [(0, 2), (2, 4), (4, 6), (6, 8)]


def _blocks_in_child():
    with threads.using(2):
        return threads.map_blocks(lambda a, b: (a, b), 8, min_block=2)
