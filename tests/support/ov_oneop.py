"""One-op models run by irrun and by OpenVINO, for the differential tests of ops.

``run_both(build, inputs, tmp_path)`` builds ``build(*parameters)`` with OpenVINO's
Python opset API (parameters ``in0``, ``in1``, ... of the inputs' shapes and types),
saves it as IR without f16 compression, runs the saved file in irrun and the same
model in the CPU plugin (f32 precision, one thread), and returns both outputs.
``run_reference`` gives OpenVINO's reference kernels' answer (``ov.Model.evaluate``)
instead, for ops whose plugin kernels differ from the specification; ``all_three``
compares irrun with both.  ``run_irrun`` runs irrun alone, for values checked by hand.
Expected values always come from OpenVINO or from hand calculation, never from irrun.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset1

import irrun

CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
CORE = ov.Core()


def one_op_model(build, inputs: list[np.ndarray], outputs: int = 1) -> ov.Model:
    """``build(*parameters)`` as a model with inputs in0, in1, ... and outputs out0, out1, ...

    With ``outputs=1`` the single output is named "out".
    """
    params = []
    for i, x in enumerate(inputs):
        p = opset1.parameter(list(x.shape), ov.Type(x.dtype), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    node = build(*params)
    names = ["out"] if outputs == 1 else [f"out{k}" for k in range(outputs)]
    for k, name in enumerate(names):
        node.output(k).get_tensor().set_names({name})
    return ov.Model([node.output(k) for k in range(outputs)], params, "one_op")


def run_saved(model: ov.Model, inputs: list[np.ndarray], tmp_path) -> list[np.ndarray]:
    """irrun's outputs of ``model`` saved as IR, in the model's output order."""
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})
    return list(got.values())


def run_cpu(model: ov.Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    result = CORE.compile_model(model, "CPU", CPU_CONFIG)(inputs)
    return [np.asarray(result[k]) for k in range(len(model.outputs))]


def run_reference(model: ov.Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's reference kernels (``ov.Model.evaluate``); output shapes from the run."""
    outs = [ov.Tensor(o.get_element_type(), [0]) for o in model.outputs]
    # np.ascontiguousarray would make a 0-d input 1-d, which evaluate refuses.
    model.evaluate(outs, [ov.Tensor(np.array(x, copy=True, order="C")) for x in inputs])
    return [np.array(t.data, copy=True).reshape(tuple(t.shape)) for t in outs]


def evaluate_reference(model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's reference kernels (``Model.evaluate``), scalars included."""
    tensors = []
    for x in inputs:
        t = ov.Tensor(ov.Type(x.dtype), ov.Shape(list(x.shape)))
        if x.size:
            t.data[...] = x
        tensors.append(t)
    outs = [ov.Tensor(o.get_element_type(), [0]) for o in model.outputs]
    model.evaluate(outs, tensors)
    return [np.array(t.data, copy=True).reshape(tuple(t.shape)) for t in outs]


def run_irrun(build, inputs, tmp_path):
    """irrun's (first) output of the one-op model of ``build``."""
    return run_saved(one_op_model(build, inputs), inputs, tmp_path)[0]


def const(v, dtype=np.int64):
    return opset1.constant(np.array(v, dtype))


def run_both(build, inputs: list[np.ndarray], tmp_path, outputs: int = 1):
    """irrun's and the CPU plugin's output of ``build(*parameters)`` (lists when outputs > 1)."""
    model = one_op_model(build, inputs, outputs)
    got, want = run_saved(model, inputs, tmp_path), run_cpu(model, inputs)
    return (got[0], want[0]) if outputs == 1 else (got, want)


def all_three(build, inputs, tmp_path, outputs=1, reference=True):
    """irrun's outputs against the plugin's and the reference kernels'."""
    model = one_op_model(build, inputs, outputs)
    got = run_saved(model, inputs, tmp_path)
    wants = [run_cpu(model, inputs)] + ([run_reference(model, inputs)] if reference else [])
    for want in wants:
        for g, w in zip(got, want, strict=True):
            assert_close(g, w)
    return got


def assert_close(got, want, *, rtol=0.0, atol=0.0, scaled_atol=False, what=""):
    """Same shape and dtype; exact for integers or zero tolerances, else allclose.

    ``scaled_atol``: atol is relative to the largest magnitude of ``want``.
    """
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind != "f" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    if scaled_atol and want.size:
        atol = atol * float(np.max(np.abs(want)))
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
    )


def assert_versions_follow_factories(op_type: str, factory: str) -> None:
    """irrun picks, in every opset, the version whose OpenVINO factory that opset exports:
    a factory's module names the opset that introduced its version."""
    import importlib

    from irrun.ir.registry import resolve

    for n in range(1, 17):
        made = getattr(importlib.import_module(f"openvino.opset{n}"), factory, None)
        if made is None:
            try:
                resolve(op_type, f"opset{n}")
            except LookupError:
                continue
            raise AssertionError(f"{op_type} resolves in opset{n}, which has no {factory}")
        since = int(made.__module__.split(".")[-2].removeprefix("opset"))
        assert resolve(op_type, f"opset{n}").since_opset == since, (op_type, n)
