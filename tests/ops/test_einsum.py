"""Einsum-7 against the CPU plugin, hand values and OpenVINO's shape inference.

OpenVINO's Python ``Model.evaluate`` has no Einsum kernel, so the plugin is the only
oracle for values; irrun follows the reference kernel's integer arithmetic (wrapping
in the input type) where the plugin computes in f32, so integer sweeps use small values.

Tolerances: f32 rtol 1e-5 plus atol 1e-5 times the largest sum of |products| (the
einsum of the absolute values): the terms are added in another order.  f16 is computed
in f32 by both and rounded once: atol 2e-3 of that same scale.  Integers are exact.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset7
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops.einsum import parse_equation

EINSUM = resolve("Einsum", "opset7")


def einsum(equation: str):
    return lambda *p: opset7.einsum(list(p), equation)


def _scale(equation: str, inputs) -> float:
    """The largest sum of |terms| of an output element: the size of rounding errors."""
    absolute = [np.abs(x.astype(np.float64)) for x in inputs]
    got = EINSUM.kernel(SimpleNamespace(equation=equation), *absolute)[0]
    return float(np.max(got)) if got.size else 0.0


def check(equation: str, inputs, tmp_path):
    got, want = run_both(einsum(equation), inputs, tmp_path)
    kind = inputs[0].dtype
    if kind.kind in "iu":
        assert_close(got, want, what=equation)
        return got
    scale = max(_scale(equation, inputs), 1e-30)
    atol = (2e-3 if kind == np.float16 else 1e-5) * scale
    rtol = 0 if kind == np.float16 else 1e-5
    assert_close(got, want, rtol=rtol, atol=atol, what=equation)
    return got


# --- differential sweep ------------------------------------------------------------------------

EQUATIONS = [
    ("ab,bc->ac", [(2, 3), (3, 4)]),
    ("ab,bc", [(2, 3), (3, 4)]),  # implicit
    ("ij,ij", [(2, 3), (2, 3)]),  # implicit: everything summed
    ("ba,ab", [(3, 2), (2, 3)]),
    ("Ba", [(2, 3)]),  # implicit order: 'B' sorts before 'a'
    ("bA", [(2, 3)]),  # ... and 'A' before 'b': a transpose
    ("aB,Bc", [(2, 3), (3, 4)]),
    ("AZaz->zaZA", [(1, 2, 3, 4)]),
    ("ii->i", [(3, 3)]),  # diagonal
    ("ii->", [(4, 4)]),  # trace
    ("iij->j", [(3, 3, 2)]),
    ("aaa->a", [(2, 2, 2)]),
    ("ab->", [(2, 3)]),
    ("ab->ba", [(2, 3)]),
    ("ab,cd->abcd", [(2, 3), (2, 2)]),
    ("a,b,c", [(2,), (3,), (4,)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cba", [(2, 3, 4), (4, 3, 2)]),
    ("...ij->...ji", [(2, 3)]),  # an ellipsis of no dims
    ("...ij->...ji", [(5, 2, 3)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),  # ellipsis dims broadcast
    ("...ij,...jk", [(2, 2, 3), (3, 4)]),
    ("a...b,b...c->a...c", [(2, 5, 3), (3, 5, 4)]),  # an ellipsis in the middle
    ("...->...", [(2, 3)]),
    ("...,...->...", [(2, 1), (3,)]),
    ("a...,a...->a...", [(2, 3), (2,)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...ab->ab", [(4, 2, 3)]),  # ellipsis dims summed (numpy refuses this one)
    ("i...i->i", [(3, 2, 3)]),
    ("a...i,...i->a", [(2, 3, 4), (4,)]),
    ("ab->a...", [(2, 3)]),  # an output ellipsis with none in the inputs
    ("i,i", [(3,), (1,)]),  # a label's dim of 1 broadcasts
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("ab,ab->ab", [(2, 1), (1, 3)]),
    ("ij->", [(0, 3)]),  # empty
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("", [()]),  # a scalar
    ("a,,b", [(2,), (), (3,)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 7, 8)]),  # attention scores
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 6)]),
]


@pytest.mark.parametrize("equation,shapes", EQUATIONS, ids=[e or "scalar" for e, _ in EQUATIONS])
def test_equations_against_plugin(equation, shapes, tmp_path):
    rng = np.random.default_rng(len(equation))
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    check(equation, inputs, tmp_path)


TYPES = ["f64", "f16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8"]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("equation,shapes", [
    ("ab,bc->ac", [(2, 3), (3, 4)]),
    ("...ii->...", [(2, 3, 3)]),
    ("abc,c->ab", [(2, 3, 4), (4,)]),
])  # fmt: skip
def test_element_types_against_plugin(type_name, equation, shapes, tmp_path):
    rng = np.random.default_rng(1)
    dtype = ELEMENT_TYPES[type_name].dtype
    # Small values: the plugin computes integers in f32 and saturates (see einsum.py).
    inputs = [rng.integers(0, 4, s).astype(dtype) for s in shapes]
    got = check(equation, inputs, tmp_path)
    assert got.dtype == dtype


def _random_case(seed: int):
    """Two operands over labels a..e, maybe with an ellipsis; a random explicit output."""
    rng = np.random.default_rng(seed)
    size = {c: int(rng.integers(1, 4)) for c in "abcdeAB"}
    subs, shapes = [], []
    ellipsis = rng.random() < 0.4
    ell_dims = [int(x) for x in rng.integers(1, 3, int(rng.integers(0, 3)))]
    for _ in range(int(rng.integers(1, 4))):
        labels = list(rng.choice(list(size), int(rng.integers(0, 4))))
        shape = [size[c] for c in labels]
        if ellipsis and rng.random() < 0.7:
            at = int(rng.integers(0, len(labels) + 1))
            tail = ell_dims[int(rng.integers(0, len(ell_dims) + 1)) :]
            tail = [d if rng.random() < 0.7 else 1 for d in tail]
            labels.insert(at, "...")
            shape[at:at] = tail
        subs.append("".join(labels))
        shapes.append(tuple(shape))
    used = sorted({c for s in subs for c in s.replace("...", "")})
    out = [c for c in used if rng.random() < 0.5]
    rng.shuffle(out)
    if any("..." in s for s in subs) and rng.random() < 0.8:
        out.insert(int(rng.integers(0, len(out) + 1)), "...")
    # Implicit mode would repeat a label repeated within a subscript: stay explicit then.
    diagonal = any(s.count(c) > 1 for s in subs for c in used)
    explicit = diagonal or rng.random() < 0.8
    equation = ",".join(subs) + ("->" + "".join(out) if explicit else "")
    return equation, shapes


RANDOM = [_random_case(seed) for seed in range(60)]


@pytest.mark.parametrize("equation,shapes", RANDOM, ids=[f"{e}" for e, _ in RANDOM])
def test_random_equations_against_plugin(equation, shapes, tmp_path):
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    check(equation, inputs, tmp_path)


# --- hand-checked values -----------------------------------------------------------------------

A = np.array([[1, 2], [3, 4]], np.int32)
B = np.array([[5, 6], [7, 8]], np.int32)


@pytest.mark.parametrize("equation,inputs,want", [
    ("ij,jk->ik", [A, B], [[19, 22], [43, 50]]),  # 1·5+2·7, 1·6+2·8, 3·5+4·7, 3·6+4·8
    ("ij,jk", [A, B], [[19, 22], [43, 50]]),
    ("ij,kj->ik", [A, B], [[17, 23], [39, 53]]),  # 1·5+2·6, 1·7+2·8, ...
    ("ii->", [A], 5),  # trace 1+4
    ("ii->i", [A], [1, 4]),
    ("ij->j", [A], [4, 6]),
    ("ij->ji", [A], [[1, 3], [2, 4]]),
    ("ij,ij->", [A, B], 70),  # 5+12+21+32
    ("i,j->ij", [A[0], B[0]], [[5, 6], [10, 12]]),
    ("...j,j->...", [A, B[1]], [23, 53]),  # 1·7+2·8, 3·7+4·8
    ("...ij->ij", [np.stack([A, B])], [[6, 8], [10, 12]]),  # the ellipsis summed
])  # fmt: skip
def test_by_hand(equation, inputs, want, tmp_path):
    got, plugin = run_both(einsum(equation), inputs, tmp_path)
    expected = np.array(want, np.int32)
    assert_close(got, expected, what=equation)
    assert_close(plugin, expected, what=equation)


def test_integers_wrap_in_their_type():
    # 200 + 100 = 300 wraps to 44 in u8, as OpenVINO's reference kernel adds in u8.
    x = np.array([[200, 100]], np.uint8)
    (got,) = EINSUM.kernel(SimpleNamespace(equation="ab->a"), x)
    assert got.dtype == np.uint8 and got.tolist() == [44]


# --- parsing and the shape rule ----------------------------------------------------------------


@pytest.mark.parametrize("equation,output", [
    ("ab,bc", "ac"),
    ("ba", "ab"),
    ("bA", "Ab"),
    ("...ij,jk", "...ik"),
    ("ij,...", "...ij"),
    ("ij,ij", ""),
    ("", ""),
    ("ab->", ""),
    ("a...b->b...a", "b...a"),
])  # fmt: skip
def test_implicit_and_explicit_outputs(equation, output):
    assert "".join(parse_equation(equation).output) == output


def _ov_shape(equation, shapes, type_name="f32"):
    et = ov.Type.bf16 if type_name == "bf16" else ov.Type(ELEMENT_TYPES[type_name].dtype)
    params = [opset1.parameter(to_ov_shape(s), et) for s in shapes]
    try:
        node = opset7.einsum(params, equation)
    except RuntimeError:
        return "error"
    return from_ov_shape(node.get_output_partial_shape(0))


def _irrun_shape(equation, shapes, type_name="f32"):
    infos = [TensorInfo(s, ELEMENT_TYPES[type_name]) for s in shapes]
    try:
        return EINSUM.infer(SimpleNamespace(equation=equation), infos)[0].shape
    except ShapeError:
        return "error"


R = Interval(2, 6)
SHAPE_CASES = [
    ("ab,bc->ac", [(2, 3), (3, 4)]),
    ("ab,bc->ac", [(2, 3), (4, 4)]),
    ("ab,bc->ac", [(DYNAMIC, DYNAMIC), (3, DYNAMIC)]),
    ("ab,bc->ac", [(2, DYNAMIC), (4, 5)]),
    ("ab,bc->ac", [(R, 3), (3, Interval(1, 4))]),
    ("ab,ab->ab", [(2, DYNAMIC), (DYNAMIC, 5)]),
    ("ab,bc", [(2, 3), None]),
    ("ab,bc->ac", [None, (3, 4)]),
    ("ab,b...", [(2, 3), None]),  # an unknown ellipsis makes the output rank unknown
    ("ab,b...->ab", [(2, 3), None]),
    ("...a,a", [(2, DYNAMIC), (1,)]),
    ("...b,...b", [(2, 3, DYNAMIC), (DYNAMIC, 4)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
    ("...ij,...jk->...ik", [(5, 2, 2, 3), (4, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii->i", [(3, 1)]),  # within one input a label's dims must be equal
    ("ii->i", [(DYNAMIC, 3)]),
    ("i,i", [(3,), (1,)]),
    ("ij", [(2, 3, 4)]),
    ("...ij", [(2,)]),
    ("...ij", [(2, 3)]),
    ("ab,bc", [(2, 3)]),  # one subscript too many
    ("a,b,", [(2,), (3,)]),  # a trailing comma is one more (empty) subscript
    ("a,b,", [(2,), (3,), ()]),
    ("a,", [(2,)]),
    (",a", [(), (2,)]),
    ("ab->c", [(2, 3)]),
    ("ab->Ab", [(2, 3)]),
    ("->a", [()]),
    ("a.b->ab", [(2, 3)]),
    ("a....b->ab", [(2, 3)]),
    ("a...b...->ab", [(2, 3, 4)]),
    ("ab->ba->a", [(2, 3)]),
    ("a1->a", [(2, 3)]),
    ("ab, bc -> ac", [(2, 3), (3, 4)]),  # spaces: OpenVINO's IR reader keeps them
    ("ab->a...", [(2, 3)]),
    ("...->", [(2, 3)]),
    ("a->...", [(2,)]),
    ("", [()]),
    ("->", [()]),
]


@pytest.mark.parametrize(
    "equation,shapes", SHAPE_CASES, ids=[str(i) for i in range(len(SHAPE_CASES))]
)
def test_shape_rule_matches_openvino(equation, shapes):
    assert _irrun_shape(equation, shapes) == _ov_shape(equation, shapes)


@pytest.mark.parametrize("type_name", ["f32", "i64", "u8", "f16", "bf16", "boolean"])
def test_element_types_match_openvino(type_name):
    want = _ov_shape("ab->ba", [(2, 3)], type_name)
    assert _irrun_shape("ab->ba", [(2, 3)], type_name) == want


@pytest.mark.parametrize("equation,shapes", [("ab->aa", [(2, 3)]), ("ii", [(3, 3)]),
                                             ("ab,bc->acc", [(2, 3), (3, 4)])])  # fmt: skip
def test_repeated_output_labels_are_refused(equation, shapes):
    # OpenVINO's shape inference accepts these, but the CPU plugin cannot compile them.
    assert _ov_shape(equation, shapes) != "error"
    inputs = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(RuntimeError):
        run_cpu(one_op_model(einsum(equation), inputs), inputs)
    with pytest.raises(ShapeError, match=f"equation '{equation}': output label '.' occurs more"):
        _irrun_shape_raising(equation, shapes)


def _irrun_shape_raising(equation, shapes):
    infos = [TensorInfo(s, ELEMENT_TYPES["f32"]) for s in shapes]
    return EINSUM.infer(SimpleNamespace(equation=equation), infos)


@pytest.mark.parametrize("equation,shapes,message", [
    ("a b->ab", [(2, 3)], "equation 'a b->ab': input 0 subscript 'a b' must consist of ASCII "
                          "letters and at most one ellipsis"),
    ("ab->a.b", [(2, 3)], "equation 'ab->a.b': output subscript 'a.b' must consist of"),
    ("ab->c", [(2, 3)], "equation 'ab->c': output label 'c' is in no input subscript"),
    ("ab,bc", [(2, 3)], "equation 'ab,bc' has 2 input subscripts for 1 inputs"),
    ("ij", [(2, 3, 4)], "equation 'ij': input 0 has rank 3 ([2,3,4]) but its subscript 'ij' "
                        "needs rank 2"),
    ("...ijk", [(2, 3)], "subscript '...ijk' needs rank at least 3"),
    ("ii->i", [(2, 3)], "equation 'ii->i': label 'i' is used for dims 2 and 3 of input 0 [2,3]"),
    ("ab,bc", [(2, 3), (4, 5)], "equation 'ab,bc': label 'b' has dims 3 and 4 (input 1 [4,5]), "
                                "which do not broadcast"),
    ("...a,...a", [(2, 3), (4, 3)], "equation '...a,...a': the dims under '...' do not "
                                    "broadcast: [2] and [4] of input 1"),
])  # fmt: skip
def test_errors_name_the_equation(equation, shapes, message):
    with pytest.raises(ShapeError) as info:
        _irrun_shape_raising(equation, shapes)
    assert message in str(info.value)


# --- validate ----------------------------------------------------------------------------------


def _saved(tmp_path):
    a, b = np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(einsum("ab,bc->ac"), [a, b]), path, compress_to_fp16=False)
    return path


def test_validate_names_a_malformed_equation(tmp_path):
    path = _saved(tmp_path)
    path.write_text(path.read_text().replace('equation="ab,bc->ac"', 'equation="ab,bc->a c"'))
    (error,) = [d for d in irrun.validate(path) if d.level == "error"]
    assert "(Einsum-v7)" in str(error)
    assert "equation 'ab,bc->a c': output subscript 'a c' must consist of" in str(error)


def test_validate_reports_a_wrong_declared_output_dim(tmp_path):
    path = _saved(tmp_path)
    text = path.read_text()
    out = text.index("<output>", text.index('type="Einsum"'))
    last = text.index("<dim>4</dim>", out)
    path.write_text(text[:last] + "<dim>5</dim>" + text[last + len("<dim>4</dim>") :])
    (error,) = [d for d in irrun.validate(path) if d.level == "error"]
    assert error.code == "shape-mismatch"
    assert "(Einsum-v7) port 2: declared [2,5], inferred [2,4] (equation=" in str(error)


def test_validate_names_inputs_the_equation_does_not_fit(tmp_path):
    path = _saved(tmp_path)
    (error,) = [d for d in irrun.validate(path, shapes="in1[4,4]") if d.level == "error"]
    assert "equation 'ab,bc->ac': label 'b' has dims 3 and 4" in str(error)


@pytest.mark.parametrize("equation", ["ab,bc->ac", "...ij,...jk", "ii->i", "a,b,c"])
def test_ir_saved_by_openvino_validates_without_findings(equation, tmp_path):
    shapes = {"ab,bc->ac": [(2, 3), (3, 4)], "...ij,...jk": [(5, 2, 3), (3, 4)],
              "ii->i": [(3, 3)], "a,b,c": [(2,), (3,), (4,)]}[equation]  # fmt: skip
    path = tmp_path / "m.xml"
    inputs = [np.zeros(s, np.float32) for s in shapes]
    ov.save_model(one_op_model(einsum(equation), inputs), path, compress_to_fp16=False)
    assert [str(d) for d in irrun.validate(path)] == []


# --------------------------------------------------------------------------- element types
# The numbers are swept against the plugin above (TYPES, f32 throughout); bf16 and the two
# f8 floats here, through Converts (OpenVINO has no reference Einsum: its plugin runs the
# bf16 model, the f8 ones as f32 rounded once); the types Einsum does not take are named
# by validate on any of its inputs.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.einsum import EINSUM_TYPES  # noqa: E402


def test_every_declared_type_is_swept():
    assert set(EINSUM_TYPES) == {*TYPES, "f32", "bf16", "f8e4m3", "f8e5m2"}


@pytest.mark.parametrize("type_name", ["bf16", "f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("equation,shapes", [("ab,bc->ac", [(2, 3), (3, 4)]),
                                             ("...ii->...", [(2, 3, 3)])])  # fmt: skip
def test_small_float_types(type_name, equation, shapes, tmp_path):
    inputs = [convertible(type_name, s, seed=i, low=-2, high=2) for i, s in enumerate(shapes)]
    got, want = typed_runs(lambda *p: opset7.einsum(list(p), equation), inputs,
                           [type_name] * len(inputs), tmp_path)  # fmt: skip
    assert_typed_close(got, want)


@pytest.mark.parametrize("type_name", ["boolean", "u4", "i4", "f8e8m0", "nf4"])
@pytest.mark.parametrize("port", [0, 2])
def test_validate_names_a_type_it_does_not_take(type_name, port, tmp_path):
    x = np.zeros((2, 2), np.float32)
    assert_refused(lambda *p: opset7.einsum(list(p), "ab,bc,cd->ad"), [x, x, x], port,
                   type_name, tmp_path, "Einsum-v7")
