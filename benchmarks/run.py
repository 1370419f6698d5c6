"""Time irrun against OpenVINO's CPU plugin and PyTorch on the pooling workloads.

    python benchmarks/run.py                 # medians of 25 interleaved runs each
    python benchmarks/run.py --quick         # 5 runs, for a smoke check
    python benchmarks/run.py --only W1 W8    # some workloads (W1..W9, C1, R18, L1)
    python benchmarks/run.py --threads 2     # every backend on 2 threads

Everything runs in this one process on one thread (OpenVINO with
INFERENCE_NUM_THREADS=1, torch.set_num_threads(1), BLAS threads 1), or on the
``--threads N`` given to each (irrun.load(threads=N), INFERENCE_NUM_THREADS=N,
torch.set_num_threads(N)), and the backends are interleaved run by run, each
following each other one equally often, so that machine noise and what one
backend leaves behind (a cold cache, a CPU that has been busy) hit all alike.
OpenVINO and PyTorch are each timed when installed.  Ratios below 1 mean
irrun is faster.  Every workload's irrun outputs are also compared with
OpenVINO's bit for bit (the "exact" column), and the issue's targets are
checked at the end.  At one thread, each workload is also timed by this process's CPU
time (the ratios ``--json`` writes as ``cpu_ratio``: steadier than the clock on a
shared machine).
"""

from __future__ import annotations

import argparse
import os
import sys


def _threads_arg(argv: list[str]) -> int:
    """The --threads N given, read before NumPy is imported (its BLAS reads the environment)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--threads", type=int, default=1)
    return max(1, parser.parse_known_args(argv)[0].threads)


# BLAS on the threads asked for everywhere (one by default); set before numpy is imported.
# Imported (by the tests), the script runs on one thread.
_THREADS = _threads_arg(sys.argv[1:]) if __name__ == "__main__" else 1
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, str(_THREADS))

import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# The irrun of this checkout, not whichever one is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import irrun  # noqa: E402

try:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset8 as op8
    import openvino.opset14 as op14
    from networks import resnet18  # benchmarks/networks.py, beside this script
except ImportError:  # pragma: no cover - the benchmark needs OpenVINO to build its models
    sys.exit("benchmarks/run.py needs OpenVINO to build its models: pip install openvino")

try:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(_THREADS)
except ImportError:
    torch = None


CPU_CONFIG = {"INFERENCE_NUM_THREADS": _THREADS, "INFERENCE_PRECISION_HINT": "f32"}


@dataclass
class Workload:
    id: str
    title: str
    shape: tuple[int, ...]
    build: Callable  # param -> list of ov outputs
    torch_fn: Callable | None  # tensor -> result
    exact: bool = True  # pooling is bit-exact; convolutions sum in another order


def _max(x, k, s, p=0, rounding="floor", version=8, indices=False):
    n = len(k)
    mod = op14 if version == 14 else op8
    node = mod.max_pool(x, [s] * n, [1] * n, [p] * n, [p] * n, list(k), rounding_type=rounding,
                        index_element_type="i64")
    return [node.output(0), node.output(1)] if indices else [node.output(0)]


def _avg(x, k, s, p=0, exclude_pad=True):
    n = len(k)
    node = op1.avg_pool(x, [s] * n, [p] * n, [p] * n, list(k), exclude_pad=exclude_pad)
    return [node.output(0)]


def _chain(x, layers=50):
    node = x
    for i in range(layers):
        node = (_max(node, (3, 3), 1, 1) if i % 2 == 0 else _avg(node, (3, 3), 1, 1))[0]
    return [node]


def _torch_chain(t, layers=50):
    for i in range(layers):
        t = (F.max_pool2d(t, 3, 1, 1) if i % 2 == 0
             else F.avg_pool2d(t, 3, 1, 1, count_include_pad=False))
    return t


WORKLOADS = [
    Workload("W1", "MaxPool 3x3 s2 p1, 1x64x112x112", (1, 64, 112, 112),
             lambda x: _max(x, (3, 3), 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1)),
    Workload("W2", "MaxPool 2x2 s2, 1x64x224x224", (1, 64, 224, 224),
             lambda x: _max(x, (2, 2), 2), lambda t: F.max_pool2d(t, 2, 2)),
    Workload("W3", "MaxPool 3x3 s2 ceil_torch, 1x96x109x109", (1, 96, 109, 109),
             lambda x: _max(x, (3, 3), 2, rounding="ceil_torch", version=14),
             lambda t: F.max_pool2d(t, 3, 2, ceil_mode=True)),
    Workload("W4", "AvgPool 3x3 s1 p1 exclude-pad, 1x192x28x28", (1, 192, 28, 28),
             lambda x: _avg(x, (3, 3), 1, 1),
             lambda t: F.avg_pool2d(t, 3, 1, 1, count_include_pad=False)),
    Workload("W5", "AvgPool 7x7 (global), 1x2048x7x7", (1, 2048, 7, 7),
             lambda x: _avg(x, (7, 7), 1), lambda t: F.avg_pool2d(t, 7)),
    Workload("W6", "AdaptiveAvgPool 13x13 -> 7x7, 1x512x13x13", (1, 512, 13, 13),
             lambda x: [op8.adaptive_avg_pool(x, op1.constant(np.array([7, 7], np.int64)))
                        .output(0)],
             lambda t: F.adaptive_avg_pool2d(t, 7)),
    Workload("W7", "MaxPool 2x2x2 s2 (5D), 1x32x32x64x64", (1, 32, 32, 64, 64),
             lambda x: _max(x, (2, 2, 2), 2), lambda t: F.max_pool3d(t, 2, 2)),
    Workload("W8", "MaxPool-8 with indices, 1x64x112x112", (1, 64, 112, 112),
             lambda x: _max(x, (3, 3), 2, 1, indices=True),
             lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True)),
    Workload("W9", "MaxPool 3x3 s2 p1, 32x64x56x56", (32, 64, 56, 56),
             lambda x: _max(x, (3, 3), 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1)),
    Workload("C1", "50 pools (Max/Avg 3x3 s1 p1), 1x64x56x56", (1, 64, 56, 56),
             _chain, _torch_chain),
    Workload("R18", "ResNet-18, 1x3x224x224", (1, 3, 224, 224),
             lambda x: [resnet18(x.output(0))], None, exact=False),
]


def _model(w: Workload, directory: Path):
    p = op1.parameter(list(w.shape), ov.Type.f32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    outs = w.build(p)
    for i, o in enumerate(outs):
        o.get_tensor().set_names({f"y{i}"})
    model = ov.Model(outs, [p], w.id)
    path = directory / f"{w.id}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return model, path


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def _mismatches(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> int:
    """Elements where irrun and OpenVINO differ in their bits (NaN equals NaN)."""
    bad = 0
    for name, w in want.items():
        g = got[name]
        if g.shape != w.shape or g.dtype != w.dtype:
            return -1
        same = g.view(f"u{g.dtype.itemsize}") == w.view(f"u{w.dtype.itemsize}")
        if g.dtype.kind == "f":
            same |= np.isnan(g) & np.isnan(w)
        bad += int((~same).sum())
    return bad


def _interleaved(backends: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median milliseconds of each backend, run in turn so that noise hits all alike."""
    for f in backends.values():  # warm up caches and lazy initialisation
        f()
    samples: dict[str, list[float]] = {k: [] for k in backends}
    order = _each_after_each(list(backends))
    i = 0
    while any(len(v) < runs for v in samples.values()):
        name = order[i % len(order)]
        i += 1
        if len(samples[name]) < runs:
            start = time.perf_counter()
            backends[name]()
            samples[name].append(time.perf_counter() - start)
    return {k: _median_ms(v) for k, v in samples.items()}


def _cpu_interleaved(backends: dict, runs: int) -> dict[str, float]:
    """Median CPU milliseconds of this process per run of each backend, in the same order
    as :func:`_interleaved`, without its warm-up (at one thread both engines run on this
    thread: the CPU time is theirs alone, which other processes on the machine disturb
    less than the clock)."""
    samples: dict[str, list[float]] = {k: [] for k in backends}
    order = _each_after_each(list(backends))
    for i in range(runs * len(order)):
        name = order[i % len(order)]
        if len(samples[name]) < runs:
            start = time.process_time()
            backends[name]()
            samples[name].append(time.process_time() - start)
    return {k: _median_ms(v) for k, v in samples.items()}


def _each_after_each(names: list[str]) -> list[str]:
    """A cycle of runs in which each backend follows each other one exactly once.

    What one backend leaves behind (a cold cache; a CPU that has been busy for the
    150 ms of torch's C1) slows the one after it, so each must come after each other
    one as often: an Euler circuit through every ordered pair.  Taking each backend
    first in turn would not do: ``a b c, b c a, c a b`` puts c before a twice as often
    as b before a.

    >>> _each_after_each(["irrun", "openvino", "torch"])
    ['irrun', 'openvino', 'irrun', 'torch', 'openvino', 'torch']
    """
    if len(names) < 2:
        return list(names)
    after = {a: [b for b in reversed(names) if b != a] for a in names}
    path, circuit = [names[0]], []
    while path:  # Hierholzer's walk: follow unused pairs, back up where none is left
        if after[path[-1]]:
            path.append(after[path[-1]].pop())
        else:
            circuit.append(path.pop())
    return circuit[::-1][:-1]  # it ends where it began


def bench_workload(w: Workload, core, directory: Path, runs: int) -> dict:
    model, path = _model(w, directory)
    x = np.random.default_rng(0).standard_normal(w.shape).astype(np.float32)
    m = irrun.load(path, threads=_THREADS)
    compiled = core.compile_model(model, "CPU", CPU_CONFIG)
    request = compiled.create_infer_request()
    backends: dict[str, Callable[[], object]] = {
        "irrun": lambda: m.run({"x": x}),
        "openvino": lambda: request.infer({0: x}, share_inputs=True),
    }
    if torch is not None and w.torch_fn is not None:
        t = torch.from_numpy(x)
        fn = w.torch_fn

        def run_torch():
            with torch.inference_mode():
                return fn(t)

        backends["torch"] = run_torch
    result = _interleaved(backends, runs)
    if _THREADS == 1:  # both engines on this thread: its CPU time is theirs (for --json)
        result["cpu"] = _cpu_interleaved({k: backends[k] for k in ("irrun", "openvino")}, runs)
    want = {next(iter(o.get_names())): v for o, v in compiled(x).items()}
    got = m.run({"x": x})
    if w.exact:
        result["mismatches"] = _mismatches(got, want)
    else:
        result["rel_error"] = max(
            float(np.abs(got[k] - v).max() / np.abs(v).max()) for k, v in want.items()
        )
    return result


def bench_load(core, directory: Path, runs: int, layers: int = 500) -> dict:
    """L1: a 500-layer IR from file to ready-to-run (OpenVINO: read_model + compile_model)."""
    p = op1.parameter([1, 8, 16, 16], ov.Type.f32, name="x")
    node = p
    for i in range(layers - 2):
        node = (_max(node, (3, 3), 1, 1) if i % 2 == 0 else _avg(node, (3, 3), 1, 1))[0]
    path = directory / "L1.xml"
    ov.save_model(ov.Model([node], [p], "L1"), path)
    return _interleaved({
        "irrun": lambda: irrun.load(path),
        "openvino": lambda: core.compile_model(core.read_model(path), "CPU", CPU_CONFIG),
    }, runs)  # fmt: skip


def peak_memory_c1(directory: Path) -> tuple[int, int]:
    """Peak bytes allocated while irrun runs C1, and the largest tensor's bytes.

    Counted from the first run of a freshly loaded model, over two runs, so that
    what the plans keep between runs (a buffer of the fused chain) is in the peak.
    The input, allocated by the caller before the run, is not.
    """
    w = next(w for w in WORKLOADS if w.id == "C1")
    _, path = _model(w, directory)
    m = irrun.load(path)
    x = np.random.default_rng(0).standard_normal(w.shape).astype(np.float32)
    tracemalloc.start()
    try:
        m.run({"x": x})
        m.run({"x": x})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, x.nbytes  # every tensor of C1 has the input's shape


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "-"


def _targets(results: dict[str, dict], memory: tuple[int, int] | None) -> list[str]:
    """The issue's targets, each with the numbers that decide it."""
    lines = []

    def check(ok: bool, text: str) -> None:
        lines.append(f"  [{'met' if ok else 'NOT met'}] {text}")

    ws = [k for k in results if k.startswith("W")]
    ratios = {k: results[k]["irrun"] / results[k]["openvino"] for k in ws}
    if ratios:
        worst = max(ratios, key=ratios.get)
        check(ratios[worst] <= 2.5, f"irrun/OpenVINO <= 2.5 on each W: worst {worst} "
              f"{ratios[worst]:.2f}")  # fmt: skip
    if len(ratios) == 9:
        geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        check(geo <= 0.75, f"geometric mean irrun/OpenVINO over W1-W9 <= 0.75: {geo:.2f}")
    maxpools = [k for k in ("W1", "W2", "W3", "W7", "W8", "W9") if k in results]
    if torch is not None and maxpools:
        slow = [k for k in maxpools if results[k]["irrun"] >= results[k]["torch"]]
        worst = max(maxpools, key=lambda k: results[k]["irrun"] / results[k]["torch"])
        check(not slow, f"faster than PyTorch on every max pool: worst {worst} "
              f"{results[worst]['irrun'] / results[worst]['torch']:.2f}")  # fmt: skip
    if "W8" in results:
        speedup = results["W8"]["openvino"] / results["W8"]["irrun"]
        check(speedup >= 10, f"W8 at least 10x faster than OpenVINO: {speedup:.0f}x")
    if "C1" in results:
        r = results["C1"]["irrun"] / results["C1"]["openvino"]
        check(r <= 2.5, f"C1 at most 2.5x OpenVINO: {r:.2f}")
    if "R18" in results:
        r = results["R18"]["irrun"] / results["R18"]["openvino"]
        check(r <= 3, f"ResNet-18 within 3x of OpenVINO: {r:.2f}")
    if "L1" in results:
        speedup = results["L1"]["openvino"] / results["L1"]["irrun"]
        check(speedup >= 10, f"L1 at least 10x faster than OpenVINO: {speedup:.1f}x")
    if memory is not None:
        peak, largest = memory
        check(peak <= 3 * largest, f"C1 peak memory at most 3x the largest tensor: "
              f"{peak / largest:.2f}x ({(peak + largest) / largest:.2f}x with the "
              f"caller's input)")  # fmt: skip
    exact = [k for k in results if results[k].get("mismatches", 0)]
    check(not exact, "bit-exact with OpenVINO on every pooling workload" + (
        f": differs on {', '.join(exact)}" if exact else ""))  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 runs per workload")
    parser.add_argument("--runs", type=int, help="runs per workload (default 25)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="only these workloads (W1 ... L1)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="threads of every backend (default 1; read at start-up)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write rows and targets")
    args = parser.parse_args(argv)
    if args.threads != _THREADS:
        parser.error("--threads is read when the script starts: give it on the command line")
    runs = args.runs or (5 if args.quick else 25)
    core = ov.Core()
    print(f"irrun {irrun.__version__}, OpenVINO {ov.get_version().split('-')[0]}, "
          f"torch {torch.__version__ if torch is not None else 'not installed'}, "
          f"numpy {np.__version__}; medians of {runs} interleaved runs, "
          f"{_THREADS} thread{'s' if _THREADS > 1 else ''}")
    header = ("workload", "irrun ms", "OpenVINO ms", "torch ms", "irrun/OV", "irrun/torch",
              "exact")  # fmt: skip
    rows, results = [], {}
    memory = None
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for w in WORKLOADS:
            if args.only and w.id not in args.only:
                continue
            r = results[w.id] = bench_workload(w, core, directory, runs)
            bad = r.get("mismatches", 0)
            exact = ("yes" if bad == 0 else f"NO ({bad})") if w.exact else (
                f"{r['rel_error']:.0e} rel")
            rows.append((f"{w.id} {w.title}", f"{r['irrun']:.3f}", f"{r['openvino']:.3f}",
                         f"{r['torch']:.3f}" if "torch" in r else "-",
                         _ratio(r["irrun"], r["openvino"]), _ratio(r["irrun"], r.get("torch")),
                         exact))  # fmt: skip
        if not args.only or "L1" in args.only:
            r = results["L1"] = bench_load(core, directory, max(runs, 5))
            rows.append(("L1 load a 500-layer IR (read+compile)", f"{r['irrun']:.1f}",
                         f"{r['openvino']:.1f}", "-", _ratio(r["irrun"], r["openvino"]), "-",
                         "-"))  # fmt: skip
        if not args.only or "C1" in args.only:
            memory = peak_memory_c1(directory)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        numbers = zip(row[1:], widths[1:], strict=True)
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in numbers]
        print("  ".join(cells))
    ws = [r["irrun"] / r["openvino"] for k, r in results.items() if k.startswith("W")]
    if ws:
        geo = math.exp(sum(math.log(r) for r in ws) / len(ws))
        print(f"geometric mean irrun/OpenVINO over {len(ws)} W workloads: {geo:.2f}")
    if memory is not None:
        peak, largest = memory
        print(f"C1 peak memory allocated during a run: {peak / 2**20:.2f} MiB = "
              f"{peak / largest:.2f}x the largest tensor ({largest / 2**20:.2f} MiB)")
    targets = _targets(results, memory)
    print("targets:")
    print("\n".join(targets))
    if args.json:
        rows = [{"model": k, "irrun_ms": r["irrun"], "openvino_ms": r["openvino"],
                 "torch_ms": r.get("torch"), "ratio": r["irrun"] / r["openvino"],
                 **{f: r[f] for f in ("mismatches", "rel_error") if f in r},
                 **({"irrun_cpu_ms": r["cpu"]["irrun"], "openvino_cpu_ms": r["cpu"]["openvino"],
                     "cpu_ratio": r["cpu"]["irrun"] / r["cpu"]["openvino"]} if "cpu" in r
                    else {})}
                for k, r in results.items()]  # fmt: skip
        summary = {"targets": [t.strip() for t in targets], "threads": _THREADS}
        if ws:
            summary["geomean_w"] = geo
        if memory is not None:
            summary["c1_peak_over_largest"] = memory[0] / memory[1]
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "runs": runs},
                                        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
