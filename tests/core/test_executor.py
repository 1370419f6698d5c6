"""The executor: plan once, run in order, drop intermediates early, compute only what is asked."""

from __future__ import annotations

import tracemalloc

import numpy as np
import openvino as ov
import openvino.opset1 as op1
import openvino.opset8 as op8
import pytest

import irrun
from irrun.core.passes.pool_chains import PoolChain
from irrun.ir.dims import format_shape


def _chain(tmp_path, n_layers: int, shape=(1, 16, 128, 128)):
    """A chain of identity max pools (kernel 1), every tensor named t0..tN."""
    p = op1.parameter(list(shape), ov.Type.f32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    node = p
    for i in range(n_layers):
        node = op1.max_pool(node, [1, 1], [0, 0], [0, 0], [1, 1], name=f"pool{i}")
        node.output(0).get_tensor().set_names({f"t{i}"})
    path = tmp_path / "chain.xml"
    ov.save_model(ov.Model([node], [p], "chain"), path)
    return path


def test_intermediates_are_released(tmp_path):
    n = 12
    model = irrun.load(_chain(tmp_path, n))
    x = np.random.default_rng(0).standard_normal((1, 16, 128, 128)).astype(np.float32)
    tensor = x.nbytes
    tracemalloc.start()
    try:
        out = model.run({"x": x})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out[f"t{n - 1}"], x)
    # Holding every intermediate would take n tensors; released early it is a few.
    assert peak < 4 * tensor, peak / tensor


def test_fused_pool_chain_peak_memory_is_within_three_tensors(tmp_path):
    # The C1 bound: max and average 3x3 s1 p1 alternating, run fused.  Counted
    # from a fresh load over two runs, so that the buffer the plan keeps is in it.
    shape = (1, 64, 56, 56)
    p = op1.parameter(list(shape), ov.Type.f32, name="x")
    node = p
    for i in range(10):
        node = (op8.max_pool(node, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3]) if i % 2 == 0 else
                op1.avg_pool(node, [1, 1], [1, 1], [1, 1], [3, 3], exclude_pad=True))
        node = node.output(0)
    path = tmp_path / "c1.xml"
    ov.save_model(ov.Model([node], [p], "c1"), path)
    model = irrun.load(path)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tracemalloc.start()
    try:
        model.run({"x": x})
        out = model.run({"x": x})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (schedule,) = model._plan._schedules.values()
    assert [type(step.kernel) for step, _ in schedule] == [PoolChain]
    # Two padded buffers during the run, then the result's buffer and the output.
    assert peak <= 3 * x.nbytes, peak / x.nbytes
    assert next(iter(out.values())).shape == shape


def test_schedule_frees_each_intermediate_after_its_last_reader(tmp_path):
    model = irrun.load(_chain(tmp_path, 5))
    plan = model._plan
    wanted = (plan.slots[(plan.lg.order[-2], 1)],)  # the last pool's output, read by Result
    schedule = plan.schedule(wanted)
    freed = [slot for _, frees in schedule for slot in frees]
    assert len(freed) == len(set(freed))
    assert wanted[0] not in freed
    for pos, (_step, frees) in enumerate(schedule):
        for slot in frees:
            readers = [i for i, (s, _) in enumerate(schedule) if slot in s.inputs]
            assert not readers or max(readers) == pos


def test_run_computes_only_what_is_asked(tmp_path, monkeypatch):
    model = irrun.load(_chain(tmp_path, 6))
    calls = []
    for step in model._plan.steps:
        kernel = step.kernel

        def spy(a, *xs, _k=kernel, _name=step.node.layer.name):
            calls.append(_name)
            return _k(a, *xs)

        object.__setattr__(step, "kernel", spy)
    model._plan._schedules.clear()
    x = np.ones((1, 16, 128, 128), np.float32)
    out = model.run({"x": x}, outputs=["t2"])
    assert list(out) == ["t2"]
    # A chain of same-size pools runs as one fused step (irrun.core.passes.pool_chains.PoolChain).
    ran = []
    for step, _ in model._plan.schedule((model._slot_of("t2"),)):
        inner = step.kernel.parts if isinstance(step.kernel, PoolChain) else [step]
        ran += [s.node.layer.name for s in inner]
    assert ran == ["pool0", "pool1", "pool2"]
    assert set(calls) <= set(ran)


def test_intermediate_tensor_and_layer_names_can_be_requested(tmp_path):
    p = op1.parameter([1, 1, 4, 4], ov.Type.f32, name="x")
    mp = op8.max_pool(p, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], name="first")
    mp.output(0).get_tensor().set_names({"first_values"})
    ap = op1.avg_pool(mp.output(0), [1, 1], [0, 0], [0, 0], [2, 2], exclude_pad=True, name="avg")
    ap.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "two.xml"
    ov.save_model(ov.Model([ap], [p]), path)
    model = irrun.load(path)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = model.run({"x": x}, outputs=["first_values", "y", "avg"])
    np.testing.assert_array_equal(out["first_values"][0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(out["y"][0, 0], [[10]])
    np.testing.assert_array_equal(out["avg"], out["y"])
    with pytest.raises(irrun.IrrunError, match="no output, tensor or layer named 'nope'"):
        model.run({"x": x}, outputs=["nope"])


def test_dynamic_input_runs_at_any_fitting_shape(tmp_path):
    p = op1.parameter(ov.PartialShape([1, 2, -1, ov.Dimension(4, 9)]), ov.Type.f32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    mp = op8.max_pool(p, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], auto_pad="same_upper",
                      name="pool")  # fmt: skip
    mp.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "dyn.xml"
    ov.save_model(ov.Model([mp.output(0)], [p]), path)
    model = irrun.load(path)
    assert format_shape(model.inputs[0].shape) == "[1,2,?,4..9]"
    x = np.arange(2 * 5 * 7, dtype=np.float32).reshape(1, 2, 5, 7)
    y = model.run({"x": x})["y"]
    # same_upper, kernel 2, stride 2: ceil(5/2) x ceil(7/2) windows, the extra pad at the end.
    assert y.shape == (1, 2, 3, 4)
    assert y[0, 0, 0, 0] == x[0, 0, 1, 1]
    assert y[0, 0, 2, 3] == x[0, 0, 4, 6]
    with pytest.raises(irrun.IrrunError, match=r"expected \[1,2,\?,4\.\.9\]"):
        model.run({"x": np.zeros((1, 2, 5, 10), np.float32)})


def test_outputs_are_plain_writable_arrays(tmp_path):
    # A Const feeding a Result is a read-only view of the memory-mapped .bin inside irrun.
    const = op1.constant(np.arange(4, dtype=np.float32).reshape(1, 1, 4), name="w")
    const.output(0).get_tensor().set_names({"w"})
    ov.save_model(ov.Model([const.output(0)], [], "c"), tmp_path / "c.xml", compress_to_fp16=False)
    out = irrun.load(tmp_path / "c.xml").run({})["w"]
    assert type(out) is np.ndarray and out.flags.writeable
    out[0, 0, 0] = 7.0
    np.testing.assert_array_equal(irrun.load(tmp_path / "c.xml").run({})["w"], [[[0, 1, 2, 3]]])


# --------------------------------------------------------------------------- passes


def _linear_model(tmp_path, x_shape, bias_shape, dtype=np.float32, name="lin"):
    """x -> MatMul(W, transpose_b) -> Add(bias) -> Relu -> MatMul(W2) -> Add(bias2)."""
    rng = np.random.default_rng(3)
    p = op1.parameter(x_shape, ov.Type(np.dtype(dtype)), name="x")
    p.output(0).get_tensor().set_names({"x"})
    w = op1.constant(rng.standard_normal((6, 8)).astype(dtype))
    mm = op1.matmul(p, w, False, True, name="mm1")
    mm.output(0).get_tensor().set_names({"mm1"})
    add = op1.add(mm, op1.constant(rng.standard_normal(bias_shape).astype(dtype)), name="add1")
    relu = op1.relu(add)
    mm2 = op1.matmul(relu, op1.constant(rng.standard_normal((6, 5)).astype(dtype)), False, False)
    out = op1.add(op1.constant(rng.standard_normal(5).astype(dtype)), mm2, name="add2")
    out.output(0).get_tensor().set_names({"y"})
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.Model([out], [p]), path, compress_to_fp16=False)
    return path


def _kernel_names(model, wanted):
    return [type(step.kernel).__name__ for step, _ in model._plan.schedule(wanted)]


@pytest.mark.parametrize(
    ("x_shape", "bias_shape", "dtype", "fused_inplace"),
    [([3, 8], [6], np.float32, True), ([2, 3, 8], [1, 1, 6], np.float64, True),
     ([3, 8], [2, 3, 6], np.float32, False),  # the bias widens the product: the Add's kernel
     ([3, 8], [6], np.float16, False)],  # f16 adds in f32 and rounds: the Add's kernel
)  # fmt: skip
def test_matmul_and_bias_run_as_one_step(tmp_path, x_shape, bias_shape, dtype, fused_inplace):
    model = irrun.load(_linear_model(tmp_path, x_shape, bias_shape, dtype))
    x = np.random.default_rng(0).standard_normal(x_shape).astype(dtype)
    got = model.run({"x": x})["y"]
    # The observed run takes no pass: every layer is a step of its own.  The products may
    # sum in another order (BLAS on the transposed copy of the weight), not the bias adds.
    each = model.run({"x": x}, intermediate=True)["y"]
    rtol = 1e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got, each, rtol=rtol, atol=rtol * float(np.abs(each).max()))
    names = _kernel_names(model, (model._slot_of("y"),))
    assert names.count("InPlaceChain") == 2 and names.count("_Constants") == 1
    assert "Const" not in [s.node.op.type for s, _ in model._plan.schedule(
        (model._slot_of("y"),)) if type(s.kernel).__name__ != "_Constants"]  # fmt: skip
    # By hand: the first product and its bias, in the file's own numbers.
    mm1 = model.run({"x": x}, outputs=["mm1"])["mm1"]
    assert mm1.shape == (*x_shape[:-1], 6)
    from types import SimpleNamespace

    from irrun.fast import fast_kernel
    from irrun.ir.registry import resolve

    adds_in_place = fast_kernel(resolve("Add", "opset1")).into
    bias = np.zeros(bias_shape, dtype)
    product = np.zeros((*x_shape[:-1], 6), dtype)
    assert adds_in_place(SimpleNamespace(auto_broadcast="numpy"), product, bias) is fused_inplace


def test_a_product_that_is_asked_for_is_not_fused(tmp_path):
    model = irrun.load(_linear_model(tmp_path, [3, 8], [6]))
    x = np.ones((3, 8), np.float32)
    out = model.run({"x": x}, outputs=["mm1", "y"])
    schedule = model._plan.schedule((model._slot_of("mm1"), model._slot_of("y")))
    heads = [step.kernel.head.node.layer.name for step, _ in schedule
             if type(step.kernel).__name__ == "InPlaceChain"]  # fmt: skip
    chains = [[p.node.layer.name for p in step.kernel.parts] for step, _ in schedule
              if type(step.kernel).__name__ == "ElementwiseChain"]  # fmt: skip
    # mm1 is asked for, so it heads no chain; its bias's Add heads one with the Relu (an
    # elementwise chain, which computes the Relu into the Add's result as the in-place
    # pass would).
    assert "mm1" not in heads and len(heads) == 1
    assert len(chains) == 1 and chains[0][0] == "add1" and len(chains[0]) == 2
    each = model.run({"x": x}, intermediate=True)
    for name in ("mm1", "y"):
        np.testing.assert_allclose(out[name], each[name], rtol=1e-6, atol=1e-6)
    assert out["mm1"].shape == (3, 6)


def test_a_fused_matmul_that_fails_names_its_own_layer(tmp_path):
    p = op1.parameter([-1, -1], ov.Type.f32, name="x")
    mm = op1.matmul(p, op1.constant(np.ones((6, 8), np.float32)), False, True, name="proj")
    out = op1.add(mm, op1.constant(np.ones(6, np.float32)), name="bias")
    path = tmp_path / "dyn.xml"
    ov.save_model(ov.Model([out], [p]), path, compress_to_fp16=False)
    model = irrun.load(path)
    with pytest.raises(irrun.IrrunError, match=r"'proj' \(MatMul-v1\).*inner dims differ"):
        model.run({"x": np.ones((2, 7), np.float32)})
    assert model.run({"x": np.ones((2, 8), np.float32)})[model.outputs[0].name].tolist() == [
        [9.0] * 6, [9.0] * 6
    ]


def test_a_linear_layer_reads_its_weight_as_it_lies(tmp_path):
    # BLAS sums a product by an [in, out] copy of the weight in another order at the edge
    # columns than by the [out, in] weight the layer reads: a uniform layer then gave
    # logits 1 ulp apart (issue 25's AlexNet). The weight is read as the file lays it out.
    model = irrun.load(_linear_model(tmp_path, [3, 8], [6]))
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    got = model.run({"x": x})["y"]
    schedule = model._plan.schedule((model._slot_of("y"),))
    heads = [s.kernel.head for s, _ in schedule if hasattr(s.kernel, "head")]
    assert [h.node.op.type for h in heads] == ["MatMul", "MatMul"]
    assert [len(h.inputs) for h in heads] == [2, 2]
    np.testing.assert_array_equal(got, model.run({"x": x}, intermediate=True)["y"], strict=True)


def test_layer_norm_and_residual_chains_fold_into_their_heads(tmp_path):
    import openvino.opset6 as op6

    from irrun.core.passes.inplace import InPlaceChain

    rng = np.random.default_rng(5)
    p = op1.parameter([2, 4, 8], ov.Type.f32, name="x")
    w = op1.constant(rng.standard_normal((8, 8)).astype(np.float32))
    mm = op1.matmul(p, w, False, True)
    res = op1.add(mm, p)  # the residual reads the input, which is ready before the product
    norm = op6.mvn(res, op1.constant(np.int64([-1])), True, 1e-5, "inside_sqrt")
    scaled = op1.multiply(op1.constant(rng.uniform(0.5, 1.5, 8).astype(np.float32)), norm)
    shifted = op1.add(scaled, op1.constant(rng.uniform(-1, 1, 8).astype(np.float32)))
    # Read twice: no chain may fold into it.
    both = op1.multiply(shifted, op1.relu(shifted))
    both.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "ln.xml"
    ov.save_model(ov.Model([both], [p]), path, compress_to_fp16=False)
    model = irrun.load(path)
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    got = model.run({"x": x})["y"]
    each = model.run({"x": x}, intermediate=True)["y"]
    np.testing.assert_allclose(got, each, rtol=1e-6, atol=1e-6)
    chains = [
        (s.kernel.head.node.op.type, [t.node.op.type for t, _ in s.kernel.tails])
        for s, _ in model._plan.schedule((model._slot_of("y"),))
        if isinstance(s.kernel, InPlaceChain)
    ]
    assert chains == [("MatMul", ["Add"]), ("MVN", ["Multiply", "Add"])]
    # The caller's input is read, never written.
    x_copy = x.copy()
    model.run({"x": x})
    np.testing.assert_array_equal(x, x_copy)
