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

``--profile`` then runs one model's decode once more under cProfile and prints, for one
step in the middle: the steps the run executed, the time by op type (``on_layer``'s
kernel seconds; a profile runs every step, the cache of shape-only values unread) and
cProfile's top functions of a plain run (the executor's own overhead shows there).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
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
    xml = ROOT / "tests" / "stateful" / name / "openvino_model.xml"
    feeds = _decode_feeds(xml, name, tokens)
    model = irrun.load(xml)
    mid = len(feeds) // 2
    req = model.create_request()
    for f in feeds[:mid]:
        req.run(f)
    state = dict(req._values)
    by_type: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)

    def seen(layer) -> None:
        op = f"{layer.ref.type}-{layer.ref.version}"
        by_type[op] += layer.seconds
        counts[op] += 1

    req.run(feeds[mid], on_layer=seen)
    plan = model._plan
    wanted = tuple(sorted(set(model._output_slots.values()) | set(plan.assigns.values())))
    cached = plan.shapes.cached(plan, wanted) if plan.shapes is not None else None
    print(f"\n{name}, step {mid + 1} of {tokens}: {len(plan.steps)} layers, a plain run "
          f"executes {len(plan.schedule(wanted))} steps"
          + (f" ({len(cached.schedule)} when the shape cache hits)" if cached else ""))
    total = sum(by_type.values())
    print(f"  kernels' time by op type (profile run, all layers), total {total * 1e3:.3f} ms:")
    for op, s in sorted(by_type.items(), key=lambda kv: -kv[1])[:20]:
        print(f"    {op:32} {counts[op]:4d} layers {s * 1e6:8.1f} us")
    # cProfile of plain runs of the same step (from the same state, 200 times).
    prof = cProfile.Profile()
    n = 200
    for _ in range(n):
        req._values = dict(state)
        prof.enable()
        req.run(feeds[mid])
        prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("tottime")
    stats.print_stats(25)
    print(f"  cProfile of {n} plain runs of that step (tottime; divide by {n} for one step):")
    print("\n".join("    " + line for line in out.getvalue().splitlines()[4:40]))


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
