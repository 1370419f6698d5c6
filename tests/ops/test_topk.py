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
