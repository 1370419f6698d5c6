"""Nanoseconds a weight element of the compiled compressed products (irrun.fast.compressed_jit),
against BLAS's sgemv on the decompressed f32 weight.

    python benchmarks/compressed_kernel.py                # [rows, 4096] x [4096 / 11008, 4096]
    python benchmarks/compressed_kernel.py --rows 1 4 --repeats 15

Synthetic codes and tables (the kernels' cost does not depend on the values): 4-bit codes
in groups of ``--group`` (128) with the portable kernel and, where the CPU runs it, the
AVX-512 one (:mod:`irrun.fast.compressed_vector`); 8-bit codes with their kernel and
the AVX-512 affine ones, 4-bit and 8-bit (each group's table, or each value, computed
and rounded to f16 instead of read); NumPy's
matmul on the f32 weight, BLAS at one thread.  One thread each, CPU time of the calling
thread (``time.thread_time``: the machine may be shared), the median of ``--repeats``
interleaved calls; ns per weight element (all rows together).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--channels", type=int, nargs="+", default=[4096, 11008])
    parser.add_argument("--depth", type=int, default=4096)
    parser.add_argument("--group", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    from irrun.fast import compressed_jit, compressed_vector, jit

    if not jit.enabled():
        print("the fast engine is off (numba missing or IRRUN_JIT=0)")
        return 1
    nibbles, bytes_ = compressed_jit.kernels()
    vector = compressed_vector.kernel()
    affine = compressed_vector.byte_kernel()
    rng = np.random.default_rng(0)
    k, group = args.depth, args.group
    groups = k // group
    for n in args.channels:
        packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
        table = rng.standard_normal((n * groups, 16)).astype(np.float32)
        codes = rng.integers(0, 256, (n, k), dtype=np.uint8)
        table8 = rng.standard_normal((n * groups, 256)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        for rows in args.rows:
            x = rng.standard_normal((rows, k)).astype(np.float32)
            out = np.empty((rows, n), np.float32)
            calls = {"u4 portable": (nibbles, x, packed, table, groups, group, False, out),
                     "u8": (bytes_, x, codes, table8, groups, group, False, out),
                     "sgemv f32": (np.matmul, x, w.T, out)}  # fmt: skip
            if vector is not None:
                calls["u4 AVX-512"] = (vector, x, packed, table, groups, group, False, out)
                scale = np.full(n * groups, 0.01, np.float32)
                zero = np.full(n * groups, 8, np.float32)
                calls["u4 affine AVX-512 (f16)"] = (compressed_vector.affine_nibble_kernel(), x,
                                                    packed, scale, zero, groups, group, False,
                                                    True, out)  # fmt: skip
                calls["u8 affine AVX-512 (f16)"] = (affine, x, codes, scale, zero, groups, group,
                                                    False, True, out)  # fmt: skip
            times: dict[str, list[float]] = {name: [] for name in calls}
            for fn, *call in calls.values():
                fn(*call)  # compiles
            for _ in range(args.repeats):
                for name, (fn, *call) in calls.items():
                    start = time.thread_time()
                    fn(*call)
                    times[name].append(time.thread_time() - start)
            text = ", ".join(f"{name} {np.median(t) / (n * k) * 1e9:.3f}"
                             for name, t in times.items())  # fmt: skip
            print(f"[{rows}, {k}] x [{n}, {k}]: ns an element: {text}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
