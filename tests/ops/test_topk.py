"""TopK-1, -3 and -11 against the CPU plugin: values and indices, exact.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.arrays import dtype_of

import irrun

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset11  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG, assert_close, one_op_model  # noqa: E402


def _topk_cases():
    rng = random.Random(5)
    modules = {1: opset1, 3: opset3, 11: opset11}
    for i in range(36):
        version = (1, 3, 11)[i % 3]
        rank = rng.randint(1, 3)
        shape = [rng.randint(1, 6) for _ in range(rank)]
        axis = rng.randint(-rank, rank - 1)
        k = rng.randint(1, shape[axis])
        mode, sort = rng.choice(("max", "min")), rng.choice(("value", "index", "none"))
        stable = version == 11 and sort != "none" and rng.random() < 0.7
        dtype = rng.choice(("f32", "f32", "i32"))
        yield pytest.param(modules[version], shape, axis, k, mode, sort, stable, dtype,
                           id=f"v{version}-{shape}-{axis}-k{k}-{mode}-{sort}-{stable}-{dtype}")


@pytest.mark.parametrize(("module", "shape", "axis", "k", "mode", "sort", "stable", "dtype"),
                         list(_topk_cases()))  # fmt: skip
def test_topk_matches_cpu(module, shape, axis, k, mode, sort, stable, dtype, tmp_path):
    rng = np.random.default_rng(sum(shape) + k)
    size = int(np.prod(shape))
    # Ties only where a stable TopK fixes their order.
    x = rng.integers(0, 3, shape) if stable else rng.permutation(size).reshape(shape) - size // 2
    x = x.astype(dtype_of(dtype))
    args = [opset1.constant(np.int64(k)), axis, mode, sort, "i32"]
    if module is opset11:
        args.append(stable)
    elif module is opset1:
        args = args[:4]

    def build(p):
        node = module.topk(p, *args)
        node.output(0).get_tensor().set_names({"out"})
        node.output(1).get_tensor().set_names({"indices"})
        return node

    model = one_op_model(build, [x])
    model.add_results([opset1.result(model.get_ordered_ops()[-2].output(1))])
    cpu = CORE.compile_model(model, "CPU", CPU_CONFIG)([x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({"in0": x})
    assert_close(got["out"], cpu[0], what="values")
    assert_close(got["indices"], cpu[1].astype(np.int32), what="indices")


# --------------------------------------------------------------------------- element types
# Every data type TopK declares and every integer type of k, for each version, against
# OpenVINO's reference kernels (or, for the small floats and packed integers it has none
# for, TopK of the f32 values converted back; ties go lowest index first in both); validate
# naming the types it does not take.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.topk import K_TYPES, TOPK_TYPES  # noqa: E402

MODULES = {1: opset1, 3: opset3, 11: opset11}


def _build(version, k, mode="max"):
    module = MODULES[version]
    args = [k, 1, mode, "value"] + ([] if version == 1 else ["i32"])
    if version == 11:
        args.append(True)
    return lambda p: module.topk(p, *args)


@pytest.mark.parametrize("et", TOPK_TYPES)
@pytest.mark.parametrize("version", [1, 3, 11])
@pytest.mark.parametrize("mode", ["max", "min"])
def test_every_declared_type(et, version, mode, tmp_path):
    x = convertible(et, (3, 6), seed=version, low=-8, high=8)
    k = opset1.constant(np.int64(3))
    got, want = typed_runs(_build(version, k, mode), [x], [et], tmp_path, outputs=2)
    assert_typed_close(got, want, rtol=0)


@pytest.mark.parametrize(("version", "kt"), [(v, t) for v in (1, 3, 11) for t in K_TYPES[v]])
def test_every_k_type(kt, version, tmp_path):
    x = convertible("f32", (3, 6), seed=2)
    k = opset1.constant(np.array(2), getattr(ov.Type, kt))
    got, want = typed_runs(_build(version, k), [x], ["f32"], tmp_path, outputs=2)
    assert got[0].shape == (3, 2)
    assert_typed_close(got, want, rtol=0)


@pytest.mark.parametrize(("version", "port", "et"),
                         [(v, 0, "nf4") for v in (1, 3, 11)] + [(v, 1, "f32") for v in (1, 3, 11)]
                         + [(3, 0, "string"), (11, 1, "boolean"), (1, 1, "u8")])  # fmt: skip
def test_validate_names_a_type_it_does_not_take(port, et, version, tmp_path):
    x, k = np.zeros((2, 4), np.float32), np.array(2, np.int64)
    module = MODULES[version]

    def build(p, q):
        args = [q, 1, "max", "value"] + ([] if version == 1 else ["i32"])
        return module.topk(p, *args)

    assert_refused(build, [x, k], port, et, tmp_path, f"TopK-v{version}")
