"""Decode a mid-size Llama token by token in irrun and in OpenVINO: time per token,
tokens/s, load time and peak memory, f32 and int4.

    CI=true /work/optvenv/bin/python benchmarks/make_llama.py   # once: the models
    python benchmarks/llama_decode.py                  # f32 and int4, 32 tokens after 16
    python benchmarks/llama_decode.py --variants int4 --tokens 16 --repeats 2
    python benchmarks/llama_decode.py --fast --json out.json   # irrun[fast] (IRRUN_JIT=1)
    python benchmarks/llama_decode.py --profile        # also where irrun's step goes

The models are ``benchmarks/models/llama_mid/{f32,int4}/`` (see ``make_llama.py``:
random-init ``LlamaForCausalLM``, 178 M parameters, exported stateful by optimum-intel).
Each variant is decoded greedily, ``--tokens`` new tokens after a prompt of ``--prompt``
seeded random ids:

- irrun through its generation API (``irrun.core.generation.generate``, what
  ``irrun generate`` runs: one stateful request, one run per token), ``threads=--threads``;
- OpenVINO's CPU plugin through a stateful infer request, configured as
  ``tests/support/ov_stateful.py``'s ``F32_CONFIG`` (f32 inference, f32 KV cache, no
  dynamic quantization of activations) with ``INFERENCE_NUM_THREADS`` = ``--threads``,
  fed as its ``openvino_greedy`` feeds them.

Both engines are loaded in this one process and decode in turn, ``--repeats`` times each,
alternating which goes first.  A token's time runs from the previous token to this one
(building the feeds, the run, the argmax); the first two tokens of each decode (the prompt
and the first single-token step, which meets new shapes) are left out, and the figure is
the median over the rest of all repeats, in CPU time of the process (``time.process_time``:
both engines run one thread, and CPU time is what the other sessions sharing the machine
take least from) and in wall time.  The tokens of both engines must agree.

Peak memory and load time come from a fresh subprocess per engine and variant, which
loads the model, decodes the same tokens once and reports its peak resident memory
(``VmHWM``: ``ru_maxrss`` of its own, see ``_rss``; the interpreter and its imports
included: ``base`` is the resident memory before the model is loaded; the irrun process
does not import OpenVINO).  They are compared with the ``.bin``'s size and the KV cache's
bytes (f32 keys and values of every layer for prompt + tokens positions).

``--json PATH`` writes ``{"rows": [...]}``, each row with ``model``, ``irrun_ms``,
``openvino_ms``, ``ratio``, ``peak_mb``, ``bin_mb``, ``kv_mb`` and more, for
``benchmarks/all.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _threads_from_argv() -> str:
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "1"


# BLAS at the engines' thread count; must be set before numpy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_from_argv())
# --fast: irrun[fast], the numba kernels where they apply; else the default install's
# NumPy kernels (the engine is on wherever numba is installed, so it is turned off).
os.environ["IRRUN_JIT"] = "1" if "--fast" in sys.argv else "0"

import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the irrun of this checkout
MODELS = HERE / "models" / "llama_mid"
VARIANTS = ("f32", "int4")
SKIP = 2  # tokens left out of the medians: the prompt's and the first single-token step


def _prompt(n: int, vocab: int = 32000) -> list[int]:
    return [int(i) for i in np.random.default_rng(28).integers(3, vocab, n)]


def _folder(variant: str) -> Path:
    folder = MODELS / variant
    if not (folder / "openvino_model.xml").is_file():
        sys.exit(f"{folder} has no openvino_model.xml: run "
                 "CI=true /work/optvenv/bin/python benchmarks/make_llama.py first")  # fmt: skip
    return folder


def _kv_bytes(folder: Path, positions: int) -> int:
    """f32 keys and values of every layer for ``positions`` tokens."""
    cfg = json.loads((folder / "config.json").read_text())
    head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    return 2 * cfg["num_hidden_layers"] * kv_heads * head * positions * 4


# --- the engines ---------------------------------------------------------------------------------


class Irrun:
    name = "irrun"

    def __init__(self, folder: Path, threads: int) -> None:
        import irrun
        from irrun.core.generation import open_language_model

        self.lm = open_language_model(folder, threads=threads)
        self.model: irrun.Model = self.lm.model

    def decode(self, prompt: list[int], tokens: int) -> tuple[list[int], list[float], list[float]]:
        """The greedy tokens, and each token's CPU and wall seconds."""
        from irrun.core.generation import generate

        cpu, wall = [time.process_time()], [time.perf_counter()]

        def mark(_token: int) -> None:
            cpu.append(time.process_time())
            wall.append(time.perf_counter())

        g = generate(self.lm, prompt, tokens, ignore_eos=True, on_token=mark)
        return g.tokens, list(np.diff(cpu)), list(np.diff(wall))


class OpenVINO:
    name = "openvino"

    def __init__(self, folder: Path, threads: int) -> None:
        import openvino as ov

        sys.path.insert(0, str(ROOT / "tests"))
        from support.ov_stateful import F32_CONFIG, _feeds

        self._feeds = _feeds
        config = {**F32_CONFIG, "INFERENCE_NUM_THREADS": threads}
        self.compiled = ov.Core().compile_model(str(folder / "openvino_model.xml"), "CPU", config)
        self.names = {p.get_any_name(): p.get_element_type().to_dtype()
                      for p in self.compiled.inputs}  # fmt: skip
        self.logits = self.compiled.output("logits")
        self.request = self.compiled.create_infer_request()

    def decode(self, prompt: list[int], tokens: int) -> tuple[list[int], list[float], list[float]]:
        cpu, wall = [time.process_time()], [time.perf_counter()]
        self.request.reset_state()
        ids = np.asarray(prompt, np.int64).reshape(1, -1)
        past = 0
        out: list[int] = []
        for _ in range(tokens):
            result = self.request.infer(self._feeds(self.names, ids, past))
            token = int(np.argmax(result[self.logits][0, -1]))
            out.append(token)
            cpu.append(time.process_time())
            wall.append(time.perf_counter())
            past += ids.shape[1]
            ids = np.array([[token]], np.int64)
        return out, list(np.diff(cpu)), list(np.diff(wall))


ENGINES = {"irrun": Irrun, "openvino": OpenVINO}


# --- a fresh process per engine: load time and peak memory ------------------------------------


def _rss(field: str) -> int:
    """A figure of /proc/self/status in bytes (VmHWM: peak resident memory, VmRSS: now);
    ``ru_maxrss`` elsewhere.  Linux carries ``ru_maxrss`` over an exec from the process that
    forked, so a child of a process holding a model would report that process's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(engine: str, variant: str, prompt: int, tokens: int, threads: int) -> None:
    """Load, decode once, and print JSON: load seconds, RSS before the load, peak RSS."""
    folder = _folder(variant)
    if engine == "irrun":
        import irrun  # noqa: F401  (its imports count in the base, as OpenVINO's do)
    else:
        import openvino  # noqa: F401
    base = _rss("VmRSS")
    start = time.perf_counter()
    runner = ENGINES[engine](folder, threads)
    load = time.perf_counter() - start
    out, _, _ = runner.decode(_prompt(prompt), tokens)
    print(json.dumps({"load_s": load, "base_bytes": base, "peak_bytes": _rss("VmHWM"),
                      "tokens": out}))  # fmt: skip


def _fresh(engine: str, variant: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", engine, variant, "--prompt", str(args.prompt),
           "--tokens", str(args.tokens), "--threads", str(args.threads)]  # fmt: skip
    if args.fast:
        cmd.append("--fast")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- where irrun's step goes -----------------------------------------------------------------


def profile_step(runner: Irrun, prompt: list[int], at: int, top: int = 8) -> None:
    """Where a single-token step goes, from ``at`` tokens on: each step meets a KV cache
    one longer, as in a decode.  Five plain steps give the step's CPU and wall time (the
    fastest of each: other work on the machine only adds to them), three observed layer
    by layer its kernels' (wall) time by op type (each layer at its fastest); the step's
    CPU time less the kernels' is what it spends outside them (shape inference and the
    memory check for new shapes, the loop), meaningful on a quiet machine, where wall and
    CPU time agree; one more plain step under cProfile names the functions."""
    import cProfile
    import pstats

    from irrun.core.generation import step_inputs

    model = runner.model
    specs = {s.name: s for s in model.inputs}
    request = model.create_request()
    sequence = list(prompt)
    seen = 0

    def step(on_layer=None) -> tuple[float, float]:
        nonlocal seen
        feeds = step_inputs(specs, sequence[seen:], seen)
        c0, t0 = time.process_time(), time.perf_counter()
        out = request.run(feeds, ["logits"], on_layer=on_layer)
        took = time.process_time() - c0, time.perf_counter() - t0
        seen = len(sequence)
        sequence.append(int(np.argmax(out["logits"][0, -1])))
        return took

    for _ in range(at):
        step()
    plain = [step() for _ in range(5)]
    best: dict[tuple[str, int], tuple[str, float]] = {}

    def on_layer(run) -> None:
        if run.apart:  # not run by a plain run (a layer folded at load, shown again)
            return
        key = (run.ref.id, run.line)
        if key not in best or run.seconds < best[key][1]:
            best[key] = (run.ref.type, run.seconds)

    for _ in range(3):
        step(on_layer)
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for kind, s in best.values():
        seconds[kind] += s
        count[kind] += 1
    kernels = sum(seconds.values())
    cpu, wall = min(c for c, _ in plain), min(w for _, w in plain)
    outside = cpu - kernels
    print(f"  irrun step at {seen} positions: {cpu * 1e3:.1f} ms CPU ({wall * 1e3:.1f} wall); "
          f"kernels {kernels * 1e3:.1f} ms, outside them {outside * 1e3:.1f} ms")  # fmt: skip
    for kind, s in sorted(seconds.items(), key=lambda r: -r[1])[:top]:
        print(f"    {kind:28s} {s * 1e3:8.2f} ms  {count[kind]:4d} layers")
    profiler = cProfile.Profile()
    profiler.runcall(step)
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])  # cumulative time
    print("    cProfile, cumulative (one plain step, with the profiler's overhead):")
    shown = 0
    for (path, line, name), (_, _, _, cumulative, _) in rows:
        if "irrun" in path and name not in ("step", "run", "_execute", "generate"):
            where = path[path.index("irrun"):]
            print(f"      {cumulative * 1e3:8.2f} ms  {name} ({where}:{line})")
            shown += 1
            if shown == top:
                break


# --- the benchmark ----------------------------------------------------------------------------


def run_variant(variant: str, args: argparse.Namespace) -> dict:
    folder = _folder(variant)
    prompt = _prompt(args.prompt)
    runners = [Irrun(folder, args.threads), OpenVINO(folder, args.threads)]
    cpu: dict[str, list[float]] = {r.name: [] for r in runners}
    wall: dict[str, list[float]] = {r.name: [] for r in runners}
    tokens: dict[str, list[int]] = {}
    for rep in range(args.repeats):
        for runner in runners if rep % 2 == 0 else runners[::-1]:
            out, c, w = runner.decode(prompt, args.tokens)
            cpu[runner.name] += c[SKIP:]
            wall[runner.name] += w[SKIP:]
            if tokens.setdefault(runner.name, out) != out:
                sys.exit(f"{variant}: {runner.name} decoded other tokens in another repeat")
    agree = 0
    while agree < args.tokens and tokens["irrun"][agree] == tokens["openvino"][agree]:
        agree += 1
    irrun_ms = statistics.median(cpu["irrun"]) * 1e3
    ov_ms = statistics.median(cpu["openvino"]) * 1e3
    row = {
        "model": f"llama_mid_{variant}",
        "irrun_ms": round(irrun_ms, 2),
        "openvino_ms": round(ov_ms, 2),
        "ratio": round(irrun_ms / ov_ms, 3),
        "irrun_wall_ms": round(statistics.median(wall["irrun"]) * 1e3, 2),
        "openvino_wall_ms": round(statistics.median(wall["openvino"]) * 1e3, 2),
        "irrun_tokens_per_s": round(1e3 / irrun_ms, 2),
        "openvino_tokens_per_s": round(1e3 / ov_ms, 2),
        "tokens_agree": agree,
        "tokens": args.tokens,
        "bin_mb": round((folder / "openvino_model.bin").stat().st_size / 2**20, 1),
        "kv_mb": round(_kv_bytes(folder, args.prompt + args.tokens) / 2**20, 2),
    }
    if args.profile:
        profile_step(runners[0], prompt, args.tokens // 2)
    del runners
    if not args.no_memory:
        for engine in ENGINES:
            fresh = _fresh(engine, variant, args)
            if fresh["tokens"] != tokens[engine]:
                sys.exit(f"{variant}: {engine} decoded other tokens in a fresh process")
            key = "" if engine == "irrun" else "openvino_"
            row[f"{key}peak_mb"] = round(fresh["peak_bytes"] / 2**20, 1)
            row[f"{key}base_mb"] = round(fresh["base_bytes"] / 2**20, 1)
            row[f"{key}load_s"] = round(fresh["load_s"], 3)
        row["peak_over_bin_kv"] = round(row["peak_mb"] / (row["bin_mb"] + row["kv_mb"]), 2)
    return row


def _print(row: dict) -> None:
    irrun_rate, ov_rate = row["irrun_tokens_per_s"], row["openvino_tokens_per_s"]
    print(f"{row['model']:16s} irrun {row['irrun_ms']:7.1f} ms/token ({irrun_rate:5.1f} "
          f"tokens/s, wall {row['irrun_wall_ms']:.1f}), OpenVINO {row['openvino_ms']:6.1f} "
          f"ms/token ({ov_rate:5.1f} tokens/s, wall {row['openvino_wall_ms']:.1f}): "
          f"{row['ratio']:.2f}x; tokens agree {row['tokens_agree']}/{row['tokens']}")  # fmt: skip
    if "peak_mb" in row:
        print(f"{'':16s} peak RSS irrun {row['peak_mb']:.0f} MB (base {row['base_mb']:.0f}), "
              f"OpenVINO {row['openvino_peak_mb']:.0f} MB (base {row['openvino_base_mb']:.0f}); "
              f".bin {row['bin_mb']:.0f} MB, KV cache {row['kv_mb']:.2f} MB: irrun's peak "
              f"{row['peak_over_bin_kv']:.2f}x .bin + KV; load irrun {row['load_s']:.2f} s, "
              f"OpenVINO {row['openvino_load_s']:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per decode (32)")
    parser.add_argument("--prompt", type=int, default=16, help="prompt length (16)")
    parser.add_argument("--threads", type=int, default=1, help="each engine's threads (1)")
    parser.add_argument("--repeats", type=int, default=3, help="decodes per engine (3)")
    parser.add_argument("--fast", action="store_true", help="irrun[fast]: IRRUN_JIT=1")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    parser.add_argument("--profile", action="store_true", help="where irrun's step goes")
    parser.add_argument("--no-memory", action="store_true", help="no fresh processes")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tokens <= SKIP:
        parser.error(f"--tokens must be more than {SKIP}")
    if args.child:
        child(*args.child, args.prompt, args.tokens, args.threads)
        return
    load = os.getloadavg()
    print(f"llama_mid decode: prompt {args.prompt}, {args.tokens} tokens, {args.repeats} "
          f"repeats, {args.threads} thread(s), irrun{'[fast]' if args.fast else ''}; "
          f"load average {load[0]:.2f}")  # fmt: skip
    rows = []
    for variant in args.variants:
        row = run_variant(variant, args)
        row.update(threads=args.threads, fast=args.fast)
        _print(row)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
