"""irrun against OpenVINO's CPU plugin on torchvision detection models, post-processing
included (issue 28's "detection post-processing" class).

    CI=true /work/genvenv/bin/python benchmarks/make_detection.py   # once: the models
    python benchmarks/detection.py                                  # every model found
    python benchmarks/detection.py --only ssdlite320 --runs 5 --profile

For each model of ``benchmarks/models/detection/``: its example image (the ``.npy``
beside the ``.xml``), irrun (``irrun.load(path, threads=N)``) and OpenVINO (CPU, f32,
INFERENCE_NUM_THREADS=N) timed in turn in this one process, each following the other
equally often (see benchmarks/run.py); the median milliseconds and their ratio (the
target is <= 3 at 1 thread), and at 1 thread the same of this process's CPU time per
run (all its threads: steadier on a machine other processes share).  Then how far
irrun's outputs are from OpenVINO's: per output, the rows each gives and, where they
give as many, the largest difference over OpenVINO's largest value, rows sorted alike
first (randomly initialised, ssdlite320 scores every box 1/91: which 300 of its
equal-scored boxes an engine keeps depends on how it orders ties, so only its scores
agree); with ``--profile``, where irrun's time
goes by op type (each layer at its fastest of 3 runs), the share of the sub-graph layers
(If, Loop), whose bodies hold the post-processing, and the Python functions that take
most of a run (cProfile, which sees inside the bodies).
"""

from __future__ import annotations

import os

# Single-threaded BLAS unless irrun itself asks for more; must be set before numpy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
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
    sys.exit("benchmarks/detection.py needs OpenVINO: pip install openvino")

DEFAULT_DIR = HERE / "models" / "detection"
ORDER = ("ssdlite320", "fasterrcnn_mobilenet_320", "maskrcnn")
SUBGRAPHS = ("If", "Loop", "TensorIterator")


def _profile(m, feeds, runs: int = 3) -> list[tuple[str, float, int]]:
    """Seconds of irrun's kernels by op type, largest first: (type, seconds, layers),
    each layer at its fastest of ``runs`` runs."""
    best: dict[tuple[str, int], tuple[str, float]] = {}

    def on_layer(run) -> None:
        key = (run.ref.id, run.line)
        old = best.get(key)
        if old is None or run.seconds < old[1]:
            best[key] = (run.ref.type, run.seconds)

    for _ in range(runs):
        m.run(feeds, on_layer=on_layer)
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for kind, s in best.values():
        seconds[kind] += s
        count[kind] += 1
    return sorted(((t, s, count[t]) for t, s in seconds.items()), key=lambda r: -r[1])


def _functions(m, feeds, top: int = 8) -> str:
    """The ``top`` Python functions by own time in one run (cProfile)."""
    profiler = cProfile.Profile()
    profiler.runcall(m.run, feeds)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    rows = []
    for (file, line, name), (_, calls, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
        rows.append((own, f"{where}({name}) {1e3 * own:.0f} ms/{calls}"))
    rows.sort(reverse=True)
    return ", ".join(text for _, text in rows[:top])


def _agreement(got: list[np.ndarray], want: list[np.ndarray]) -> str:
    """Per output, its shape and largest difference over OpenVINO's largest value, with
    the detections (rows) of both put in one order first: by score, label and box, so
    that two engines listing boxes of equal score in another order still agree."""
    got, want = _canonical(got), _canonical(want)
    cells = []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            cells.append(f"out{i} {list(g.shape)} vs {list(w.shape)}")
            continue
        scale = float(np.abs(w).max()) if w.size else 0.0
        diff = float(np.abs(g.astype(np.float64) - w).max()) if w.size else 0.0
        cells.append(f"out{i} {list(w.shape)} {diff / scale if scale else diff:.1e}")
    return ", ".join(cells)


def _canonical(outputs: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs with their rows sorted by the values of the small ones (boxes, scores,
    labels; not masks), where all have as many rows."""
    rows = {len(o) for o in outputs if o.ndim}
    if len(rows) != 1:
        return outputs
    keys = [o.reshape(len(o), -1).astype(np.float64) for o in outputs if o.ndim and o[0].size <= 4]
    order = np.lexsort(np.concatenate(keys, axis=1).T[::-1])
    return [o[order] for o in outputs]


def bench(path: Path, core, threads: int, runs: int, profile: bool) -> dict:
    compiled = core.compile_model(core.read_model(path), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads,
                                   "INFERENCE_PRECISION_HINT": "f32"})  # fmt: skip
    request = compiled.create_infer_request()
    m = irrun.load(path, threads=threads)
    x = np.load(path.with_suffix(".npy"))
    feeds = {m.inputs[0].name: x}
    times = _interleaved({
        "irrun": lambda: m.run(feeds),
        "openvino": lambda: request.infer({0: x}, share_inputs=True),
    }, runs)  # fmt: skip
    result: dict = {"name": path.stem, "times": times}
    if threads == 1:
        result["cpu"] = _cpu_interleaved({
            "irrun": lambda: m.run(feeds),
            "openvino": lambda: request.infer({0: x}, share_inputs=True),
        }, runs)  # fmt: skip
    want = [np.array(v) for v in request.infer({0: x}).values()]
    got = list(m.run(feeds).values())
    result["agreement"] = _agreement(got, want)
    if profile:
        result["profile"] = _profile(m, feeds)
        result["functions"] = _functions(m, feeds)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the models' folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these models")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=11, help="runs per model (default 11)")
    parser.add_argument("--profile", action="store_true", help="where irrun's time goes")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write rows and summary")
    args = parser.parse_args(argv)
    found = sorted(args.dir.glob("*.xml"), key=lambda p: (
        ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem))  # fmt: skip
    if args.only:
        found = [p for p in found if p.stem in args.only]
    if not found:
        sys.exit(f"no models in {args.dir}: run "
                 "CI=true /work/genvenv/bin/python benchmarks/make_detection.py first")  # fmt: skip
    core = ov.Core()
    load = os.getloadavg()
    engine = "with the fast engine (numba)" if fast_jit.enabled() else "NumPy only"
    print(f"irrun {irrun.__version__} ({engine}), OpenVINO {ov.get_version().split('-')[0]}, "
          f"numpy {np.__version__}; medians of {args.runs} interleaved runs; "
          f"{args.threads} thread(s); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    rows = []
    for path in found:
        r = bench(path, core, args.threads, args.runs, args.profile)
        rows.append(r)
        t = r["times"]
        cpu = r.get("cpu")
        cpu_text = "" if cpu is None else (
            f";  CPU {cpu['irrun']:.1f} / {cpu['openvino']:.1f} ms = "
            f"{cpu['irrun'] / cpu['openvino']:.2f}")  # fmt: skip
        print(f"{r['name']:26s} {t['irrun']:8.1f} / {t['openvino']:7.1f} ms = "
              f"{t['irrun'] / t['openvino']:5.2f}  (target <= 3){cpu_text}", flush=True)
        print(f"    outputs vs OpenVINO: {r['agreement']}")
        if "profile" in r:
            total = sum(s for _, s, _ in r["profile"])
            bodies = sum(s for t, s, _ in r["profile"] if t.split("-")[0] in SUBGRAPHS)
            print(f"    {1e3 * total:.1f} ms in layers, {100 * bodies / total:.0f}% in If/Loop "
                  "layers: " + ", ".join(f"{t} {1e3 * s:.1f} ({k})"
                                         for t, s, k in r["profile"][:6]))  # fmt: skip
            print(f"    functions: {r['functions']}")
    print(f"load after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        out = []
        for r in rows:
            t, cpu = r["times"], r.get("cpu", {})
            out.append({"model": r["name"], "threads": args.threads, "irrun_ms": t["irrun"],
                        "openvino_ms": t["openvino"], "ratio": t["irrun"] / t["openvino"],
                        "irrun_cpu_ms": cpu.get("irrun"), "openvino_cpu_ms": cpu.get("openvino"),
                        "cpu_ratio": cpu["irrun"] / cpu["openvino"] if cpu else None,
                        "agreement": r["agreement"],
                        "profile": [[k, 1e3 * s, n] for k, s, n in r.get("profile", [])[:6]]})
        key = "cpu_ratio" if all(r["cpu_ratio"] for r in out) else "ratio"
        worst = max(out, key=lambda r: r[key], default=None)
        summary = {} if worst is None else {"models": len(out), "key": key,
                                            "worst": worst[key], "worst_model": worst["model"]}
        args.json.write_text(json.dumps({"rows": out, "summary": summary, "runs": args.runs},
                                        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
