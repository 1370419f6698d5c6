"""Chains of elementwise ops: irrun fused (the default plan), irrun unfused (every pass but
the elementwise-chain one) and OpenVINO's CPU plugin, on one thread.

    python benchmarks/elementwise_chain.py                    # every chain and shape
    python benchmarks/elementwise_chain.py --runs 30 --only add200
    IRRUN_JIT=0 python benchmarks/elementwise_chain.py        # without the fast engine
    python benchmarks/elementwise_chain.py --models benchmarks/models/densenet121.xml ...

With ``--models``, whole models instead: irrun with the chain pass against irrun without it
(the pass's whole-network effect, same process, interleaved, seeded random inputs), and
how many chains each plan holds.

Chains: ``add200``, 200 Adds of a per-channel constant (the issue's: per-step overhead on
[1,16], memory passes on [1,64,56,56]); ``mixed50``, 50 ops cycling through Multiply, Add,
ReLU, Clamp, Subtract, Maximum, Minimum, Abs, Negative and Divide, each binary one with a
per-channel constant; ``mixed8``, the first 8 of those.  Shapes [1,16], [1,64,56,56] and
[1,128,112,112] (larger than a core's L2: where blocks pay with NumPy).

Each backend runs in turn (benchmarks/run.py's order); the figures are medians of CPU time
(``time.process_time``: every thread of the process, so OpenVINO's workers count too) and
of wall time, and the ratios irrun / OpenVINO.  Quote ``uptime`` with them: on a shared
machine the wall times move with the load, CPU times much less.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import _each_after_each  # noqa: E402  (benchmarks/run.py)

import irrun  # noqa: E402
from irrun.core.passes import fuse_elementwise_chains  # noqa: E402
from irrun.fast import jit as fast_jit  # noqa: E402

try:
    import openvino as ov
    from openvino import opset13 as ops
except ImportError:  # pragma: no cover
    sys.exit("benchmarks/elementwise_chain.py needs OpenVINO: pip install openvino")

SHAPES = ([1, 16], [1, 64, 56, 56], [1, 128, 112, 112])
CYCLE = ("Multiply", "Add", "Relu", "Clamp", "Subtract", "Maximum", "Minimum", "Abs",
         "Negative", "Divide")
CHAINS = {"add200": ("Add",) * 200, "mixed50": (CYCLE * 5)[:50], "mixed8": CYCLE[:8]}
BINARY = {"Add": ops.add, "Subtract": ops.subtract, "Multiply": ops.multiply,
          "Divide": ops.divide, "Maximum": ops.maximum, "Minimum": ops.minimum}
UNARY = {"Relu": ops.relu, "Abs": ops.abs, "Negative": ops.negative,
         "Clamp": lambda v: ops.clamp(v, -4.0, 4.0)}


def build(chain: tuple[str, ...], shape: list[int], rng: np.random.Generator) -> ov.Model:
    x = ops.parameter(shape, np.float32, name="x")
    per_channel = [1, shape[1]] + [1] * (len(shape) - 2)
    value = x
    for name in chain:
        if name in BINARY:
            c = rng.uniform(0.5, 1.5, per_channel).astype(np.float32)
            value = BINARY[name](value, ops.constant(c))
        else:
            value = UNARY[name](value)
    return ov.Model([value], [x], "chain")


def unfused(path: Path) -> irrun.Model:
    model = irrun.load(path, threads=1)
    plan = model._plan
    plan.passes = tuple(p for p in plan.passes if p is not fuse_elementwise_chains)
    return model


def timed(backends: dict, runs: int) -> dict[str, tuple[float, float]]:
    """Median (CPU ms, wall ms) of each backend, run in turn."""
    for f in backends.values():
        f()
        f()
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in backends}
    order = _each_after_each(list(backends))
    i = 0
    while any(len(v) < runs for v in samples.values()):
        name = order[i % len(order)]
        i += 1
        if len(samples[name]) < runs:
            cpu, wall = time.process_time(), time.perf_counter()
            backends[name]()
            samples[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    return {k: (statistics.median(c for c, _ in v) * 1e3, statistics.median(w for _, w in v) * 1e3)
            for k, v in samples.items()}


def whole_models(paths: list[Path], runs: int) -> None:
    engine = "with the fast engine (numba)" if fast_jit.enabled() else "NumPy only"
    load = os.getloadavg()
    print(f"irrun {irrun.__version__} ({engine}); medians of {runs} interleaved runs, one "
          f"thread; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for path in paths:
        fused, plain = irrun.load(path, threads=1), unfused(path)
        first = fused.inputs[0]
        if len(fused.inputs) == 1 and len(first.shape) == 4:  # a CNN: networks_ratio.py's input
            feeds = {first.name: np.random.default_rng(0).standard_normal(
                (1, 3, 224, 224)).astype(np.float32)}
        else:
            feeds = fused.random_inputs(0)
        wanted = tuple(fused._slot_of(o.name) for o in fused.outputs)
        chains = [s.kernel.parts for s, _ in fused._plan.schedule(wanted)
                  if type(s.kernel).__name__ == "ElementwiseChain"]
        got = timed({"fused": lambda f=fused, d=feeds: f.run(d),
                     "unfused": lambda p=plain, d=feeds: p.run(d)}, runs)
        f, u = got["fused"], got["unfused"]
        print(f"{path.stem:22s} {len(chains):3d} chains of {sum(map(len, chains)):4d} layers: "
              f"fused {f[0]:8.2f} ms, unfused {u[0]:8.2f} ms CPU = {f[0] / u[0]:5.3f} "
              f"(wall {f[1]:8.2f} / {u[1]:8.2f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(CHAINS), default=list(CHAINS))
    parser.add_argument("--runs", type=int, default=15, help="runs per case (default 15)")
    parser.add_argument("--models", nargs="+", type=Path, help="whole models: fused/unfused")
    args = parser.parse_args()
    if args.models:
        whole_models(args.models, args.runs)
        return
    engine = "with the fast engine (numba)" if fast_jit.enabled() else "NumPy only"
    load = os.getloadavg()
    print(f"irrun {irrun.__version__} ({engine}), OpenVINO {ov.get_version().split('-')[0]}, "
          f"numpy {np.__version__}; medians of {args.runs} interleaved runs, one thread; "
          f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'chain':8s} {'shape':16s} {'fused':>17s} {'unfused':>17s} {'OpenVINO':>17s}"
          f"  {'fused/OV':>8s} {'unfused/OV':>10s}   (CPU ms / wall ms)")
    core = ov.Core()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            for shape in SHAPES:
                model = build(CHAINS[name], shape, rng)
                path = Path(tmp) / f"{name}_{len(shape)}.xml"
                ov.save_model(model, path, compress_to_fp16=False)
                x = rng.standard_normal(shape).astype(np.float32)
                fused, plain = irrun.load(path, threads=1), unfused(path)
                request = core.compile_model(model, "CPU", {
                    "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
                }).create_infer_request()
                feeds = {"x": x}
                got = timed({"fused": lambda f=fused, d=feeds: f.run(d),
                             "unfused": lambda p=plain, d=feeds: p.run(d),
                             "openvino": lambda r=request, v=x: r.infer([v])}, args.runs)
                f, u, o = got["fused"], got["unfused"], got["openvino"]
                print(f"{name:8s} {shape!s:16s} {f[0]:8.3f}/{f[1]:8.3f} "
                      f"{u[0]:8.3f}/{u[1]:8.3f} {o[0]:8.3f}/{o[1]:8.3f}  "
                      f"{f[0] / o[0]:8.2f} {u[0] / o[0]:10.2f}", flush=True)


if __name__ == "__main__":
    main()
