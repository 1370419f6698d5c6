"""Per-token cost of decoding the tiny stateful LLMs of tests/stateful, irrun / OpenVINO.

    python benchmarks/decode.py                      # llama, qwen2, gpt2
    python benchmarks/decode.py llama --tokens 32 --repeats 20
    python benchmarks/decode.py llama --profile      # where one decode step's time goes

Each model (hidden 32, 2 layers: every cost is per-step overhead, not arithmetic) decodes
``--tokens`` tokens after its committed prompt, as ``irrun generate`` does: one request,
the prompt in one call, then one call per token with the attention mask one longer.  The
same feeds go to OpenVINO's stateful infer request (CPU plugin, ``F32_CONFIG`` of
tests/support/ov_stateful.py: f32, f32 KV cache, one thread).  The two engines run step by
step in turn (which goes first alternates), the whole decode ``--repeats`` times; a
step's time is CPU time of the process (``time.process_time``: the machine is shared, and
wall time counts others' work), its median over repeats.  A token's time is the median of
those over the steps after the first two (the prompt, and the first step that meets a
one-token input).

``--profile`` then decodes each model once more with a clock around each kernel of the
schedule a request runs, and prints the steps a decode step runs, the memos of
shape-only layers it misses, and the median time by op type (a fused step is named by
its layers' types; "memo (miss)" is a memo running its shape-only layers).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import openvino as ov  # noqa: E402
from support.ov_stateful import F32_CONFIG, _feeds, load_expected  # noqa: E402

import irrun  # noqa: E402
from irrun.core.shapes import Memo  # noqa: E402
from irrun.core.steps import parts  # noqa: E402

MODELS = ["llama", "qwen2", "gpt2"]


def _decode_feeds(xml: Path, name: str, tokens: int) -> list[dict[str, np.ndarray]]:
    """The feeds of a decode of ``tokens`` calls: the prompt, then one token a call."""
    compiled = ov.Core().read_model(xml)
    names = {p.get_any_name(): p.get_element_type().to_dtype() for p in compiled.inputs}
    ids = np.asarray(load_expected(name)["prompt_ids"], np.int64).reshape(1, -1)
    out, past = [], 0
    for i in range(tokens):
        out.append(_feeds(names, ids, past))
        past += ids.shape[1]
        ids = np.array([[(7 * i + 3) % 200]], np.int64)
    return out


def per_token(name: str, tokens: int, repeats: int) -> dict[str, float]:
    """Median CPU seconds of a decode step of ``name`` after the first two, by engine."""
    xml = ROOT / "tests" / "stateful" / name / "openvino_model.xml"
    feeds = _decode_feeds(xml, name, tokens)
    model = irrun.load(xml)
    compiled = ov.Core().compile_model(xml, "CPU", F32_CONFIG)
    samples: dict[str, list[list[float]]] = {k: [[] for _ in feeds] for k in ("irrun", "openvino")}
    for r in range(repeats + 1):  # the first decode warms both engines
        req = model.create_request()
        ov_req = compiled.create_infer_request()
        ov_req.reset_state()
        runs = {"irrun": req.run, "openvino": ov_req.infer}
        for i, f in enumerate(feeds):
            for name_ in (("irrun", "openvino") if (r + i) % 2 else ("openvino", "irrun")):
                start = time.process_time()
                runs[name_](f)
                if r:
                    samples[name_][i].append(time.process_time() - start)
    return {k: statistics.median(statistics.median(s) for s in v[2:]) for k, v in samples.items()}


def profile(name: str, tokens: int) -> None:
    """Where a decode step's time goes: each step of the schedule a request runs, timed
    around its kernel (the same schedule and kernels; the loop around them replaced by a
    timed copy), medians over the steps after the first two."""
    xml = ROOT / "tests" / "stateful" / name / "openvino_model.xml"
    feeds = _decode_feeds(xml, name, tokens)
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
        if i >= 2:
            first[0] = i == 2
            plan._execute = timed
        start = time.thread_time()
        req.run(f)
        if i >= 2:
            totals.append(time.thread_time() - start)
            del plan._execute
    total = statistics.median(totals)
    in_kernels = sum(statistics.median(v) for v in kernel_s.values())
    print(f"\n{name}: a decode step, median of steps 3 to {tokens} (the step's CPU time; its "
          f"kernels' wall time, which a loaded machine inflates)")
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    print(f"irrun {irrun.__version__}, openvino {ov.get_version()}, 1 thread, CPU time; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'model':10} {'irrun ms':>9} {'openvino ms':>12} {'ratio':>7}")
    ratios = []
    for name in args.models:
        t = per_token(name, args.tokens, args.repeats)
        ratios.append(t["irrun"] / t["openvino"])
        print(f"{name:10} {t['irrun'] * 1e3:9.3f} {t['openvino'] * 1e3:12.3f} {ratios[-1]:6.2f}x")
    if len(ratios) > 1:
        print(f"{'median':10} {'':9} {'':12} {statistics.median(ratios):6.2f}x, worst "
              f"{max(ratios):.2f}x")
    if args.profile:
        for name in args.models:
            profile(name, args.tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
