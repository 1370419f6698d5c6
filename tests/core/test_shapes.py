"""Shape-only layers run once per set of input shapes (irrun.core.shapes).

A run with the shapes of an earlier one reads the values its shape-only layers gave
then: the outputs are the bits of a run without the cache, and within the corpus's
tolerance of OpenVINO's (the expected files, or the CPU plugin now).  A new shape runs
them again; a shape that follows from values (a NonZero's) turns the cache off; a
random op is never shape-only; a run that observes every layer still sees each one.  A
decode, whose every step has new shapes, computes again only the shape-only values that
read a shape that changed (the memos), with the bits of a run without them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.core.shapes import _TRIES, ENTRIES, Memo, shape_only

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
STATEFUL = ROOT / "tests" / "stateful"
STATEFUL_NAMES = sorted(json.loads((STATEFUL / "manifest.json").read_text()))


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return dict(f)


def _uncached(path: Path) -> irrun.Model:
    model = irrun.load(path)
    model._plan.shapes = None
    return model


def _same_bits(got: dict, want: dict, what: str) -> None:
    assert got.keys() == want.keys(), what
    for key, value in want.items():
        np.testing.assert_array_equal(got[key], value, strict=True, err_msg=f"{what}: {key}")


def _near(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    assert got.shape == want.shape, what
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = float(np.max(np.abs(want))) or 1.0
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale if want.size else 0.0
    assert err <= tol, f"{what}: error {err:.3g} of the largest magnitude > {tol:g}"


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_cached_runs_give_the_uncached_bits_and_the_expected_values(name):
    xml = CORPUS / f"{name}.xml"
    feeds = _npz(CORPUS / f"{name}.inputs.npz")
    want = _npz(CORPUS / f"{name}.expected.npz")
    model = irrun.load(xml)
    aliases = {a: s.name for s in model.inputs for a in (s.name, *s.names)}
    feeds = {aliases[k]: v for k, v in feeds.items()}
    plain = _uncached(xml).run(feeds)
    first, second = model.run(feeds), model.run(feeds)
    cache = model._plan.shapes
    if cache is not None:  # the second run read the values the first one kept
        assert (cache.misses, cache.hits, cache.on) == (1, 1, True)
        assert len(cache.entries) == 1
    _same_bits(dict(first), dict(plain), f"{name}, first run")
    _same_bits(dict(second), dict(plain), f"{name}, cached run")
    by_alias = {a: second[s.name] for s in model.outputs for a in (s.name, *s.names)}
    for key, value in want.items():
        _near(by_alias[key], value, MANIFEST[name]["tolerance"]["scaled"], f"{name} {key}")


def test_the_transformers_have_shape_only_layers_cached():
    for name in ("bert", "gpt2", "llama", "t5", "swin"):
        model = irrun.load(CORPUS / f"{name}.xml")
        model.run(_npz(CORPUS / f"{name}.inputs.npz"))
        plan = model._plan
        wanted = tuple(sorted(model._output_slots.values()))
        cached = plan.shapes.cached(plan, wanted)
        assert len(cached.schedule) < len(plan.schedule(wanted)), name
        # What is kept is small: index vectors, shapes and masks.
        assert 0 < plan.shapes.held_bytes() < 64 * 1024, name


def test_a_new_sequence_length_runs_the_shape_layers_again():
    ov = pytest.importorskip("openvino")
    xml = CORPUS / "bert.xml"
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    model, plain = irrun.load(xml), _uncached(xml)
    rng = np.random.default_rng(0)
    cache = None
    for seq in (8, 16, 8, 16):
        feeds = {"input_ids": rng.integers(0, 100, (2, seq)).astype(np.int64),
                 "attention_mask": np.ones((2, seq), np.int64)}  # fmt: skip
        feeds["attention_mask"][1, seq // 2:] = 0
        got = model.run(feeds)
        cache = model._plan.shapes
        _same_bits(dict(got), dict(plain.run(feeds)), f"sequence {seq}")
        want = compiled(feeds)
        for port in compiled.outputs:
            name = next(n for n in port.get_names() if n in got) if port.get_names() & set(got) \
                else model.outputs[port.index].name
            _near(got[name], want[port], 1e-5, f"sequence {seq}, {name}")
    assert (cache.misses, cache.hits) == (2, 2)
    assert len(cache.entries) == 2


def test_the_cache_keeps_at_most_eight_sets_of_shapes():
    xml = CORPUS / "bert.xml"
    model, plain = irrun.load(xml), _uncached(xml)
    for seq in range(2, 2 + ENTRIES + 3):
        feeds = {"input_ids": np.ones((1, seq), np.int64),
                 "attention_mask": np.ones((1, seq), np.int64)}  # fmt: skip
        _same_bits(dict(model.run(feeds)), dict(plain.run(feeds)), f"sequence {seq}")
    assert len(model._plan.shapes.entries) == ENTRIES
    # The most recent set is kept: its next run reads it.
    hits = model._plan.shapes.hits
    model.run(feeds)
    assert model._plan.shapes.hits == hits + 1


@pytest.mark.parametrize("name", STATEFUL_NAMES)
def test_a_repeated_decode_reads_the_cache_and_gives_openvinos_tokens(name):
    want = _npz(STATEFUL / name / "expected.npz")
    prompt = want["prompt_ids"].tolist()
    xml = STATEFUL / name / "openvino_model.xml"
    model = irrun.load(xml)
    plain = irrun.generate(_uncached(xml), prompt, 5, ignore_eos=True, keep_logits=True)
    for attempt in ("first", "repeated"):  # 6 sets of shapes: the second decode hits all
        got = irrun.generate(model, prompt, 5, ignore_eos=True, keep_logits=True)
        assert got.tokens == plain.tokens == want["tokens"][:5].tolist(), attempt
        for i, (a, b) in enumerate(zip(got.logits, plain.logits, strict=True)):
            np.testing.assert_array_equal(a, b, strict=True, err_msg=f"{attempt}, step {i}")
            _near(a, want["reference_logits"][i], 1e-5 if "int" not in name else 5e-3,
                  f"{attempt}, step {i}")
    cache = model._plan.shapes
    assert cache is not None and cache.on and cache.hits >= 5


def _memos(model: irrun.Model) -> list[Memo]:
    """The memo kernels of the schedules ``model`` ran with them."""
    return [step.kernel for key, schedule in model._plan._schedules.items()
            if key[-1] == "memo" for step, _ in schedule
            if isinstance(step.kernel, Memo)]  # fmt: skip


@pytest.mark.parametrize("name", ["llama", "qwen2", "gpt2"])
def test_a_decode_computes_again_only_the_shape_values_whose_shapes_changed(name):
    """Every step of a first decode misses the cache (the mask and the KV cache grow),
    yet what reads only the shapes of ``input_ids`` and of the hidden states is computed
    for the prompt and for the first token, and read after: the memos keyed by them hold
    two entries; those keyed by a growing shape hold at most ENTRIES, and stop keeping
    values after _TRIES misses."""
    want = _npz(STATEFUL / name / "expected.npz")
    prompt = want["prompt_ids"].tolist()
    xml = STATEFUL / name / "openvino_model.xml"
    model = irrun.load(xml)
    steps = _TRIES + 4
    plain = irrun.generate(_uncached(xml), prompt, steps, ignore_eos=True, keep_logits=True)
    got = irrun.generate(model, prompt, steps, ignore_eos=True, keep_logits=True)
    assert got.tokens == plain.tokens
    assert got.tokens[: len(want["tokens"])] == want["tokens"].tolist()  # 16 written
    for i, (a, b) in enumerate(zip(got.logits, plain.logits, strict=True)):
        np.testing.assert_array_equal(a, b, strict=True, err_msg=f"step {i}")
    cache = model._plan.shapes
    assert (cache.hits, cache.misses) == (0, steps)
    assert len(cache.entries) == ENTRIES  # recorded the first _TRIES runs only
    memos = _memos(model)
    # Each memo step stands under a ShapeOf's name, an op no pass rewrites.
    assert {step.node.op.type for key, schedule in model._plan._schedules.items()
            if key[-1] == "memo" for step, _ in schedule
            if isinstance(step.kernel, Memo)} == {"ShapeOf"}  # fmt: skip
    steady = [m for m in memos if len(m.entries) == 2]
    growing = [m for m in memos if len(m.entries) > 2]
    assert steady and growing and all(len(m.entries) <= ENTRIES for m in memos)
    assert all((m.hits, m.misses) == (steps - 2, 2) for m in steady)  # prompt, first token
    # A memo whose shapes never came back stopped keeping them after _TRIES misses.
    assert all(m.hits == 0 and m.misses == steps and len(m.entries) == ENTRIES
               for m in growing)  # fmt: skip
    # Those layers (21 in llama, of 50 shape-only ones that decode runs) run only twice.
    assert sum(len(m.region) for m in steady) >= 10
    for m in memos:
        for values in m.entries.values():
            assert all(not v.flags.writeable for v in values if isinstance(v, np.ndarray))


def _save(tmp_path: Path, outputs, params, name: str) -> Path:
    ov = pytest.importorskip("openvino")
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.Model(outputs, params), path, compress_to_fp16=False)
    return path


def test_a_random_op_is_never_shape_only(tmp_path):
    from openvino import opset1, opset3, opset8

    x = opset1.parameter([-1, 3], np.float32, name="x")
    noise = opset8.random_uniform(opset3.shape_of(x, "i64"), opset1.constant(np.float32(0)),
                                  opset1.constant(np.float32(1)), "f32", 7, 11)  # fmt: skip
    path = _save(tmp_path, [opset1.add(x, noise)], [x], "noise")
    model = irrun.load(path)
    flags = {s.node.op.type: f for s, f in zip(model._plan.steps, shape_only(model._plan),
                                               strict=True)}  # fmt: skip
    assert flags["ShapeOf"] and not flags["RandomUniform"] and not flags["Add"]
    feeds = {"x": np.zeros((4, 3), np.float32)}
    first = model.run(feeds)
    import openvino as ov

    want = ov.Core().compile_model(path, "CPU")(feeds)[0]
    for _ in range(2):  # the random op runs at each call, from the same seeds
        got = model.run(feeds)
        _same_bits(dict(got), dict(first), "a random op's run")
        np.testing.assert_array_equal(got[model.outputs[0].name], want)


def test_a_shape_that_follows_from_values_turns_the_cache_off(tmp_path):
    """A ShapeOf of a NonZero's output sees as many indices as the values have nonzeros:
    a guard catches the change, and the run gives OpenVINO's answer."""
    import openvino as ov
    from openvino import opset1, opset3, opset8

    x = opset1.parameter([-1], np.float32, name="x")
    count = opset8.gather(opset3.shape_of(opset3.non_zero(x, "i64"), "i64"),
                          opset1.constant(np.int64([1])), opset1.constant(np.int64(0)))  # fmt: skip
    ramp = opset1.convert(opset8.range(opset1.constant(np.int64(0)),
                                       opset1.squeeze(count, opset1.constant(np.int64([0]))),
                                       opset1.constant(np.int64(1)), "i64"), "f32")  # fmt: skip
    path = _save(tmp_path, [opset1.multiply(ramp, opset1.constant(np.float32(2)))], [x], "nz")
    compiled = ov.Core().compile_model(path, "CPU")
    model = irrun.load(path)
    for values in ([0, 1, 0, 1], [0, 1, 0, 1], [1, 1, 1, 0], [0, 0, 0, 1], [1, 0, 1, 0],
                   [0, 0, 0, 0]):  # fmt: skip
        feeds = {"x": np.float32(values)}
        got = model.run(feeds)[model.outputs[0].name]
        np.testing.assert_array_equal(got, compiled(feeds)[0], err_msg=str(values))
    cache = model._plan.shapes
    assert cache.hits == 1 and not cache.on and not cache.entries
    # Its runs since read the memo of the NonZero output's shape: 3, 1, 2, 0 nonzeros.
    keys = [sorted(memo.entries) for memo in _memos(model)]
    assert [((1, 0),), ((1, 1),), ((1, 2),), ((1, 3),)] in keys


@pytest.mark.parametrize("name", ["bert", "gpt2", "t5"])
def test_observed_runs_see_every_layer_after_a_cached_run(name):
    xml = CORPUS / f"{name}.xml"
    feeds = _npz(CORPUS / f"{name}.inputs.npz")
    model, plain = irrun.load(xml), _uncached(xml)
    model.run(feeds)
    model.run(feeds)
    assert model._plan.shapes.hits == 1
    want = plain.run(feeds, intermediate=True)
    _same_bits(dict(model.run(feeds, intermediate=True)), dict(want), "intermediate=True")
    seen: list = []
    model.run(feeds, on_layer=seen.append)
    layers = {str(s.node.ref) for s in model._plan.steps}
    assert {str(layer.ref) for layer in seen} == layers
    shape_layers = {str(s.node.ref) for s, f in zip(model._plan.steps, shape_only(model._plan),
                                                    strict=True) if f}  # fmt: skip
    assert shape_layers and shape_layers <= {str(layer.ref) for layer in seen}
    assert model._plan.shapes.hits == 1  # observed runs run every step, not the cache
    _same_bits(dict(model.run(feeds)), dict(plain.run(feeds)), "a plain run after them")
