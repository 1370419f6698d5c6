"""irrun against OpenVINO's CPU plugin on torchvision CNNs, at 1 and 2 threads.

    /work/genvenv/bin/python benchmarks/make_torchvision.py   # once: the models
    python benchmarks/networks_ratio.py                       # every model found, 1 and 2 threads
    python benchmarks/networks_ratio.py --only resnet50 --threads 1 --quick

For each model in the cache folder (``benchmarks/models/``): batch 1, a seeded
1x3x224x224 input; irrun (``irrun.load(path, threads=N)``) and OpenVINO (CPU, f32,
INFERENCE_NUM_THREADS=N) timed in turn in this one process, each following the other
equally often (see benchmarks/run.py); the median milliseconds, their ratio, and the
geometric mean and maximum over the models; at 1 thread also the same of this
process's CPU time per run (both engines run on this thread: steadier on a shared
machine).  Also, per model: how far irrun's output is from OpenVINO's (max abs
difference over OpenVINO's max abs value), the peak memory a run allocates
(tracemalloc) against the weights plus twice the planned peak of tensors alive at
once, and where irrun's time goes by op type (top 5).
"""

from __future__ import annotations

import os

# Single-threaded BLAS unless irrun itself asks for more; must be set before numpy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tracemalloc  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the irrun of this checkout
sys.path.insert(0, str(HERE))
from run import _cpu_interleaved, _interleaved  # noqa: E402  (benchmarks/run.py)

import irrun  # noqa: E402
from irrun.fast import jit as fast_jit  # noqa: E402

try:
    import openvino as ov
except ImportError:  # pragma: no cover
    sys.exit("benchmarks/networks_ratio.py needs OpenVINO: pip install openvino")

DEFAULT_DIR = HERE / "models"
ORDER = ("resnet50", "densenet121", "squeezenet1_0", "regnet_y_400mf", "shufflenet_v2_x1_0",
         "efficientnet_b0", "convnext_tiny", "mobilenet_v2", "mnasnet0_5")  # fmt: skip


def _input(m) -> tuple[str, np.ndarray]:
    spec = m.inputs[0]
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    return spec.name, x


def _profile(m, feeds, runs: int = 3) -> list[tuple[str, float, int]]:
    """Seconds of irrun's kernels by op type, largest first: (type, seconds, layers).

    Each layer counts at its fastest of ``runs`` runs, so that a run interrupted by
    other work on the machine does not move time between op types."""
    best: dict[tuple[str, int], tuple[str, float]] = {}

    def on_layer(run) -> None:
        key = (run.ref.id, run.line)
        old = best.get(key)
        if old is None or run.seconds < old[1]:
            best[key] = (run.ref.type, run.seconds)

    m.run(feeds)
    for _ in range(runs):
        m.run(feeds, on_layer=on_layer)
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for kind, s in best.values():
        seconds[kind] += s
        count[kind] += 1
    return sorted(((t, s, count[t]) for t, s in seconds.items()), key=lambda r: -r[1])


def _memory(m, path: Path, feeds) -> tuple[int, int, int]:
    """(peak bytes a run allocates, planned peak of live tensors, weight bytes)."""
    m.run(feeds)
    tracemalloc.start()
    try:
        m.run(feeds)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    slots = tuple(sorted(set(m._output_slots.values())))
    shapes = {lid: a.shape for lid, a in m._check_feeds(feeds).items()}
    planned = m._plan_peak(shapes, slots, False)[0].bytes
    weights = path.with_suffix(".bin").stat().st_size
    return peak, planned, weights


def bench(path: Path, core, threads: list[int], runs: int, profile: bool) -> dict:
    result: dict = {"name": path.stem}
    compiled = {n: core.compile_model(core.read_model(path), "CPU",
                                      {"INFERENCE_NUM_THREADS": n,
                                       "INFERENCE_PRECISION_HINT": "f32"})
                for n in threads}  # fmt: skip
    models = {n: irrun.load(path, threads=n) for n in threads}
    name, x = _input(models[threads[0]])
    feeds = {name: x}
    for n in threads:
        m, request = models[n], compiled[n].create_infer_request()
        times = _interleaved({
            "irrun": lambda m=m: m.run(feeds),
            "openvino": lambda r=request: r.infer({0: x}, share_inputs=True),
        }, runs)  # fmt: skip
        result[n] = times
        if n == 1:  # both engines on this thread: its CPU time is theirs
            result["cpu"] = _cpu_interleaved({
                "irrun": lambda m=m: m.run(feeds),
                "openvino": lambda r=request: r.infer({0: x}, share_inputs=True),
            }, runs)  # fmt: skip
    m = models[threads[0]]
    want = next(iter(compiled[threads[0]]({0: x}).values()))
    got = next(iter(m.run(feeds).values()))
    result["error"] = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
    result["memory"] = _memory(m, path, feeds)
    if profile:
        result["profile"] = _profile(m, feeds)
    return result


def _geo(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the models' folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these models")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--runs", type=int, help="runs per model and thread count (default 15)")
    parser.add_argument("--quick", action="store_true", help="5 runs")
    parser.add_argument("--no-profile", action="store_true", help="skip the per-op profile")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write rows and summary")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 15)
    found = sorted(args.dir.glob("*.xml"), key=lambda p: (
        ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem))  # fmt: skip
    if args.only:
        found = [p for p in found if p.stem in args.only]
    if not found:
        sys.exit(f"no models in {args.dir}: run "
                 "/work/genvenv/bin/python benchmarks/make_torchvision.py first")  # fmt: skip
    core = ov.Core()
    engine = "with the fast engine (numba)" if fast_jit.enabled() else "NumPy only"
    print(f"irrun {irrun.__version__} ({engine}), OpenVINO {ov.get_version().split('-')[0]}, "
          f"numpy {np.__version__}; medians of {runs} interleaved runs; threads "
          f"{' '.join(map(str, args.threads))}")
    results = []
    for path in found:
        r = bench(path, core, args.threads, runs, not args.no_profile)
        results.append(r)
        cells = "  ".join(f"{n}t: {r[n]['irrun']:8.1f} / {r[n]['openvino']:7.1f} ms = "
                          f"{r[n]['irrun'] / r[n]['openvino']:5.2f}" for n in args.threads)
        if "cpu" in r:
            cells += f"  1t CPU {r['cpu']['irrun'] / r['cpu']['openvino']:5.2f}"
        peak, planned, weights = r["memory"]
        bound = weights + 2 * planned
        print(f"{r['name']:20s} {cells}  err {r['error']:.1e}  mem {peak / 2**20:6.1f} MiB "
              f"(<= {bound / 2**20:.1f}: {'ok' if peak <= bound else 'OVER'})", flush=True)
        if "profile" in r:
            total = sum(s for _, s, _ in r["profile"])
            print(f"    {1e3 * total:.1f} ms in kernels (each layer's fastest of 3 runs): "
                  + ", ".join(f"{t} {1e3 * s:.1f} ({k})" for t, s, k in r["profile"][:5]))
    print("summary:")
    summary = {}
    for n in args.threads:
        ratios = {r["name"]: r[n]["irrun"] / r[n]["openvino"] for r in results}
        worst = max(ratios, key=ratios.get)
        geo = _geo(list(ratios.values()))
        summary[n] = {"models": len(ratios), "geomean": geo, "worst": ratios[worst],
                      "worst_model": worst}  # fmt: skip
        target = f"(target <= 1.5{', none over 2.5' if n == 1 else ''})"
        print(f"  {n} thread{'s' if n > 1 else ''}: geomean irrun/OpenVINO {geo:.2f} {target}; "
              f"max {ratios[worst]:.2f} ({worst})")
        if n == 1 and all("cpu" in r for r in results):
            cpu = {r["name"]: r["cpu"]["irrun"] / r["cpu"]["openvino"] for r in results}
            worst = max(cpu, key=cpu.get)
            summary["cpu"] = {"models": len(cpu), "geomean": _geo(list(cpu.values())),
                              "worst": cpu[worst], "worst_model": worst}  # fmt: skip
            print(f"  1 thread, CPU time: geomean {summary['cpu']['geomean']:.2f}; max "
                  f"{cpu[worst]:.2f} ({worst})")
    if args.json:
        rows = [{"model": r["name"], "threads": n, "irrun_ms": r[n]["irrun"],
                 "openvino_ms": r[n]["openvino"], "ratio": r[n]["irrun"] / r[n]["openvino"],
                 "error": r["error"], "peak_mb": r["memory"][0] / 2**20,
                 **({"irrun_cpu_ms": r["cpu"]["irrun"], "openvino_cpu_ms": r["cpu"]["openvino"],
                     "cpu_ratio": r["cpu"]["irrun"] / r["cpu"]["openvino"]}
                    if n == 1 and "cpu" in r else {}),
                 "profile": [[t, 1e3 * s, k] for t, s, k in r.get("profile", [])[:5]]}
                for r in results for n in args.threads]  # fmt: skip
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "runs": runs},
                                        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
