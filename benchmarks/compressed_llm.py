"""Decode a weight-compressed stateful LLM export token by token: irrun with its weights kept
compressed (``IRRUN_COMPRESSED=1``) and folded to f32 (``IRRUN_COMPRESSED=0``), with and
without ``IRRUN_JIT=1``, against OpenVINO's CPU plugin; per-token time and peak memory.

    python benchmarks/compressed_llm.py                            # tests/stateful/llama_int4
    python benchmarks/compressed_llm.py path/to/export --tokens 16

Each setting runs in a process of its own (so that its peak resident memory, ``VmHWM``, is
its own): it loads the model, greedily decodes ``--tokens`` tokens after a prompt of 8 and
reports the median CPU time of a decode step after the first two (``time.process_time``
around each ``Request`` run: the machine may be shared), the load time and its peak
memory.  OpenVINO runs with one thread, f32 inference and KV cache, and
``DYNAMIC_QUANTIZATION_GROUP_SIZE`` 0 (it decompresses the weights, as irrun does).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, os, sys, time
import numpy as np
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
def step_feeds(ids, past, names):
    n = ids.shape[1]
    feeds = {"input_ids": ids, "attention_mask": np.ones((1, past + n), np.int64)}
    if "position_ids" in names:
        feeds["position_ids"] = np.arange(past, past + n, dtype=np.int64)[None]
    if "beam_idx" in names:
        feeds["beam_idx"] = np.zeros(1, np.int32)
    return feeds
kind, folder, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
xml = os.path.join(folder, "openvino_model.xml")
prompt = np.arange(1, 9, dtype=np.int64)[None]
steps, ids = [], prompt
start = time.perf_counter()
if kind == "openvino":
    import openvino as ov
    compiled = ov.Core().compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": 1, "KV_CACHE_PRECISION": "f32",
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0})
    request = compiled.create_infer_request()
    names = {p.get_any_name() for p in compiled.inputs}
    load = time.perf_counter() - start
    request.reset_state()
    past = 0
    for _ in range(tokens):
        n = ids.shape[1]
        feeds = step_feeds(ids, past, names)
        t = time.process_time()
        logits = request.infer(feeds)["logits"]
        steps.append(time.process_time() - t)
        past += n
        ids = np.array([[int(np.argmax(logits[0, -1]))]], np.int64)
else:
    sys.path.insert(0, sys.argv[4])
    import irrun
    model = irrun.load(xml)
    load = time.perf_counter() - start
    describe = model.folding.describe() if model.folding is not None else []
    request = model.create_request()
    names = {s.name for s in model.inputs}
    past = 0
    for _ in range(tokens):
        n = ids.shape[1]
        feeds = step_feeds(ids, past, names)
        t = time.process_time()
        logits = request.run(feeds)["logits"]
        steps.append(time.process_time() - t)
        past += n
        ids = np.array([[int(np.argmax(logits[0, -1]))]], np.int64)
print(json.dumps({"step_ms": float(np.median(steps[2:])) * 1e3, "load_s": load, "hwm": hwm(),
                  "describe": describe if kind != "openvino" else []}))
"""

_BASE = r"""
import numpy, openvino, irrun
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]) * 1024)
"""

SETTINGS = {
    "irrun compressed": ("irrun", {"IRRUN_COMPRESSED": "1"}),
    "irrun compressed JIT": ("irrun", {"IRRUN_COMPRESSED": "1", "IRRUN_JIT": "1"}),
    "irrun folded f32 JIT": ("irrun", {"IRRUN_COMPRESSED": "0", "IRRUN_JIT": "1"}),
    "irrun folded f32": ("irrun", {"IRRUN_COMPRESSED": "0"}),
    "OpenVINO": ("openvino", {}),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "tests/stateful/llama_int4"))
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--skip", action="append", default=[], help="a setting to leave out")
    args = parser.parse_args(argv)
    env = dict(os.environ, CI="true", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    base = int(subprocess.run([sys.executable, "-c", _BASE], capture_output=True, text=True,
                              check=True, env=env).stdout.split()[-1])  # fmt: skip
    # numba's compiler, which a JIT setting imports where it compiles, is no weight's.
    jit_base = int(subprocess.run([sys.executable, "-c", "import numba\n" + _BASE],
                                  capture_output=True, text=True, check=True,
                                  env=env).stdout.split()[-1])  # fmt: skip
    size = (Path(args.folder) / "openvino_model.bin").stat().st_size
    print(f"{args.folder}: .bin {size / 2**20:.1f} MiB; {args.tokens} tokens after 8, median "
          f"CPU ms of a step after the first two, 1 thread; peak RSS over {base / 2**20:.0f} "
          "MiB (a process that imports numpy, openvino and irrun; numba too: "
          f"{jit_base / 2**20:.0f} MiB, imported by a JIT setting that compiles)")  # fmt: skip
    results = {}
    for name, (kind, extra) in SETTINGS.items():
        if name in args.skip:
            continue
        out = subprocess.run([sys.executable, "-c", _CHILD, kind, args.folder, str(args.tokens),
                              str(ROOT)], capture_output=True, text=True,
                             env={**env, **extra})  # fmt: skip
        if out.returncode:
            print(f"  {name}: failed\n{out.stderr[-2000:]}")
            continue
        results[name] = json.loads(out.stdout.splitlines()[-1])
    ov_ms = results.get("OpenVINO", {}).get("step_ms")
    for name, r in results.items():
        over = r["hwm"] - base
        ratio = f"{r['step_ms'] / ov_ms:6.2f}x OpenVINO" if ov_ms else ""
        print(f"  {name:21s} {r['step_ms']:9.2f} ms/token {ratio}  load {r['load_s']:6.1f} s  "
              f"peak RSS {r['hwm'] / 2**20:7.0f} MiB, {over / 2**20:6.0f} MiB over the imports "
              f"= {over / size:5.2f}x the .bin")  # fmt: skip
        for line in r["describe"]:
            print(f"      {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
