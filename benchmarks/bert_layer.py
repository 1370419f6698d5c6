"""Time one BERT-tiny encoder layer in irrun against OpenVINO's CPU plugin, one thread each.

    python benchmarks/bert_layer.py              # medians of 25 interleaved runs
    python benchmarks/bert_layer.py --quick      # 5 runs
    python benchmarks/bert_layer.py --batch 4 --seq 256
    python benchmarks/bert_layer.py --runs 100 --repeat 5   # on a busy machine

BERT-tiny (hidden 128, 2 heads, FFN 512) as OpenVINO's PyTorch frontend converts an
encoder layer: Q, K and V projections (MatMul + Add), heads split by Reshape and
Transpose, ScaledDotProductAttention-13 with an additive float mask, the output
projection, residual Add and LayerNorm (MVN-6 with scale and shift), the FFN with
Gelu (erf), and the second residual and LayerNorm.  Weights are seeded random
values.  Both run in this process on one thread (BLAS too), interleaved run by run;
the outputs are compared (max abs difference relative to the output's scale) and the
per-op split of irrun's time is printed (from ``Model.run``'s ``on_layer`` timings).
With ``--repeat K`` the interleaved medians are taken K times and the ratio judged is the
median of the K ratios (a machine shared with other work moves single medians by 10%).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import openvino as ov  # noqa: E402
from openvino import opset1, opset6, opset7, opset13  # noqa: E402
from run import _interleaved  # noqa: E402

import irrun  # noqa: E402

HIDDEN, HEADS, FFN = 128, 2, 512


def bert_layer(batch: int, seq: int, seed: int = 0) -> ov.Model:
    """One encoder layer on ``x`` [batch, seq, 128] and ``mask`` [batch, 1, 1, seq]."""
    rng = np.random.default_rng(seed)
    x = opset1.parameter([batch, seq, HIDDEN], np.float32, name="x")
    mask = opset1.parameter([batch, 1, 1, seq], np.float32, name="mask")
    x.output(0).get_tensor().set_names({"x"})
    mask.output(0).get_tensor().set_names({"mask"})

    def linear(t, cin, cout):
        w = (rng.standard_normal((cout, cin)) / np.sqrt(cin)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        return opset1.add(opset1.matmul(t, opset1.constant(w), False, True), opset1.constant(b))

    def heads(t):
        shaped = opset1.reshape(t, opset1.constant(np.int64([0, 0, HEADS, HIDDEN // HEADS])), True)
        return opset1.transpose(shaped, opset1.constant(np.int64([0, 2, 1, 3])))

    def layer_norm(t):
        axes = opset1.constant(np.int64([-1]))
        n = opset6.mvn(t, axes, True, 1e-12, "inside_sqrt")
        gamma = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
        beta = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
        return opset1.add(opset1.multiply(n, opset1.constant(gamma)), opset1.constant(beta))

    q, k, v = (heads(linear(x, HIDDEN, HIDDEN)) for _ in range(3))
    attn = opset13.scaled_dot_product_attention(q, k, v, mask, causal=False)
    merged = opset1.reshape(
        opset1.transpose(attn, opset1.constant(np.int64([0, 2, 1, 3]))),
        opset1.constant(np.int64([0, 0, HIDDEN])), True,
    )  # fmt: skip
    h = layer_norm(opset1.add(linear(merged, HIDDEN, HIDDEN), x))
    ffn = linear(opset7.gelu(linear(h, HIDDEN, FFN), "erf"), FFN, HIDDEN)
    out = layer_norm(opset1.add(ffn, h))
    out.output(0).get_tensor().set_names({"out"})
    return ov.Model([out.output(0)], [x, mask], "bert_tiny_layer")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 25")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--runs", type=int, help="interleaved runs per median (default 25)")
    parser.add_argument("--repeat", type=int, default=1, help="medians taken (default 1)")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 25)

    model = bert_layer(args.batch, args.seq)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((args.batch, args.seq, HIDDEN)).astype(np.float32)
    mask = np.zeros((args.batch, 1, 1, args.seq), np.float32)
    mask[..., args.seq * 3 // 4 :] = -10000.0  # padding tokens, as BERT's extended mask
    feeds = {"x": x, "mask": mask}

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bert_layer.xml"
        ov.save_model(model, path, compress_to_fp16=False)
        ours = irrun.load(path, threads=1)
        compiled = ov.Core().compile_model(
            model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
        )
        request = compiled.create_infer_request()
        want = request.infer(feeds)[compiled.output(0)].copy()
        got = ours.run(feeds)["out"]
        error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        rounds = [
            _interleaved(
                {"irrun": lambda: ours.run(feeds), "openvino": lambda: request.infer(feeds)}, runs
            )
            for _ in range(max(1, args.repeat))
        ]
        split: Counter[str] = Counter()
        for _ in range(3):
            ours.run(feeds, on_layer=lambda r: split.update({r.ref.type: r.seconds}))

    ratios = sorted(t["irrun"] / t["openvino"] for t in rounds)
    ratio = statistics.median(ratios)
    times = {k: statistics.median(t[k] for t in rounds) for k in ("irrun", "openvino")}
    print(f"BERT-tiny layer, batch {args.batch}, seq {args.seq}, {runs} interleaved runs"
          f"{f' x {len(rounds)}' if len(rounds) > 1 else ''}, 1 thread each")  # fmt: skip
    print(f"  irrun     {times['irrun']:8.3f} ms")
    print(f"  OpenVINO  {times['openvino']:8.3f} ms")
    if len(rounds) > 1:
        print("  ratios    " + " ".join(f"{r:.2f}" for r in ratios))
    print(f"  ratio     {ratio:8.2f}x   (target: <= 2.0x)   max error {error:.1e} of scale")
    if split:
        total = sum(split.values())
        top = ", ".join(f"{k} {v / total:.0%}" for k, v in split.most_common(6))
        print(f"  irrun's time by op (each layer a step, no passes): {top}")
    return 0 if ratio <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
