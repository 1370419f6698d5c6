"""irrun against OpenVINO's CPU plugin decoding tiny stateful LLMs token by token (issue
28's "tiny LLM decode" class: the target is a median ratio per token <= 2, none over 3).

    python benchmarks/llm_decode.py        # tests/stateful and benchmarks/models/stateful
    python benchmarks/llm_decode.py --only llama gpt2 --tokens 32 --repeats 5 --json out.json
    python benchmarks/llm_decode.py --only llama --profile   # where one decode step's time goes
    CI=true /work/optvenv/bin/python benchmarks/make_stateful_llms.py   # more families

For each optimum-intel export of tests/stateful (hidden 32, 2 layers; f32 and weight
compressed) and of ``benchmarks/models/stateful/`` (more families, made by
benchmarks/make_stateful_llms.py): its prompt in one call (the manifest's, or
``EXTRA_PROMPT``), then ``--tokens`` calls of one token
each, on an irrun request (``model.create_request()``, as ``irrun generate`` runs it)
and an OpenVINO infer request (CPU, f32 throughout, KV cache in f32, one thread: the
tests' ``F32_CONFIG``), step i of each engine in turn, the engine that goes first
alternating by step and repeat; the whole decode ``--repeats`` times on fresh requests.
Per engine, the median over repeats of each step's wall-clock and CPU time (of this
process), and per token the median of those over the steps after the first two (the
prompt's call and the first token's set up what later steps reuse).  Both engines are
fed the same tokens (the prompt's, then a fixed sequence), so their work is the same.

``--profile`` then decodes each model once more with a clock around each kernel of the
schedule a request runs, and prints the steps a decode step runs, the memos of
shape-only layers it misses (``irrun/core/shapes.py``'s ``Memo``), and the median time by
op type (a fused step is named by its layers' types; "memo (miss)" is a memo running its
shape-only layers).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the irrun of this checkout (and tests/support)

import openvino as ov  # noqa: E402

import irrun  # noqa: E402
from irrun.core.shapes import Memo  # noqa: E402
from irrun.core.steps import parts  # noqa: E402
from tests.support.ov_stateful import F32_CONFIG, HERE, _feeds, manifest  # noqa: E402

MEDIAN_FROM = 2  # steps before this one set up what the later ones reuse
EXTRA = ROOT / "benchmarks" / "models" / "stateful"  # benchmarks/make_stateful_llms.py
EXTRA_PROMPT = [3, 17, 42, 99, 123, 200]


def models() -> dict[str, tuple[Path, list[int]]]:
    """name: (IR, prompt ids), tests/stateful's first, then benchmarks/models/stateful's."""
    found = {n: (HERE / n / "openvino_model.xml", e["prompt"]["ids"])
             for n, e in manifest().items()}  # fmt: skip
    for xml in sorted(EXTRA.glob("*/openvino_model.xml")):
        found.setdefault(xml.parent.name, (xml, EXTRA_PROMPT))
    return found


def decode_feeds(names: dict, prompt: list[int], tokens: int) -> list[dict[str, np.ndarray]]:
    """The feeds of a decode: the prompt in one call, then ``tokens`` calls of one token."""
    ids = np.asarray(prompt, np.int64)[None]
    steps = [_feeds(names, ids, 0)]
    for i in range(tokens):
        steps.append(_feeds(names, np.int64([[3 + (7 * i) % 97]]), ids.shape[1] + i))
    return steps


def bench(name: str, xml: Path, prompt: list[int], tokens: int, repeats: int, core) -> dict:
    compiled = core.compile_model(str(xml), "CPU", F32_CONFIG)
    names = {p.get_any_name(): p.get_element_type().to_dtype() for p in compiled.inputs}
    model = irrun.load(xml)
    steps = decode_feeds(names, prompt, tokens)
    wall = {k: [[] for _ in steps] for k in ("irrun", "openvino")}
    cpu = {k: [[] for _ in steps] for k in ("irrun", "openvino")}
    last = {}
    for r in range(repeats):
        ov_request = compiled.create_infer_request()
        ov_request.reset_state()
        runs = {"irrun": model.create_request().run, "openvino": ov_request.infer}
        for i, f in enumerate(steps):
            order = ("irrun", "openvino") if (r + i) % 2 == 0 else ("openvino", "irrun")
            for k in order:
                w, c = time.perf_counter(), time.process_time()
                out = runs[k](f)
                cpu[k][i].append(time.process_time() - c)
                wall[k][i].append(time.perf_counter() - w)
                if r == 0 and i == len(steps) - 1:
                    last[k] = np.asarray(out["logits"] if k == "irrun" else
                                         out[compiled.output("logits")])  # fmt: skip

    def per_token(samples: list[list[float]]) -> float:
        return 1e3 * statistics.median(statistics.median(s) for s in samples[MEDIAN_FROM:])

    row = {"model": name, "irrun_ms": per_token(wall["irrun"]),
           "openvino_ms": per_token(wall["openvino"]),
           "irrun_cpu_ms": per_token(cpu["irrun"]), "openvino_cpu_ms": per_token(cpu["openvino"]),
           "first_irrun_ms": 1e3 * statistics.median(wall["irrun"][0]),
           "first_openvino_ms": 1e3 * statistics.median(wall["openvino"][0])}  # fmt: skip
    row["ratio"] = row["irrun_ms"] / row["openvino_ms"]
    row["cpu_ratio"] = row["irrun_cpu_ms"] / row["openvino_cpu_ms"]
    want = last["openvino"]
    row["error"] = float(np.abs(last["irrun"] - want).max() / np.abs(want).max())
    return row


def profile(name: str, xml: Path, prompt: list[int], tokens: int, core) -> None:
    """Where a decode step's time goes: each step of the schedule a request runs, timed
    around its kernel (the same schedule and kernels; the loop around them replaced by a
    timed copy), medians over the steps after the first two."""
    inputs = core.read_model(str(xml)).inputs
    feeds = decode_feeds({p.get_any_name(): p.get_element_type().to_dtype() for p in inputs},
                         prompt, tokens)  # fmt: skip
    model = irrun.load(xml)
    plan = model._plan
    clock = time.perf_counter
    kernel_s: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    totals, steps_run, memo_misses = [], [], []

    def timed(schedule, given, wanted):  # Plan._execute with a clock around each kernel
        values = dict(given)
        for slot in plan.variables.values():
            values.setdefault(slot, None)
        spent: dict[str, float] = defaultdict(float)
        misses = 0
        for step, frees in schedule:
            args = [values[s] for s in step.inputs]
            kind = _kind(step)
            if kind.startswith("memo") and tuple(a.shape for a in args[: step.kernel.n]) \
                    not in step.kernel.entries:  # fmt: skip
                kind, misses = "memo (miss: runs its shape-only layers)", misses + 1
            start = clock()
            out = step.kernel(step.attrs, *args) if step.needed is None else \
                step.kernel(step.attrs, *args, needed=step.needed)  # fmt: skip
            spent[kind] += clock() - start
            if first[0]:
                counts[kind] += 1
            values.update(zip(step.outputs, out, strict=False))
            for slot in frees:
                values.pop(slot, None)
        first[0] = False
        steps_run.append(len(schedule))
        memo_misses.append(misses)
        for kind, s in spent.items():
            kernel_s[kind].append(s)
        return {s: values[s] for s in wanted}

    req = model.create_request()
    first = [False]
    for i, f in enumerate(feeds):
        if i >= MEDIAN_FROM:
            first[0] = i == MEDIAN_FROM
            plan._execute = timed
        start = time.thread_time()
        req.run(f)
        if i >= MEDIAN_FROM:
            totals.append(time.thread_time() - start)
            del plan._execute
    if not totals:
        print(f"\n{name}: no decode step after the first {MEDIAN_FROM} to profile (--tokens)")
        return
    total = statistics.median(totals)
    in_kernels = sum(statistics.median(v) for v in kernel_s.values())
    print(f"\n{name}: a decode step, median of steps {MEDIAN_FROM + 1} to {len(feeds)} (the "
          f"step's CPU time; its kernels' wall time, which a loaded machine inflates)")
    print(f"  {len(plan.steps)} layers; the step runs {statistics.median(steps_run):.0f} steps "
          f"(memos missed: {statistics.median(memo_misses):.0f}); "
          f"{total * 1e3:.3f} ms a step, {in_kernels * 1e3:.3f} ms in kernels, the rest in "
          f"the loop, the request and the shape cache's bookkeeping")
    for kind, v in sorted(kernel_s.items(), key=lambda kv: -statistics.median(kv[1]))[:16]:
        print(f"    {kind:44} {counts[kind]:4d} steps {statistics.median(v) * 1e6:8.1f} us")


def _kind(step) -> str:
    if isinstance(step.kernel, Memo):
        return "memo (hit)"
    return "+".join(p.node.op.type for p in parts(step))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these models")
    parser.add_argument("--tokens", type=int, default=32, help="decode steps after the prompt")
    parser.add_argument("--repeats", type=int, help="decodes per model (default 7)")
    parser.add_argument("--quick", action="store_true", help="5 decodes of 24 tokens")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write rows and summary")
    parser.add_argument("--profile", action="store_true",
                        help="then time a decode step's kernels by op type")  # fmt: skip
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 7)
    tokens = 24 if args.quick and args.tokens == 32 else args.tokens
    found = models()
    names = [n for n in found if not args.only or n in args.only]
    if not any(EXTRA.glob("*/openvino_model.xml")):
        print("only tests/stateful: run `CI=true /work/optvenv/bin/python "
              "benchmarks/make_stateful_llms.py` for more families")
    core = ov.Core()
    load = os.getloadavg()
    print(f"irrun {irrun.__version__}, OpenVINO {ov.get_version().split('-')[0]}; {tokens} "
          f"tokens after the prompt, {repeats} decodes, 1 thread; per token: the median of "
          f"steps {MEDIAN_FROM + 1}.. ; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'model':12s} {'irrun ms':>9s} {'OV ms':>7s} {'ratio':>6s}  {'CPU ms':>15s} "
          f"{'ratio':>6s}  {'prompt ms':>15s}  logits error")
    rows = []
    for name in names:
        r = bench(name, *found[name], tokens, repeats, core)
        rows.append(r)
        print(f"{name:12s} {r['irrun_ms']:9.3f} {r['openvino_ms']:7.3f} {r['ratio']:6.2f}  "
              f"{r['irrun_cpu_ms']:7.3f}/{r['openvino_cpu_ms']:7.3f} {r['cpu_ratio']:6.2f}  "
              f"{r['first_irrun_ms']:7.2f}/{r['first_openvino_ms']:7.2f}  {r['error']:.1e}",
              flush=True)  # fmt: skip
    ratios = {r["model"]: r["cpu_ratio"] for r in rows}
    summary = {}
    if ratios:
        worst = max(ratios, key=ratios.get)
        summary = {"models": len(ratios), "key": "cpu_ratio",
                   "median": statistics.median(ratios.values()), "worst": ratios[worst],
                   "worst_model": worst}  # fmt: skip
        print(f"summary (CPU-time ratios per token): median {summary['median']:.2f} "
              f"(target <= 2), worst {summary['worst']:.2f} ({worst}; target none over 3)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "tokens": tokens,
                                         "repeats": repeats}, indent=1))  # fmt: skip
    if args.profile:
        for name in names:
            profile(name, *found[name], tokens, core)
    return 0


if __name__ == "__main__":
    sys.exit(main())
