"""Constant folding at load: layers of constants run once, their values within a cap.

The compressed models of the corpus (NNCF's int8 and int4 weights) and an f16 model give
the same outputs folded and unfolded; their runs no longer decompress weights; observed
runs still see every layer; the cap, pickling and a kernel that fails at load.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1

import irrun
from irrun.cli import main
from irrun.core.folding import MIN_CAP, default_cap, fold, fold_option

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
COMPRESSED = ["bert_int8_asym", "bert_int4_asym", "gpt2_int4_sym", "cnn_int8_maxpool",
              "cnn_int8_avgpool"]  # fmt: skip


def _feeds(name: str) -> dict[str, np.ndarray]:
    with np.load(CORPUS / f"{name}.inputs.npz") as f:
        return dict(f)


def _constant_steps(plan) -> set[int]:
    """Indices of the steps whose inputs all come, through other such steps, from Consts
    (worked out here apart from irrun.core.folding)."""
    known: set[int] = set()
    found: set[int] = set()
    for i, step in enumerate(plan.steps):
        kind = step.node.op.type
        if kind == "Const":
            known.update(step.outputs)
        elif kind != "Result" and step.inputs and all(s in known for s in step.inputs):
            found.add(i)
            known.update(step.outputs)
    return found


def _schedule(model: irrun.Model):
    return model._plan.schedule(tuple(sorted(set(model._output_slots.values()))))


@pytest.mark.parametrize("name", COMPRESSED)
def test_compressed_models_give_the_same_outputs_folded(name):
    feeds = _feeds(name)
    folded = irrun.load(CORPUS / f"{name}.xml")
    unfolded = irrun.load(CORPUS / f"{name}.xml", fold_constants=False)
    assert folded.folding.values > 0 and unfolded.folding is None
    # Each folded value is the layer's output as a run that runs every layer computes it.
    seen = folded.run(feeds, intermediate=True)
    names = folded._slot_names
    for slot, step in folded._plan.folded.items():
        np.testing.assert_array_equal(step.attrs.value, seen[names[slot]], strict=True)
    # The model's outputs are those of the unfolded model, bit for bit...
    want = unfolded.run(feeds)
    bare = irrun.load(CORPUS / f"{name}.xml", fold_constants=False)
    fold(bare._plan, bare._infos, None)
    for key, value in bare.run(feeds).items():
        np.testing.assert_array_equal(value, want[key], strict=True)
    # ... and so are the folded model's, though its fused linear layers read the folded
    # weights as one product (each output's dot product summed as the layer's own).
    for key, value in folded.run(feeds).items():
        np.testing.assert_array_equal(value, want[key], strict=True)


@pytest.mark.parametrize("name", ["bert_int8_asym", "bert_int4_asym", "gpt2_int4_sym"])
def test_a_folded_schedule_decompresses_no_weight(name):
    folded = irrun.load(CORPUS / f"{name}.xml")
    unfolded = irrun.load(CORPUS / f"{name}.xml", fold_constants=False)
    constant = _constant_steps(folded._plan)
    decompressing = [folded._plan.steps[i] for i in constant
                     if folded._plan.steps[i].node.op.type in ("Convert", "Subtract", "Multiply")]  # fmt: skip
    assert len(decompressing) >= 20  # every weight's Convert, Subtract, Multiply
    ran = {id(s.node) for s, _ in _schedule(folded)}
    assert not [s.node.ref for s in decompressing if id(s.node) in ran]
    converts = sum(s.node.op.type == "Convert" for s in decompressing)
    assert sum(s.node.op.type == "Convert" for s, _ in _schedule(unfolded)) >= converts
    # What folding says it did: the layers no run executes any more.
    assert folded.folding.layers == len(constant)


def test_a_run_calls_no_folded_kernel():
    m = irrun.load(CORPUS / "bert_int8_asym.xml")
    feeds = _feeds("bert_int8_asym")
    want = m.run(feeds)

    def never(*args, **kwargs):
        raise AssertionError("a folded layer ran")

    plan = m._plan
    for i in _constant_steps(plan):
        plan.steps[i] = dataclasses.replace(plan.steps[i], kernel=never)
    plan._schedules.clear()
    got = m.run(feeds)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
    # A run that observes each layer runs the layers folded into a later one's value too,
    # apart after the run (a kernel that raises what no op raises is a bug in irrun: said so).
    with pytest.raises(irrun.IrrunError, match="a folded layer ran"):
        m.run(feeds, on_layer=lambda layer: None)


def test_observed_runs_see_every_layer_folded_or_not():
    feeds = _feeds("bert_int4_asym")
    folded = irrun.load(CORPUS / "bert_int4_asym.xml")
    unfolded = irrun.load(CORPUS / "bert_int4_asym.xml", fold_constants=False)
    seen: list[list] = [[], []]
    for model, layers in zip((folded, unfolded), seen, strict=True):
        model.run(feeds, on_layer=layers.append)
    # Each layer once, in an order of its own: the folded model's tail runs the layers
    # folded into later values after the run.
    by_id = [{r.ref.id: r for r in layers} for layers in seen]
    assert [len(layers) for layers in seen] == [len(by_id[0]), len(by_id[1])]
    assert by_id[0].keys() == by_id[1].keys()
    assert len(seen[0]) == sum(ref.type != "Parameter" for ref, _, _ in folded.layers())
    assert {r.ref.id for r in seen[0] if r.folded} == {
        folded._plan.steps[folded._plan.producer[s]].node.layer.id for s in folded._plan.folded}
    for lid, a in by_id[0].items():
        b = by_id[1][lid]
        assert a.outputs.keys() == b.outputs.keys()
        for key in a.outputs:
            np.testing.assert_array_equal(a.outputs[key], b.outputs[key], strict=True)
    # A folded tensor asked for by name is its folded value, and the caller's to change.
    slot, step = next(iter(folded._plan.folded.items()))
    name = folded._slot_names[slot]
    got = folded.run(feeds, outputs=[name])[name]
    np.testing.assert_array_equal(got, unfolded.run(feeds, outputs=[name])[name])
    got[...] = 0
    assert np.any(step.attrs.value != 0)
    # One that was dropped after folding is computed again, from the Consts.
    plan = folded._plan
    dropped = next(s for i in sorted(_constant_steps(plan)) for s in plan.steps[i].outputs
                   if s not in plan.folded and plan.steps[i].node.op.type == "Subtract")  # fmt: skip
    name = folded._slot_names[dropped]
    np.testing.assert_array_equal(folded.run(feeds, outputs=[name])[name],
                                  unfolded.run(feeds, outputs=[name])[name], strict=True)  # fmt: skip


def _mlp(path: Path, compress_to_fp16: bool, width: int = 32, layers: int = 2) -> Path:
    rng = np.random.default_rng(0)
    x = opset1.parameter([2, width], np.float32, name="x")
    t = x
    for _ in range(layers):
        w = rng.standard_normal((width, width)).astype(np.float32)
        t = opset1.relu(opset1.matmul(t, opset1.constant(w), False, True))
    t.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([t.output(0)], [x]), path, compress_to_fp16=compress_to_fp16)
    return path


def test_an_f16_model_converts_no_weight_at_each_run(tmp_path):
    path = _mlp(tmp_path / "f16.xml", True)
    assert 'element_type="f16"' in path.read_text()
    folded = irrun.load(path)
    unfolded = irrun.load(path, fold_constants=False)
    assert folded.folding.values == 2 and folded.folding.layers == 2
    assert folded.folding.bytes == 2 * 32 * 32 * 4
    assert "Convert" not in {s.node.op.type for s, _ in _schedule(folded)}
    assert "Convert" in {s.node.op.type for s, _ in _schedule(unfolded)}
    x = np.random.default_rng(1).standard_normal((2, 32)).astype(np.float32)
    bare = irrun.load(path, fold_constants=False)
    fold(bare._plan, bare._infos, None)
    np.testing.assert_array_equal(bare.run(x)["y"], unfolded.run(x)["y"], strict=True)


def test_the_cap_keeps_what_is_above_it_unfolded(capsys, monkeypatch):
    # Weights are not kept compressed instead (irrun.core.compressed; tests/fast/test_compressed.py).
    monkeypatch.setenv("IRRUN_COMPRESSED", "0")
    feeds = _feeds("bert_int8_asym")
    full = irrun.load(CORPUS / "bert_int8_asym.xml")
    capped = irrun.load(CORPUS / "bert_int8_asym.xml", fold_constants="20K")
    f = capped.folding
    assert f.cap == 20 * 1024 and 0 < f.bytes <= f.cap
    assert f.values + f.over_cap == full.folding.values and f.over_cap > 0
    assert f.over_cap_bytes + f.bytes == full.folding.bytes
    assert f.layers < full.folding.layers
    nothing = irrun.load(CORPUS / "bert_int8_asym.xml", fold_constants=0)
    assert nothing.folding.values == 0 and nothing.folding.layers == 0
    assert not nothing._plan.folded
    for model in (capped, nothing):
        for key, value in model.run(feeds).items():
            np.testing.assert_allclose(value, full.run(feeds)[key], rtol=1e-5, atol=1e-6)
    rc = main(["run", str(CORPUS / "bert_int8_asym.xml"), "-v", "--fold-cap", "20K"])
    err = capsys.readouterr().err
    assert rc == 0
    assert (f"irrun: kept {f.over_cap} constant subgraphs ({f.over_cap_bytes / 1024:.1f} KiB) "
            "unfolded: above the 20.0 KiB folding cap") in err.splitlines()  # fmt: skip
    assert f"irrun: folded {f.layers} constant layers into {f.values} values" in err
    rc = main(["run", str(CORPUS / "bert_int8_asym.xml"), "-v"])
    err = capsys.readouterr().err
    assert rc == 0 and "folded 80 constant layers into 16 values" in err and "kept" not in err


def test_the_default_cap():
    assert default_cap(1000, None) == MIN_CAP
    assert default_cap(100 * 2**20, None) == 800 * 2**20  # 8 x the .bin: u4 weights as f32
    assert default_cap(100 * 2**20, 2**30) == 2**29  # half the budget, the rest for runs
    assert irrun.load(CORPUS / "bert_int8_asym.xml", max_memory="1M").folding.cap == 2**19
    assert irrun.load(CORPUS / "bert_int8_asym.xml", max_memory=None).folding.cap == MIN_CAP
    assert irrun.load(CORPUS / "bert_int8_asym.xml", fold_constants="none").folding.cap is None
    assert fold_option(False) is False
    for bad in ("lots", -1, 1.5):
        with pytest.raises(irrun.IrrunError, match="fold_constants"):
            irrun.load(CORPUS / "bert_int8_asym.xml", fold_constants=bad)


def test_the_cap_on_the_command_line_is_checked(capsys):
    with pytest.raises(SystemExit):
        main(["run", str(CORPUS / "bert_int8_asym.xml"), "--fold-cap", "lots"])
    assert "--fold-cap" in capsys.readouterr().err


def test_a_folded_model_pickles():
    m = irrun.load(CORPUS / "gpt2_int4_sym.xml")
    feeds = _feeds("gpt2_int4_sym")
    again = pickle.loads(pickle.dumps(m))
    assert len(pickle.dumps(m)) < 2000  # names the files, holds no folded value
    assert again.folding.values == m.folding.values > 0
    for key, value in m.run(feeds).items():
        np.testing.assert_array_equal(again.run(feeds)[key], value)
    off = pickle.loads(pickle.dumps(irrun.load(CORPUS / "gpt2_int4_sym.xml", fold_constants="4K")))
    assert off.folding.cap == 4096
    assert pickle.loads(pickle.dumps(irrun.load(CORPUS / "gpt2_int4_sym.xml",
                                                fold_constants=False))).folding is None  # fmt: skip


def test_a_kernel_that_fails_at_load_fails_the_run_as_before(tmp_path, capsys):
    # 4 // 0 in integers: the shape rule has nothing against it; the kernel refuses it.
    x = opset1.parameter([3], np.float32, name="x")
    div = opset1.divide(opset1.constant(np.int32([6, 4, 2])), opset1.constant(np.int32([3, 0, 1])))
    div.set_friendly_name("div")
    y = opset1.add(x, opset1.convert(div, "f32"))
    path = tmp_path / "div.xml"
    ov.save_model(ov.Model([y], [x]), path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "Divide" in text)
    errors = []
    for option in (True, False):
        m = irrun.load(path, fold_constants=option)
        with pytest.raises(irrun.IrrunError) as exc:
            m.run(np.zeros(3, np.float32))
        errors.append(str(exc.value))
    assert errors[0] == errors[1] == f"{path}:{line}: layer 3 'div' (Divide-v1): integer division by zero"
    m = irrun.load(path)
    assert m.folding.values == 0 and [s.node.ref.name for s in m.folding.failed] == ["div"]
    assert main(["run", str(path), "-v"]) == 1
    err = capsys.readouterr().err
    assert "kept the constant subgraphs through layer 3 'div' (Divide-v1) unfolded" in err
    assert err.rstrip().endswith("integer division by zero")


def test_the_planned_peak_counts_no_folded_value():
    folded = irrun.load(CORPUS / "bert_int8_asym.xml")
    unfolded = irrun.load(CORPUS / "bert_int8_asym.xml", fold_constants=False)
    shapes = {lid: a.shape for lid, a in ((folded._input_ids[k], v)
                                          for k, v in _feeds("bert_int8_asym").items())}  # fmt: skip
    slots = tuple(sorted(set(folded._output_slots.values())))
    peak = folded._plan_peak(shapes, slots, False)[0].bytes
    assert peak < unfolded._plan_peak(shapes, slots, False)[0].bytes
    # A run that observes every layer runs the folded layers again, apart after the run:
    # counted too (the peak may still be where the run's own is).
    assert folded._plan_peak(shapes, slots, True)[0].bytes >= peak


def test_folding_keeps_only_what_runs_read_and_drops_the_rest_at_once(tmp_path):
    # 4 layers of u8[256,256] weights decompressed to f32 (256 KiB each): the 4 weights are
    # kept; each one's Convert and Subtract outputs (256 KiB each) are dropped as soon as
    # its Multiply has run, so folding never holds more than the kept weights and one
    # weight's intermediates.
    import tracemalloc

    rng = np.random.default_rng(0)
    x = opset1.parameter([1, 256], np.float32, name="x")
    t = x
    for _ in range(4):
        q = opset1.convert(opset1.constant(rng.integers(0, 256, (256, 256), dtype=np.uint8)), "f32")
        zp = opset1.convert(opset1.constant(rng.integers(0, 256, (256, 1), dtype=np.uint8)), "f32")
        scale = opset1.constant(rng.uniform(0.001, 0.01, (256, 1)).astype(np.float32))
        t = opset1.matmul(t, opset1.multiply(opset1.subtract(q, zp), scale), False, True)
    path = tmp_path / "mlp.xml"
    ov.save_model(ov.Model([t], [x]), path)
    m = irrun.load(path, fold_constants=False)
    constant = _constant_steps(m._plan)
    readers = {s for i, step in enumerate(m._plan.steps) if i not in constant for s in step.inputs}
    frontier = {s for i in constant for s in m._plan.steps[i].outputs if s in readers}
    weight = 256 * 256 * 4
    tracemalloc.start()
    try:
        folding = fold(m._plan, m._infos, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert set(m._plan.folded) == frontier and len(frontier) == 4
    assert folding.bytes == 4 * weight and folding.layers == 4 * 4
    # Measured: 5.2 weights (at the last Subtract: 3 kept, the Convert's and its own output).
    assert peak < 4 * weight + 2 * weight


def _int8_mlp(path: Path, compressed: bool, width: int = 64, layers: int = 3) -> Path:
    """An MLP whose weights are u8 decompressed as NNCF writes them (``compressed``), or
    the f32 Consts NumPy decompresses them to: (q - zp) * scale in f32, the same IEEE
    operations as the Convert, Subtract and Multiply kernels."""
    rng = np.random.default_rng(0)
    x = opset1.parameter([1, width], np.float32, name="x")
    t = x
    for _ in range(layers):
        q = rng.integers(0, 256, (width, width), dtype=np.uint8)
        zp = rng.integers(100, 156, (width, 1), dtype=np.uint8)
        scale = rng.uniform(0.001, 0.01, (width, 1)).astype(np.float32)
        if compressed:
            w = opset1.multiply(opset1.subtract(opset1.convert(opset1.constant(q), "f32"),
                                                opset1.convert(opset1.constant(zp), "f32")),
                                opset1.constant(scale))  # fmt: skip
        else:
            w = opset1.constant((q.astype(np.float32) - zp.astype(np.float32)) * scale)
        t = opset1.relu(opset1.matmul(t, w, False, True))
    t.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([t.output(0)], [x]), path, compress_to_fp16=False)
    return path


def test_a_folded_int8_model_runs_as_its_f32_twin(tmp_path):
    folded = irrun.load(_int8_mlp(tmp_path / "int8.xml", True))
    twin = irrun.load(_int8_mlp(tmp_path / "f32.xml", False))
    assert [s.node.op.type for s, _ in _schedule(folded)] == \
        [s.node.op.type for s, _ in _schedule(twin)]  # fmt: skip
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    np.testing.assert_array_equal(folded.run(x)["y"], twin.run(x)["y"], strict=True)


def test_a_stateful_llm_decodes_its_compressed_weights_once():
    # tests/stateful's llama with NNCF's int8 weights: a request's steps read the folded
    # weights; no step of a decode runs a layer of constants.
    from irrun.core.generation import generate, open_language_model

    folder = CORPUS.parent / "stateful" / "llama_int8"
    lm = open_language_model(folder)
    plain = open_language_model(folder, fold_constants=False)
    assert lm.model.folding.values > 0 and lm.model.folding.layers > 20

    def never(*args, **kwargs):
        raise AssertionError("a folded layer ran")

    plan = lm.model._plan
    for i in _constant_steps(plan):
        plan.steps[i] = dataclasses.replace(plan.steps[i], kernel=never)
    plan._schedules.clear()
    prompt = [293, 360, 361, 354, 500, 344]
    got = generate(lm, prompt, 4, ignore_eos=True)
    assert got.tokens == generate(plain, prompt, 4, ignore_eos=True).tokens
