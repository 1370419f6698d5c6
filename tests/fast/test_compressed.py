"""Weights kept compressed (irrun.core.compressed, irrun.fast.compressed) against the reference.

Each model is a MatMul (or Gather) of a weight decompressed as NNCF writes it, made with
OpenVINO's opset; the reference is the same model run by the reference kernels
(``reference=True``), which decompress the whole weight.  The decompressed rows must be
its bits exactly, any block of them; a Gather's rows too.  The product sums each dot
product in BLAS's order for the block of columns it is given, so it is held to the fast
MatMul's bound: each element within 2 K u sum_k |a_ik w_kj| (u = 2^-24) of the
reference's.
"""

from __future__ import annotations

import pickle
import tracemalloc
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8

import irrun

N, K, GROUP = 40, 64, 16
F16_ARITHMETIC = {"u4": True, "i4": True, "u8": True, "i8": False}


def _const(kind: str, values: np.ndarray):
    if kind in ("u4", "i4"):
        return ov.op.Constant(getattr(ov.Type, kind), ov.Shape(values.shape),
                              values.reshape(-1).tolist())  # fmt: skip
    return opset1.constant(values)


def _weight(rng, kind: str, zero_point: bool, group: int | None, transpose_b: bool,
            n: int = N, k: int = K):  # fmt: skip
    """A decompression chain of ``kind`` codes into a 2-D f32 weight named ``w``: [n, k]
    for ``transpose_b``, else [k, n]."""
    if kind == "f16":
        shape = (n, k) if transpose_b else (k, n)
        w = opset1.convert(opset1.constant(rng.standard_normal(shape).astype(np.float16)), "f32")
        w.output(0).get_tensor().set_names({"w"})
        return w
    lo, hi = {"u4": (0, 16), "i4": (-8, 8), "u8": (0, 256), "i8": (-128, 128)}[kind]
    dtype = np.int8 if kind[0] == "i" else np.uint8
    if group is not None:  # channels first, groups along K (only transpose_b)
        shape, side = (n, k // group, group), (n, k // group, 1)
    else:
        shape, side = ((n, k), (n, 1)) if transpose_b else ((k, n), (1, n))
    codes = rng.integers(lo, hi, shape).astype(dtype)
    half = F16_ARITHMETIC[kind]
    work = "f16" if half else "f32"
    t = opset1.convert(_const(kind, codes), work)
    if zero_point:
        zp = rng.integers(lo, hi, side).astype(dtype)
        t = opset1.subtract(t, opset1.convert(_const(kind, zp), work))
    scale = (rng.uniform(0.5, 1.5, side) / 16).astype(np.float16 if half else np.float32)
    t = opset1.multiply(t, opset1.constant(scale))
    if group is not None:
        t = opset1.reshape(t, opset1.constant(np.int64([n, k])), False)
    if half:
        t = opset1.convert(t, "f32")
    t.output(0).get_tensor().set_names({"w"})
    return t


def _matmul_model(path: Path, kind: str, zero_point: bool, group: int | None,
                  transpose_b: bool, x_shape: tuple[int, ...]) -> Path:  # fmt: skip
    rng = np.random.default_rng(hash((kind, zero_point, group, transpose_b)) % 2**32)
    x = opset1.parameter(list(x_shape), np.float32, name="x")
    w = _weight(rng, kind, zero_point, group, transpose_b)
    y = opset1.matmul(x, w, False, transpose_b)
    y.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([y.output(0)], [x], "m"), path, compress_to_fp16=False)
    return path


def _weight_of(model: irrun.Model):
    weights = [s.kernel.weight for s in model._plan.steps if hasattr(s.kernel, "weight")]
    return weights[0] if weights else None


CASES = [(kind, zp, group, tb) for kind in ("u4", "i4", "u8", "i8") for zp in (True, False)
         for group, tb in ((None, True), (None, False), (GROUP, True))] + [
        ("f16", False, None, True), ("f16", False, None, False)]  # fmt: skip


@pytest.mark.parametrize(("kind", "zero_point", "group", "transpose_b"), CASES)
@pytest.mark.parametrize("x_shape", [(1, K), (3, K), (2, 5, K)])
def test_compressed_matmul_matches_the_reference(tmp_path, monkeypatch, kind, zero_point,
                                                 group, transpose_b, x_shape):  # fmt: skip
    path = _matmul_model(tmp_path / "m.xml", kind, zero_point, group, transpose_b, x_shape)
    monkeypatch.setenv("IRRUN_COMPRESSED", "1")
    model = irrun.load(path)
    reference = irrun.load(path, reference=True)
    x = np.random.default_rng(7).standard_normal(x_shape).astype(np.float32)
    want = reference.run({"x": x}, outputs=["w", "y"])
    weight = _weight_of(model)
    if kind in ("u4", "i4") and not transpose_b:
        # 4-bit channels along the last axis are not whole bytes: folded as before.
        assert weight is None and model.folding.compressed == 0 and model.folding.values == 1
        return
    assert model.folding.compressed == 1 and model.folding.values == 0
    # The decompressed values: the reference's bits, whole, by blocks and by picked rows.
    w = want["w"] if transpose_b else want["w"].T
    np.testing.assert_array_equal(weight.whole(), want["w"], strict=True)
    pick = lambda v: v if transpose_b else v.T  # noqa: E731
    np.testing.assert_array_equal(pick(weight.rows(slice(3, 17))), w[3:17], strict=True)
    if transpose_b:
        index = np.array([5, 0, 5, N - 1])
        np.testing.assert_array_equal(weight.rows(index), w[index], strict=True)
    # The product, within BLAS's rounding of the same sums.
    got = model.run({"x": x})["y"]
    a = x.reshape(-1, K).astype(np.float64)
    bound = 2 * K * 2.0**-24 * (np.abs(a) @ np.abs(w.astype(np.float64)).T)
    error = np.abs(got.reshape(-1, N).astype(np.float64) - want["y"].reshape(-1, N))
    assert got.shape == want["y"].shape and got.dtype == np.float32
    assert (error <= bound).all(), float((error - bound).max())
    # Every view of the run gives the same bits.
    seen = model.run({"x": x}, intermediate=True)
    np.testing.assert_array_equal(seen["y"], got, strict=True)
    np.testing.assert_array_equal(seen["w"], want["w"], strict=True)


def test_products_by_blocks_of_columns(tmp_path, monkeypatch):
    """Weights of several blocks (the last one short), at one row and at several."""
    monkeypatch.setattr("irrun.fast.compressed.BLOCK_BYTES", 16 * K * 4)
    for rows in (1, 4):
        path = _matmul_model(tmp_path / f"m{rows}.xml", "u4", True, GROUP, True, (rows, K))
        monkeypatch.setenv("IRRUN_COMPRESSED", "1")
        model = irrun.load(path)
        assert _weight_of(model).block_channels() == 16  # N = 40: blocks of 16, 16 and 8
        x = np.random.default_rng(rows).standard_normal((rows, K)).astype(np.float32)
        want = irrun.load(path, reference=True).run({"x": x}, outputs=["w", "y"])
        got = model.run({"x": x})["y"]
        bound = 2 * K * 2.0**-24 * (np.abs(x.astype(np.float64)) @ np.abs(want["w"].T))
        assert (np.abs(got - want["y"].astype(np.float64)) <= bound).all()
        # The blocks on two threads: the same blocks, the same bits.
        two = irrun.load(path, threads=2)
        np.testing.assert_array_equal(two.run({"x": x})["y"], got, strict=True)


def _embedding_model(path: Path, tied: bool) -> Path:
    rng = np.random.default_rng(3)
    ids = opset1.parameter([2, 3], np.int64, name="ids")
    w = _weight(rng, "u8", True, None, True)  # [N, K]: N tokens of K features
    y = opset8.gather(w, ids, opset1.constant(np.int64(0)))
    outputs = [y]
    y.output(0).get_tensor().set_names({"y"})
    if tied:  # the logits read the same weight (a tied language-model head)
        logits = opset1.matmul(y, w, False, True)
        logits.output(0).get_tensor().set_names({"logits"})
        outputs.append(logits)
    ov.save_model(ov.Model([o.output(0) for o in outputs], [ids], "e"), path,
                  compress_to_fp16=False)  # fmt: skip
    return path


@pytest.mark.parametrize("tied", [False, True])
def test_compressed_gather_is_the_reference_s_rows(tmp_path, monkeypatch, tied):
    path = _embedding_model(tmp_path / "e.xml", tied)
    monkeypatch.setenv("IRRUN_COMPRESSED", "1")
    model = pickle.loads(pickle.dumps(irrun.load(path)))  # loaded again, kept compressed
    reference = irrun.load(path, reference=True)
    assert model.folding.compressed == 1 and model.folding.values == 0
    for ids in (np.int64([[0, 5, 5], [N - 1, 2, 1]]), np.int64([[-1, 3, -N], [0, 0, 1]])):
        got = model.run({"ids": ids})
        want = reference.run({"ids": ids}, outputs=["w", *got])
        np.testing.assert_array_equal(got["y"], want["y"], strict=True)
        if tied:
            bound = 2 * K * 2.0**-24 * (np.abs(want["y"].astype(np.float64))
                                        @ np.abs(want["w"].T))  # fmt: skip
            assert (np.abs(got["logits"] - want["logits"].astype(np.float64)) <= bound).all()


def test_auto_keeps_compressed_only_what_folding_would_not_hold(tmp_path, monkeypatch):
    path = _matmul_model(tmp_path / "m.xml", "u4", True, GROUP, True, (1, K))
    monkeypatch.delenv("IRRUN_COMPRESSED", raising=False)
    folded = irrun.load(path)
    assert folded.folding.values == 1 and folded.folding.compressed == 0
    capped = irrun.load(path, fold_constants=1024)  # the f32 weight (10 KiB) is above it
    assert capped.folding.compressed == 1 and capped.folding.over_cap == 0
    assert "kept 1 weight compressed" in "\n".join(capped.folding.describe())
    monkeypatch.setenv("IRRUN_COMPRESSED", "0")
    assert irrun.load(path, fold_constants=1024).folding.over_cap == 1
    reference = irrun.load(path, reference=True)
    assert reference.folding.compressed == 0
    monkeypatch.setenv("IRRUN_COMPRESSED", "maybe")
    with pytest.raises(irrun.UsageError, match="IRRUN_COMPRESSED"):
        irrun.load(path)


@pytest.mark.parametrize("engine", ["0", "1"])
def test_auto_keeps_large_weights_compressed_for_the_fast_engine(tmp_path, monkeypatch, engine):
    """With the fast engine on, ``auto`` keeps a 4-bit or 8-bit weight of ENGINE_FROM bytes
    (decompressed) or more compressed, as the engine multiplies it from its codes; smaller
    ones, f16 ones and every one with the engine off are folded."""
    from irrun.core import compressed
    from irrun.fast import jit as fast_engine

    if engine == "1":
        pytest.importorskip("numba", reason="the fast engine needs numba")
    monkeypatch.delenv("IRRUN_COMPRESSED", raising=False)
    monkeypatch.setenv("IRRUN_JIT", engine)
    fast_engine.reset()
    try:
        monkeypatch.setattr(compressed, "ENGINE_FROM", N * K * 4)  # this weight's f32 bytes
        kept = {}
        for kind in ("u4", "i8", "f16"):
            path = _matmul_model(tmp_path / f"{kind}.xml", kind, kind != "f16",
                                 GROUP if kind == "u4" else None, True, (1, K))  # fmt: skip
            kept[kind] = irrun.load(path).folding.compressed
            monkeypatch.setattr(compressed, "ENGINE_FROM", N * K * 4 + 1)
            assert irrun.load(path).folding.compressed == 0, kind  # one byte too small
            monkeypatch.setattr(compressed, "ENGINE_FROM", N * K * 4)
        on = engine == "1"
        assert kept == {"u4": int(on), "i8": int(on), "f16": 0}
    finally:
        fast_engine.reset()


def _int4_mlp(path: Path, width: int, layers: int, group: int) -> Path:
    rng = np.random.default_rng(0)
    x = opset1.parameter([1, width], np.float32, name="x")
    t = x
    for _ in range(layers):
        w = _weight(rng, "u4", True, group, True, n=width, k=width)
        t = opset1.relu(opset1.matmul(t, w, False, True))
    t.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([t.output(0)], [x], "mlp"), path, compress_to_fp16=False)
    return path


@pytest.mark.parametrize("group", [16, 128])
def test_a_compressed_model_holds_about_its_bin(tmp_path, monkeypatch, group):
    """After load, the memory a compressed int4 model holds is near its .bin (the packed
    weights are the mapped .bin; group-wise tables of 16 values are held where they are
    no larger than the packed weight, groups of 128), not the 8x of f32."""
    path = _int4_mlp(tmp_path / "mlp.xml", 256, 4, group)
    size = path.with_suffix(".bin").stat().st_size
    x = {"x": np.ones((1, 256), np.float32)}
    held = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("IRRUN_COMPRESSED", setting)
        irrun.load(path).run(x)  # what the first load imports and keeps is no weight's
        tracemalloc.start()
        model = irrun.load(path)
        model.run(x)
        held[setting] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del model
    assert held["0"] > 4 * 256 * 256 * 4  # the f32 weights, 6-8x the .bin
    assert held["1"] < (1.5 if group == 128 else 0.75) * size + 2**20, (held, size)


def _tiered_model(path: Path, kind: str, group: int | None, k: int, rows: int) -> Path:
    rng = np.random.default_rng(11)
    x = opset1.parameter([rows, k], np.float32, name="x")
    w = _weight(rng, kind, kind[0] == "u", group, True, n=N, k=k)
    y = opset1.matmul(x, w, False, True)
    y.output(0).get_tensor().set_names({"y"})
    ov.save_model(ov.Model([y.output(0)], [x], "m"), path, compress_to_fp16=False)
    return path


# (codes, group, K): tables held (no larger than the packed weight), made per block (a
# group longer than its codes), or none (the chain itself on each block).
TIERS = [("u4", 128, 256, "held"), ("i4", 128, 256, "held"), ("u4", 32, 256, "per block"),
         ("i4", 32, 256, "per block"), ("u8", None, 1024, "held"), ("i8", None, 1024, "held"),
         ("u8", None, 512, "per block"), ("u4", 16, 256, "chain")]  # fmt: skip


@pytest.mark.parametrize(("kind", "group", "k", "tier"), TIERS)
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("jit", [False, True])
def test_table_look_ups_are_the_reference_s_values(tmp_path, monkeypatch, kind, group, k, tier,
                                                   rows, jit):  # fmt: skip
    from irrun.fast import compressed_jit
    from irrun.fast import jit as engine

    if jit:
        pytest.importorskip("numba")
    monkeypatch.setenv("IRRUN_JIT", "1" if jit else "0")
    engine.reset()
    try:
        path = _tiered_model(tmp_path / "m.xml", kind, group, k, rows)
        monkeypatch.setenv("IRRUN_COMPRESSED", "1")
        model = irrun.load(path)
        weight = _weight_of(model)
        table = N * (k // (group or k)) * (16 if kind[1] == "4" else 256) * 4  # f32 entries
        assert (model.folding.compressed_held >= table) == (tier == "held")
        assert (weight.product is None) == (tier == "chain")
        x = np.random.default_rng(rows).standard_normal((rows, k)).astype(np.float32)
        want = irrun.load(path, reference=True).run({"x": x}, outputs=["w", "y"])
        np.testing.assert_array_equal(weight.whole(), want["w"], strict=True)
        index = np.array([N - 1, 0, 7, 7])
        np.testing.assert_array_equal(weight.rows(index), want["w"][index], strict=True)
        assert compressed_jit.takes(rows) == jit
        used = []  # the affine kernels' calls: where tables are held, on AVX-512
        kernel = compressed_jit.affine_kernel
        monkeypatch.setattr(compressed_jit, "affine_kernel",
                            lambda *bits: used.append(1) or kernel(*bits))  # fmt: skip
        got = model.run({"x": x})["y"]
        if jit and tier == "held":
            from irrun.fast import compressed_vector

            assert bool(used) == compressed_vector.available()
        bound = 2 * k * 2.0**-24 * (np.abs(x.astype(np.float64)) @ np.abs(want["w"].T))
        assert (np.abs(got - want["y"].astype(np.float64)) <= bound).all()
    finally:
        engine.reset()


@pytest.mark.parametrize(("groups", "group"),
                         [(1, 32), (3, 32), (5, 64), (2, 128), (7, 128), (3, 256)])
@pytest.mark.parametrize("rows", [1, 2, 5, 8])
@pytest.mark.parametrize("signed", [False, True])
def test_the_vector_kernel_sums_the_table_s_values(groups, group, rows, signed):
    """The AVX-512 4-bit kernel (where this CPU runs it) against the look-ups summed in
    f64: within the bound, for odd group counts and 1..8 rows; the portable kernel too."""
    pytest.importorskip("numba")
    from irrun.fast import compressed_jit, compressed_vector

    rng = np.random.default_rng(groups * 100 + group + rows + signed)
    n, k = 37, groups * group
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    table = rng.standard_normal((n * groups, 16)).astype(np.float32)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    nibbles = np.stack([packed & 15, packed >> 4], axis=-1).reshape(n, k).astype(np.intp)
    if signed:
        nibbles ^= 8  # two's complement nibbles: their table starts at -8
    w = np.take_along_axis(table.reshape(n, groups, 16),
                           nibbles.reshape(n, groups, group), axis=2).reshape(n, k)  # fmt: skip
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    bound = 2 * k * 2.0**-24 * (np.abs(x.astype(np.float64)) @ np.abs(w.T.astype(np.float64)))
    kernels = [compressed_jit.kernels()[0]]
    if compressed_vector.available():
        assert compressed_jit.vector_kernel(group) is compressed_vector.kernel()
        kernels.append(compressed_vector.kernel())
    for kernel in kernels:
        out = np.full((rows, n), np.nan, np.float32)
        kernel(x, packed, table, groups, group, signed, out)
        assert (np.abs(out - want) <= bound).all()
    assert compressed_jit.vector_kernel(16) is None


@pytest.mark.parametrize("half", [False, True])
@pytest.mark.parametrize("rows", [1, 3, 8])
@pytest.mark.parametrize(("groups", "group"), [(1, 1024), (3, 64), (2, 128), (5, 32)])
@pytest.mark.parametrize("codes", [16, 256])
def test_the_affine_kernels_compute_the_table_s_values(half, rows, groups, group, codes):
    """Tables that are ``R((j - zero) * scale)`` (R: f32's rounding, or f16's as an f16
    chain rounds) are recognised bit for bit, and the 8-bit and 4-bit kernels that compute
    them instead of reading them sum within the bound; a table one ulp off is not."""
    pytest.importorskip("numba")
    from irrun.fast import compressed_vector

    if not compressed_vector.available():
        pytest.skip("no AVX-512 here")
    if codes == 256 and group % 64:
        return  # the 8-bit kernel takes groups of a multiple of 64 (the caller checks)
    rng = np.random.default_rng(rows + group + half + codes)
    n, k = 21, groups * group
    scale = (rng.uniform(0.5, 1.5, n * groups) / 64).astype(np.float16 if half else np.float32)
    zero = rng.integers(0, codes, n * groups).astype(np.float32)
    j = np.arange(codes, dtype=np.float32)
    table = (j - zero[:, None]) * scale[:, None].astype(np.float32)
    if half:
        table = table.astype(np.float16).astype(np.float32)
    found = compressed_vector.affine(table)
    assert found is not None and found[2] == half
    off = table.copy()
    off[5, 7] = np.nextafter(off[5, 7], np.float32(np.inf))
    assert compressed_vector.affine(off) is None
    signed = bool(rows % 2)
    code = rng.integers(0, codes, (n, k), dtype=np.uint8)
    j = (code ^ (codes // 2 if signed else 0)).reshape(n * groups, group).astype(np.intp)
    w = np.take_along_axis(table, j, axis=1).reshape(n, k).astype(np.float64)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    out = np.full((rows, n), np.nan, np.float32)
    if codes == 256:
        kernel, data = compressed_vector.byte_kernel(), code
    else:  # two codes a byte, low nibble first
        kernel, data = compressed_vector.affine_nibble_kernel(), code[:, ::2] | code[:, 1::2] << 4
    kernel(x, np.ascontiguousarray(data), *found[:2], groups, group, signed, half, out)
    bound = 2 * k * 2.0**-24 * (np.abs(x.astype(np.float64)) @ np.abs(w.T))
    assert (np.abs(out - x.astype(np.float64) @ w.T) <= bound).all()


@pytest.mark.parametrize("kind", ["u4", "u8"])
def test_without_avx512_the_portable_kernels_run(tmp_path, monkeypatch, kind):
    """Where the AVX-512 kernels cannot run, the portable ones do, within the same bound."""
    pytest.importorskip("numba")
    from irrun.fast import compressed_vector
    from irrun.fast import jit as engine

    monkeypatch.setenv("IRRUN_JIT", "1")
    monkeypatch.setenv("IRRUN_COMPRESSED", "1")
    monkeypatch.setattr(compressed_vector, "available", lambda: False)
    cached = (compressed_vector.kernel, compressed_vector.byte_kernel,
              compressed_vector.affine_nibble_kernel)  # fmt: skip
    engine.reset()
    for f in cached:
        f.cache_clear()
    try:
        k = 1024 if kind == "u8" else 256
        path = _tiered_model(tmp_path / "m.xml", kind, 128 if kind == "u4" else None, k, 2)
        model = irrun.load(path)
        assert compressed_vector.kernel() is None
        x = np.random.default_rng(3).standard_normal((2, k)).astype(np.float32)
        want = irrun.load(path, reference=True).run({"x": x}, outputs=["w", "y"])
        got = model.run({"x": x})["y"]
        bound = 2 * k * 2.0**-24 * (np.abs(x.astype(np.float64)) @ np.abs(want["w"].T))
        assert (np.abs(got - want["y"].astype(np.float64)) <= bound).all()
    finally:
        for f in cached:
            f.cache_clear()
        engine.reset()
