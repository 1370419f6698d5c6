"""irrun's decode step with and without the passes that fuse the small ops around
attention: RMSNorm (irrun.core.passes.rms_norm) and rotary embedding (.rotary).

    python benchmarks/small_ops.py                     # tests/stateful llama and qwen2
    python benchmarks/small_ops.py --without rms_norm  # only that pass left out
    python benchmarks/small_ops.py --tokens 64 --repeats 15 --models path/to/openvino_model.xml

Both plans of one model in one process, on two requests fed the same tokens, step i of
each in turn (the one going first alternating): per token the CPU time of this thread
(``time.thread_time``), the median over the steps after the first two and over repeats.
A model that is not stateful (benchmarks/models/tiny_hf) runs its kept inputs instead,
``tokens * repeats`` times each.  Then, where both passes are left out, the fused steps'
time per decode step (norms and rotaries) against their layers' steps in the plan without
the passes (a norm's Power and ReduceMean steps and the elementwise chain of the rest; a
rotary's Slices, negation, Concat, Multiply and chain), on the decode step's inputs,
median of many calls.  The machine is shared: the printed load says how noisy.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import irrun  # noqa: E402
from irrun.core.passes import fuse_rms_norms, fuse_rotary  # noqa: E402
from irrun.core.passes.rms_norm import RMSNorm  # noqa: E402
from irrun.core.passes.rotary import Rotary  # noqa: E402
from irrun.core.steps import run_step  # noqa: E402

PASSES = {"rms_norm": fuse_rms_norms, "rotary": fuse_rotary}
LEFT_OUT = set(PASSES.values())  # the passes the plan "without" leaves out
MODELS = [ROOT / "tests" / "stateful" / name / "openvino_model.xml" for name in ("llama", "qwen2")]


def _without(path: Path) -> irrun.Model:
    model = irrun.load(path, threads=1)
    model._plan.passes = tuple(p for p in model._plan.passes if p not in LEFT_OUT)
    model._plan._schedules.clear()
    return model


def _feeds(tokens: int, vocab: int = 500):
    seen = 0
    for i, n in enumerate([4] + [1] * tokens):
        ids = [(7 * i + 13 * k) % vocab for k in range(n)]
        yield {"input_ids": np.array([ids], np.int64),
               "attention_mask": np.ones((1, seen + n), np.int64),
               "position_ids": np.arange(seen, seen + n, dtype=np.int64)[None],
               "beam_idx": np.zeros(1, np.int32)}
        seen += n


def decode(path: Path, tokens: int, repeats: int) -> tuple[float, float]:
    with_pass, without = irrun.load(path, threads=1), _without(path)
    if "beam_idx" not in {spec.name for spec in with_pass.inputs}:
        return forward(path, with_pass, without, tokens * repeats)
    times: dict[str, list[float]] = {"with": [], "without": []}
    for r in range(repeats):
        requests = {"with": with_pass.create_request(), "without": without.create_request()}
        for i, feeds in enumerate(_feeds(tokens)):
            order = ["with", "without"] if (i + r) % 2 == 0 else ["without", "with"]
            for name in order:
                start = time.thread_time()
                requests[name].run(feeds)
                if i >= 2:
                    times[name].append(time.thread_time() - start)
    return statistics.median(times["with"]) * 1e3, statistics.median(times["without"]) * 1e3


def forward(path: Path, with_pass, without, runs: int) -> tuple[float, float]:
    """A model that is not stateful (benchmarks/models/tiny_hf): its kept inputs' run."""
    with np.load(path.with_suffix(".inputs.npz")) as f:
        feeds = dict(f)
    times: dict[str, list[float]] = {"with": [], "without": []}
    models = {"with": with_pass, "without": without}
    for i in range(runs + 2):
        for name in (["with", "without"] if i % 2 == 0 else ["without", "with"]):
            start = time.thread_time()
            models[name].run(feeds)
            if i >= 2:
                times[name].append(time.thread_time() - start)
    return statistics.median(times["with"]) * 1e3, statistics.median(times["without"]) * 1e3


def kernels(path: Path, calls: int = 3000) -> tuple[tuple[int, int], float, float]:
    """The numbers of fused norms and rotaries, and the fused steps' time per decode step
    against their layers' steps without the passes."""
    model = irrun.load(path, threads=1)
    wanted = tuple(model._slot_of(o.name) for o in model.outputs)
    # A norm whose output a residual Add alone reads heads an in-place chain.
    found = [getattr(getattr(s.kernel, "head", None), "kernel", s.kernel)
             for s, _ in model._plan.schedule(wanted)]
    counts = (sum(type(k) is RMSNorm for k in found), sum(type(k) is Rotary for k in found))
    norms = [s for s, _ in model._plan.schedule(wanted) if isinstance(s.kernel, (RMSNorm, Rotary))]
    if "beam_idx" not in {spec.name for spec in model.inputs} or len(LEFT_OUT) < len(PASSES):
        return counts, float("nan"), float("nan")
    plain = _without(path)
    steps = [s for s, _ in plain._plan.schedule(tuple(plain._slot_of(o.name)
                                                      for o in plain.outputs))]
    # The norms' inputs in a decode step: a prompt's call, then one token's, observed.
    request = plain.create_request()
    *_, feeds = _feeds(1)
    request.run(next(_feeds(1)))
    seen = dict(request.run(feeds, intermediate=True))
    key_of = {slot: key for key, slot in plain._plan.slots.items()}
    consts = {}
    for s, _ in model._plan.schedule(wanted):
        consts.update(zip(s.outputs, getattr(s.kernel, "values", ()), strict=False))
    fused_s, parts_s = 0.0, 0.0
    with np.errstate(all="ignore"):
        for norm in norms:
            layers = {p.node.layer.id for p in norm.kernel.parts}
            mine = [s for s in steps if any(p.node.layer.id in layers
                                            for p in getattr(s.kernel, "parts", (s,)))]
            args = [consts[slot] if slot in consts else seen[plain.tensor_names[key_of[slot]]]
                    for slot in norm.inputs]
            values = dict(zip(norm.inputs, args, strict=True))
            samples_f, samples_p = [], []
            for _ in range(calls):
                start = time.thread_time_ns()
                norm.kernel(norm.attrs, *args)
                samples_f.append(time.thread_time_ns() - start)
                start = time.thread_time_ns()
                for s in mine:
                    out = run_step(s, [values[i] for i in s.inputs])
                    values.update(zip(s.outputs, out, strict=False))
                samples_p.append(time.thread_time_ns() - start)
            fused_s += statistics.median(samples_f) * 1e-9
            parts_s += statistics.median(samples_p) * 1e-9
    return counts, fused_s * 1e6, parts_s * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, default=MODELS)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--without", nargs="+", choices=sorted(PASSES), default=sorted(PASSES),
                        help="the passes the plan without leaves out (default: both)")
    args = parser.parse_args()
    LEFT_OUT.clear()
    LEFT_OUT.update(PASSES[name] for name in args.without)
    print(f"without: {' '.join(args.without)}")
    print(f"load {' '.join(f'{v:.2f}' for v in os.getloadavg())}; per token, thread CPU ms")
    print(f"{'model':28s} {'with':>7s} {'without':>8s} {'saved':>6s}   norms rotary  fused us"
          "  layers us")
    for path in args.models:
        w, wo = decode(path, args.tokens, args.repeats)
        (n, r), fused, layered = kernels(path)
        name = f"{path.parent.name}/{path.name}"[-28:]
        print(f"{name:28s} {w:7.3f} {wo:8.3f} {100 * (wo - w) / wo:5.1f}%   {n:5d} {r:6d}  "
              f"{fused:8.1f}  {layered:9.1f}")


if __name__ == "__main__":
    main()
