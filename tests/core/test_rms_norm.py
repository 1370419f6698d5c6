"""RMSNorm's layers run as one step (irrun.core.passes.rms_norm, irrun.fast.rms_norm).

The pass fires on the Llama and Qwen2 exports kept under tests/ (five norms each: one per
decoder layer's attention and MLP, and the final one); a run with it gives the bits of a
run without it, in every view; and its kernel gives the bits of the layers' reference
kernels, on each norm's actual input in those models and on generated data (tiny, huge,
infinite and NaN values, any shape and axes).  Expected values are the reference kernels':
the kernel claims their bits.
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
from irrun.core.passes import fuse_rms_norms
from irrun.core.passes.constants import known_constants
from irrun.core.passes.rms_norm import RMSNorm
from irrun.fast.rms_norm import rms_norm
from irrun.ir.registry import resolve

ROOT = Path(__file__).resolve().parents[2]
STATEFUL = ROOT / "tests" / "stateful"
MODELS = [STATEFUL / "llama" / "openvino_model.xml", STATEFUL / "qwen2" / "openvino_model.xml",
          ROOT / "tests" / "corpus" / "llama.xml"]
def _id(path: Path) -> str:
    return "corpus" if path.parent.name == "corpus" else path.parent.name


NORM = ["Power", "ReduceMean", "Add", "Sqrt", "Divide", "Multiply"]


def _without_pass(path: Path) -> irrun.Model:
    model = irrun.load(path)
    model._plan.passes = tuple(p for p in model._plan.passes if p is not fuse_rms_norms)
    model._plan._schedules.clear()
    return model


def _norms(model: irrun.Model) -> list:
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    return [step for step, _ in model._plan.schedule(wanted) if isinstance(step.kernel, RMSNorm)]


def _steps(path: Path) -> list[dict[str, np.ndarray]]:
    """Feeds of a prefill of three tokens and two decode steps (stateful models), or the
    corpus model's kept inputs."""
    if path.parent.name == "corpus":
        with np.load(path.with_suffix(".inputs.npz")) as f:
            return [dict(f)]
    ids = [[1, 17, 42], [7], [300]]
    feeds, seen = [], 0
    for chunk in ids:
        n = len(chunk)
        feeds.append({"input_ids": np.array([chunk], np.int64),
                      "attention_mask": np.ones((1, seen + n), np.int64),
                      "position_ids": np.arange(seen, seen + n, dtype=np.int64)[None],
                      "beam_idx": np.zeros(1, np.int32)})
        seen += n
    return feeds


def _runs(model: irrun.Model, path: Path, **kw) -> list[dict[str, np.ndarray]]:
    if path.parent.name == "corpus":
        return [dict(model.run(f, **kw)) for f in _steps(path)]
    request = model.create_request()
    return [dict(request.run(f, **kw)) for f in _steps(path)]


def _same(got: dict, want: dict, what: str) -> None:
    assert got.keys() >= want.keys(), what
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, strict=True, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("path", MODELS, ids=_id)
def test_the_pass_fires_and_changes_no_bit(path):
    model = irrun.load(path)
    norms = _norms(model)
    assert len(norms) == 5
    assert all([p.node.op.type for p in step.kernel.parts] == NORM for step in norms)
    plain = _runs(model, path)
    unfused = _runs(_without_pass(path), path)
    for i, (got, want) in enumerate(zip(plain, unfused, strict=True)):
        _same(got, want, f"step {i} against the run without the pass")
    # Every view sees every layer of the norms, with the same bits.
    every = _runs(model, path, intermediate=True)
    every_unfused = _runs(_without_pass(path), path, intermediate=True)
    for i, (got, want) in enumerate(zip(every, every_unfused, strict=True)):
        assert got.keys() == want.keys()
        _same(got, want, f"intermediate=True, step {i}")
        _same(got, plain[i], f"intermediate=True against the plain run, step {i}")
    seen: list = []
    model.run(_steps(path)[0], on_layer=seen.append)
    names = {layer.ref.name for layer in seen}
    assert {p.node.layer.name for step in norms for p in step.kernel.parts} <= names


@pytest.mark.parametrize("path", MODELS, ids=_id)
def test_each_norm_gives_the_reference_kernels_bits_on_the_model_s_values(path):
    """Each fused step, on the inputs the reference plan gives its layers, gives what the
    reference plan's layers give (compared norm by norm: BLAS's own orders of summing make
    the two plans' later inputs differ)."""
    model, reference = irrun.load(path), irrun.load(path, reference=True)
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    known = known_constants(list(model._plan.schedule(wanted)))
    key_of = {slot: key for key, slot in reference._plan.slots.items()}
    names = reference.tensor_names
    norms = _norms(model)
    for values in _runs(reference, path, intermediate=True):
        for step in norms:
            args = [known[s] if s in known else values[names[key_of[s]]] for s in step.inputs]
            (got,) = step.kernel(SimpleNamespace(), *args)
            want = values[names[key_of[step.outputs[0]]]]
            assert got.dtype == np.float32
            assert same_bits(got, want, nan_payloads=True)


def _reference(kind: str):
    return resolve(kind, "opset1").kernel


def _parts_reference(x, exponent, axes, keep, eps, eps_first, one, x_first, weight, w_first):
    """The layers' reference kernels one after the other."""
    numpy = SimpleNamespace(auto_broadcast="numpy")
    square = (_reference("Power")(numpy, x, exponent) if exponent is not None
              else _reference("Multiply")(numpy, x, x))[0]
    mean = _reference("ReduceMean")(SimpleNamespace(keep_dims=keep), square,
                                    np.array(axes, np.int64))[0]
    shifted = _reference("Add")(numpy, *((eps, mean) if eps_first else (mean, eps)))[0]
    root = _reference("Sqrt")(SimpleNamespace(), shifted)[0]
    inverse = _reference("Divide")(SimpleNamespace(auto_broadcast="numpy", m_pythondiv=True),
                                   one, root)[0]
    out = _reference("Multiply")(numpy, *((x, inverse) if x_first else (inverse, x)))[0]
    if weight is not None:
        out = _reference("Multiply")(numpy, *((weight, out) if w_first else (out, weight)))[0]
    return out


FLOATS = st.one_of(st.sampled_from(SPECIALS), st.floats(width=32),
                   st.floats(-3, 3, width=32))


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6))
    x = draw(hnp.arrays(dtype, shape, elements=FLOATS))
    rank = len(shape)
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    keep = draw(st.booleans())

    def scalar():
        return np.array(draw(FLOATS), dtype).reshape((1,) * draw(st.integers(0, rank)))

    exponent = None  # Multiply(x, x)
    if draw(st.booleans()):
        power = draw(st.sampled_from([2.0, 0.5, -1.0, 3.0]))
        exponent = np.array(power, dtype).reshape((1,) * rank)
    weight = None
    if draw(st.booleans()) and keep:
        weight = draw(hnp.arrays(dtype, shape[-1:], elements=FLOATS))
    return (x, exponent, sorted(axes), keep, scalar(), draw(st.booleans()),
            np.array(draw(st.sampled_from([1.0, -2.0, 0.0])), dtype), draw(st.booleans()),
            weight, draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_the_kernel_gives_the_reference_kernels_bits(case):
    x, exponent, axes, keep, eps, eps_first, one, x_first, weight, w_first = case
    with np.errstate(all="ignore"):  # as a run sets it
        try:
            want = _parts_reference(*case)
        except ValueError:  # shapes that do not broadcast (keep_dims false): the layers say so
            assert rms_norm(x, exponent, axes, keep, eps, eps_first, one, x_first, weight,
                            w_first) is None
            return
        got = rms_norm(x, exponent, axes, keep, eps, eps_first, one, x_first, weight, w_first)
    assert got is not None
    # Same calls on the same operands: the same bits, NaN's own included.
    assert same_bits(got, want, nan_payloads=True), (got, want)


def test_other_types_are_left_to_the_layers():
    x = np.ones((2, 4), np.float16)
    one = np.ones((1, 1), np.float16)
    assert rms_norm(x, None, (1,), True, one, False, one, True) is None
    x32 = np.ones((2, 4), np.float32)
    assert rms_norm(x32, None, (1,), True, one, False, one, True) is None


def _built(tmp_path: Path, et, square: str, weight: bool, residual: bool) -> Path:
    """An RMSNorm as exports write it (Power or x*x, a weight, a residual Add after)."""
    import openvino as ov
    from openvino import opset13 as ops

    dtype = np.float16 if et == ov.Type.f16 else np.float32
    x = ops.parameter([-1, -1, 8], et, name="x")
    sq = (ops.power(x, ops.constant(np.full((1, 1, 1), 2, dtype))) if square == "power"
          else ops.multiply(x, x))
    mean = ops.reduce_mean(sq, ops.constant(np.array([-1], np.int64)), keep_dims=True)
    shifted = ops.add(mean, ops.constant(np.full((1, 1, 1), 1e-6, dtype)))
    inverse = ops.divide(ops.constant(np.ones((1, 1, 1), dtype)), ops.sqrt(shifted))
    y = ops.multiply(x, inverse)
    if weight:
        y = ops.multiply(ops.constant(np.linspace(-2, 2, 8).astype(dtype)), y)
    if residual:
        y = ops.add(y, x)
    path = tmp_path / f"norm_{square}_{weight}_{residual}.xml"
    ov.save_model(ov.Model([ops.result(y)], [x], "norm"), str(path), compress_to_fp16=False)
    return path


@pytest.mark.parametrize("square", ["power", "multiply"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("half", [False, True], ids=["f32", "f16"])
def test_built_norms_fuse_and_give_the_reference_plans_bits(tmp_path, square, weight, residual,
                                                            half):
    """Both squares, with and without a weight, heading an in-place chain (the residual
    Add), and f16, which the layers run one by one: the reference plan's bits, every view."""
    import openvino as ov

    path = _built(tmp_path, ov.Type.f16 if half else ov.Type.f32, square, weight, residual)
    model, reference = irrun.load(path), irrun.load(path, reference=True)
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    fused = [s.kernel if isinstance(s.kernel, RMSNorm) else s.kernel.head.kernel
             for s, _ in model._plan.schedule(wanted)
             if isinstance(getattr(getattr(s.kernel, "head", s), "kernel", None), RMSNorm)]
    assert len(fused) == 1
    assert len(fused[0].parts) == 6 + weight
    values = np.array([1e-30, -3e38, 2.5, np.inf, -0.0, np.nan, 1.0, 7.0], np.float32)
    rng = np.random.default_rng(1)
    x = np.concatenate([values[None, None], rng.standard_normal((1, 3, 8)).astype(np.float32),
                        np.full((1, 1, 8), 3e38, np.float32)], 1)
    with np.errstate(over="ignore"):  # 3e38 is inf in f16
        feeds = {"x": x.astype(np.float16 if half else np.float32)}
    want = dict(reference.run(feeds, intermediate=True))
    got = dict(model.run(feeds, intermediate=True))
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert same_bits(got[name], value, nan_payloads=True), name
    plain = dict(model.run(feeds))
    for name, value in plain.items():
        assert same_bits(value, want[name], nan_payloads=True), name


def test_work_the_layers_split_over_threads_runs_layer_by_layer(monkeypatch):
    """Where the layers' fast kernels split the work over the run's threads (here: any
    size), the norms run layer by layer; the bits stay those of the run without the pass."""
    import irrun.core.passes.rms_norm as module

    path = MODELS[2]
    calls: list[int] = []
    real = module.rms_norm
    monkeypatch.setattr(module, "rms_norm", lambda *a: calls.append(1) or real(*a))
    feeds = _steps(path)[0]
    model, unfused = irrun.load(path, threads=2), _without_pass(path)
    unfused.threads = 2
    with split_small():
        got, want = model.run(feeds), unfused.run(feeds)
    assert calls == []
    _same(dict(got), dict(want), "split over two threads")
    model.threads = 1
    model.run(feeds)
    assert len(calls) == 5
