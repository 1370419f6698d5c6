"""Time weight-compressed and f16 models with constant folding on and off, against their
f32 twin in irrun and against OpenVINO's CPU plugin, one thread each.

    python benchmarks/compressed.py              # medians of 25 interleaved runs
    python benchmarks/compressed.py --quick      # 5 runs
    python benchmarks/compressed.py --batch 1 --width 1024 --layers 8
    python benchmarks/compressed.py --int4 --batch 1 --width 4096 --layers 8   # kept compressed

The model is an MLP of ``--layers`` linear layers of ``--width`` x ``--width`` (with bias
and ReLU) on ``x`` [batch, width], in three forms with the same weights:

* int8: each weight as NNCF writes an asymmetric 8-bit one, Const(u8) -> Convert(f32) ->
  Subtract(Convert(zero point u8 [width, 1])) -> Multiply(scale f32 [width, 1]), into
  MatMul(transpose_b);
* f16: the f32 model saved with ``compress_to_fp16=True`` (Const(f16) -> Convert(f32));
* f32: the decompressed weights as f32 Consts (the twin).

irrun runs the int8 and f16 forms folded (the default: the weights decompressed once at
load) and unfolded (``fold_constants=False``: decompressed at every run), and the f32 twin.
OpenVINO runs the int8 form with ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` 0 (no dynamic
quantization of the activations: it decompresses the weights as irrun does, in f32) and
one thread.  The outputs of the folded and unfolded runs are compared: the folded weights
are bit for bit what the unfolded run computes, but a folded weight is a constant, which
irrun's MatMul pass multiplies by in an [in, out] copy, and BLAS may sum that in another
order (a few ulps at batch 1); the folded int8 model is then bit for bit its f32 twin.

``--int4`` times instead the same MLP with int4 weights as NNCF writes them group-wise
(``--group`` 128): Const(u4 [width, width / group, group]) -> Convert(f16) ->
Subtract(Convert(zero point u4 [width, width / group, 1])) -> Multiply(scale f16) ->
Reshape([width, width]) -> Convert(f32); irrun with the weights kept compressed
(``IRRUN_COMPRESSED=1``, :mod:`irrun.core.compressed`) and folded to f32
(``IRRUN_COMPRESSED=0``), OpenVINO with ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` 0; CPU time
per run (``time.process_time``: the machine may be shared), and each one's peak memory
(``VmHWM``) in a process of its own that loads the model and runs it 3 times, beside
the ``.bin``'s size.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import openvino as ov  # noqa: E402
from openvino import opset1  # noqa: E402
from run import _interleaved  # noqa: E402

import irrun  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def mlp(batch: int, width: int, layers: int, compressed: bool, seed: int = 0) -> ov.Model:
    """The MLP with u8 weights (``compressed``) or their f32 decompression as Consts."""
    rng = np.random.default_rng(seed)
    x = opset1.parameter([batch, width], np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    t = x
    for _ in range(layers):
        q = rng.integers(0, 256, (width, width), dtype=np.uint8)
        zp = rng.integers(100, 156, (width, 1), dtype=np.uint8)
        scale = (rng.uniform(0.5, 1.5, (width, 1)) / (64 * np.sqrt(width))).astype(np.float32)
        if compressed:
            w = opset1.multiply(
                opset1.subtract(
                    opset1.convert(opset1.constant(q), "f32"),
                    opset1.convert(opset1.constant(zp), "f32"),
                ),
                opset1.constant(scale),
            )  # fmt: skip
        else:  # as irrun's kernels compute the chain, so both forms hold the same weights
            w = opset1.constant((q.astype(np.float32) - zp.astype(np.float32)) * scale)
        bias = rng.uniform(-0.1, 0.1, width).astype(np.float32)
        t = opset1.relu(opset1.add(opset1.matmul(t, w, False, True), opset1.constant(bias)))
    t.output(0).get_tensor().set_names({"y"})
    return ov.Model([t.output(0)], [x], "mlp")


def _u4(values: np.ndarray):
    """A u4 Constant, packed as OpenVINO packs it (low nibble first)."""
    tensor = ov.Tensor(ov.Type.u4, ov.Shape(values.shape))
    flat = values.reshape(-1)
    tensor.data[...] = (flat[0::2] | (flat[1::2] << 4)).reshape(tensor.data.shape)
    return ov.op.Constant(tensor)


def mlp_int4(batch: int, width: int, layers: int, group: int, seed: int = 0) -> ov.Model:
    """The MLP with u4 weights, group-wise asymmetric in f16 as NNCF writes them."""
    rng = np.random.default_rng(seed)
    x = opset1.parameter([batch, width], np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    t = x
    groups = width // group
    for _ in range(layers):
        q = rng.integers(0, 16, (width, groups, group), dtype=np.uint8)
        zp = rng.integers(6, 10, (width, groups, 1), dtype=np.uint8)
        scale = rng.uniform(0.5, 1.5, (width, groups, 1)) / (4 * np.sqrt(width))
        w = opset1.multiply(
            opset1.subtract(
                opset1.convert(_u4(q), "f16"),
                opset1.convert(_u4(zp), "f16"),
            ),
            opset1.constant(scale.astype(np.float16)),
        )  # fmt: skip
        w = opset1.convert(opset1.reshape(w, opset1.constant(np.int64([width, width])), False),
                           "f32")  # fmt: skip
        bias = rng.uniform(-0.1, 0.1, width).astype(np.float32)
        t = opset1.relu(opset1.add(opset1.matmul(t, w, False, True), opset1.constant(bias)))
    t.output(0).get_tensor().set_names({"y"})
    return ov.Model([t.output(0)], [x], "mlp_int4")


def _cpu_interleaved(backends: dict, runs: int) -> dict[str, float]:
    """Median CPU milliseconds of each backend, run in turn."""
    for f in backends.values():
        f()
    samples: dict[str, list[float]] = {k: [] for k in backends}
    for _ in range(runs):
        for name, f in backends.items():
            start = time.process_time()
            f()
            samples[name].append(time.process_time() - start)
    return {k: float(np.median(v)) * 1e3 for k, v in samples.items()}


_PEAK = """
import os, sys, numpy as np
sys.path.insert(0, {root!r})
{hwm}
kind, path, compressed = sys.argv[1], sys.argv[2], sys.argv[3]
os.environ["IRRUN_COMPRESSED"] = compressed
x = {{"x": np.random.default_rng(1).standard_normal({shape}).astype(np.float32)}}
if kind == "irrun":
    import irrun
    m = irrun.load(path)
    run = lambda: m.run(x)
else:
    import openvino as ov
    c = ov.Core().compile_model(path, "CPU", {{"INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": 1, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}})
    r = c.create_infer_request()
    run = lambda: r.infer(x)
for _ in range(3):
    run()
print(_hwm())
"""


def _peak_bytes(kind: str, path: Path, compressed: str, shape: tuple[int, int]) -> int:
    import subprocess

    code = _PEAK.format(root=str(Path(__file__).resolve().parent.parent), shape=shape, hwm=_HWM)
    out = subprocess.run([sys.executable, "-c", code, kind, str(path), compressed],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return int(out.stdout.split()[-1])


# The process's peak resident memory: VmHWM, not ru_maxrss, which a child started by
# fork and exec inherits from its parent.
_HWM = """
def _hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
"""
_BASELINE = _HWM + "import numpy, openvino, irrun\nprint(_hwm())"
if os.environ.get("IRRUN_JIT") == "1":  # numba's compiler is no weight's
    _BASELINE = _BASELINE.replace("import numpy,", "import numba, numpy,")


def int4(args: argparse.Namespace, runs: int) -> int:
    """The int4 MLP: irrun compressed and folded against OpenVINO, time and peak memory."""
    import subprocess

    x = np.random.default_rng(1).standard_normal((args.batch, args.width)).astype(np.float32)
    feeds = {"x": x}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "int4.xml"
        model = mlp_int4(args.batch, args.width, args.layers, args.group)
        ov.save_model(model, path, compress_to_fp16=False)
        models = {}
        for label, env in (("irrun compressed", "1"), ("irrun folded f32", "0")):
            os.environ["IRRUN_COMPRESSED"] = env
            models[label], load_ms = _load_ms(path)
            print(f"{label}: load {load_ms:.0f} ms; {'; '.join(models[label].folding.describe())}")
        os.environ.pop("IRRUN_COMPRESSED")
        a, b = (m.run(feeds)["y"] for m in models.values())
        print("compressed and folded outputs " + ("bit-identical" if np.array_equal(a, b) else
              f"differ by at most {float(np.max(np.abs(a - b)) / np.max(np.abs(b))):.1e} of "
              "their largest"))  # fmt: skip
        compiled = ov.Core().compile_model(path, "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
        })  # fmt: skip
        request = compiled.create_infer_request()
        ref = request.infer(feeds)[compiled.output(0)]
        print(f"irrun compressed vs OpenVINO: max |diff| {float(np.max(np.abs(a - ref))):.2e}")
        backends = {name: (lambda m=m: m.run(feeds)) for name, m in models.items()}
        backends["OpenVINO"] = lambda: request.infer(feeds)
        times = _cpu_interleaved(backends, runs)
        bin_bytes = path.with_suffix(".bin").stat().st_size
        base = int(subprocess.run([sys.executable, "-c", _BASELINE], capture_output=True,
                                  text=True, check=True).stdout.split()[-1])  # fmt: skip
        peaks = {"irrun compressed": _peak_bytes("irrun", path, "1", x.shape),
                 "irrun folded f32": _peak_bytes("irrun", path, "0", x.shape),
                 "OpenVINO": _peak_bytes("openvino", path, "0", x.shape)}  # fmt: skip
    print(f"int4 MLP of {args.layers} layers {args.width}x{args.width} (group {args.group}), "
          f"batch {args.batch}, {runs} interleaved runs, 1 thread, CPU ms per run; .bin "
          f"{bin_bytes / 2**20:.1f} MiB; peak RSS of a process that imports numpy, openvino "
          f"and irrun{' and numba' if 'numba' in _BASELINE else ''}: {base / 2**20:.0f} MiB; "
          f"IRRUN_JIT={os.environ.get('IRRUN_JIT', '')!r}")  # fmt: skip
    for name, ms in times.items():
        over = peaks[name] - base
        print(f"  {name:17s} {ms:9.3f} ms  {ms / times['OpenVINO']:6.2f}x OpenVINO   peak RSS "
              f"{peaks[name] / 2**20:7.1f} MiB, {over / 2**20:7.1f} MiB over the imports "
              f"= {over / bin_bytes:5.2f}x the .bin")  # fmt: skip
    return 0


def _load_ms(path: Path, **kwargs) -> tuple[irrun.Model, float]:
    start = time.perf_counter()
    model = irrun.load(path, **kwargs)
    return model, (time.perf_counter() - start) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 25")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--int4", action="store_true", help="the int4 group-wise MLP instead")
    parser.add_argument("--group", type=int, default=128, help="int4 group size")
    args = parser.parse_args(argv)
    runs = 5 if args.quick else 25
    if args.int4:
        return int4(args, runs)
    x = np.random.default_rng(1).standard_normal((args.batch, args.width)).astype(np.float32)
    feeds = {"x": x}

    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: Path(tmp) / f"{name}.xml" for name in ("int8", "f16", "f32")}
        int8 = mlp(args.batch, args.width, args.layers, True)
        ov.save_model(int8, paths["int8"], compress_to_fp16=False)
        twin = mlp(args.batch, args.width, args.layers, False)
        ov.save_model(twin, paths["f32"], compress_to_fp16=False)
        ov.save_model(twin, paths["f16"], compress_to_fp16=True)
        models, loads = {}, {}
        for form in ("int8", "f16"):
            models[f"{form} folded"], loads[f"{form} folded"] = _load_ms(paths[form])
            models[f"{form} unfolded"], loads[f"{form} unfolded"] = _load_ms(
                paths[form], fold_constants=False)  # fmt: skip
        models["f32 twin"], loads["f32 twin"] = _load_ms(paths["f32"])
        twin_y = models["f32 twin"].run(feeds)["y"]
        for form in ("int8", "f16"):
            a = models[f"{form} folded"].run(feeds)["y"]
            b = models[f"{form} unfolded"].run(feeds)["y"]
            same = "bit-identical" if np.array_equal(a, b) else (
                f"differ by {float(np.max(np.abs(a - b)) / np.max(np.abs(b))):.1e} of their scale")
            print(f"{form}: folded and unfolded outputs {same}" + (
                f"; folded and the f32 twin's bit-identical: {np.array_equal(a, twin_y)}"
                if form == "int8" else ""))  # fmt: skip
        compiled = ov.Core().compile_model(int8, "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
        })  # fmt: skip
        request = compiled.create_infer_request()
        backends = {name: (lambda m=m: m.run(feeds)) for name, m in models.items()}
        backends["OpenVINO int8"] = lambda: request.infer(feeds)
        times = _interleaved(backends, runs)

    print(f"MLP of {args.layers} layers {args.width}x{args.width}, batch {args.batch}, {runs} "
          "interleaved runs, 1 thread each (ms per run; load in ms)")  # fmt: skip
    base = times["f32 twin"]
    for name, ms in times.items():
        load = f"   load {loads[name]:7.1f}" if name in loads else ""
        print(f"  {name:15s} {ms:8.3f}   {ms / base:5.2f}x the f32 twin{load}")
    speedup = times["int8 unfolded"] / times["int8 folded"]
    print(f"  folding speeds the int8 model up {speedup:.1f}x, the f16 one "
          f"{times['f16 unfolded'] / times['f16 folded']:.1f}x")
    corpus(runs)
    return 0


def corpus(runs: int) -> None:
    """BERT-tiny of the test corpus compressed by NNCF (int8 and int4 asymmetric), folded and
    unfolded, against ``bert``, its f32 twin (the same seed), on the corpus's inputs."""
    models, backends = {}, {}
    for name in ("bert_int8_asym", "bert_int4_asym", "bert"):
        with np.load(CORPUS / f"{name}.inputs.npz") as f:
            feeds = dict(f)
        for folded in (True, False) if name != "bert" else (True,):
            label = f"{name} {'folded' if folded else 'unfolded'}" if name != "bert" else "bert f32"
            models[label] = irrun.load(CORPUS / f"{name}.xml", fold_constants=folded)
            backends[label] = lambda m=models[label], feeds=feeds: m.run(feeds)
    times = _interleaved(backends, runs)
    print(f"corpus BERT-tiny (2 layers, hidden 32), its inputs, {runs} interleaved runs, "
          "1 thread (ms per run)")  # fmt: skip
    for name, ms in times.items():
        print(f"  {name:24s} {ms:8.3f}   {ms / times['bert f32']:5.2f}x the f32 twin")


if __name__ == "__main__":
    sys.exit(main())
