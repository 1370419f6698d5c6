"""irrun against OpenVINO's CPU plugin on tiny transformers (issue 28's "tiny transformer
static IRs" class: the target is a median ratio <= 2, none over 4).

    CI=true /work/hfvenv/bin/python benchmarks/make_tiny_hf.py   # once: the models
    python benchmarks/tiny_transformers.py                      # every model found
    python benchmarks/tiny_transformers.py --only bert t5 --profile --json out.json

The models: the static IRs of ``benchmarks/models/tiny_hf/`` (hidden 32, 2 layers,
sequence 16, made by benchmarks/make_tiny_hf.py) and the transformers of tests/corpus
(``corpus/NAME``, the same sizes, some with dynamic shapes), each with its
``NAME.inputs.npz``.  Per model: irrun (``irrun.load(path)``) and OpenVINO (CPU, f32,
INFERENCE_NUM_THREADS=1) run in turn in this one process, each following the other
equally often; the median wall-clock and CPU milliseconds of this process per run
(the CPU time is steadier on a machine that other processes share, and it is the
ratio of CPU times that the summary takes), how far irrun's first output is from
OpenVINO's (largest difference over OpenVINO's largest value), and with ``--profile``
irrun's time by op type (each layer at its fastest of 3 runs), the layers a run runs
and its CPU time per layer.
"""

from __future__ import annotations

import os

# Single-threaded BLAS; must be set before numpy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the irrun of this checkout
sys.path.insert(0, str(HERE))
from networks_ratio import _profile  # noqa: E402
from run import _each_after_each  # noqa: E402

import irrun  # noqa: E402

try:
    import openvino as ov
except ImportError:  # pragma: no cover
    sys.exit("benchmarks/tiny_transformers.py needs OpenVINO: pip install openvino")

TINY_DIR = HERE / "models" / "tiny_hf"
CORPUS = ("bert", "roberta", "gpt2", "llama", "t5", "vit", "swin", "maxvit", "wav2vec2",
          "whisper_encoder")  # fmt: skip
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
MAKE = "CI=true /work/hfvenv/bin/python benchmarks/make_tiny_hf.py"


def models(tiny_dir: Path) -> list[tuple[str, Path]]:
    found = [(p.stem, p) for p in sorted(tiny_dir.glob("*.xml"))]
    found += [(f"corpus/{n}", ROOT / "tests" / "corpus" / f"{n}.xml") for n in CORPUS]
    return [(n, p) for n, p in found if p.with_suffix(".inputs.npz").exists()]


def timed(backends: dict, runs: int) -> dict[str, tuple[float, float]]:
    """(median wall ms, median CPU ms of this process) per backend, run in turn so that
    each follows each other one equally often, after one warm-up run each."""
    for f in backends.values():
        f()
    wall: dict[str, list[float]] = {k: [] for k in backends}
    cpu: dict[str, list[float]] = {k: [] for k in backends}
    order = _each_after_each(list(backends))
    for i in range(runs * len(order)):
        name = order[i % len(order)]
        if len(wall[name]) < runs:
            w, c = time.perf_counter(), time.process_time()
            backends[name]()
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
    return {k: (1e3 * statistics.median(wall[k]), 1e3 * statistics.median(cpu[k]))
            for k in backends}  # fmt: skip


def bench(name: str, path: Path, core, runs: int, profile: bool) -> dict:
    feeds = dict(np.load(path.with_suffix(".inputs.npz")))
    m = irrun.load(path)
    compiled = core.compile_model(core.read_model(path), "CPU", CONFIG)
    request = compiled.create_infer_request()
    ov_feeds = {k: v for k, v in feeds.items()}
    times = timed({"irrun": lambda: m.run(feeds),
                   "openvino": lambda: request.infer(ov_feeds, share_inputs=True)},
                  runs)  # fmt: skip
    (iw, ic), (ow, oc) = times["irrun"], times["openvino"]
    got = next(iter(m.run(feeds).values()))
    want = np.array(next(iter(request.infer(ov_feeds).values())))
    scale = float(np.abs(want).max()) or 1.0
    row = {"model": name, "irrun_ms": iw, "openvino_ms": ow, "ratio": iw / ow,
           "irrun_cpu_ms": ic, "openvino_cpu_ms": oc, "cpu_ratio": ic / oc if oc else None,
           "error": float(np.abs(got.astype(np.float64) - want).max()) / scale}
    if profile:
        by_type = _profile(m, feeds)
        row["kernel_ms"] = 1e3 * sum(s for _, s, _ in by_type)
        row["profiled_layers"] = sum(k for _, _, k in by_type)
        row["profile"] = [[t, 1e3 * s, k] for t, s, k in by_type[:6]]
    return row


def summary(rows: list[dict], key: str = "cpu_ratio") -> dict:
    ratios = {r["model"]: r[key] for r in rows if r.get(key)}
    if not ratios:
        return {}
    worst = max(ratios, key=ratios.get)
    return {"models": len(ratios), "key": key, "median": statistics.median(ratios.values()),
            "geomean": math.exp(sum(map(math.log, ratios.values())) / len(ratios)),
            "worst": ratios[worst], "worst_model": worst,
            "over_4": sorted(n for n, r in ratios.items() if r > 4)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=TINY_DIR, help="the tiny models' folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these models")
    parser.add_argument("--runs", type=int, help="runs per model (default 40)")
    parser.add_argument("--quick", action="store_true", help="15 runs per model")
    parser.add_argument("--profile", action="store_true", help="irrun's time by op type")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write rows and summary")
    args = parser.parse_args(argv)
    runs = args.runs or (15 if args.quick else 40)
    found = models(args.dir)
    if args.only:
        found = [(n, p) for n, p in found if n in args.only or n.split("/")[-1] in args.only]
    if not any(p.parent == args.dir for _, p in found) and not args.only:
        print(f"no models in {args.dir}: run `{MAKE}` to make them; the corpus ones only")
    core = ov.Core()
    load = os.getloadavg()
    print(f"irrun {irrun.__version__}, OpenVINO {ov.get_version().split('-')[0]}, "
          f"numpy {np.__version__}; medians of {runs} interleaved runs, 1 thread; "
          f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'model':34s} {'irrun ms':>9s} {'OV ms':>7s} {'ratio':>6s}  {'CPU ms':>15s} "
          f"{'ratio':>6s}  error")
    rows, failed = [], {}
    for name, path in found:
        try:
            r = bench(name, path, core, runs, args.profile)
        except Exception as e:
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            print(f"{name:34s} FAILED {failed[name]}", flush=True)
            continue
        rows.append(r)
        print(f"{name:34s} {r['irrun_ms']:9.2f} {r['openvino_ms']:7.2f} {r['ratio']:6.2f}  "
              f"{r['irrun_cpu_ms']:7.2f}/{r['openvino_cpu_ms']:7.2f} {r['cpu_ratio']:6.2f}  "
              f"{r['error']:.1e}", flush=True)
        if "profile" in r:
            per = 1e3 * r["irrun_cpu_ms"] / r["profiled_layers"]
            print(f"    {r['profiled_layers']} layers run, {per:.1f} us a layer; the layers' "
                  f"own times (each timed apart) {r['kernel_ms']:.2f} ms: "
                  + ", ".join(f"{t} {s:.2f} ms ({k})" for t, s, k in r["profile"]))
    s = summary(rows)
    if s:
        print(f"summary over {s['models']} models (CPU-time ratios): median {s['median']:.2f} "
              f"(target <= 2), geomean {s['geomean']:.2f}, worst {s['worst']:.2f} "
              f"({s['worst_model']}; target none over 4; over 4: {len(s['over_4'])})")
    print(f"load after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": s, "failed": failed,
                                         "runs": runs}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
