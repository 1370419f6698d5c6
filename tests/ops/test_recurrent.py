"""RNNCell, GRUCell, LSTMCell-1/4, RNN/GRU/LSTMSequence-5 and GatherTree against OpenVINO.

``ov.Model.evaluate`` runs none of these ops (their reference kernels live in the template
plugin, which the wheel lacks), so the values are compared with the CPU plugin, with the
weights both as inputs and as constants (the plugin takes other paths for each); where
the plugin departs from the reference kernels (LSTMCell-1's peepholes and
``input_forget``, GatherTree's ``max_seq_len`` of 0 or below) the expected values are
computed here by the reference's rules, next to a test that pins down what the plugin does.

Tolerance: each gate is a sum of ``input_size + hidden_size`` products, which the plugin
adds in its own order (and its exp and tanh are its own): f32 values agree to rtol 1e-5
plus atol 1e-5 (the values are bounded by 1 for tanh and sigmoid; relu's are scaled);
f16, computed in f32 by both and rounded once per value: one f16 ulp (rtol 1e-3, atol
1e-3); bf16 likewise, one bf16 ulp (2**-7); f64, which irrun computes in f64 and the
plugin in f32: the f32 tolerance.  GatherTree moves values: exact.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset3, opset4, opset5
from openvino._pyopenvino import NodeFactory
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved
from support.ov_shapes import from_ov_shape

import irrun
from irrun.errors import KernelError
from irrun.ir import element_types
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def _tol(dtype) -> float:
    return 1e-3 if np.dtype(dtype) == np.float16 else 1e-5


def _check(model, inputs, tmp_path, dtype=np.float32):
    got = run_saved(model, inputs, tmp_path)
    want = run_cpu(model, inputs)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, rtol=_tol(dtype), atol=_tol(dtype), what=f"output {k}")
    return got, want


def _weights(rng, kind, dirs, hidden, input_size, dtype, lbr=False, scale=0.5):
    g = GATES[kind]
    shape = (dirs,) if dirs else ()
    w = (rng.standard_normal((*shape, g * hidden, input_size)) * scale).astype(dtype)
    r = (rng.standard_normal((*shape, g * hidden, hidden)) * scale).astype(dtype)
    b = (rng.standard_normal((*shape, (g + lbr) * hidden)) * scale).astype(dtype)
    return w, r, b


# --------------------------------------------------------------------------- cells

CELL_ACTS = {
    "rnn": [["tanh"], ["relu"], ["sigmoid"]],
    "gru": [["sigmoid", "tanh"], ["tanh", "relu"], ["relu", "sigmoid"]],
    "lstm": [["sigmoid", "tanh", "tanh"], ["relu", "sigmoid", "relu"], ["tanh", "relu", "sigmoid"]],
}


def _cell_cases():
    for kind, version in (("rnn", 1), ("gru", 3), ("lstm", 4), ("lstm", 1)):
        for i, acts in enumerate(CELL_ACTS[kind]):
            for clip in (0.0, 0.6):
                lbrs = (False, True) if kind == "gru" else (False,)
                for lbr in lbrs:
                    batch = (1, 3)[i % 2]
                    const = (i + int(clip > 0)) % 2 == 0
                    yield pytest.param(kind, version, acts, clip, lbr, batch, const,
                                       id=f"{kind}{version}-{'-'.join(acts)}-clip{clip}-"
                                          f"lbr{int(lbr)}-n{batch}-{'const' if const else 'in'}")  # fmt: skip


def _cell_node(kind, version, data, weights, hidden, acts, clip, lbr):
    if kind == "rnn":
        return opset3.rnn_cell(*data, *weights, hidden, acts, [], [], clip)
    if kind == "gru":
        return opset3.gru_cell(*data, *weights, hidden, acts, None, None, clip, lbr)
    factory = opset4.lstm_cell if version == 4 else opset1.lstm_cell
    return factory(*data, *weights, hidden, acts, None, None, clip)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(("kind", "version", "acts", "clip", "lbr", "batch", "const"),
                         list(_cell_cases()))  # fmt: skip
def test_cell_matches_cpu(kind, version, acts, clip, lbr, batch, const, dtype, tmp_path):
    rng = np.random.default_rng(batch + len(acts[0]) + int(10 * clip) + version)
    hidden, input_size = 5, 4
    states = 2 if kind == "lstm" else 1
    data = [rng.standard_normal((batch, input_size)).astype(dtype)]
    data += [rng.standard_normal((batch, hidden)).astype(dtype) for _ in range(states)]
    weights = _weights(rng, kind, 0, hidden, input_size, dtype, lbr)
    if const:
        inputs = data

        def build(*p):
            return _cell_node(kind, version, p, [opset1.constant(v) for v in weights], hidden,
                              acts, clip, lbr)  # fmt: skip
    else:
        inputs = data + list(weights)

        def build(*p):
            return _cell_node(kind, version, p[:1 + states], p[1 + states:], hidden, acts,
                              clip, lbr)  # fmt: skip

    model = one_op_model(build, inputs, states)
    _check(model, inputs, tmp_path, dtype)
    assert any(f'version="opset{version}"' in line and "Cell" in line
               for line in (tmp_path / "m.xml").read_text().splitlines())  # fmt: skip


def _lstm_v1_by_reference(x, h, c, w, r, b, p, input_forget, clip=0.0):
    """LSTMCell-1 by the rules of OpenVINO's reference kernel (lstm_cell_v1), in f64."""
    x, h, c, w, r, b, p = (np.asarray(v, np.float64) for v in (x, h, c, w, r, b, p))

    def sig(v):
        return 1 / (1 + np.exp(-(np.clip(v, -clip, clip) if clip > 0 else v)))

    gf, gi, gc, go = np.split(x @ w.T + h @ r.T + b, 4, axis=1)
    pf, pi, po = np.split(p, 3)
    f = sig(gf + pf * c)
    i = 1 - f if input_forget else sig(gi + pi * c)
    cc = np.tanh(np.clip(gc, -clip, clip) if clip > 0 else gc)
    c_new = f * c + i * cc
    o = sig(go + po * c_new)
    return o * np.tanh(c_new), c_new


def _lstm_cell_1_file(tmp_path, x, h, c, w, r, b, p=None, input_forget=False, clip=0.0,
                      with_b=True) -> Path:
    """An IR file of LSTMCell-1 with P from input ``in3`` (or without P, and without B if
    not ``with_b``).  OpenVINO's writer never writes P (``save_model`` drops the seventh
    input) but its reader takes it: the port and its edge are written in here."""
    params = [opset1.parameter(v.shape, ov.Type.f32, name=f"in{k}")
              for k, v in enumerate((x, h, c) if p is None else (x, h, c, p))]  # fmt: skip
    for k, q in enumerate(params):
        q.output(0).get_tensor().set_names({f"in{k}"})
    consts = [opset1.constant(v).output(0) for v in (w, r, b)]
    node = NodeFactory("opset1").create(
        "LSTMCell", [q.output(0) for q in params[:3]] + consts,
        {"hidden_size": h.shape[1], "activations": ["sigmoid", "tanh", "tanh"],
         "activations_alpha": [], "activations_beta": [], "clip": clip,
         "input_forget": input_forget, "weights_format": "fico"})  # fmt: skip
    for k in range(2):
        node.output(k).get_tensor().set_names({f"out{k}"})
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node.output(0), node.output(1)], params), path,
                  compress_to_fp16=False)  # fmt: skip
    text = path.read_text()
    cell = re.search(r'<layer id="(\d+)" name="[^"]*" type="LSTMCell"', text).group(1)
    port5 = re.search(r'(\s*<port id="5" precision="FP32">\s*<dim>\d+</dim>\s*</port>)', text)
    if p is not None:
        src = re.search(r'<layer id="(\d+)" name="in3"', text).group(1)
        text = text.replace(port5.group(1), port5.group(1) + f"""
\t\t\t\t<port id="6" precision="FP32"><dim>{p.size}</dim></port>""")
        text = text.replace("</edges>", f'<edge from-layer="{src}" from-port="0" '
                                         f'to-layer="{cell}" to-port="6" />\n</edges>')  # fmt: skip
    if not with_b:
        text = text.replace(port5.group(1), "")
        text = re.sub(rf'<edge from-layer="\d+" from-port="0" to-layer="{cell}" to-port="5" />',
                      "", text)  # fmt: skip
    path.write_text(text)
    return path


@pytest.mark.parametrize("input_forget", [False, True])
@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_lstm_cell_1_peepholes_follow_the_reference(input_forget, clip, tmp_path):
    """P and input_forget as OpenVINO's reference computes them; its CPU plugin ignores both
    (pinned below)."""
    rng = np.random.default_rng(7 + int(input_forget))
    batch, hidden, input_size = 3, 4, 5
    x, h, c = (rng.standard_normal((batch, n)).astype(np.float32)
               for n in (input_size, hidden, hidden))  # fmt: skip
    w, r, b = _weights(rng, "lstm", 0, hidden, input_size, np.float32)
    p = rng.standard_normal(3 * hidden).astype(np.float32)
    path = _lstm_cell_1_file(tmp_path, x, h, c, w, r, b, p, input_forget, clip)
    got = list(irrun.load(path).run({"in0": x, "in1": h, "in2": c, "in3": p}).values())
    want = _lstm_v1_by_reference(x, h, c, w, r, b, p, input_forget, clip)
    for g, wv in zip(got, want, strict=True):
        np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-5)
    # The plugin reads P and input_forget, and computes LSTMCell-4 of the same weights.
    model = ov.Core().read_model(path)
    assert [n.get_input_size() for n in model.get_ordered_ops()
            if n.get_type_name() == "LSTMCell"] == [7]  # fmt: skip
    plugin = run_cpu(model, [x, h, c, p])
    without = _lstm_v1_by_reference(x, h, c, w, r, b, 0 * p, False, clip)
    for g, wv in zip(plugin, without, strict=True):
        np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-5)
    assert not np.allclose(plugin[1], got[1], atol=1e-3)


@pytest.mark.parametrize("with_b", [False, True])
def test_lstm_cell_1_without_p_or_b(with_b, tmp_path):
    """B and P are optional in LSTMCell-1 (zeros when absent): against the plugin."""
    rng = np.random.default_rng(3)
    x, h, c = (rng.standard_normal((2, n)).astype(np.float32) for n in (3, 4, 4))
    w, r, b = _weights(rng, "lstm", 0, 4, 3, np.float32)
    path = _lstm_cell_1_file(tmp_path, x, h, c, w, r, b, with_b=with_b)
    assert path.read_text().count('to-port="5"') == int(with_b)
    got = list(irrun.load(path).run({"in0": x, "in1": h, "in2": c}).values())
    want = run_cpu(ov.Core().read_model(path), [x, h, c])
    for g, wv in zip(got, want, strict=True):
        assert_close(g, wv, rtol=1e-5, atol=1e-5)


def test_rnn_cell_by_hand(tmp_path):
    x = np.array([[1.0, 2.0]], np.float32)
    h = np.array([[0.5]], np.float32)
    w, r, b = np.array([[0.25, -0.5]], np.float32), np.array([[2.0]], np.float32), \
        np.array([0.125], np.float32)  # fmt: skip
    # relu(1 * 0.25 + 2 * -0.5 + 0.5 * 2 + 0.125) = relu(0.375); clip 0.25 makes it 0.25
    for clip, want in ((0.0, 0.375), (0.25, 0.25)):
        model = one_op_model(lambda p, q, clip=clip: opset3.rnn_cell(
            p, q, opset1.constant(w), opset1.constant(r), opset1.constant(b), 1, ["relu"],
            [], [], clip), [x, h])  # fmt: skip
        got = run_saved(model, [x, h], tmp_path)[0]
        assert got.tolist() == [[want]]


def test_gru_cell_linear_before_reset_by_hand(tmp_path):
    # hidden 1, input 1: z = r = sigmoid(0) = 0.5 with zero weights for them
    x, h = np.array([[2.0]], np.float32), np.array([[1.0]], np.float32)
    w = np.array([[0.0], [0.0], [1.0]], np.float32)
    r = np.array([[0.0], [0.0], [3.0]], np.float32)
    b = np.array([0.0, 0.0, 0.5, 1.0], np.float32)  # z, r, Wbh, Rbh
    # ht = tanh(2 * 1 + 0.5 * (1 * 3 + 1) + 0.5) = tanh(4.5); H = 0.5 * ht + 0.5 * 1
    model = one_op_model(lambda p, q: opset3.gru_cell(
        p, q, opset1.constant(w), opset1.constant(r), opset1.constant(b), 1,
        linear_before_reset=True), [x, h])  # fmt: skip
    got = run_saved(model, [x, h], tmp_path)[0]
    np.testing.assert_allclose(got, [[0.5 * np.tanh(4.5) + 0.5]], rtol=1e-6)


# --------------------------------------------------------------------------- sequences

SEQ_ACTS = {
    "rnn": [None, ["relu"], ["sigmoid"]],
    "gru": [None, ["tanh", "relu"], ["relu", "sigmoid"]],
    "lstm": [None, ["relu", "sigmoid", "relu"], ["tanh", "relu", "sigmoid"]],
}


def _seq_node(kind, data, lengths, weights, hidden, direction, acts, clip, lbr):
    if kind == "lstm":
        return opset5.lstm_sequence(*data, lengths, *weights, hidden, direction, acts, None,
                                    None, clip)  # fmt: skip
    if kind == "gru":
        return opset5.gru_sequence(*data, lengths, *weights, hidden, direction, acts, None,
                                   None, clip, lbr)  # fmt: skip
    return opset5.rnn_sequence(*data, lengths, *weights, hidden, direction, acts, None, None,
                               clip)  # fmt: skip


def run_sequence(tmp_path, rng, kind, direction, lengths, *, steps=5, input_size=4, hidden=3,
                 acts=None, clip=0.0, lbr=False, const=True, dtype=np.float32,
                 lengths_type=np.int32):  # fmt: skip
    batch = len(lengths)
    dirs = 2 if direction == "bidirectional" else 1
    states = 2 if kind == "lstm" else 1
    data = [rng.standard_normal((batch, steps, input_size)).astype(dtype)]
    data += [rng.standard_normal((batch, dirs, hidden)).astype(dtype) for _ in range(states)]
    weights = _weights(rng, kind, dirs, hidden, input_size, dtype, lbr)
    seq = np.array(lengths, lengths_type)
    if const:
        inputs = data

        def build(*p):
            return _seq_node(kind, p, opset1.constant(seq), [opset1.constant(v) for v in weights],
                             hidden, direction, acts, clip, lbr)  # fmt: skip
    else:
        inputs = [*data, seq, *weights]

        def build(*p):
            return _seq_node(kind, p[:1 + states], p[1 + states], p[2 + states:], hidden,
                             direction, acts, clip, lbr)  # fmt: skip

    model = one_op_model(build, inputs, 1 + states)
    return _check(model, inputs, tmp_path, dtype)


def _seq_cases():
    for kind in ("rnn", "gru", "lstm"):
        for direction in ("forward", "reverse", "bidirectional"):
            for i, lengths in enumerate(([5, 5, 5], [5, 2, 3], [0, 5, 1], [4])):
                acts = SEQ_ACTS[kind][i % 3]
                clip = 0.7 if i == 1 else 0.0
                lbr = kind == "gru" and i % 2 == 1
                yield pytest.param(kind, direction, lengths, acts, clip, lbr, i % 2 == 0,
                                   id=f"{kind}-{direction}-{lengths}-{acts}-clip{clip}-lbr{lbr}")


@pytest.mark.parametrize(("kind", "direction", "lengths", "acts", "clip", "lbr", "const"),
                         list(_seq_cases()))  # fmt: skip
def test_sequence_matches_cpu(kind, direction, lengths, acts, clip, lbr, const, tmp_path):
    rng = np.random.default_rng(len(kind) + len(direction) + sum(lengths))
    got, _ = run_sequence(tmp_path, rng, kind, direction, lengths, acts=acts, clip=clip,
                          lbr=lbr, const=const)  # fmt: skip
    y = got[0]
    for n, length in enumerate(lengths):  # zeros past each length, in every direction
        assert not y[n, :, length:].any()
        if length == 0:
            assert not any(s[n].any() for s in got[1:])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_sequence_f16_f64_match_cpu(kind, direction, dtype, tmp_path):
    """f64: irrun computes in f64, the plugin in f32 (within the f32 tolerance)."""
    rng = np.random.default_rng(11)
    run_sequence(tmp_path, rng, kind, direction, [5, 3], dtype=dtype, lbr=kind == "gru")


@pytest.mark.parametrize("clip", [-1.0, np.inf, 1e-3])
def test_sequence_clip_not_above_zero_or_infinite(clip, tmp_path):
    """A clip of 0 or below clips nothing, as infinity does; a tiny one flattens the gates."""
    run_sequence(tmp_path, np.random.default_rng(4), "lstm", "bidirectional", [5, 3], clip=clip)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_sequence_bf16_matches_cpu(kind, tmp_path):
    """bf16 inputs, made by Converts from f32 in the graph (NumPy has no bf16 the plugin's
    Python API takes), and outputs converted back: one bf16 ulp (2**-7 relative)."""
    rng = np.random.default_rng(5)
    states = 2 if kind == "lstm" else 1
    data = [rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 4), (2, 1, 3), (2, 1, 3))]
    data = data[:1 + states]
    weights = _weights(rng, kind, 1, 3, 4, np.float32)

    def bf16(node):
        return opset1.convert(node, "bf16")

    def build(*p):
        node = _seq_node(kind, [bf16(q) for q in p], opset1.constant(np.array([5, 3], np.int32)),
                         [bf16(opset1.constant(v)) for v in weights], 3, "forward", None,
                         0.0, False)  # fmt: skip
        flat = [opset1.reshape(opset1.convert(o, "f32"), opset1.constant(np.array([-1])), False)
                for o in node.outputs()]  # fmt: skip
        return opset1.concat(flat, 0)

    model = one_op_model(build, data)
    got, want = run_saved(model, data, tmp_path)[0], run_cpu(model, data)[0]
    assert_close(got, want, rtol=2**-7, atol=2**-7)
    assert 'element_type="bf16"' in (tmp_path / "m.xml").read_text() or \
        'precision="BF16"' in (tmp_path / "m.xml").read_text()  # fmt: skip


@pytest.mark.parametrize("lengths_type", [np.int64, np.int32, np.uint8])
def test_sequence_lengths_types(lengths_type, tmp_path):
    rng = np.random.default_rng(2)
    run_sequence(tmp_path, rng, "lstm", "reverse", [2, 5], lengths_type=lengths_type)


@settings(max_examples=50, deadline=None)
@given(kind=st.sampled_from(["rnn", "gru", "lstm"]),
       direction=st.sampled_from(["forward", "reverse", "bidirectional"]),
       batch=st.integers(1, 4), steps=st.integers(1, 6), input_size=st.integers(1, 7),
       hidden=st.integers(1, 9), lbr=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_sequence_sizes_match_cpu(kind, direction, batch, steps, input_size, hidden, lbr, seed,
                                  tmp_path_factory):  # fmt: skip
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, steps + 1, batch).tolist()
    run_sequence(tmp_path_factory.mktemp("seq"), rng, kind, direction, lengths, steps=steps,
                 input_size=input_size, hidden=hidden, lbr=lbr and kind == "gru",
                 const=bool(seed % 2))  # fmt: skip


def test_sequence_of_dynamic_shape(tmp_path):
    """Batch, steps and lengths known only at run time; two runs of one loaded model,
    against the plugin on the model reshaped to the inputs' shapes.  With the shapes left
    dynamic the plugin ignores sequence_lengths (every entry runs all steps): pinned here,
    a plugin bug irrun does not follow."""
    rng = np.random.default_rng(6)
    w, r, b = _weights(rng, "gru", 2, 3, 4, np.float32, lbr=True)
    params = [opset1.parameter(ov.PartialShape(s), t, name=f"in{k}") for k, (s, t) in
              enumerate((([-1, -1, 4], ov.Type.f32), ([-1, 2, 3], ov.Type.f32),
                         ([-1], ov.Type.i64)))]  # fmt: skip
    for k, q in enumerate(params):
        q.output(0).get_tensor().set_names({f"in{k}"})
    node = opset5.gru_sequence(*params, *map(opset1.constant, (w, r, b)), 3, "bidirectional",
                               linear_before_reset=True)  # fmt: skip
    model = ov.Model(list(node.outputs()), params)
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    loaded = irrun.load(path)
    for batch, steps in ((3, 6), (1, 2)):
        inputs = [rng.standard_normal((batch, steps, 4)).astype(np.float32),
                  rng.standard_normal((batch, 2, 3)).astype(np.float32),
                  np.array([steps, 1, 0][:batch])]  # fmt: skip
        got = list(loaded.run({f"in{k}": v for k, v in enumerate(inputs)}).values())
        static = model.clone()
        static.reshape({f"in{k}": list(v.shape) for k, v in enumerate(inputs)})
        for g, want in zip(got, run_cpu(static, inputs), strict=True):
            assert_close(g, want, rtol=1e-5, atol=1e-5)
        full = run_cpu(static, [*inputs[:2], np.full(batch, steps)])
        for dynamic, want in zip(run_cpu(model, inputs), full, strict=True):
            assert_close(dynamic, want)


def test_reverse_sequence_by_hand(tmp_path):
    """An RNN with identity-like weights sums its inputs: reverse starts at each length."""
    x = np.array([[[1.0], [2.0], [4.0]], [[8.0], [16.0], [32.0]]], np.float32)
    h = np.zeros((2, 1, 1), np.float32)
    ones = [opset1.constant(np.ones(s, np.float32)) for s in ((1, 1, 1), (1, 1, 1))]
    zero = opset1.constant(np.zeros((1, 1), np.float32))
    lengths = opset1.constant(np.array([2, 3], np.int32))
    model = one_op_model(lambda p, q: opset5.rnn_sequence(
        p, q, lengths, *ones, zero, 1, "reverse", ["relu"]), [x, h], 2)  # fmt: skip
    y, last = run_saved(model, [x, h], tmp_path)
    # batch 0 reads 2, then 1: Y[0] = [3, 2, 0]; batch 1 reads 32, 16, 8: Y[1] = [56, 48, 32]
    assert y[:, 0, :, 0].tolist() == [[3, 2, 0], [56, 48, 32]]
    assert last[:, 0, 0].tolist() == [3, 56]


def test_sequence_lengths_out_of_range_are_refused(tmp_path):
    model_rng = np.random.default_rng(0)
    with pytest.raises(irrun.errors.IrrunError, match=r"outside 0\.\.5"):
        run_sequence(tmp_path, model_rng, "gru", "forward", [6, 2])
    with pytest.raises(irrun.errors.IrrunError, match=r"outside 0\.\.5"):
        run_sequence(tmp_path, model_rng, "rnn", "forward", [-1, 2])


# --------------------------------------------------------------------------- shapes

DYN = -1


def _seq_shapes(kind, direction, shapes, lbr=False, openvino=True):
    """OpenVINO's and irrun's output shapes for a sequence of the given input shapes."""
    types = [ov.Type.f32] * len(shapes)
    lengths_port = 3 if kind == "lstm" else 2
    types[lengths_port] = ov.Type.i32
    params = [opset1.parameter(ov.PartialShape(s) if s is not None else ov.PartialShape.dynamic(),
                               t) for s, t in zip(shapes, types, strict=True)]  # fmt: skip
    states = 2 if kind == "lstm" else 1
    want = None
    if openvino:
        node = _seq_node(kind, params[:1 + states], params[1 + states], params[2 + states:], 3,
                         direction, None, 0.0, lbr)  # fmt: skip
        want = [from_ov_shape(o.get_partial_shape()) for o in node.outputs()]
    infos = [TensorInfo(from_ov_shape(p.get_output_partial_shape(0)),
                        ET["i32" if k == lengths_port else "f32"]) for k, p in enumerate(params)]  # fmt: skip
    attrs = SimpleNamespace(hidden_size=3, direction=direction, linear_before_reset=lbr,
                            activations="", clip=0.0)  # fmt: skip
    op = resolve({"rnn": "RNNSequence", "gru": "GRUSequence", "lstm": "LSTMSequence"}[kind],
                 "opset5")  # fmt: skip
    got = [o.shape for o in op.infer(attrs, infos)]
    return got, want


@pytest.mark.parametrize(("kind", "direction", "shapes"), [
    ("lstm", "forward", [(2, 5, 4), (2, 1, 3), (2, 1, 3), (2,), (1, 12, 4), (1, 12, 3), (1, 12)]),
    ("lstm", "bidirectional", [(DYN, DYN, 4), (DYN, 2, 3), (2, 2, DYN), (DYN,), (2, 12, 4),
                               (2, 12, 3), (2, 12)]),
    ("lstm", "reverse", [None, None, None, None, (1, 12, 4), (1, 12, 3), (1, 12)]),
    ("gru", "forward", [(1, 7, 2), (1, 1, 3), (1,), (1, 9, 2), (1, 9, 3), (1, 9)]),
    ("gru", "bidirectional", [(DYN, 7, 2), None, (4,), None, None, (2, 9)]),
    ("rnn", "reverse", [(3, DYN, 2), (DYN, 1, DYN), (DYN,), (1, 3, 2), (1, 3, 3), (1, 3)]),
    ("rnn", "forward", [(3, (2, 6), 2), ((1, 4), 1, 3), (DYN,), (1, 3, 2), None, None]),
])  # fmt: skip
def test_sequence_shape_rule_matches_openvino(kind, direction, shapes):
    got, want = _seq_shapes(kind, direction, shapes)
    assert got == want


def test_gru_sequence_linear_before_reset_bias_shape():
    """B holds 4 x hidden_size with linear_before_reset (OpenVINO's Python factory checks
    B before it sets the attribute, so the rule is checked here alone)."""
    op = resolve("GRUSequence", "opset5")
    shapes = [(1, 7, 2), (1, 1, 3), (1,), (1, 9, 2), (1, 9, 3), (1, 12)]
    infos = [TensorInfo(s, ET["i32" if k == 2 else "f32"]) for k, s in enumerate(shapes)]
    attrs = SimpleNamespace(hidden_size=3, direction="forward", linear_before_reset=True)
    assert [o.shape for o in op.infer(attrs, infos)] == [(1, 1, 7, 3), (1, 1, 3)]
    attrs.linear_before_reset = False
    with pytest.raises(ShapeError, match="B's second dim is 12, expected 3 x hidden_size = 9"):
        op.infer(attrs, infos)


@pytest.mark.parametrize(("kind", "direction", "shapes", "says"), [
    ("lstm", "forward", [(2, 5, 4), (2, 1, 3), (2, 1, 3), (2,), (1, 12, 4), (1, 11, 3),
                         (1, 12)], "R's second dim"),
    ("lstm", "forward", [(2, 5, 4), (2, 1, 3), (2, 1, 4), (2,), (1, 12, 4), (1, 12, 3),
                         (1, 12)], "hidden_size"),
    ("lstm", "bidirectional", [(2, 5, 4), (2, 1, 3), (2, 1, 3), (2,), (1, 12, 4), (1, 12, 3),
                               (1, 12)], "num_directions"),
    ("gru", "forward", [(2, 5, 4), (3, 1, 3), (2,), (1, 9, 4), (1, 9, 3), (1, 9)], "batch"),
    ("gru", "forward", [(2, 5), (2, 1, 3), (2,), (1, 9, 4), (1, 9, 3), (1, 9)], "rank 3"),
    ("rnn", "forward", [(2, 5, 4), (2, 1, 3), (2,), (1, 3, 5), (1, 3, 3), (1, 3)],
     "input_size"),
])  # fmt: skip
def test_sequence_shape_rule_errors(kind, direction, shapes, says):
    """OpenVINO refuses each of these too, but W's input_size, which its shape inference
    lets through (and its kernels cannot compute)."""
    def openvino():
        states = 2 if kind == "lstm" else 1
        types = [ov.Type.i32 if k == 1 + states else ov.Type.f32 for k in range(len(shapes))]
        params = [opset1.parameter(s, t) for s, t in zip(shapes, types, strict=True)]
        _seq_node(kind, params[:1 + states], params[1 + states], params[2 + states:], 3,
                  direction, None, 0.0, False)  # fmt: skip

    if says == "input_size":
        openvino()
    else:
        with pytest.raises(RuntimeError, match="Check"):
            openvino()
    with pytest.raises(ShapeError, match=says):
        _seq_shapes(kind, direction, shapes, openvino=False)


@pytest.mark.parametrize(("kind", "version", "shapes"), [
    ("lstm", 4, [(2, 4), (2, 3), (2, 3), (12, 4), (12, 3), (12,)]),
    ("lstm", 4, [(DYN, 4), (DYN, DYN), (2, DYN), (DYN, DYN), (12, DYN), (DYN,)]),
    ("gru", 3, [(DYN, DYN), (DYN, DYN), (9, DYN), (DYN, DYN), (DYN,)]),
    ("rnn", 1, [(5, 4), (5, 3), (3, 4), (3, 3), (3,)]),
])  # fmt: skip
def test_cell_shape_rule_matches_openvino(kind, version, shapes):
    params = [opset1.parameter(ov.PartialShape(s), ov.Type.f32) for s in shapes]
    states = 2 if kind == "lstm" else 1
    node = _cell_node(kind, version, params[:1 + states], params[1 + states:], 3,
                      CELL_ACTS[kind][0], 0.0, False)  # fmt: skip
    want = [from_ov_shape(o.get_partial_shape()) for o in node.outputs()]
    infos = [TensorInfo(from_ov_shape(p.get_output_partial_shape(0)), ET["f32"]) for p in params]
    attrs = SimpleNamespace(hidden_size=3, linear_before_reset=False)
    op = resolve({"rnn": "RNNCell", "gru": "GRUCell", "lstm": "LSTMCell"}[kind],
                 f"opset{version}")  # fmt: skip
    assert [o.shape for o in op.infer(attrs, infos)] == want


def test_cell_types_must_agree():
    op = resolve("RNNCell", "opset3")
    infos = [TensorInfo((2, 4), ET["f32"]), TensorInfo((2, 3), ET["f16"])] + \
        [TensorInfo(s, ET["f32"]) for s in ((3, 4), (3, 3), (3,))]  # fmt: skip
    with pytest.raises(ShapeError, match="different element types"):
        op.infer(SimpleNamespace(hidden_size=3), infos)
    infos[1] = TensorInfo((2, 3), ET["i32"])
    with pytest.raises(ShapeError, match="does not take"):
        op.infer(SimpleNamespace(hidden_size=3), infos)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def layer_named(found, type_name):
    return [d for d in found if d.layer is not None and d.layer.type == type_name]


def test_validate_findings(tmp_path):
    rng = np.random.default_rng(1)
    x, h, c = (rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 4), (2, 1, 3),
                                                                    (2, 1, 3)))  # fmt: skip
    w, r, b = _weights(rng, "lstm", 1, 3, 4, np.float32)

    def build(p, q, s):
        return opset5.lstm_sequence(p, q, s, opset1.constant(np.array([5, 3], np.int64)),
                                    *map(opset1.constant, (w, r, b)), 3, "forward")  # fmt: skip

    model = one_op_model(build, [x, h, c], 3)
    assert layer_named(irrun.validate(saved(model, tmp_path, lambda t: t)), "LSTMSequence") == []
    # hardsigmoid passes OpenVINO's shape inference; neither its kernels nor irrun's take it
    bad = saved(model, tmp_path, lambda t: t.replace('activations="sigmoid, tanh, tanh"',
                                                     'activations="hardsigmoid, tanh, tanh"'))  # fmt: skip
    found = layer_named(irrun.validate(bad), "LSTMSequence")
    assert [d.code for d in found] == ["bad-attribute"] and "hardsigmoid" in found[0].message
    bad = saved(model, tmp_path, lambda t: t.replace('activations="sigmoid, tanh, tanh"',
                                                     'activations="sigmoid, tanh"'))  # fmt: skip
    found = layer_named(irrun.validate(bad), "LSTMSequence")
    assert [d.code for d in found] == ["bad-attribute"] and "needs 3" in found[0].message
    bad = saved(model, tmp_path, lambda t: t.replace('direction="forward"',
                                                     'direction="sideways"'))  # fmt: skip
    assert [d.code for d in layer_named(irrun.validate(bad), "LSTMSequence")] == \
        ["bad-attribute"]  # fmt: skip
    # OpenVINO computes with the states' size and ignores the attribute: a warning
    bad = saved(model, tmp_path, lambda t: t.replace('hidden_size="3"', 'hidden_size="4"'))
    found = layer_named(irrun.validate(bad), "LSTMSequence")
    assert [d.level for d in found] == ["warning"] and "hidden_size=4" in found[0].message
    # Upper-case names are read as OpenVINO reads them
    ok = saved(model, tmp_path, lambda t: t.replace('activations="sigmoid, tanh, tanh"',
                                                    'activations="Sigmoid,TANH, tanh"'))  # fmt: skip
    assert layer_named(irrun.validate(ok), "LSTMSequence") == []


def test_lstm_cell_1_weights_format_is_refused(tmp_path):
    rng = np.random.default_rng(1)
    x, h, c = (rng.standard_normal((2, n)).astype(np.float32) for n in (4, 3, 3))
    w, r, b = _weights(rng, "lstm", 0, 3, 4, np.float32)
    model = one_op_model(lambda p, q, s: opset1.lstm_cell(p, q, s, *map(opset1.constant,
                                                                        (w, r, b)), 3),
                         [x, h, c], 2)  # fmt: skip
    bad = saved(model, tmp_path, lambda t: t.replace('weights_format="fico"',
                                                     'weights_format="ifco"'))  # fmt: skip
    found = layer_named(irrun.validate(bad), "LSTMCell")
    assert [d.code for d in found] == ["bad-attribute"] and "fico" in found[0].message


# --------------------------------------------------------------------------- GatherTree


def _gather_tree_model(inputs):
    return one_op_model(lambda *p: opset1.gather_tree(*p), inputs)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float16, np.float64])
def test_gather_tree_matches_cpu(dtype, tmp_path):
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    for _ in range(8):
        steps, batch, beams = (int(v) for v in rng.integers(1, 7, 3))
        step_ids = rng.integers(0, 6, (steps, batch, beams)).astype(dtype)
        parents = rng.integers(0, beams, (steps, batch, beams)).astype(dtype)
        # The plugin leaves lengths of 0 and below unwritten (see below)
        max_len = rng.integers(1, steps + 3, batch).astype(dtype)
        end = np.array(rng.integers(0, 6), dtype)
        inputs = [step_ids, parents, max_len, end]
        model = _gather_tree_model(inputs)
        got = run_saved(model, inputs, tmp_path)[0]
        assert_close(got, run_cpu(model, inputs)[0])


def test_gather_tree_by_hand(tmp_path):
    # TensorFlow's example: 3 steps, 1 batch entry, 3 beams
    step_ids = np.array([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]]], np.int32)
    parents = np.array([[[0, 0, 0]], [[0, 1, 1]], [[2, 1, 2]]], np.int32)
    inputs = [step_ids, parents, np.array([3], np.int32), np.array(10, np.int32)]
    got = run_saved(_gather_tree_model(inputs), inputs, tmp_path)[0]
    assert got[:, 0].T.tolist() == [[2, 6, 7], [2, 5, 8], [2, 6, 9]]
    # every step after an end token is an end token
    inputs = [step_ids, parents, np.array([3], np.int32), np.array(6, np.int32)]
    got = run_saved(_gather_tree_model(inputs), inputs, tmp_path)[0]
    assert got[:, 0].T.tolist() == [[2, 6, 6], [2, 5, 8], [2, 6, 6]]
    # steps at and past max_seq_len are end tokens
    inputs = [step_ids, parents, np.array([2], np.int32), np.array(10, np.int32)]
    got = run_saved(_gather_tree_model(inputs), inputs, tmp_path)[0]
    assert got[:, 0].T.tolist() == [[1, 4, 10], [2, 5, 10], [2, 6, 10]]
    # the reference's rules where the plugin leaves memory unwritten: a length of 0 gives
    # end tokens only, a negative one the whole sequence
    inputs = [np.concatenate([step_ids] * 2, 1), np.concatenate([parents] * 2, 1),
              np.array([0, -1], np.int32), np.array(10, np.int32)]  # fmt: skip
    got = run_saved(_gather_tree_model(inputs), inputs, tmp_path)[0]
    assert (got[:, 0] == 10).all()
    assert got[:, 1].T.tolist() == [[2, 6, 7], [2, 5, 8], [2, 6, 9]]


def test_gather_tree_refuses_parents_outside_the_beams(tmp_path):
    step_ids = np.zeros((3, 1, 2), np.int32)
    parents = np.array([[[0, 0]], [[0, 2]], [[1, 0]]], np.int32)
    op = resolve("GatherTree", "opset1")
    with pytest.raises(KernelError, match="beam 2 at time step 0"):
        op.kernel(SimpleNamespace(), step_ids, parents, np.array([3], np.int32),
                  np.array(9, np.int32))  # fmt: skip
    # parents past max_seq_len are not read
    (got,) = op.kernel(SimpleNamespace(), step_ids, parents, np.array([1], np.int32),
                       np.array(9, np.int32))  # fmt: skip
    assert got[:, 0].tolist() == [[0, 0], [9, 9], [9, 9]]


@pytest.mark.parametrize(("shapes", "says"), [
    ([(3, 2, 4), (3, 2, 4), (2,), ()], None),
    ([(DYN, DYN, 4), (3, DYN, DYN), (2,), ()], None),
    ([None, None, None, None], None),
    ([(3, 2, 4), (3, 2, 5), (2,), ()], "step_ids and parent_idx"),
    ([(3, 2, 4), (3, 2, 4), (3,), ()], "batch size"),
    ([(3, 2, 4), (3, 2, 4), (2,), (1,)], "end_token"),
    ([(3, 2), (3, 2), (2,), ()], "rank 3"),
])  # fmt: skip
def test_gather_tree_shape_rule_matches_openvino(shapes, says):
    params = [opset1.parameter(ov.PartialShape(s) if s is not None else ov.PartialShape.dynamic(),
                               ov.Type.i32) for s in shapes]  # fmt: skip
    infos = [TensorInfo(from_ov_shape(p.get_output_partial_shape(0)), ET["i32"]) for p in params]
    op = resolve("GatherTree", "opset1")
    if says is None:
        want = from_ov_shape(opset1.gather_tree(*params).get_output_partial_shape(0))
        assert op.infer(SimpleNamespace(), infos)[0].shape == want
        return
    with pytest.raises(Exception, match="Check"):
        opset1.gather_tree(*params)
    with pytest.raises(ShapeError, match=says):
        op.infer(SimpleNamespace(), infos)


def test_versions_follow_the_factories():
    from support.ov_oneop import assert_versions_follow_factories

    for op_type, factory in (("GRUCell", "gru_cell"), ("LSTMCell", "lstm_cell"),
                             ("RNNSequence", "rnn_sequence"), ("GRUSequence", "gru_sequence"),
                             ("LSTMSequence", "lstm_sequence"), ("GatherTree", "gather_tree")):  # fmt: skip
        assert_versions_follow_factories(op_type, factory)
    assert re.fullmatch(r"RNNCell-v1", resolve("RNNCell", "opset3").label)


# ---------------------------------------------------------------- converted models

SEQUENCE_MODELS = Path(__file__).resolve().parents[1] / "sequence_models"
_EXPECTED = np.load(SEQUENCE_MODELS / "expected.npz")


@pytest.mark.parametrize(("name", "kind"), [
    ("keras_rnn", "Loop"), ("onnx_lstm", "LSTMSequence"), ("onnx_gru", "GRUSequence"),
    ("onnx_rnn", "RNNSequence"), ("onnx_lstm_bidirectional", "LSTMSequence"),
    ("onnx_gru_reverse", "GRUSequence"),
])  # fmt: skip
def test_converted_sequence_models(name, kind):
    """Keras's LSTM/GRU (Loops over the cells) and ONNX's LSTM, GRU and RNN (the Sequence
    ops) as OpenVINO's converters make them, against Keras's or ONNX's reference
    evaluator's outputs, or the CPU plugin's where ONNX's evaluator ignores direction,
    lengths and clip (tests/sequence_models/make_sequence_models.py).  Tolerance: the f32
    one of this file (sums of a few products in another order)."""
    xml = SEQUENCE_MODELS / f"{name}.xml"
    assert f'type="{kind}"' in xml.read_text()
    feeds = {k.split("/")[2]: _EXPECTED[k] for k in _EXPECTED.files if k.startswith(f"{name}/in/")}
    expected = [_EXPECTED[k] for k in sorted(
        (k for k in _EXPECTED.files if k.startswith(f"{name}/out/")),
        key=lambda k: int(k.rsplit("/", 1)[1]))]  # fmt: skip
    got = list(irrun.load(xml).run(feeds).values())
    assert len(got) == len(expected) > 0
    for have, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
