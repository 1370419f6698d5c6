"""Time decoding steps of stateful LLMs: does step 128 cost what step 8 does?

    python benchmarks/kv_cache.py              # the corpus' llama, and a wider synthetic stack
    python benchmarks/kv_cache.py --steps 512 --repeats 5

An LLM exported by optimum-intel keeps its KV cache in variables; each step appends
one token's keys and values (ReadValue -> Gather(beam_idx) -> Concat -> Assign).  Run
as written, the Concat copies the whole cache at every step: O(N^2) bytes over N
steps.  irrun's ``grow_kv_cache`` pass appends into a buffer with room to spare.  For
each step this prints the median time of:

- ``irrun``: a request, as ``irrun generate`` runs it;
- ``plain``: the same without the pass (every step copies the cache);
- ``openvino``: the CPU plugin's infer request (f32, KV cache in f32, one thread);

on ``tests/stateful/llama`` (hidden 32, 2 layers: overhead-bound) and on a synthetic
decoder stack built here with OpenVINO's opsets in optimum's pattern (hidden 512,
8 heads, 4 layers, attention through ScaledDotProductAttention-13), where the cache
is large enough for copying to show.  The steps run interleaved (step i of each
engine in turn), the whole decode ``--repeats`` times.  Peak memory is Python's
traced allocations (NumPy's included) over one irrun decode.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openvino as ov  # noqa: E402
from openvino import opset1, opset3, opset6, opset8, opset13  # noqa: E402
from openvino.op.util import Variable, VariableInfo  # noqa: E402

import irrun  # noqa: E402
from irrun.core.passes import grow_kv_cache  # noqa: E402

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1,
          "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}  # fmt: skip


def decoder_stack(hidden: int = 512, heads: int = 8, layers: int = 4, seed: int = 0) -> ov.Model:
    """``x`` [1, n, hidden] through ``layers`` attention blocks whose keys and values
    are kept in variables as optimum-intel keeps them; output ``y`` [1, n, hidden]."""
    rng = np.random.default_rng(seed)
    head = hidden // heads
    x = opset1.parameter([1, -1, hidden], np.float32, name="x")
    beam = opset1.parameter([-1], np.int32, name="beam_idx")
    x.output(0).get_tensor().set_names({"x"})
    beam.output(0).get_tensor().set_names({"beam_idx"})
    batch = opset8.gather(opset3.shape_of(x, "i64"), opset1.constant(np.int64([0])),
                          opset1.constant(np.int64(0)))  # fmt: skip
    empty = opset1.concat([batch, opset1.constant(np.int64([heads, 0, head]))], 0)
    sinks, h = [], x

    def project(t):
        w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
        y = opset1.matmul(t, opset1.constant(w), False, True)
        shaped = opset1.reshape(y, opset1.constant(np.int64([0, 0, heads, head])), True)
        return opset1.transpose(shaped, opset1.constant(np.int64([0, 2, 1, 3])))

    for layer in range(layers):
        q = project(h)
        cached = []
        for kind in ("key", "value"):
            info = VariableInfo()
            info.variable_id = f"past_key_values.{layer}.{kind}"
            info.data_type, info.data_shape = ov.Type.f32, ov.PartialShape([-1, heads, -1, head])
            var = Variable(info)
            past = opset6.read_value(opset3.broadcast(opset1.constant(np.float32(0)), empty), var)
            both = opset1.concat([opset8.gather(past, beam, opset1.constant(np.int64(0))),
                                  project(h)], 2)  # fmt: skip
            sinks.append(opset6.assign(both, var))
            cached.append(both)
        attn = opset13.scaled_dot_product_attention(q, *cached, causal=False)
        merged = opset1.reshape(opset1.transpose(attn, opset1.constant(np.int64([0, 2, 1, 3]))),
                                opset1.constant(np.int64([0, 0, hidden])), True)  # fmt: skip
        w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
        h = opset1.add(h, opset1.matmul(merged, opset1.constant(w), False, True))
    h.output(0).get_tensor().set_names({"y"})
    return ov.Model([opset1.result(h)], sinks, [x, beam], "decoder_stack")


def _plain(model: irrun.Model) -> irrun.Model:
    """``model`` without the KV-cache pass: each step's Concat copies the cache."""
    model._plan.passes = tuple(p for p in model._plan.passes if p is not grow_kv_cache)
    model._plan._schedules.clear()
    return model


def _steps(feeds: list[dict[str, np.ndarray]], engines: dict[str, Callable[[], Callable]],
           repeats: int) -> dict[str, list[float]]:  # fmt: skip
    """Median seconds of each step of each engine; ``engines`` make a fresh decoder (a
    function of one step's feeds) for each repeat."""
    samples = {name: [[] for _ in feeds] for name in engines}
    for _ in range(repeats):
        runs = {name: make() for name, make in engines.items()}
        for i, f in enumerate(feeds):
            for name, run in runs.items():
                start = time.perf_counter()
                run(f)
                samples[name][i].append(time.perf_counter() - start)
    return {name: [statistics.median(s) for s in per] for name, per in samples.items()}


def _around(times: list[float], step: int) -> float:
    """The median of the steps from ``step - 4`` to ``step + 4`` (1-based): the step that
    grows a buffer (each time the cache doubles) is one spike, not the rate."""
    lo, hi = max(step - 5, 1), min(step + 4, len(times))
    return statistics.median(times[lo:hi])


def _report(title: str, times: dict[str, list[float]], marks: list[int], peak: int) -> dict:
    print(title)
    names = list(times)
    n = len(times[names[0]])
    print("  step " + "".join(f"{name:>12}" for name in names)
          + "   (ms: step 1 alone, others the median of the 9 steps around)")  # fmt: skip
    for m in [m for m in marks if m <= n]:
        cells = (times[name][0] if m == 1 else _around(times[name], m) for name in names)
        print(f"  {m:4d} " + "".join(f"{c * 1000:12.3f}" for c in cells))
    last = max(m for m in marks if m <= n)
    growth = ", ".join(f"{name} {_around(times[name], last) / _around(times[name], 8):.2f}x"
                       for name in names)  # fmt: skip
    print(f"  step {last} / step 8: {growth}")
    totals = ", ".join(f"{name} {sum(times[name]) * 1000:.0f} ms" for name in names)
    print(f"  all {n} steps: {totals}")
    print(f"  irrun's peak traced memory over one decode: {peak / 2**20:.1f} MiB")
    steps = {str(m): {name: 1e3 * (times[name][0] if m == 1 else _around(times[name], m))
                      for name in names} for m in marks if m <= n}  # fmt: skip
    return {"model": title.split(" (")[0], "steps_ms": steps, "peak_mb": peak / 2**20,
            "irrun_ms": steps[str(last)]["irrun"], "openvino_ms": steps[str(last)]["openvino"],
            "ratio": steps[str(last)]["irrun"] / steps[str(last)]["openvino"], "at_step": last}


def _irrun_decoder(model: irrun.Model) -> Callable[[], Callable]:
    def make():
        req = model.create_request()
        return lambda f: req.run(f)

    return make


def _openvino_decoder(compiled) -> Callable[[], Callable]:
    def make():
        req = compiled.create_infer_request()
        req.reset_state()
        return lambda f: req.infer(f)

    return make


def _peak(model: irrun.Model, feeds: list[dict[str, np.ndarray]]) -> int:
    req = model.create_request()
    tracemalloc.start()
    for f in feeds:
        req.run(f)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def llama(steps: int, repeats: int) -> dict:
    folder = ROOT / "tests" / "stateful" / "llama"
    xml = folder / "openvino_model.xml"
    feeds = []
    for i in range(steps):
        n = 4 if i == 0 else 1  # a 4-token prompt, then one token per step
        start = 0 if i == 0 else 3 + i
        feeds.append({
            "input_ids": np.arange(start + 5, start + 5 + n, dtype=np.int64)[None] % 500,
            "attention_mask": np.ones((1, start + n), np.int64),
            "position_ids": np.arange(start, start + n, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, np.int32),
        })  # fmt: skip
    compiled = ov.Core().compile_model(xml, "CPU", CONFIG)
    times = _steps(feeds, {"irrun": _irrun_decoder(irrun.load(xml)),
                           "plain": _irrun_decoder(_plain(irrun.load(xml))),
                           "openvino": _openvino_decoder(compiled)}, repeats)  # fmt: skip
    return _report(f"tests/stateful/llama (hidden 32, 2 layers), {steps} steps, {repeats} "
                   f"repeats", times, [1, 8, 32, 128, 240], _peak(irrun.load(xml), feeds))


def stack(steps: int, repeats: int) -> dict:
    model = decoder_stack()
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 16 if i == 0 else 1, 512)).astype(np.float32),
              "beam_idx": np.zeros(1, np.int32)} for i in range(steps)]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stack.xml"
        ov.save_model(model, path, compress_to_fp16=False)
        compiled = ov.Core().compile_model(model, "CPU", CONFIG)
        ours = irrun.load(path)
        check = ours.create_request()
        theirs = compiled.create_infer_request()
        worst = 0.0
        for f in feeds[:4]:
            got, want = check.run(f)["y"], theirs.infer(f)[0]
            worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
        times = _steps(feeds, {"irrun": _irrun_decoder(ours),
                               "plain": _irrun_decoder(_plain(irrun.load(path))),
                               "openvino": _openvino_decoder(compiled)}, repeats)  # fmt: skip
        return _report(f"synthetic decoder stack (hidden 512, 8 heads, 4 layers, a 16-token "
                       f"prompt), {steps} steps, {repeats} repeats; first 4 steps agree with "
                       f"OpenVINO to {worst:.1e} of scale", times, [1, 8, 32, 128, 256, 512],
                       _peak(ours, feeds))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the rows")
    args = parser.parse_args(argv)
    if args.steps < 8:
        parser.error("--steps must be at least 8")
    rows = [llama(min(args.steps, 248), args.repeats),  # the corpus' llama holds 256 positions
            stack(args.steps, args.repeats)]  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "repeats": args.repeats}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
