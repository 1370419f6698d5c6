"""RandomUniform-8 and Multinomial-13 against OpenVINO, bit for bit.

RandomUniform: irrun's values against OpenVINO's reference kernels (``Model.evaluate``)
for every output type, both alignments, several seeds, shapes and ranges (integer ones
too), and against the CPU plugin where it computes what the reference does (f32, i32,
bf16, PyTorch's small-range i64; see irrun/ops/random.py for the others).  Multinomial:
against the CPU plugin (``Model.evaluate`` has no Multinomial) for several seeds,
probabilities, types, with and without replacement and with ``log_probs``.  The
generators themselves against published known answers.  Expected values come from
OpenVINO or from those answers, never from irrun.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC
from irrun.ir.element_types import ELEMENT_TYPES as ET
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve
from irrun.ops.random import _mt19937_from_state, mt19937_words, philox4x32, seed_sequence

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8, opset13  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG  # noqa: E402
from support.ov_shapes import from_ov_shape  # noqa: E402

BF16 = ml_dtypes.bfloat16
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
      "i64": np.int64, "bf16": BF16}  # fmt: skip
SEEDS = [(1, 2), (150, 10), (2**40 + 3, 2**35 + 1), (0, 7), (7, 0), (2**62 + 5, 0)]


def _bounds(name, lo, hi):
    """min and max constants of type ``name`` (bf16 through an exact Convert)."""
    if name == "bf16":
        return [opset1.convert(opset1.constant(np.array(v, np.float32)), "bf16") for v in (lo, hi)]
    return [opset1.constant(np.array(v, NP[name])) for v in (lo, hi)]


def _model(node) -> ov.Model:
    out = opset1.convert(node, "f32") if node.get_output_element_type(0) == ov.Type.bf16 \
        else node  # fmt: skip
    out.output(0).get_tensor().set_names({"out"})
    return ov.Model([out], [], "random")


def _uniform_model(shape, name, lo, hi, seeds, alignment) -> ov.Model:
    node = opset8.random_uniform(opset1.constant(np.array(shape, np.int64)),
                                 *_bounds(name, lo, hi), name, *seeds, alignment)  # fmt: skip
    return _model(node)


def _irrun(model: ov.Model, tmp_path: Path) -> np.ndarray:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    (out,) = irrun.load(path).run({}).values()
    return out


def _evaluate(model: ov.Model) -> np.ndarray:
    outs = [ov.Tensor(model.output(0).get_element_type(), [0])]
    model.evaluate(outs, [])
    return np.array(outs[0].data, copy=True)


def _cpu(model: ov.Model) -> np.ndarray:
    return np.asarray(CORE.compile_model(model, "CPU", CPU_CONFIG)({})[0]).copy()


def _same_bits(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    assert got.tobytes() == want.tobytes(), (
        f"{what}: {got.reshape(-1)[:6]} != {want.reshape(-1)[:6]}"
    )


# --------------------------------------------------------------------------- generators


def test_philox_known_answers():
    # Random123's kat_vectors for philox4x32_10: zeros, and the digits of pi.
    assert philox4x32(0, 0, 0, 1).tolist() == [[0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]]
    block = philox4x32(0x299F31D0_A4093822, 0x03707344_13198A2E, 0x85A308D3_243F6A88, 1)
    assert block.tolist() == [[0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]]
    # The 64-bit block number carries into the high counter.
    assert philox4x32(5, 9, 2**64 - 1, 2)[1].tolist() == philox4x32(5, 10, 0, 1)[0].tolist()


def test_mersenne_twister_known_answers():
    assert int(mt19937_words(5489, 10000)[-1]) == 4123659995  # C++ [rand.predef]
    assert mt19937_words(5489, 1)[0] == 3499211612  # std::mt19937's first number


def test_seed_sequence_known_answers():
    # As g++ 12's libstdc++ computes them: std::seed_seq{1u, 2u}.generate of 4 words, and
    # the first numbers of std::mt19937(std::seed_seq{...}) for 64-bit seeds.
    assert seed_sequence([1, 2], 4) == [894799018, 262399895, 3982943590, 2969946627]
    assert _mt19937_from_state(seed_sequence([1, 2]), 3).tolist() == [
        3232623227,
        3218984147,
        1585538226,
    ]
    assert _mt19937_from_state(seed_sequence([2**40, 2**33 + 7]), 1)[0] == 1207725889


# --------------------------------------------------------------------------- RandomUniform

RANGES = {
    "f32": [(0, 1), (-3.5, 7.25), (-0.1, 0.7), (1e-3, 2e-3)],
    "f16": [(0, 1), (-2, 50), (-0.1, 0.7)],
    "bf16": [(0, 1), (-2.25, 50.0), (-0.099609375, 0.19921875), (3.0, 1000.0)],
    "f64": [(0, 1), (-1e3, 3.3), (-0.1, 0.7)],
    "i32": [(0, 10), (-50, 7), (5, 6), (-(2**31), 2**31 - 1)],
    "i64": [
        (0, 10),
        (-50, 2**40),
        (-(2**40), 5),
        (3, 2**32 + 7),
        (-(2**63), 2**63 - 1),
        (-(2**63), 5),
        (-5, 2**32 - 1),
    ],
}
UNIFORM_CASES = [
    pytest.param(name, lo, hi, alignment, id=f"{alignment}-{name}-{lo}-{hi}")
    for alignment in ("tensorflow", "pytorch")
    for name, ranges in RANGES.items()
    for lo, hi in ranges
]


@pytest.mark.parametrize(("name", "lo", "hi", "alignment"), UNIFORM_CASES)
def test_random_uniform_matches_reference(name, lo, hi, alignment, tmp_path):
    for (gs, os_), shape in zip(SEEDS, ([3, 5], [7], [2, 3, 4], [1], [0, 4], [5, 1, 1]),
                                strict=True):  # fmt: skip
        model = _uniform_model(shape, name, lo, hi, (gs, os_), alignment)
        _same_bits(_irrun(model, tmp_path), _evaluate(model), f"seeds {gs}, {os_} {shape}")


def _cpu_agrees(name, lo, hi, alignment):
    """Where the CPU plugin computes what the reference does (see irrun/ops/random.py)."""
    if name in ("f32", "bf16"):
        return True
    if name == "i32":
        return hi - lo < 2**31
    return name == "i64" and alignment == "pytorch" and lo >= 0 and hi < 2**31


@pytest.mark.parametrize(("name", "lo", "hi", "alignment"),
                         [c for c in UNIFORM_CASES if _cpu_agrees(*c.values)])  # fmt: skip
def test_random_uniform_matches_cpu(name, lo, hi, alignment, tmp_path):
    for gs, os_ in SEEDS[:3]:
        model = _uniform_model([4, 9], name, lo, hi, (gs, os_), alignment)
        got, want = _irrun(model, tmp_path), _cpu(model)
        if name == "f32" and (lo, hi) != (0, 1):
            # The plugin fuses u * (max - min) + min into one rounding; the reference,
            # and irrun, round twice: the last place may differ.
            # (one unit of the range's largest end, which near 0 is many of the value's).
            ulp = np.spacing(np.float32(max(abs(lo), abs(hi))))
            np.testing.assert_allclose(got, want, rtol=0, atol=ulp)
        else:
            _same_bits(got, want, f"seeds {gs}, {os_}")


def test_random_uniform_with_bounds_as_inputs(tmp_path):
    """min and max from the graph's inputs, not constants."""
    shape = opset1.constant(np.array([2, 6], np.int32))
    lo, hi = (opset1.parameter([], ov.Type.f32, name=n) for n in ("in0", "in1"))
    for p in (lo, hi):
        p.output(0).get_tensor().set_names({p.get_friendly_name()})
    node = opset8.random_uniform(shape, lo, hi, "f32", 3, 4)
    node.output(0).get_tensor().set_names({"out"})
    model = ov.Model([node], [lo, hi], "m")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    inputs = {"in0": np.array(-1, np.float32), "in1": np.array(9, np.float32)}
    got = irrun.load(path).run(inputs)["out"]
    want = CORE.compile_model(model, "CPU", CPU_CONFIG)(inputs)[0]
    np.testing.assert_array_max_ulp(got, np.asarray(want), 1)  # the plugin's fused add
    outs = [ov.Tensor(ov.Type.f32, [0])]
    model.evaluate(outs, [ov.Tensor(inputs["in0"]), ov.Tensor(inputs["in1"])])
    _same_bits(got, outs[0].data)
    with pytest.raises(irrun.IrrunError, match="min_val must be less than max_val"):
        irrun.load(path).run({"in0": np.array(2, np.float32), "in1": np.array(2, np.float32)})


def test_random_uniform_like_an_input(tmp_path):
    """torch.rand_like as converted: the shape from ShapeOf, added to the input."""
    x = opset1.parameter([-1, 5], ov.Type.f32, name="in0")
    x.output(0).get_tensor().set_names({"in0"})
    noise = opset8.random_uniform(opset8.shape_of(x), *_bounds("f32", 0, 1), "f32", 21, 22)
    out = opset1.add(x, noise)
    out.output(0).get_tensor().set_names({"out"})
    model = ov.Model([out], [x], "m")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    data = np.arange(15, dtype=np.float32).reshape(3, 5)
    got = irrun.load(path).run({"in0": data})["out"]
    _same_bits(got, np.asarray(CORE.compile_model(model, "CPU", CPU_CONFIG)({"in0": data})[0]))


def test_random_uniform_by_hand(tmp_path):
    # A range of one integer has one value; [0, 1) from the pi key answer's first word.
    model = _uniform_model([2, 2], "i32", 5, 6, (1, 2), "tensorflow")
    assert _irrun(model, tmp_path).tolist() == [[5, 5], [5, 5]]
    # key pi, counter high 0: block 0's first word, 23 low bits over 2**23.
    words = philox4x32(0x299F31D0_A4093822, 0, 0, 1)[0]
    model = _uniform_model([1], "f32", 0, 1, (0x299F31D0_A4093822, 0), "tensorflow")
    assert _irrun(model, tmp_path)[0] == np.float32((int(words[0]) & 0x7FFFFF) / 2**23)


def test_random_uniform_takes_negative_seeds(tmp_path):
    """OpenVINO reads the seeds from IR as 64-bit signed integers and uses their bits as
    unsigned ones (C++ may write them; Python's API takes none)."""
    model = _uniform_model([3, 4], "f32", 0, 1, (5, 6), "tensorflow")
    for global_seed, op_seed in ((-3, 11), (7, -(2**63)), (-1, -1)):
        path = _saved(
            model,
            tmp_path,
            lambda t, g=global_seed, o=op_seed: t.replace(
                'op_seed="6" global_seed="5"', f'op_seed="{o}" global_seed="{g}"'
            ),
        )
        assert f'global_seed="{global_seed}"' in path.read_text()
        got = irrun.load(path).run({})["out"]
        _same_bits(got, _evaluate(ov.Core().read_model(path)))


def test_random_uniform_without_seeds_differs_between_runs(tmp_path):
    model = _uniform_model([64], "f32", 0, 1, (0, 0), "tensorflow")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    first, second = loaded.run({})["out"], loaded.run({})["out"]
    assert not np.array_equal(first, second)
    assert [d.message for d in irrun.validate(path) if d.layer is not None] == [
        "global_seed and op_seed are both 0: the numbers differ from run to run (in OpenVINO too)"
    ]


def test_random_uniform_repeats_in_every_run(tmp_path):
    """irrun gives every run a first inference's numbers; OpenVINO moves on."""
    model = _uniform_model([6], "f32", 0, 1, (5, 6), "tensorflow")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    compiled = CORE.compile_model(model, "CPU", CPU_CONFIG)
    first = np.asarray(compiled({})[0]).copy()
    second = np.asarray(compiled({})[0]).copy()
    assert not np.array_equal(first, second)
    _same_bits(loaded.run({})["out"], first)
    _same_bits(loaded.run({})["out"], first)


def test_random_uniform_shape_rule_matches_openvino():
    rule = resolve("RandomUniform", "opset8")
    a = attrs_namespace({"output_type": ET["f32"], "global_seed": 1, "op_seed": 2,
                         "alignment": "tensorflow"})  # fmt: skip
    i64, f32 = ET["i64"], ET["f32"]
    known = lambda v, t=i64: TensorInfo(np.shape(v), t, np.array(v))  # noqa: E731
    scalar = TensorInfo((), f32)

    def ov_shape(shape_node, lo=0.0, hi=1.0):
        node = opset8.random_uniform(shape_node, opset1.constant(np.float32(lo)),
                                     opset1.constant(np.float32(hi)), "f32", 1, 2)  # fmt: skip
        return from_ov_shape(node.get_output_partial_shape(0))

    cases = [
        (known([2, 3]), opset1.constant(np.array([2, 3], np.int64))),
        (known([2, -1]), opset1.constant(np.array([2, -1], np.int64))),
        (TensorInfo((3,), i64), opset1.parameter([3], ov.Type.i64)),
        (TensorInfo((DYNAMIC,), i64), opset1.parameter([-1], ov.Type.i64)),
        (TensorInfo(None, i64), opset1.parameter(ov.PartialShape.dynamic(), ov.Type.i64)),
    ]
    for info, node in cases:
        (out,) = rule.infer(a, [info, scalar, scalar])
        want = ov_shape(node)
        assert out.shape == want and out.element_type == f32
    (out,) = rule.infer(a, [known([4]), TensorInfo((1,), f32), TensorInfo((1,), f32)])
    assert out.shape == (4,)
    bad = [
        ([known([[2, 3]]), scalar, scalar], "output_shape must be 1-D"),
        ([known(5), scalar, scalar], "output_shape must be 1-D"),
        ([known([2, 3]), TensorInfo((1, 1), f32), scalar], "min_val must be a scalar"),
        ([known([2, 3]), known(1.0, f32), known(1.0, f32)], "min_val must be less than max_val"),
        ([known([2, 3]), known(2.0, f32), known(1.0, f32)], "min_val must be less than max_val"),
        ([known([2.0, 3.0], f32), scalar, scalar], "input 0 is f32"),
        ([known([2, 3]), TensorInfo((), ET["f16"]), scalar], "min_val is f16, not output_type f32"),
    ]
    for inputs, message in bad:
        with pytest.raises(ShapeError, match=message):
            rule.infer(a, inputs)
    for node, lo, hi in ((opset1.constant(np.array([[2, 3]], np.int64)), 0, 1),
                         (opset1.constant(np.array(5, np.int64)), 0, 1),
                         (opset1.constant(np.array([2, 3], np.int64)), 1, 1),
                         (opset1.constant(np.array([2, 3], np.int64)), 2, 1)):  # fmt: skip
        with pytest.raises(RuntimeError):
            ov_shape(node, lo, hi)
    with pytest.raises(ShapeError, match="RandomUniform-v8 does not take"):
        rule.infer(attrs_namespace({**vars(a), "output_type": ET["u8"]}),
                   [known([2]), TensorInfo((), ET["u8"]), TensorInfo((), ET["u8"])])  # fmt: skip


def _saved(model: ov.Model, tmp_path: Path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def _findings(path: Path, type_name: str) -> list[str]:
    return [d.message for d in irrun.validate(path)
            if d.layer is not None and d.layer.type == type_name]  # fmt: skip


def test_random_uniform_validate_findings(tmp_path):
    model = _uniform_model([2, 3], "f32", 0, 1, (1, 2), "tensorflow")
    bad = _saved(model, tmp_path, lambda t: t.replace('alignment="tensorflow"',
                                                      'alignment="numpy"'))  # fmt: skip
    found = _findings(bad, "RandomUniform")
    assert len(found) == 1 and "alignment" in found[0]
    for seed in ("two", "1.5", str(2**63)):  # OpenVINO reads 64-bit signed integers
        bad = _saved(model, tmp_path, lambda t, s=seed: t.replace('op_seed="2"', f'op_seed="{s}"'))
        found = _findings(bad, "RandomUniform")
        assert len(found) == 1 and "op_seed" in found[0] and seed in found[0]
    bad = _saved(model, tmp_path, lambda t: t.replace('output_type="f32"', 'output_type="f16"'))
    found = _findings(bad, "RandomUniform")
    assert len(found) == 1 and found[0].startswith("min_val is f32, not output_type f16")


# --------------------------------------------------------------------------- Multinomial


def _multinomial_model(probs, samples, convert_type, replacement, log_probs, seeds,
                       probs_type="f32", samples_type=np.int64) -> ov.Model:  # fmt: skip
    p = opset1.constant(np.asarray(probs, np.float32 if probs_type == "bf16" else NP[probs_type]))
    if probs_type == "bf16":
        p = opset1.convert(p, "bf16")
    node = opset13.multinomial(p, opset1.constant(np.array(samples, samples_type)),
                               convert_type, replacement, log_probs, *seeds)  # fmt: skip
    return _model(node)


def _probability_cases():
    rng = np.random.default_rng(13)
    for i in range(24):
        batch, classes = int(rng.integers(1, 4)), int(rng.integers(2, 12))
        replacement, log_probs = bool(i % 2), bool(i // 2 % 2)
        samples = int(rng.integers(1, 9)) if replacement else int(rng.integers(1, classes))
        probs = rng.random((batch, classes)).astype(np.float32) + np.float32(0.01)
        if i % 5 == 0:
            probs[:, int(rng.integers(0, classes))] = 0  # a class never drawn
        if i % 7 == 0:
            probs *= 40  # not normalised
        if log_probs:
            probs = np.log(np.maximum(probs, 1e-6)).astype(np.float32)
        probs_type = ("f32", "f16", "bf16", "f64")[i % 4]
        convert_type = ("i32", "i64")[i // 3 % 2]
        seeds = (int(rng.integers(1, 2**40)), int(rng.integers(0, 2**33)))
        if probs_type == "bf16":
            probs = probs.astype(BF16).astype(np.float32)  # exact through the Convert
        if replacement is False and i % 5 == 0:
            samples = min(samples, classes - 2) or 1
        yield pytest.param(
            probs,
            samples,
            convert_type,
            replacement,
            log_probs,
            seeds,
            probs_type,
            id=f"{i}-{probs_type}-{batch}x{classes}-n{samples}-"
            f"{'repl' if replacement else 'norepl'}-{'log' if log_probs else 'p'}",
        )


@pytest.mark.parametrize(("probs", "samples", "convert_type", "replacement", "log_probs",
                          "seeds", "probs_type"), list(_probability_cases()))  # fmt: skip
def test_multinomial_matches_cpu(probs, samples, convert_type, replacement, log_probs, seeds,
                                 probs_type, tmp_path):  # fmt: skip
    model = _multinomial_model(probs, samples, convert_type, replacement, log_probs, seeds,
                               probs_type)  # fmt: skip
    got = _irrun(model, tmp_path)
    compiled = CORE.compile_model(model, "CPU", CPU_CONFIG)
    for _ in range(2):  # the plugin keeps no state between inferences here
        _same_bits(got, np.asarray(compiled({})[0]))


@pytest.mark.parametrize("seeds", [(1, 2), (2, 1), (0, 5), (9, 0), (2**40, 2**33 + 7)])
def test_multinomial_seeds_match_cpu(seeds, tmp_path):
    probs = np.full((2, 1000), 1e-3, np.float32)  # uniform: the indices show the numbers
    model = _multinomial_model(probs, [16], "i64", True, False, seeds, samples_type=np.int32)
    got = _irrun(model, tmp_path)
    _same_bits(got, _cpu(model))
    assert len(set(got.reshape(-1).tolist())) > 20


def test_multinomial_by_hand(tmp_path):
    # One class with all the probability: every draw is it; without replacement the
    # three classes each once.
    probs = np.array([[0, 0, 1, 0], [0, 5, 0, 0]], np.float32)
    model = _multinomial_model(probs, 3, "i32", True, False, (4, 5))
    assert _irrun(model, tmp_path).tolist() == [[2, 2, 2], [1, 1, 1]]
    probs = np.array([[1, 1, 1]], np.float32)
    model = _multinomial_model(probs, 3, "i32", False, False, (4, 5))
    assert sorted(_irrun(model, tmp_path)[0].tolist()) == [0, 1, 2]


def test_multinomial_shape_rule_matches_openvino():
    rule = resolve("Multinomial", "opset13")
    a = attrs_namespace({"convert_type": ET["i32"], "with_replacement": True,
                         "log_probs": False, "global_seed": 1, "op_seed": 2})  # fmt: skip
    f32, i64 = ET["f32"], ET["i64"]
    known = lambda v: TensorInfo(np.shape(v), i64, np.array(v))  # noqa: E731

    def ov_shape(probs_shape, samples):
        node = opset13.multinomial(opset1.parameter(probs_shape, ov.Type.f32), samples, "i32",
                                   True, False, 1, 2)  # fmt: skip
        return from_ov_shape(node.get_output_partial_shape(0))

    const = lambda v: opset1.constant(np.array(v, np.int64))  # noqa: E731
    cases = [
        ((2, 5), known(3), [2, 5], const(3)),
        ((2, 5), known([3]), [2, 5], const([3])),
        ((2, 5), known(-1), [2, 5], const(-1)),
        ((DYNAMIC, 5), known(3), [-1, 5], const(3)),
        ((2, 5), TensorInfo((1,), i64), [2, 5], opset1.parameter([1], ov.Type.i64)),
        (None, known(3), ov.PartialShape.dynamic(), const(3)),
    ]
    for shape, samples, ov_probs, ov_samples in cases:
        (out,) = rule.infer(a, [TensorInfo(shape, f32), samples])
        assert out.shape == ov_shape(ov_probs, ov_samples) and out.element_type == ET["i32"]
    bad = [
        ([TensorInfo((5,), f32), known(3)], "probs must be 2-D", ([5], const(3))),
        (
            [TensorInfo((2, 5), f32), known([[3]])],
            "num_samples must be a scalar",
            ([2, 5], const([[3]])),
        ),
        (
            [TensorInfo((2, 5), f32), known([3, 4])],
            "num_samples must be a scalar",
            ([2, 5], const([3, 4])),
        ),
        ([TensorInfo((2, 5), i64), known(3)], "input 0 is i64", None),
        ([TensorInfo((2, 5), f32), TensorInfo((), f32)], "input 1 is f32", None),
    ]
    for inputs, message, ov_case in bad:
        with pytest.raises(ShapeError, match=message):
            rule.infer(a, inputs)
        if ov_case is not None:
            with pytest.raises(RuntimeError):
                ov_shape(*ov_case)
    with pytest.raises(ShapeError, match="convert_type must be i32 or i64"):
        rule.infer(attrs_namespace({**vars(a), "convert_type": ET["f32"]}),
                   [TensorInfo((2, 5), f32), known(3)])  # fmt: skip


def test_multinomial_validate_findings(tmp_path):
    model = _multinomial_model(np.ones((1, 4), np.float32), 2, "i32", True, False, (1, 2))
    bad = _saved(model, tmp_path, lambda t: t.replace('convert_type="i32"',
                                                      'convert_type="f32"'))  # fmt: skip
    assert any("convert_type must be i32 or i64" in m for m in _findings(bad, "Multinomial"))
    bad = _saved(model, tmp_path, lambda t: t.replace('log_probs="false"', 'log_probs="maybe"'))
    found = _findings(bad, "Multinomial")
    assert len(found) == 1 and "log_probs" in found[0]
    bad = _saved(model, tmp_path, lambda t: re.sub(r'global_seed="1" op_seed="2"',
                                                   'global_seed="0" op_seed="0"', t))  # fmt: skip
    assert _findings(bad, "Multinomial") == [
        "global_seed and op_seed are both 0: the numbers differ from run to run (in OpenVINO too)"
    ]
    with pytest.raises(irrun.IrrunError, match="num_samples must not be negative"):
        probs = opset1.parameter([1, 3], ov.Type.f32, name="in0")
        count = opset1.parameter([], ov.Type.i64, name="in1")
        for p in (probs, count):
            p.output(0).get_tensor().set_names({p.get_friendly_name()})
        node = opset13.multinomial(probs, count, "i32", True, False, 1, 2)
        node.output(0).get_tensor().set_names({"out"})
        path = tmp_path / "n.xml"
        ov.save_model(ov.Model([node], [probs, count], "n"), path)
        irrun.load(path).run({"in0": np.ones((1, 3), np.float32), "in1": np.array(-2)})


# --------------------------------------------------------------------------- sweeps


@st.composite
def _uniform_case(draw):
    name = draw(st.sampled_from(sorted(RANGES)))
    alignment = draw(st.sampled_from(["tensorflow", "pytorch"]))
    shape = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    seeds = draw(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1)))
    if name in ("i32", "i64"):
        bits = 31 if name == "i32" else 63
        lo = draw(st.integers(-(2**bits), 2**bits - 2))
        hi = draw(
            st.integers(lo + 1, min(2**bits - 1, lo + draw(st.sampled_from([2, 10**3, 2**40]))))
        )
    else:  # ends exact in the type: bf16 has 8 significant bits
        wide = name in ("f32", "f64")
        lo = draw(st.integers(-(2**12), 2**12) if wide else st.integers(-(2**7), 2**7)) / 16
        hi = lo + draw(st.integers(1, 2**10 if wide else 2**7)) / 16
    return name, lo, hi, alignment, shape, (seeds[0] or 1, seeds[1])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(case=_uniform_case())
def test_random_uniform_sweep_matches_reference(case, tmp_path):
    name, lo, hi, alignment, shape, seeds = case
    model = _uniform_model(shape, name, lo, hi, seeds, alignment)
    _same_bits(_irrun(model, tmp_path), _evaluate(model), str(case))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_multinomial_sweep_matches_cpu(data, tmp_path):
    batch, classes = data.draw(st.integers(1, 3)), data.draw(st.integers(2, 16))
    replacement, log_probs = data.draw(st.booleans()), data.draw(st.booleans())
    samples = data.draw(st.integers(1, 12) if replacement else st.integers(1, classes))
    # Positive probabilities (a row of zeros, or every class drawn, leaves the plugin's
    # output unwritten), up to 100 times apart.
    weights = data.draw(st.lists(st.integers(1, 100), min_size=batch * classes,
                                 max_size=batch * classes))  # fmt: skip
    probs = np.array(weights, np.float32).reshape(batch, classes) / np.float32(64)
    if log_probs:
        probs = np.log(probs).astype(np.float32)
    probs_type = data.draw(st.sampled_from(["f32", "f16", "bf16", "f64"]))
    if probs_type == "bf16":
        probs = probs.astype(BF16).astype(np.float32)
    seeds = (data.draw(st.integers(1, 2**63 - 1)), data.draw(st.integers(0, 2**63 - 1)))
    convert_type = data.draw(st.sampled_from(["i32", "i64"]))
    model = _multinomial_model(probs, samples, convert_type, replacement, log_probs, seeds,
                               probs_type)  # fmt: skip
    _same_bits(_irrun(model, tmp_path), _cpu(model))
