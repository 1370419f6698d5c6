"""Kernel by kernel: irrun against OpenVINO's CPU plugin on the layers that limit the CNNs.

    python benchmarks/kernels.py              # every group, one thread
    python benchmarks/kernels.py --only depthwise conv
    IRRUN_JIT=0 python benchmarks/kernels.py --only depthwise   # without the fast engine (numba)

Each case is one layer of the shapes benchmarks/networks_ratio.py's networks hold, as a
one-op IR, run by ``irrun.load(...).run`` and by the plugin (f32, one thread), interleaved
in this process (benchmarks/run.py's order); the medians, their ratio and the layer's
throughput (multiply-adds, or elements, a second).  Groups:

- ``depthwise``: 3x3, 5x5 and 7x7 depthwise convolutions (GroupConvolution), the mobile
  nets' and convnext's;
- ``conv``: ordinary 3x3 convolutions (one GEMM per tap, or the column matrix) and 1x1
  ones (one product), with NumPy's own BLAS on the same product as a ceiling;
- ``act``: ReLU, Clamp (ReLU6), Swish and Gelu on a 1x96x112x112 tensor;
- ``detection``: the post-processing of torchvision's detection models
  (benchmarks/detection.py): NonMaxSuppression-9 over 27,000 boxes of 90 classes shifted
  apart (ssdlite320's), ScatterElementsUpdate-12 of whole slices (Faster R-CNN's
  MultiScaleRoIAlign), ROIAlign-9 of 150 regions and Gather-8 of a column.

A one-op model's time holds each engine's cost per run too: OpenVINO's copies of the
input and the output and its request's overhead, irrun's checks of the feeds.  Inside a
network OpenVINO fuses each activation into the convolution before it and keeps its
blocked layout from layer to layer, which single layers cannot show: these ratios say
which kernels are slow, not what a network's ratio will be.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the irrun of this checkout
sys.path.insert(0, str(HERE))
from run import _interleaved  # noqa: E402  (benchmarks/run.py)

import irrun  # noqa: E402
from irrun.fast import jit as fast_jit  # noqa: E402

try:
    import openvino as ov
    from openvino import opset1, opset4, opset7, opset8, opset9, opset12
except ImportError:  # pragma: no cover
    sys.exit("benchmarks/kernels.py needs OpenVINO: pip install openvino")

# (channels, size, kernel, stride) of depthwise layers: mobilenet_v2, efficientnet_b0,
# mnasnet0_5 and convnext_tiny.
DEPTHWISE = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 3, 2), (192, 28, 3, 1),
             (576, 14, 3, 1), (960, 7, 3, 1), (240, 28, 5, 1), (672, 14, 5, 1), (1152, 7, 5, 1),
             (96, 56, 7, 1), (384, 14, 7, 1)]  # fmt: skip
# (in, out, size, kernel) of ordinary convolutions: resnet50, densenet121, squeezenet, the
# mobile nets' 1x1 layers.
CONV = [(64, 64, 56, 3), (128, 128, 28, 3), (256, 256, 14, 3), (128, 32, 56, 3), (16, 64, 55, 3),
        (64, 256, 56, 1), (144, 24, 56, 1), (192, 64, 28, 1), (960, 160, 7, 1)]  # fmt: skip
ACTIVATIONS = ("relu", "clamp", "swish", "gelu")


def _pair(model: ov.Model, x: np.ndarray, workdir: Path, name: str, runs: int) -> dict:
    path = workdir / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    m = irrun.load(path, threads=1)
    compiled = ov.Core().compile_model(
        model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1})
    request = compiled.create_infer_request()
    feeds = {"x": x}
    return _interleaved({"irrun": lambda: m.run(feeds), "openvino": lambda: request.infer([x])},
                        runs)  # fmt: skip


def _line(label: str, ms: dict, work: float, unit: str) -> str:
    ratio = ms["irrun"] / ms["openvino"]
    rate = work / (ms["irrun"] * 1e-3) / 1e9
    return (f"{label:34s} irrun {ms['irrun']:7.3f} ms  OpenVINO {ms['openvino']:7.3f} ms  "
            f"{ratio:5.2f}x  irrun {rate:6.1f} {unit}")  # fmt: skip


def depthwise(workdir: Path, runs: int) -> list[float]:
    ratios = []
    rng = np.random.default_rng(0)
    for c, h, k, s in DEPTHWISE:
        x = rng.standard_normal((1, c, h, h)).astype(np.float32)
        w = rng.standard_normal((c, 1, 1, k, k)).astype(np.float32)
        p = opset1.parameter([1, c, h, h], np.float32, name="x")
        y = opset1.group_convolution(p, opset1.constant(w), [s, s], [k // 2] * 2, [k // 2] * 2,
                                     [1, 1])  # fmt: skip
        ms = _pair(ov.Model([y], [p]), x, workdir, f"dw{c}_{h}_{k}_{s}", runs)
        o = (h + 2 * (k // 2) - k) // s + 1
        print(_line(f"depthwise {c}x{h}x{h} {k}x{k} s{s}", ms, c * o * o * k * k, "GMAC/s"))
        ratios.append(ms["irrun"] / ms["openvino"])
    return ratios


def conv(workdir: Path, runs: int) -> list[float]:
    ratios = []
    rng = np.random.default_rng(1)
    for ci, co, h, k in CONV:
        x = rng.standard_normal((1, ci, h, h)).astype(np.float32)
        w = rng.standard_normal((co, ci, k, k)).astype(np.float32)
        p = opset1.parameter([1, ci, h, h], np.float32, name="x")
        y = opset1.convolution(p, opset1.constant(w), [1, 1], [k // 2] * 2, [k // 2] * 2, [1, 1])
        ms = _pair(ov.Model([y], [p]), x, workdir, f"conv{ci}_{co}_{h}_{k}", runs)
        macs = ci * co * h * h * k * k
        a = w.reshape(co, ci * k * k)
        b = rng.standard_normal((ci * k * k, h * h)).astype(np.float32)
        best = float("inf")
        for _ in range(max(5, runs // 2)):  # the same product through NumPy's BLAS alone
            start = time.perf_counter()
            np.matmul(a, b)
            best = min(best, time.perf_counter() - start)
        print(_line(f"conv {ci}->{co} {h}x{h} {k}x{k}", ms, 2 * macs, "GFLOP/s")
              + f"  (BLAS alone {2 * macs / best / 1e9:5.1f})")  # fmt: skip
        ratios.append(ms["irrun"] / ms["openvino"])
    return ratios


def act(workdir: Path, runs: int) -> list[float]:
    ratios = []
    x = (np.random.default_rng(2).standard_normal((1, 96, 112, 112)) * 3).astype(np.float32)
    builders = {
        "relu": opset1.relu,
        "clamp": lambda p: opset1.clamp(p, 0.0, 6.0),
        "swish": opset4.swish,
        "gelu": lambda p: opset7.gelu(p, "erf"),
    }
    for name in ACTIVATIONS:
        p = opset1.parameter(list(x.shape), np.float32, name="x")
        ms = _pair(ov.Model([builders[name](p)], [p]), x, workdir, name, runs)
        print(_line(f"{name} 1x96x112x112", ms, x.size, "Gelem/s"))
        ratios.append(ms["irrun"] / ms["openvino"])
    return ratios


def _torchvision_boxes(n: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Boxes ``[1, n, 4]`` of ``classes`` classes in one NMS, each class shifted apart as
    torchvision's batched_nms does, and their scores ``[1, 1, n]``."""
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 300, (n, 2))
    boxes = np.concatenate([xy, np.minimum(xy + rng.uniform(4, 120, (n, 2)), 320)], axis=1)
    boxes += 321 * rng.integers(0, classes, n)[:, None]
    return boxes[None].astype(np.float32), rng.uniform(0, 1, (1, 1, n)).astype(np.float32)


def detection(workdir: Path, runs: int) -> list[float]:
    ratios = []
    rng = np.random.default_rng(4)
    boxes, scores = _torchvision_boxes(27000, 90)
    p = opset1.parameter(list(boxes.shape), np.float32, name="x")
    y = opset9.non_max_suppression(
        p, opset1.constant(scores), max_output_boxes_per_class=opset1.constant(np.int64(2**31 - 1)),
        iou_threshold=opset1.constant(np.float32(0.55)),
        score_threshold=opset1.constant(np.float32(0.001)), box_encoding="corner",
        sort_result_descending=False, output_type="i64")
    ms = _pair(ov.Model([y.output(0)], [p]), boxes, workdir, "nms", runs)
    print(_line("NMS-9 27000 boxes, 90 classes", ms, boxes.shape[1], "Gbox/s"))
    ratios.append(ms["irrun"] / ms["openvino"])

    data = np.zeros((1000, 256, 7, 7), np.float32)
    rows = rng.permutation(1000)[:997]
    idx = np.broadcast_to(rows[:, None, None, None], (997, 256, 7, 7)).astype(np.int32)
    upd = rng.standard_normal((997, 256, 7, 7)).astype(np.float32)
    p = opset1.parameter(list(data.shape), np.float32, name="x")
    y = opset12.scatter_elements_update(p, opset1.constant(idx), opset1.constant(upd),
                                        opset1.constant(np.int64(0)), "none")  # fmt: skip
    ms = _pair(ov.Model([y], [p]), data, workdir, "scatter", runs)
    print(_line("ScatterElementsUpdate 997 slices", ms, upd.size, "Gelem/s"))
    ratios.append(ms["irrun"] / ms["openvino"])

    x = rng.standard_normal((1, 256, 20, 20)).astype(np.float32)
    xy = rng.uniform(0, 300, (150, 2))
    rois = np.concatenate([xy, xy + rng.uniform(1, 100, (150, 2))], axis=1).astype(np.float32)
    p = opset1.parameter(list(x.shape), np.float32, name="x")
    y = opset9.roi_align(p, opset1.constant(rois), opset1.constant(np.zeros(150, np.int64)),
                         7, 7, 2, 1 / 16, "avg", "asymmetric")  # fmt: skip
    ms = _pair(ov.Model([y], [p]), x, workdir, "roi_align", runs)
    print(_line("ROIAlign 150 regions 256x7x7", ms, 150 * 256 * 49 * 4, "Gsample/s"))
    ratios.append(ms["irrun"] / ms["openvino"])

    x = rng.standard_normal((3234, 91)).astype(np.float32)
    p = opset1.parameter(list(x.shape), np.float32, name="x")
    y = opset8.gather(p, opset1.constant(np.int64(5)), opset1.constant(np.int64(1)))
    ms = _pair(ov.Model([y], [p]), x, workdir, "gather", runs)
    print(_line("Gather a column of 3234x91", ms, 3234, "Gelem/s"))
    ratios.append(ms["irrun"] / ms["openvino"])
    return ratios


GROUPS = {"depthwise": depthwise, "conv": conv, "act": act, "detection": detection}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    parser.add_argument("--runs", type=int, default=15, help="runs per case (default 15)")
    args = parser.parse_args()
    jit = " with the fast engine (numba)" if fast_jit.enabled() else " (NumPy only)"
    print(f"irrun {irrun.__version__}{jit}, OpenVINO {ov.__version__}, numpy {np.__version__}; "
          f"medians of {args.runs} interleaved runs, one thread")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            ratios = GROUPS[name](Path(tmp), args.runs)
            gm = float(np.exp(np.mean(np.log(ratios))))
            print(f"  {name}: geomean irrun/OpenVINO {gm:.2f}\n")


if __name__ == "__main__":
    main()
