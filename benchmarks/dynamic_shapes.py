"""What dynamic models pay for their shape-only layers, and what the shape cache saves.

    python benchmarks/dynamic_shapes.py                 # every corpus transformer, llama decode
    python benchmarks/dynamic_shapes.py bert gpt2 --repeats 50

For each transformer of tests/corpus with its inputs (``<name>.inputs.npz``) this times,
in one process at one thread, alternating run by run, the median seconds of:

- ``cached``: irrun as loaded (a run reuses the shape-only values of an earlier run with
  the same input shapes: :mod:`irrun.core.shapes`);
- ``uncached``: the same model with the cache off (``model._plan.shapes = None``), every
  shape-only layer run at every call, as before the cache;
- ``openvino``: the CPU plugin (f32, one thread).

It prints the steps a run executes with and without the cache, the shape-only layers
of the plan, and the seconds the shape-only layers take in a profile of an uncached run
(per-layer kernel times, ``on_layer``; the loop's own overhead per step comes on top).

Then the same for a decode of ``--tokens`` tokens by the stateful llama of
tests/stateful (after a prefill of 8 tokens), per step, median over repeats: each
decode step has shapes no step had before (the attention mask and the KV cache grow),
so the cache is emptied before each decode to time the case a user meets.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openvino as ov  # noqa: E402

import irrun  # noqa: E402
from irrun.core.shapes import shape_only  # noqa: E402

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
MODELS = ["bert", "roberta", "gpt2", "llama", "t5", "vit", "swin", "maxvit", "wav2vec2",
          "whisper_encoder"]  # fmt: skip


def _medians(engines: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each engine (a function of no arguments), called in turn, in
    each order by turns: an engine run after OpenVINO finds colder caches, and each is
    as often as the others."""
    samples: dict[str, list[float]] = {name: [] for name in engines}
    orders = list(itertools.permutations(engines))
    for r in range(repeats):
        for name in orders[r % len(orders)]:
            run = engines[name]
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def _steps(model: irrun.Model, cached: bool) -> int:
    plan = model._plan
    wanted = tuple(sorted(model._output_slots.values()))
    if cached and plan.shapes is not None:
        how = plan.shapes.cached(plan, wanted)
        if how is not None:
            return len(how.schedule)
    return len(plan.schedule(wanted))


def _shape_seconds(model: irrun.Model, feeds: dict, repeats: int) -> float:
    """Median over ``repeats`` profiled runs of the kernel seconds of shape-only layers."""
    flags = shape_only(model._plan)
    refs = {str(s.node.ref) for s, f in zip(model._plan.steps, flags, strict=True) if f}
    totals = []
    for _ in range(repeats):
        total = [0.0]

        def seen(layer, total=total) -> None:
            if str(layer.ref) in refs:
                total[0] += layer.seconds

        model.run(feeds, on_layer=seen)
        totals.append(total[0])
    return statistics.median(totals)


def corpus(names: list[str], repeats: int) -> list[dict]:
    core = ov.Core()
    rows = []
    print(f"{'model':16} {'steps':>9} {'shape-only':>10} {'shape s':>9} {'uncached':>10} "
          f"{'cached':>10} {'openvino':>10} {'before':>7} {'after':>7} {'saved':>6}")  # fmt: skip
    for name in names:
        xml = ROOT / "tests" / "corpus" / f"{name}.xml"
        feeds = dict(np.load(xml.with_suffix(".inputs.npz")))
        cached, uncached = irrun.load(xml), irrun.load(xml)
        uncached._plan.shapes = None
        compiled = core.compile_model(core.read_model(xml), "CPU", CONFIG)
        request = compiled.create_infer_request()
        for m in (cached, uncached):  # warm: the cache's first run records
            m.run(feeds)
            m.run(feeds)
        request.infer(feeds)
        t = _medians({"uncached": partial(uncached.run, feeds),
                      "cached": partial(cached.run, feeds),
                      "openvino": partial(request.infer, feeds)}, repeats)  # fmt: skip
        shape_s = _shape_seconds(uncached, feeds, max(3, repeats // 4))
        steps = f"{_steps(uncached, False)}->{_steps(cached, True)}"
        n_shape = sum(shape_only(cached._plan))
        print(f"{name:16} {steps:>9} {n_shape:>10} {shape_s * 1e3:8.2f}m "
              f"{t['uncached'] * 1e3:9.2f}m {t['cached'] * 1e3:9.2f}m {t['openvino'] * 1e3:9.2f}m "
              f"{t['uncached'] / t['openvino']:6.2f}x {t['cached'] / t['openvino']:6.2f}x "
              f"{1 - t['cached'] / t['uncached']:5.0%}")  # fmt: skip
        rows.append({"model": name, "irrun_ms": t["cached"] * 1e3, "openvino_ms":
                     t["openvino"] * 1e3, "ratio": t["cached"] / t["openvino"],
                     "uncached_ms": t["uncached"] * 1e3, "shape_only_ms": shape_s * 1e3})
    return rows


def decode(family: str, tokens: int, repeats: int) -> dict:
    folder = ROOT / "tests" / "stateful" / family
    xml = folder / "openvino_model.xml"
    core = ov.Core()
    compiled = core.compile_model(core.read_model(xml), "CPU", CONFIG)
    cached, uncached = irrun.load(xml), irrun.load(xml)
    uncached._plan.shapes = None
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, 100, (1, 8)).astype(np.int64)
    names = {i.get_any_name() for i in compiled.inputs}

    def feeds_at(ids: np.ndarray, past: int) -> dict[str, np.ndarray]:
        n = ids.shape[1]
        f = {"input_ids": ids, "attention_mask": np.ones((1, past + n), np.int64),
             "position_ids": np.arange(past, past + n, dtype=np.int64)[None],
             "beam_idx": np.zeros(1, np.int32)}  # fmt: skip
        return {k: v for k, v in f.items() if k in names}

    steps = [feeds_at(prompt, 0)] + [feeds_at(np.int64([[7 + i]]), 8 + i) for i in range(tokens)]
    samples: dict[str, list[list[float]]] = {k: [[] for _ in steps]
                                              for k in ("uncached", "cached", "openvino")}
    orders = list(itertools.permutations(samples))
    for r in range(repeats):
        if cached._plan.shapes is not None:
            cached._plan.shapes.entries.clear()  # each decode meets new shapes
        runs = {"uncached": uncached.create_request().run, "cached": cached.create_request().run,
                "openvino": compiled.create_infer_request().infer}  # fmt: skip
        for i, f in enumerate(steps):
            for name in orders[(r + i) % len(orders)]:
                run = runs[name]
                start = time.perf_counter()
                run(f)
                samples[name][i].append(time.perf_counter() - start)
    # A token's step: the median over the decode steps after the first two.
    per = {k: statistics.median(statistics.median(s) for s in v[3:]) for k, v in samples.items()}
    n_shape = sum(shape_only(cached._plan))
    cache = cached._plan.shapes
    print(f"\n{family} decode, {tokens} tokens after a prefill of 8, {repeats} repeats "
          f"({n_shape} shape-only layers of {len(cached._plan.steps)}):")
    print(f"  per token: uncached {per['uncached'] * 1e3:.2f} ms, cached {per['cached'] * 1e3:.2f}"
          f" ms, openvino {per['openvino'] * 1e3:.2f} ms; before "
          f"{per['uncached'] / per['openvino']:.2f}x, after {per['cached'] / per['openvino']:.2f}x")
    if cache is not None:
        print(f"  the cache: {cache.hits} runs read it, {cache.misses} ran the shape-only layers")
    return {"model": f"{family} decode", "irrun_ms": per["cached"] * 1e3,
            "openvino_ms": per["openvino"] * 1e3, "ratio": per["cached"] / per["openvino"],
            "uncached_ms": per["uncached"] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--family", default="llama", help="the tests/stateful model to decode")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows")
    args = parser.parse_args()
    print(f"irrun {irrun.__version__}, openvino {ov.get_version()}, 1 thread; times are medians")
    rows = corpus(args.models, args.repeats)
    rows.append(decode(args.family, args.tokens, max(3, args.repeats // 3)))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "repeats": args.repeats}, indent=1))


if __name__ == "__main__":
    main()
