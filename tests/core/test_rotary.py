"""Rotary embedding's layers run as one step (irrun.core.passes.rotary, irrun.fast.rotary).

The pass fires on the Llama and Qwen2 exports kept under tests/ (four: q and k of each of
two decoder layers); a run with it gives the bits of a run without it, in every view; and
its kernel gives the bits of the layers' reference kernels, on each rotary's actual
inputs in those models and on generated data (any shape and split, tiny, huge, infinite
and NaN values), and f16 runs the layers one by one.  Expected values are the reference
kernels': the kernel claims their bits.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import SPECIALS, same_bits, split_small

import irrun
from irrun.core.passes import fuse_rotary
from irrun.core.passes.constants import known_constants
from irrun.core.passes.rotary import Rotary
from irrun.errors import KernelError
from irrun.fast.rotary import rotary
from irrun.ir.registry import resolve
from irrun.ops.slicing import _slice_index

from .test_rms_norm import MODELS, _id, _runs, _same, _steps

LAYERS = ["Multiply", "Slice", "Multiply", "Slice", "Concat", "Multiply", "Add"]


def _without_pass(path: Path) -> irrun.Model:
    model = irrun.load(path)
    model._plan.passes = tuple(p for p in model._plan.passes if p is not fuse_rotary)
    model._plan._schedules.clear()
    return model


def _rotaries(model: irrun.Model) -> list:
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    return [step for step, _ in model._plan.schedule(wanted) if isinstance(step.kernel, Rotary)]


@pytest.mark.parametrize("path", MODELS, ids=_id)
def test_the_pass_fires_and_changes_no_bit(path):
    model = irrun.load(path)
    found = _rotaries(model)
    assert len(found) == 4
    assert all([p.node.op.type for p in step.kernel.parts] == LAYERS for step in found)
    plain = _runs(model, path)
    for i, (got, want) in enumerate(zip(plain, _runs(_without_pass(path), path), strict=True)):
        _same(got, want, f"step {i} against the run without the pass")
    every = _runs(model, path, intermediate=True)
    every_unfused = _runs(_without_pass(path), path, intermediate=True)
    for i, (got, want) in enumerate(zip(every, every_unfused, strict=True)):
        assert got.keys() == want.keys()
        _same(got, want, f"intermediate=True, step {i}")
        _same(got, plain[i], f"intermediate=True against the plain run, step {i}")
    seen: list = []
    model.run(_steps(path)[0], on_layer=seen.append)
    names = {layer.ref.name for layer in seen}
    assert {p.node.layer.name for step in found for p in step.kernel.parts} <= names


@pytest.mark.parametrize("path", MODELS, ids=_id)
def test_each_rotary_gives_the_reference_kernels_bits_on_the_model_s_values(path):
    model, reference = irrun.load(path), irrun.load(path, reference=True)
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    known = known_constants(list(model._plan.schedule(wanted)))
    key_of = {slot: key for key, slot in reference._plan.slots.items()}
    names = reference.tensor_names
    found = _rotaries(model)
    for values in _runs(reference, path, intermediate=True):
        for step in found:
            args = [known[s] if s in known else values[names[key_of[s]]] for s in step.inputs]
            (got,) = step.kernel(SimpleNamespace(), *args)
            want = values[names[key_of[step.outputs[0]]]]
            assert got.dtype == np.float32
            assert same_bits(got, want, nan_payloads=True)


def _kernel(kind: str, version: str = "opset1"):
    return resolve(kind, version).kernel


def _layers(q, cos, sin, negate, second, first, axis, order):
    """The layers' reference kernels one after the other (Slice bounds as arrays)."""
    numpy = SimpleNamespace(auto_broadcast="numpy")
    q_first, slice_first, cat_first, a_first = order
    a = _kernel("Multiply")(numpy, *((q, cos) if q_first else (cos, q)))[0]
    half = _kernel("Slice", "opset8")(SimpleNamespace(), q, *second)[0]
    n = _kernel("Multiply")(numpy, *((half, negate) if slice_first else (negate, half)))[0]
    rest = _kernel("Slice", "opset8")(SimpleNamespace(), q, *first)[0]
    r = _kernel("Concat")(SimpleNamespace(axis=axis), n, rest)[0]
    b = _kernel("Multiply")(numpy, *((r, sin) if cat_first else (sin, r)))[0]
    return _kernel("Add")(numpy, *((a, b) if a_first else (b, a)))[0]


FLOATS = st.one_of(st.sampled_from(SPECIALS), st.floats(width=32), st.floats(-3, 3, width=32))


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    d = shape[-1]
    q = draw(hnp.arrays(dtype, shape, elements=FLOATS))
    cos = draw(hnp.arrays(dtype, shape[-2:] if len(shape) > 1 else shape, elements=FLOATS))
    sin = draw(hnp.arrays(dtype, (1,) * (len(shape) - 1) + (d,), elements=FLOATS))
    negate = np.array(draw(st.sampled_from([-1.0, 2.0, -0.0])), dtype).reshape(
        (1,) * draw(st.integers(0, len(shape))))
    h = draw(st.integers(0, d))
    big = np.iinfo(np.int64).max
    stop = draw(st.sampled_from([big, d, d + 5]))
    second = (np.array([h]), np.array([stop]), np.array([1]), np.array([-1]))
    first = (np.array([0]), np.array([h if draw(st.booleans()) else h - d]), np.array([1]),
             np.array([len(shape) - 1]))
    order = tuple(draw(st.booleans()) for _ in range(4))
    return q, cos, sin, negate, second, first, -1, order


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_the_kernel_gives_the_reference_kernels_bits(case):
    q, cos, sin, negate, second, first, _, order = case
    with np.errstate(all="ignore"):  # as a run sets it
        got = rotary(q, cos, sin, negate, _slice_index(q, *second), _slice_index(q, *first),
                     q.ndim - 1, order)
        try:
            want = _layers(*case)
        except KernelError:  # halves that do not add up to q: the layers say so
            assert got is None
            return
    assert got is not None
    assert same_bits(got, want, nan_payloads=True), (got, want)


def test_other_types_are_left_to_the_layers():
    q = np.ones((2, 4), np.float16)
    index = (slice(None), slice(0, 2))
    assert rotary(q, q, q, q, index, index, 1, (True,) * 4) is None
    q32 = np.ones((2, 4), np.float32)
    assert rotary(q32, q, q32, q32, index, index, 1, (True,) * 4) is None


@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_a_built_rotary_fuses_and_gives_the_reference_plans_bits(tmp_path, half):
    """As exports write it (negation a Multiply by -1, sin and cos inputs of their own);
    f16 runs the layers one by one: the reference plan's bits in every view."""
    import openvino as ov
    from openvino import opset13 as ops

    et, dtype = (ov.Type.f16, np.float16) if half else (ov.Type.f32, np.float32)
    q = ops.parameter([1, 2, -1, 8], et, name="q")
    cos = ops.parameter([1, 1, -1, 8], et, name="cos")
    sin = ops.parameter([1, 1, -1, 8], et, name="sin")

    def piece(start, stop):
        return ops.slice(q, np.array([start]), np.array([stop]), np.array([1]), np.array([-1]))

    negated = ops.multiply(piece(4, np.iinfo(np.int64).max), ops.constant(np.array(-1, dtype)))
    rotated = ops.concat([negated, piece(0, 4)], -1)
    out = ops.add(ops.multiply(q, cos), ops.multiply(rotated, sin))
    path = tmp_path / "rotary.xml"
    ov.save_model(ov.Model([ops.result(out)], [q, cos, sin], "rotary"), str(path),
                  compress_to_fp16=False)
    model, reference = irrun.load(path), irrun.load(path, reference=True)
    assert len(_rotaries(model)) == 1
    rng = np.random.default_rng(2)
    feeds = {"q": rng.standard_normal((1, 2, 3, 8)).astype(dtype),
             "cos": rng.standard_normal((1, 1, 3, 8)).astype(dtype),
             "sin": rng.standard_normal((1, 1, 3, 8)).astype(dtype)}
    feeds["q"][0, 0, 0, :4] = [np.inf, np.nan, -0.0, 6e4]
    want = dict(reference.run(feeds, intermediate=True))
    got = dict(model.run(feeds, intermediate=True))
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert same_bits(got[name], value, nan_payloads=True), name
    for name, value in dict(model.run(feeds)).items():
        assert same_bits(value, want[name], nan_payloads=True), name


def test_work_the_layers_split_over_threads_runs_layer_by_layer(monkeypatch):
    """As the norms (tests/core/test_rms_norm.py): split work runs layer by layer."""
    import irrun.core.passes.rotary as module

    path = MODELS[2]
    calls: list[int] = []
    real = module.rotary
    monkeypatch.setattr(module, "rotary", lambda *a: calls.append(1) or real(*a))
    feeds = _steps(path)[0]
    model, unfused = irrun.load(path, threads=2), _without_pass(path)
    unfused.threads = 2
    with split_small():
        got, want = model.run(feeds), unfused.run(feeds)
    assert calls == []
    _same(dict(got), dict(want), "split over two threads")
    model.threads = 1
    model.run(feeds)
    assert len(calls) == 4
