"""The elementwise-chain pass (irrun.core.passes.elementwise_chains): chains of elementwise
ops run as one step, block by block (irrun.fast.chain), give the reference plan's bits
(``reference=True``: no pass, reference kernels), NaN positions included (not NaN payloads:
which NaN an operation gives may depend on whether NumPy took a SIMD or a scalar loop,
which blocks change; tests/support/bits.py).  Chains with broadcasting, NaN and
infinities, f16/bf16/f32/i32, hypothesis-generated chains; blocks forced small so that
small tensors go through them; observed runs see every layer with the reference's bits;
and where the pass must not fuse.  The fast engine is off here (the NumPy path);
tests/fast/test_chain_jit.py runs the same chains compiled.
"""

from __future__ import annotations

from contextlib import contextmanager

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openvino import opset13 as ops
from support.bits import same_bits

import irrun
from irrun.fast import chain as fast_chain
from irrun.fast import jit


@pytest.fixture(autouse=True)
def numpy_path(monkeypatch):
    """The NumPy path: the fast engine off (IRRUN_JIT=0)."""
    monkeypatch.setenv("IRRUN_JIT", "0")
    jit.reset()
    yield
    monkeypatch.undo()
    jit.reset()

BINARY = {"Add": ops.add, "Subtract": ops.subtract, "Multiply": ops.multiply,
          "Divide": ops.divide, "Maximum": ops.maximum, "Minimum": ops.minimum,
          "Power": ops.power, "SquaredDifference": ops.squared_difference}
UNARY = {"Relu": ops.relu, "Abs": ops.abs, "Negative": ops.negative, "Sqrt": ops.sqrt,
         "Exp": ops.exp, "Tanh": ops.tanh, "Sigmoid": ops.sigmoid, "Floor": ops.floor,
         "Ceiling": ops.ceiling, "Clamp": lambda x: ops.clamp(x, -2.0, 3.0),
         "Erf": ops.erf, "Log": ops.log}
INTEGER_OK = {"Add", "Subtract", "Multiply", "Maximum", "Minimum", "Relu", "Abs", "Negative",
              "Clamp", "SquaredDifference"}
TYPES = {"f32": (ov.Type.f32, np.float32), "f16": (ov.Type.f16, np.float16),
         "bf16": (ov.Type.bf16, ml_dtypes.bfloat16), "i32": (ov.Type.i32, np.int32)}


def build(path, shape, chain, side_shapes, et):
    """A model: x of ``shape`` through ``chain`` (op names); binary ops take the next
    parameter (of the next shape of ``side_shapes``) as their other operand, which comes
    first where the name ends with ``'``."""
    ov_type, _ = TYPES[et]
    x = ops.parameter(shape, ov_type, name="x")
    params, value, sides = [x], x, iter(side_shapes)
    for i, name in enumerate(chain):
        base = name.rstrip("'")
        if base in BINARY:
            p = ops.parameter(next(sides), ov_type, name=f"p{i}")
            params.append(p)
            value = BINARY[base](p, value) if name.endswith("'") else BINARY[base](value, p)
        elif base == "Select":
            p = ops.parameter(next(sides), ov_type, name=f"p{i}")
            params.append(p)
            value = ops.select(ops.greater(p, ops.constant(np.float32(0), ov_type)),
                               value, p)
        else:
            value = UNARY[base](value)
        value.get_output_tensor(0).set_names({f"t{i}"})
    ov.save_model(ov.Model([value], params, "chain"), path, compress_to_fp16=False)
    return path


def feeds_for(model, rng, et, specials=True):
    _, dtype = TYPES[et]
    feeds = {}
    for inp in model.inputs:
        shape = [int(d) for d in inp.shape]
        if et == "i32":
            v = rng.integers(-50, 50, shape).astype(np.int32)
        else:
            v = rng.standard_normal(shape) * 3
            if specials and v.size:
                flat = v.reshape(-1)
                k = rng.integers(0, flat.size, max(1, flat.size // 20))
                flat[k] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30], k.size)
            with np.errstate(over="ignore"):
                v = v.astype(dtype)
        feeds[inp.name] = v
    return feeds


@contextmanager
def small_blocks(counts):
    """Blocks of a few elements from 16 elements up: small tensors take the block path;
    ``counts`` gets each blocked run's number of blocks."""
    saved = fast_chain.MIN_ELEMENTS, fast_chain.BLOCK_BYTES, fast_chain.run_blocks
    from irrun.core.passes import elementwise_chains as pass_module

    real = pass_module.run_blocks

    def counted(compute, shape, operands, found):
        counts.append(len(found))
        return real(compute, shape, operands, found)

    fast_chain.MIN_ELEMENTS, fast_chain.BLOCK_BYTES = 16, 24
    pass_module.run_blocks = counted
    try:
        yield
    finally:
        fast_chain.MIN_ELEMENTS, fast_chain.BLOCK_BYTES, _ = saved
        pass_module.run_blocks = real


def chains_of(model):
    """The elementwise chains of a model's plain run: each chain's layer types."""
    plan = model._plan
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    return [[p.node.op.type for p in step.kernel.parts] for step, _ in plan.schedule(wanted)
            if type(step.kernel).__name__ == "ElementwiseChain"]


def unfused(path, threads=1):
    """The model planned with every pass but this one."""
    from irrun.core.passes import fuse_elementwise_chains

    model = irrun.load(path, threads=threads)
    plan = model._plan
    plan.passes = tuple(p for p in plan.passes if p is not fuse_elementwise_chains)
    plan._schedules.clear()
    return model


def check(path, feeds, threads=1, views=True, reference=True):
    """The default run, and its observed runs, give the reference plan's bits (or, with
    ``reference`` false, for models with inexact fast kernels, the unfused plan's)."""
    fused = irrun.load(path, threads=threads)
    ref = irrun.load(path, reference=True) if reference else unfused(path, threads)
    got = fused.run(feeds)
    want = ref.run(feeds)
    for name in want:
        assert same_bits(got[name], want[name]), (name, got[name], want[name])
    if views:
        every = fused.run(feeds, intermediate=True)
        every_ref = ref.run(feeds, intermediate=True)
        assert every.keys() == every_ref.keys()
        for name in every_ref:
            assert same_bits(every[name], every_ref[name]), name
    return fused


CASES = [
    # shape, chain, side shapes
    ([1, 8, 6, 6], ["Add", "Multiply", "Relu", "Maximum", "Minimum'", "Subtract'"],
     [[1, 8, 1, 1], [8, 1, 1], [1, 1, 6, 6], [6], [], [1, 8, 6, 6]]),
    ([5, 7], ["Abs", "Sqrt", "Divide'", "Clamp", "Negative", "Floor"], [[5, 1]]),
    ([3, 1, 4], ["Add", "Multiply'", "Select", "Exp", "Tanh", "Sigmoid"],
     [[2, 4], [3, 2, 1], [3, 2, 4]]),
    ([2, 3, 4], ["Maximum", "Maximum'", "Minimum", "Minimum'", "Clamp"],
     [[2, 3, 4], [1], [2, 1, 4], []]),
]


@pytest.mark.parametrize("et", list(TYPES))
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("blocked", [False, True], ids=["whole", "blocks"])
def test_chains_give_the_reference_bits(tmp_path, et, case, blocked):
    shape, chain, sides = CASES[case]
    if et == "i32":  # the ops of integers, each with its side operand
        given, chain, sides = iter(sides), [], []
        for name in CASES[case][1]:
            side = next(given) if name.rstrip("'") in (*BINARY, "Select") else None
            if name.rstrip("'") in INTEGER_OK:
                chain.append(name)
                if side is not None:
                    sides.append(side)
    path = build(tmp_path / "m.xml", shape, chain, sides, et)
    model = irrun.load(path)
    feeds = feeds_for(model, np.random.default_rng(case), et)
    counts: list[int] = []
    if blocked:
        with small_blocks(counts):
            fused = check(path, feeds, threads=2)
        assert counts and all(n > 1 for n in counts)  # the blocks did the work
    else:
        fused = check(path, feeds)
    # every layer in a chain (Select's condition, Greater, heads a chain of its own)
    assert sum(map(len, chains_of(fused))) == len(chain) + chain.count("Select")


def test_a_large_tensor_goes_through_blocks_with_the_default_sizes(tmp_path):
    path = build(tmp_path / "m.xml", [1, 64, 112, 112], ["Add", "Multiply", "Relu", "Add'"],
                 [[1, 64, 1, 1], [1, 64, 1, 1], [1, 1, 112, 112]], "f32")
    feeds = feeds_for(irrun.load(path), np.random.default_rng(1), "f32")
    from irrun.core.passes import elementwise_chains as pass_module

    calls = []
    real = pass_module.run_blocks
    pass_module.run_blocks = lambda *a: (calls.append(len(a[3])), real(*a))[1]
    try:
        for n in (1, 2):
            check(path, feeds, threads=n, views=n == 1)
    finally:
        pass_module.run_blocks = real
    channels = fast_chain.BLOCK_BYTES // 4 // (112 * 112)  # whole planes of f32 a block
    assert calls == [-(-64 // channels)] * 2


def test_a_chain_is_cut_where_an_intermediate_has_two_readers_or_is_asked_for(tmp_path):
    x = ops.parameter([4, 4], ov.Type.f32, name="x")
    a = ops.relu(ops.add(x, ops.constant(np.ones((4, 4), np.float32))))
    a.get_output_tensor(0).set_names({"a"})
    b = ops.abs(ops.multiply(a, a))  # reads a twice: one reader step
    c = ops.negative(ops.sqrt(b))
    c.get_output_tensor(0).set_names({"c"})
    d = ops.exp(ops.floor(a))  # a's second reader
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([c, d], [x], "m"), path)
    model = irrun.load(path)
    assert sorted(chains_of(model)) == [["Add", "ReLU"], ["Floor", "Exp"],
                                        ["Multiply", "Abs", "Sqrt", "Negative"]]
    feeds = feeds_for(model, np.random.default_rng(2), "f32")
    check(path, feeds)
    # a asked for as well: the same chains, the same bits
    got = model.run(feeds, outputs=["a", "c"])
    want = irrun.load(path, reference=True).run(feeds, outputs=["a", "c"])
    for name in want:
        assert same_bits(got[name], want[name])


def test_a_convolution_s_bias_and_activation_stay_in_place(tmp_path):
    """The ops the in-place pass applies into a convolution's result are left to it."""
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    x = ops.parameter([1, 3, 10, 10], ov.Type.f32, name="x")
    y = ops.convolution(x, ops.constant(w), [1, 1], [1, 1], [1, 1], [1, 1])
    y = ops.relu(ops.add(y, ops.constant(np.ones((1, 8, 1, 1), np.float32))))
    y = ops.sqrt(ops.abs(ops.tanh(y)))  # not applied in place: a chain of its own
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([y], [x], "m"), path)
    model = irrun.load(path)
    assert chains_of(model) == [["Tanh", "Abs", "Sqrt"]]
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    kinds = [type(s.kernel).__name__ for s, _ in model._plan.schedule(wanted)]
    assert "InPlaceChain" in kinds
    check(path, feeds_for(model, np.random.default_rng(3), "f32"), reference=False)


_OPS_F = sorted(set(BINARY) | set(UNARY) | {"Select"})


@st.composite
def _chains(draw):
    et = draw(st.sampled_from(list(TYPES)))
    names = _OPS_F if et != "i32" else sorted(INTEGER_OK)
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    chain, sides = [], []
    for _ in range(draw(st.integers(2, 7))):
        name = draw(st.sampled_from(names))
        if name in BINARY or name == "Select":
            side_rank = draw(st.integers(0, rank))
            tail = shape[rank - side_rank :]
            side = [draw(st.sampled_from([d, 1])) for d in tail]
            # now and then the side operand widens the result: the running value is 1 there
            sides.append(side)
            if name in BINARY and draw(st.booleans()):
                name += "'"
        chain.append(name)
    if draw(st.booleans()):  # the input broadcast up by a side operand
        shape = [1 if draw(st.booleans()) else d for d in shape]
    return et, shape, chain, sides


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_chains(), seed=st.integers(0, 2**16), blocked=st.booleans())
def test_generated_chains_give_the_reference_bits(tmp_path_factory, case, seed, blocked):
    et, shape, chain, sides = case
    path = build(tmp_path_factory.mktemp("g") / "m.xml", shape, chain, sides, et)
    model = irrun.load(path)
    feeds = feeds_for(model, np.random.default_rng(seed), et)
    counts: list[int] = []
    if blocked:
        with small_blocks(counts):
            check(path, feeds, threads=2)
    else:
        check(path, feeds)
