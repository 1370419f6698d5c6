"""The schedule's in-place chains on a transformer layer (irrun.core.passes.inplace).

A fused run must give what the observed run gives (``intermediate=True`` takes no pass:
every layer is a step of its own): values within rtol 1e-5 and atol 1e-6 of the largest
output (the fused MatMuls multiply by a transposed copy of their weights, so BLAS may sum
in another order; every other op computes the same values).  The BERT layer is also
checked against OpenVINO's CPU plugin, with attention's tolerance (1e-5 of the scale).
Each tail kind has a case where it must not be folded, or must not be a view.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset4, opset6, opset7, opset13
from support.ov_oneop import run_cpu

import irrun
from irrun.core.passes.inplace import InPlaceChain, _Activation, _Reshape, _Transpose
from irrun.core.passes.shared_input import SharedInput

HIDDEN, HEADS, FFN = 16, 2, 32


def _bert_layer(rng, batch=2, seq=8, dynamic=False):
    shape = [-1, -1, HIDDEN] if dynamic else [batch, seq, HIDDEN]
    x = opset1.parameter(shape, np.float32, name="x")
    mask = opset1.parameter([-1, 1, 1, -1] if dynamic else [batch, 1, 1, seq], np.float32,
                            name="mask")  # fmt: skip

    def linear(t, cin, cout):
        w = (rng.standard_normal((cout, cin)) / np.sqrt(cin)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        return opset1.add(opset1.matmul(t, opset1.constant(w), False, True), opset1.constant(b))

    def heads(t):
        shaped = opset1.reshape(t, opset1.constant(np.int64([0, 0, HEADS, HIDDEN // HEADS])), True)
        return opset1.transpose(shaped, opset1.constant(np.int64([0, 2, 1, 3])))

    def layer_norm(t):
        n = opset6.mvn(t, opset1.constant(np.int64([-1])), True, 1e-12, "inside_sqrt")
        gamma = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
        beta = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
        return opset1.add(opset1.multiply(n, opset1.constant(gamma)), opset1.constant(beta))

    q, k, v = (heads(linear(x, HIDDEN, HIDDEN)) for _ in range(3))
    attn = opset13.scaled_dot_product_attention(q, k, v, mask, causal=False)
    merged = opset1.reshape(opset1.transpose(attn, opset1.constant(np.int64([0, 2, 1, 3]))),
                            opset1.constant(np.int64([0, 0, HIDDEN])), True)  # fmt: skip
    h = layer_norm(opset1.add(linear(merged, HIDDEN, HIDDEN), x))
    ffn = linear(opset7.gelu(linear(h, HIDDEN, FFN), "erf"), FFN, HIDDEN)
    out = layer_norm(opset1.add(ffn, h))
    out.output(0).get_tensor().set_names({"out"})
    return ov.Model([out.output(0)], [x, mask], "bert_layer")


def _save(model, tmp_path, name="m"):
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return irrun.load(path)


def _chains(model, name):
    """The schedule's in-place chains, those run on a shared product included."""
    schedule = model._plan.schedule((model._slot_of(name),))
    found = []
    for step, _ in schedule:
        if isinstance(step.kernel, SharedInput):
            found += step.kernel.chains
        elif isinstance(step.kernel, InPlaceChain):
            found.append(step.kernel)
    return found


def _described(chains):
    return [(c.head.node.op.type, [t.node.op.type for t, _ in c.tails]) for c in chains]


def _feeds(rng, batch, seq):
    x = rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32)
    mask = np.zeros((batch, 1, 1, seq), np.float32)
    mask[..., seq * 3 // 4 :] = -10000.0
    return {"x": x, "mask": mask}


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * float(np.abs(want).max()))


def test_a_bert_layer_runs_as_eight_steps_with_the_values_of_each_layer(tmp_path):
    rng = np.random.default_rng(0)
    ov_model = _bert_layer(rng)
    model = _save(ov_model, tmp_path)
    feeds = _feeds(rng, 2, 8)
    got = model.run(feeds)["out"]
    np.testing.assert_array_equal(got, model.run(feeds, intermediate=True)["out"], strict=True)
    compiled = ov.Core().compile_model(
        ov_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
    )
    _close(got, compiled(feeds)[0])
    chains = _chains(model, "out")
    split = ("MatMul", ["Add", "Reshape", "Transpose"])
    assert _described(chains) == [
        split, split, split, ("ScaledDotProductAttention", ["Transpose", "Reshape"]),
        ("MatMul", ["Add", "Add"]), ("MVN", ["Multiply", "Add"]),
        ("MatMul", ["Add", "Gelu"]), ("MatMul", ["Add", "Add"]), ("MVN", ["Multiply", "Add"]),
    ]  # fmt: skip
    schedule = model._plan.schedule((model._slot_of("out"),))
    assert len(schedule) == 8  # the constants, Q, K and V as one product, six more chains
    (shared,) = [s.kernel for s, _ in schedule if isinstance(s.kernel, SharedInput)]
    assert shared.weight.shape == (3 * HIDDEN, HIDDEN) and shared.bias.shape == (3 * HIDDEN,)
    assert shared.columns == [(0, 16), (16, 32), (32, 48)]
    # Every Transpose is a view: of the heads read by the attention, or merged by the Reshape.
    transposes = [link for c in chains for _, link in c.tails if isinstance(link, _Transpose)]
    assert len(transposes) == 4 and all(t.view for t in transposes)
    assert all(t.perms == {4: (0, 2, 1, 3)} for t in transposes)
    reshapes = [link for c in chains for _, link in c.tails if isinstance(link, _Reshape)]
    assert sorted(s for r in reshapes for s in r.shapes.values()) == [(2, 8, 2, 8)] * 3 + [(2, 8, 16)]
    # Once more: the cached shapes and views give the same values; the inputs are unchanged.
    before = {k: v.copy() for k, v in feeds.items()}
    np.testing.assert_array_equal(model.run(feeds)["out"], got)
    for k, v in feeds.items():
        np.testing.assert_array_equal(v, before[k])


def test_the_cached_reshape_follows_each_input_shape(tmp_path):
    rng = np.random.default_rng(1)
    model = _save(_bert_layer(rng, dynamic=True), tmp_path)
    for batch, seq in ((1, 5), (3, 8), (1, 5), (2, 1)):
        feeds = _feeds(rng, batch, seq)
        got = model.run(feeds)["out"]
        assert got.shape == (batch, seq, HIDDEN)
        np.testing.assert_array_equal(got, model.run(feeds, intermediate=True)["out"], strict=True)


def _heads_model(tmp_path, order, reader, name="t", reshape_target=None):
    """x @ w + b, reshaped to heads and transposed by ``order``, then ``reader``."""
    rng = np.random.default_rng(2)
    x = opset1.parameter([2, 4, 6], np.float32, name="x")
    w = opset1.constant(rng.standard_normal((6, 6)).astype(np.float32))
    y = opset1.add(opset1.matmul(x, w, False, True), opset1.constant(np.ones(6, np.float32)))
    target = np.int64([0, 0, 2, 3] if reshape_target is None else reshape_target)
    shaped = opset1.reshape(y, opset1.constant(target), True, name="split")
    moved = opset1.transpose(shaped, opset1.constant(np.int64(order)), name="moved")
    out = reader(moved)
    out.output(0).get_tensor().set_names({"y"})
    return _save(ov.Model([out.output(0)], [x]), tmp_path, name)


def _times(t):
    n = t.get_output_partial_shape(0)[-1].get_length()
    return opset1.matmul(t, opset1.constant(np.eye(n, dtype=np.float32) * 2), False, False)


def _itself(t):
    return t


@pytest.mark.parametrize(
    ("order", "reader", "view"),
    [([0, 2, 1, 3], _times, True),
     ([0, 2, 1, 3], opset1.relu, False),  # an element-wise reader: the kernel's copy
     ([0, 2, 1, 3], opset1.sigmoid, False),  # the same, read outside the chain
     ([0, 3, 1, 2], _times, False),  # the last axis moves: the kernel's copy
     ([0, 2, 1, 3], _itself, False)],  # the model's output: contiguous, as the kernel's
)  # fmt: skip
def test_a_transpose_is_a_view_only_where_it_is_read_well(tmp_path, order, reader, view):
    model = _heads_model(tmp_path, order, reader)
    x = np.random.default_rng(3).standard_normal((2, 4, 6)).astype(np.float32)
    got = model.run({"x": x})["y"]
    _close(got, model.run({"x": x}, intermediate=True)["y"])
    (chain,) = _chains(model, "y")
    (link,) = [link for _, link in chain.tails if isinstance(link, _Transpose)]
    assert (link.perms[4] is not None) is view
    if reader is opset1.relu:  # the chain takes the ReLU, into the Transpose's copy
        assert isinstance(chain.tails[-1][1], _Activation)
        assert got.min() == 0 and got.flags.c_contiguous
    if reader is _itself:
        assert got.flags.c_contiguous


def test_a_bad_reshape_names_its_own_layer(tmp_path):
    model = _heads_model(tmp_path, [0, 2, 1, 3], opset1.relu, reshape_target=[0, 0, 2, 3])
    # A target that no longer fits: the layer is named on the first run of that shape.
    (chain,) = _chains(model, "y")
    reshape = chain.tails[1][1]
    assert isinstance(reshape, _Reshape)
    reshape.target = np.int64([0, 0, 4, 3])
    with pytest.raises(irrun.IrrunError, match=r"'split' \(Reshape-v1\)"):
        model.run({"x": np.ones((2, 4, 6), np.float32)})


def test_a_reshape_by_a_computed_shape_is_not_folded(tmp_path):
    x = opset1.parameter([2, 4, 6], np.float32, name="x")
    y = opset1.multiply(x, opset1.constant(np.float32(2)))
    target = opset1.shape_of(opset1.parameter([6, 8], np.float32, name="s"))
    out = opset1.reshape(y, target, False)
    out.output(0).get_tensor().set_names({"y"})
    model = _save(ov.Model([out.output(0)], [x, target.input_value(0).get_node()]), tmp_path)
    feeds = {"x": np.arange(48, dtype=np.float32).reshape(2, 4, 6), "s": np.zeros((6, 8), np.float32)}
    np.testing.assert_array_equal(model.run(feeds)["y"], feeds["x"].reshape(6, 8) * 2)
    assert all(not isinstance(link, _Reshape) for c in _chains(model, "y") for _, link in c.tails)


def _gelu_model(tmp_path, mode, dtype=np.float32, twice=False):
    rng = np.random.default_rng(4)
    x = opset1.parameter([3, 5], dtype, name="x")
    w = opset1.constant(rng.standard_normal((5, 7)).astype(dtype))
    y = opset1.add(opset1.matmul(x, w, False, False), opset1.constant(np.ones(7, dtype)))
    g = opset7.gelu(y, mode)
    out = opset1.add(g, y) if twice else g
    out.output(0).get_tensor().set_names({"y"})
    return _save(ov.Model([out.output(0)], [x]), tmp_path, f"g{mode}{twice}")


@pytest.mark.parametrize(
    ("mode", "dtype", "twice", "folded"),
    [("erf", np.float32, False, True), ("tanh", np.float32, False, True),
     ("erf", np.float16, False, True),  # folded, but the kernel runs (f16 adds in f32)
     ("erf", np.float32, True, False)],  # the Gelu's input is read twice: no fold
)  # fmt: skip
def test_gelu_folds_into_the_linear_layer(tmp_path, mode, dtype, twice, folded):
    model = _gelu_model(tmp_path, mode, dtype, twice)
    x = (np.random.default_rng(5).standard_normal((3, 5)) * 2).astype(dtype)
    got = model.run({"x": x})["y"]
    each = model.run({"x": x}, intermediate=True)["y"]
    if dtype == np.float16:
        np.testing.assert_allclose(got, each, rtol=2e-3, atol=2e-3 * float(np.abs(each).max()))
    else:
        _close(got, each)
    links = [link for c in _chains(model, "y") for _, link in c.tails]
    assert any(isinstance(link, _Activation) for link in links) is folded


def _expert(tmp_path):
    """An MoE's expert as Mixtral and Qwen-MoE exports have it: ``(swish(x Wg) * x Wu) Wd``
    on the rows of the tokens routed to it (none, at times)."""
    rng = np.random.default_rng(8)
    x = opset1.parameter([-1, 6], np.float32, name="x")
    weights = [opset1.constant(rng.standard_normal(s).astype(np.float32))
               for s in ((6, 10), (6, 10), (10, 6))]
    up = opset1.matmul(x, weights[1], False, False)
    gate = opset4.swish(opset1.matmul(x, weights[0], False, False))
    out = opset1.matmul(opset1.multiply(gate, up), weights[2], False, False)
    out.output(0).get_tensor().set_names({"y"})
    ov_model = ov.Model([out.output(0)], [x])
    return ov_model, _save(ov_model, tmp_path, "expert")


@pytest.mark.parametrize("rows", [0, 1, 5])
@pytest.mark.parametrize("threads", [1, 2])
def test_an_expert_that_no_token_chose_runs(tmp_path, rows, threads):
    """With no row to work on, the Swish done into its MatMul's result and the Multiply
    after it give a 0-row result (the Swish once failed there: range() with a step of 0)."""
    ov_model, model = _expert(tmp_path)
    model.threads = threads
    x = np.random.default_rng(9).standard_normal((rows, 6)).astype(np.float32)
    got = model.run({"x": x})["y"]
    (want,) = run_cpu(ov_model, [x])
    assert got.shape == want.shape == (rows, 6)
    if rows:
        _close(got, want)
    links = [type(link).__name__ for c in _chains(model, "y") for _, link in c.tails]
    assert links == ["_Activation", "_Binary"]


def _side_by_side(tmp_path, dtype=np.float32, bias_shape=None, second_input=False, keep=False,
                  dynamic=False):  # fmt: skip
    """Three linear layers; by default all on x, their results added after a Sigmoid each
    (so that the layers are not right after one another in the schedule, and the chains
    end there: a ReLU would join them, and the sums after it too)."""
    rng = np.random.default_rng(7)
    x = opset1.parameter([-1, -1] if dynamic else [3, 6], dtype, name="x")
    z = opset1.parameter([3, 6], dtype, name="z")
    outs = []
    for i, n in enumerate((4, 4, 4)):
        src = z if second_input and i == 1 else x
        w = opset1.constant(rng.standard_normal((n, 6)).astype(dtype))
        b = opset1.constant(rng.standard_normal(bias_shape or (n,)).astype(dtype))
        outs.append(opset1.add(opset1.matmul(src, w, False, True, name=f"mm{i}"), b,
                               name=f"lin{i}"))  # fmt: skip
    if keep:
        outs[1].output(0).get_tensor().set_names({"kept"})
    act = opset1.sigmoid
    total = opset1.add(opset1.add(act(outs[0]), act(outs[1])), act(outs[2]))
    total.output(0).get_tensor().set_names({"y"})
    results = [total.output(0)] + ([outs[1].output(0)] if keep else [])
    params = [x, z] if second_input else [x]
    return _save(ov.Model(results, params), tmp_path, f"side{dtype.__name__}{second_input}{keep}")


@pytest.mark.parametrize(
    ("options", "fused"),
    [({}, 3), ({"dtype": np.float64}, 3),
     ({"dtype": np.float16}, 0),  # f16 adds in f32 and rounds: each layer its own
     ({"bias_shape": (1, 4)}, 0),  # a bias that is not 1-D
     ({"second_input": True}, 2),  # x, z, x: the first and the last
     ({"keep": True}, 2)],  # the middle result is an output of the run: no view of it
)  # fmt: skip
def test_linear_layers_on_one_input_run_as_one_product(tmp_path, options, fused):
    model = _side_by_side(tmp_path, **options)
    dtype = options.get("dtype", np.float32)
    feeds = {"x": np.random.default_rng(8).standard_normal((3, 6)).astype(dtype)}
    if options.get("second_input"):
        feeds["z"] = np.ones((3, 6), dtype)
    names = ["y", "kept"] if options.get("keep") else ["y"]
    got = model.run(feeds, outputs=names)
    each = model.run(feeds, intermediate=True)
    for name in names:
        if dtype == np.float16:
            np.testing.assert_allclose(got[name], each[name], rtol=2e-3, atol=2e-2)
        else:
            _close(got[name], each[name])
    wanted = tuple(model._slot_of(n) for n in names)
    shared = [s.kernel for s, _ in model._plan.schedule(wanted) if isinstance(s.kernel, SharedInput)]
    assert sum(len(k.chains) for k in shared) == fused


def test_a_shared_product_that_fails_names_the_first_layer(tmp_path):
    model = _side_by_side(tmp_path, dynamic=True)
    assert model.run({"x": np.ones((2, 6), np.float32)})["y"].shape == (2, 4)
    with pytest.raises(irrun.IrrunError, match=r"'mm0' \(MatMul-v1\).*inner dims differ"):
        model.run({"x": np.ones((2, 5), np.float32)})


def test_a_reshape_after_a_transposed_view_is_laid_out_anew(tmp_path):
    # Adding a unit axis: NumPy would reshape the strided view as a view; the chain gives
    # the contiguous array the Transpose's own kernel would have led to.
    rng = np.random.default_rng(9)
    x = opset1.parameter([2, 4, 6], np.float32, name="x")
    w = opset1.constant(rng.standard_normal((6, 6)).astype(np.float32))
    y = opset1.add(opset1.matmul(x, w, False, True), opset1.constant(np.ones(6, np.float32)))
    shaped = opset1.reshape(y, opset1.constant(np.int64([0, 0, 2, 3])), True)
    moved = opset1.transpose(shaped, opset1.constant(np.int64([0, 2, 1, 3])))
    out = opset1.reshape(moved, opset1.constant(np.int64([0, 0, 0, 3, 1])), True)
    out.output(0).get_tensor().set_names({"y"})
    model = _save(ov.Model([out.output(0)], [x]), tmp_path, "anew")
    feeds = {"x": rng.standard_normal((2, 4, 6)).astype(np.float32)}
    got = model.run(feeds)["y"]
    assert got.shape == (2, 2, 4, 3, 1) and got.flags.c_contiguous
    _close(got, model.run(feeds, intermediate=True)["y"])
    (chain,) = _chains(model, "y")
    links = [link for _, link in chain.tails]
    assert [type(link).__name__ for link in links] == ["_Binary", "_Reshape", "_Transpose",
                                                       "_Reshape"]  # fmt: skip
    assert links[2].view and links[3].contiguous and not links[1].contiguous
