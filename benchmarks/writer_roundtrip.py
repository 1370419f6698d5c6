"""The writer's round trip over the models of the benchmark cache (benchmarks/models, made
by the make_*.py scripts beside this one), as tests/ir/test_writer.py checks the committed
ones: each model is read and written back, its .bin compared byte for byte and its records
compared, and OpenVINO's CPU plugin runs the source and the copy on irrun's random inputs,
their outputs compared bit for bit.

    CI=true python benchmarks/writer_roundtrip.py [MODEL.xml ...]
"""

from __future__ import annotations

import filecmp
import sys
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov

import irrun
from irrun.ir.reader import read_ir
from irrun.ir.weights import Weights
from irrun.ir.writer import write_ir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.ir.test_writer import records
from tests.support.bits import same_bits

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
          "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}  # fmt: skip


def openvino_outputs(core: ov.Core, xml: Path, feeds: list[np.ndarray]) -> list[np.ndarray]:
    request = core.compile_model(core.read_model(xml), "CPU", CONFIG).create_infer_request()
    request.infer(feeds)
    return [np.array(request.get_tensor(out).data) for out in request.model_outputs]


def main(paths: list[str]) -> None:
    files = [Path(p) for p in paths] or sorted((Path(__file__).parent / "models").rglob("*.xml"))
    core = ov.Core()
    counts = {"models": 0, "bin": 0, "records": 0, "run": 0, "same": 0}
    notes = []
    for xml in files:
        counts["models"] += 1
        with tempfile.TemporaryDirectory() as folder:
            copy, copy_bin = write_ir(read_ir(xml), Path(folder) / "copy.xml",
                                      Weights(xml.with_suffix(".bin")))  # fmt: skip
            counts["bin"] += filecmp.cmp(copy_bin, xml.with_suffix(".bin"), shallow=False)
            counts["records"] += records(read_ir(copy)) == records(read_ir(xml))
            try:
                model = irrun.load(xml)
                feeds = model.random_inputs(seed=0)
            except irrun.IrrunError as e:
                notes.append(f"{xml}: no random inputs: {str(e)[:100]}")
                continue
            values = [feeds[spec.name] for spec in model.inputs]
            want, got = (openvino_outputs(core, f, values) for f in (xml, copy))
            counts["run"] += 1
            same = all(same_bits(a, b, nan_payloads=True) for a, b in zip(want, got, strict=True))
            counts["same"] += same
            if not same:
                notes.append(f"{xml}: OpenVINO's outputs differ")
    print(f"models {counts['models']}; .bin byte-identical {counts['bin']}; records equal "
          f"{counts['records']}; OpenVINO ran {counts['run']}, identical outputs "
          f"{counts['same']}")  # fmt: skip
    print("\n".join(notes))


if __name__ == "__main__":
    main(sys.argv[1:])
