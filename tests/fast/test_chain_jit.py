"""The fast engine's compiled elementwise chains (irrun.fast.chain_jit) against the
reference kernels run op by op: the same bits (NaN positions included, not NaN payloads:
tests/support/bits.py), over generated chains with broadcasting, NaN, infinities and
signed zeros, in f32 and f64; then through loaded models (the chain pass with the engine
on), the ops it must leave to NumPy, and the compiles it records."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba not installed")

from core.test_elementwise_chains import CASES, build, chains_of, check, feeds_for
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bits import SPECIALS, same_bits

import irrun
from irrun.fast import chain_jit, jit
from irrun.ir.registry import supported_ops

REFERENCE = {op.type: op for op in sorted(supported_ops(), key=lambda o: o.version)}
NUMPY = SimpleNamespace(auto_broadcast="numpy", m_pythondiv=True)


@pytest.fixture(autouse=True)
def engine_on(monkeypatch):
    monkeypatch.setenv("IRRUN_JIT", "1")
    jit.reset()
    yield
    monkeypatch.undo()
    jit.reset()


def reference(parts, args):
    """The chain run op by op by the reference kernels."""
    value = None
    for kind, attrs, wiring in parts:
        operands = [value if k == chain_jit.RUNNING else args[k] for k in wiring]
        value = REFERENCE[kind].kernel(attrs, *operands)[0]
    return value


def _attrs(kind, draw):
    if kind == "Clamp":
        lo = draw(st.sampled_from([-1.5, 0.0, -0.0, -np.inf, 0.25]))
        return SimpleNamespace(min=lo, max=max(lo, draw(st.sampled_from([0.0, 1.0, 6.0, np.inf]))))
    return NUMPY if chain_jit.OPS[kind][0] == 2 else SimpleNamespace()


@st.composite
def chains(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))

    def operand():
        k = draw(st.integers(0, rank))
        tail = shape[rank - k :]
        dims = tuple(draw(st.sampled_from([d, 1])) for d in tail)
        n = int(np.prod(dims))
        values = draw(st.lists(st.one_of(st.sampled_from(SPECIALS), st.floats(-1e6, 1e6)),
                               min_size=n, max_size=n))
        with np.errstate(over="ignore"):
            return np.array(values, np.float64).astype(dtype).reshape(dims)

    args = [operand()]
    if args[0].ndim < rank or draw(st.booleans()):  # the chain's input may be broadcast up
        args[0] = np.broadcast_to(args[0], shape).copy() if draw(st.booleans()) else args[0]
    parts = []
    for i in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(sorted(chain_jit.OPS)))
        arity = chain_jit.OPS[kind][0]
        if i == 0:
            wiring = (0,) if arity == 1 else (0, len(args))
            if arity == 2:
                args.append(operand())
        elif arity == 1:
            wiring = (chain_jit.RUNNING,)
        else:
            choice = draw(st.sampled_from(["new", "again", "self"]))
            if choice == "self":
                wiring = (chain_jit.RUNNING, chain_jit.RUNNING)
            else:
                if choice == "new":
                    args.append(operand())
                k = len(args) - 1 if choice == "new" else draw(st.integers(0, len(args) - 1))
                wiring = (chain_jit.RUNNING, k) if draw(st.booleans()) else (k, chain_jit.RUNNING)
        parts.append((kind, _attrs(kind, draw), wiring))
    return parts, args


# Each example compiles a loop (0.2-1 s): few examples, each a chain of up to 8 ops.
@settings(max_examples=20, deadline=None)
@given(case=chains())
def test_compiled_chains_give_the_reference_bits(case):
    parts, args = case
    assert chain_jit.takes(parts)
    want = reference(parts, args)
    shape = np.broadcast_shapes(*(a.shape for a in args))
    with np.errstate(all="ignore"):
        got = chain_jit.run(parts, args, shape)
    if not shape:  # a 0-D output: not worth a compiled loop, run op by op
        assert got is None
        return
    assert got is not None
    assert same_bits(got, want), (parts, args, got, want)


def test_hand_computed_nan_and_zero_rules():
    """Maximum keeps the reference's x > y ? x : y (NaN in x gives y, NaN in y gives NaN,
    equal zeros give y), ReLU gives +0 for NaN and -0, Clamp gives lo for NaN."""
    x = np.array([np.nan, 1.0, -0.0, 0.0, 2.0, -np.inf], np.float32)
    y = np.array([5.0, np.nan, 0.0, -0.0, 1.0, 3.0], np.float32)
    got = chain_jit.run([("Maximum", NUMPY, (0, 1))], [x, y], x.shape)
    assert got.tolist()[0] == 5.0 and np.isnan(got[1]) and got[4] == 2.0
    assert np.signbit(got[2]) == np.signbit(y[2]) and np.signbit(got[3]) == np.signbit(y[3])
    relu = chain_jit.run([("ReLU", SimpleNamespace(), (0,))], [x], x.shape)
    assert relu.tolist() == [0.0, 1.0, 0.0, 0.0, 2.0, 0.0] and not np.signbit(relu).any()
    clamp = chain_jit.run([("Clamp", SimpleNamespace(min=-1.0, max=1.5), (0,))], [x], x.shape)
    assert clamp.tolist() == [-1.0, 1.0, -0.0, 0.0, 1.5, -1.0]


def test_other_types_and_ops_are_left_to_numpy():
    x = np.ones((2, 3), np.float16)
    assert chain_jit.run([("Abs", SimpleNamespace(), (0,))], [x], x.shape) is None
    assert chain_jit.run([("Abs", SimpleNamespace(), (0,))], [x.astype(np.int32)], x.shape) is None
    assert not chain_jit.takes([("Exp", SimpleNamespace(), (0,)), ("Abs", SimpleNamespace(), (-1,))])
    assert not chain_jit.takes([("Add", SimpleNamespace(auto_broadcast="pdpd"), (0, 1))])


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("et", ["f32", "f16"])
def test_models_with_the_engine_give_the_reference_bits(tmp_path, monkeypatch, case, et):
    shape, chain, sides = CASES[case]
    path = build(tmp_path / "m.xml", shape, chain, sides, et)
    model = irrun.load(path)
    feeds = feeds_for(model, np.random.default_rng(case), et)
    monkeypatch.setattr(chain_jit, "_kernels", {})  # compiled (or loaded) anew
    since = len(jit.compiled())
    check(path, feeds)
    compiled = jit.compiled(since)
    supported = all(name.rstrip("'") in chain_jit.OPS or name == "Relu" for name in chain)
    if et == "f32" and supported and chains_of(model):
        assert compiled and compiled[0].name.startswith("chain of ")
    if et == "f16":
        assert not [c for c in compiled if c.name.startswith("chain of ")]


def test_a_chain_of_200_adds_compiles_once(tmp_path, monkeypatch):
    path = build(tmp_path / "m.xml", [1, 16], ["Add"] * 200, [[1, 16]] * 200, "f32")
    model = irrun.load(path)
    feeds = feeds_for(model, np.random.default_rng(0), "f32", specials=False)
    monkeypatch.setattr(chain_jit, "_kernels", {})
    since = len(jit.compiled())
    check(path, feeds, views=False)
    model.run(feeds)
    assert [c.name for c in jit.compiled(since)] == ["chain of 200 (Add)"]


def test_arguments_numba_does_not_take_go_to_numpy():
    """Big-endian data (numba types no foreign byte order): None, so the NumPy path runs."""
    x = np.arange(6, dtype=">f4").reshape(2, 3)
    parts = [("Abs", SimpleNamespace(), (0,)), ("Negative", SimpleNamespace(), (-1,))]
    prepared = chain_jit.prepare(parts, [x.astype(np.float32)], x.shape)
    assert prepared is not None and prepared([x]) is None  # another type than compiled
    assert chain_jit.run(parts, [x], x.shape) is None  # not one of TYPES


def test_without_a_writable_cache_folder_the_loop_is_made_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setattr(chain_jit, "_folders", lambda: [blocker / "chains"])
    monkeypatch.setattr(chain_jit, "_kernels", {})  # compiled anew, whatever ran before
    parts = [("Ceiling", SimpleNamespace(), (0,)), ("Sqrt", SimpleNamespace(), (-1,)),
             ("Floor", SimpleNamespace(), (-1,)), ("Abs", SimpleNamespace(), (-1,))]
    x = np.array([[0.5, 4.2, -0.0, np.nan, 9.0]], np.float64)
    since = len(jit.compiled())
    got = chain_jit.run(parts, [x], x.shape)
    assert same_bits(got, reference(parts, [x]))
    compiled = jit.compiled(since)
    assert len(compiled) == 1 and not compiled[0].cached


@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 6, 4, 4), (1, 1, 9)])
def test_the_loop_split_over_threads_gives_the_same_bits(shape):
    from irrun import threads
    from irrun.fast import blocks

    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::7] = np.nan
    c = rng.standard_normal((shape[-2], 1)).astype(np.float32)
    parts = [("Multiply", NUMPY, (0, 1)), ("Add", NUMPY, (-1, 0)), ("ReLU", SimpleNamespace(), (-1,)),
             ("Minimum", NUMPY, (1, -1))]
    want = reference(parts, [x, c])
    calls = []
    real = threads.map_blocks
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocks, "MIN_SPLIT", 2)
        patch.setattr(blocks, "MIN_BLOCK", 1)
        patch.setattr(threads, "map_blocks", lambda *a: calls.append(a[1]) or real(*a))
        with threads.using(2):
            got = chain_jit.run(parts, [x, c], shape)
    assert calls  # split
    assert same_bits(got, want)
