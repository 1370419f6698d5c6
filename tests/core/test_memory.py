"""The memory budget: a run's tensors are sized from shapes before anything is allocated.

A run that would not fit is refused up front with one line naming the layer, the tensor and
its size; validate warns of it; a tensor no machine can hold is an error; random inputs take
their own memory and no more.  Sizes below are worked out by hand from the shapes.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli

import irrun
from irrun.core.memory import format_bytes, parse_size, plan_peak
from irrun.core.model import random_array

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DEMO = MODELS / "demo.xml"
GiB = 2**30




@pytest.fixture(scope="module")
def wide_pads(tmp_path_factory) -> Path:
    """A 3x3 max pool (OpenVINO-written, so every declared dim is consistent) whose
    pads_end of 2^31 makes each output [1,1,4,2147483651]: 32 GiB as f32 or i32."""
    ov = pytest.importorskip("openvino")
    from openvino import opset8

    p = opset8.parameter([1, 1, 3, 3], ov.Type.f32, name="x")
    pool = opset8.max_pool(p, [1, 1], [1, 1], [1, 1], [1, 2**31], [2, 2], "floor", "explicit",
                           ov.Type.i32)  # fmt: skip
    pool.set_friendly_name("pool")  # not OpenVINO's numbered name, which other tests shift
    path = tmp_path_factory.mktemp("wide") / "pads.xml"
    ov.save_model(ov.Model(pool.outputs(), [p]), path)
    return path


# 4 * 2147483651 elements of 4 bytes: 32 GiB and 16 bytes.
WIDE = 4 * (2**31 + 3) * 4


def test_sizes_by_hand():
    assert parse_size("1.5G") == 3 * GiB // 2
    assert parse_size("100K") == 102400
    assert format_bytes(WIDE) == "32.0 GiB"
    assert format_bytes(2 * WIDE) == "64.0 GiB"
    # Alive at each step: what came before and is still read, plus the step's outputs.
    steps = [((0,), (), False), ((1,), (), True), ((2, 3), (1,), True), ((4,), (0, 2, 3), True)]
    peak = plan_peak(steps, [1000, 10, 20, 30, 5])
    # The Const (slot 0) is a view of the weights: not counted, and not subtracted.
    assert (peak.bytes, peak.step, peak.slot, peak.slot_bytes) == (60, 2, 3, 30)


def test_a_run_over_the_budget_is_refused_before_it_starts(wide_pads, capsys, tmp_path):
    out = tmp_path / "out.npz"
    rc, stdout, err = run_cli(capsys, str(wide_pads), "--max-memory", "1G", "-o", str(out))
    assert (rc, stdout) == (1, "")
    assert err == (
        f"irrun: error: {wide_pads}:15: layer 1 'pool' (MaxPool-v8): the run needs 1.97 TiB "
        "of tensors at this layer, more than the 1.00 GiB allowed (--max-memory, or max_memory= "
        "in Python), of which its kernel's scratch space is 1.91 TiB\n"
    )
    # (Its outputs, f32 and i32 [1,1,4,2147483651], are 32 GiB each; the fast kernel gives
    # way to the reference at pads of 2**31, whose gather of each window's taps, ranks and
    # positions is declared at 60 bytes an output element.)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_default_budget_is_the_memory_available(wide_pads, capsys):
    # 2 TiB is more than any CI machine has left; the message says where the limit is from.
    rc, _, err = run_cli(capsys, str(wide_pads))
    assert rc == 1
    assert "the run needs 1.97 TiB of tensors at this layer, more than the " in err
    assert "available to this process (--max-memory, or max_memory= in Python, sets another " \
           "limit)" in err  # fmt: skip


def test_validate_warns_of_tensors_over_the_budget(wide_pads, capsys):
    rc, out, _ = run_cli(capsys, "validate", str(wide_pads), "--max-memory", "1G")
    assert rc == 0
    assert out.splitlines() == [
        f"{wide_pads}:26: warning: layer 1 'pool' (MaxPool-v8) port 1: output 1 is "
        "f32[1,1,4,2147483651], 32.0 GiB: more than the 1.00 GiB allowed; a run would be refused",
        f"{wide_pads}:32: warning: layer 1 'pool' (MaxPool-v8) port 2: output 2 is "
        "i32[1,1,4,2147483651], 32.0 GiB: more than the 1.00 GiB allowed; a run would be refused",
        f"{wide_pads}: valid (2 warnings)",
    ]
    assert run_cli(capsys, "validate", str(wide_pads), "--max-memory", "2T")[1] == \
        f"{wide_pads}: valid\n"  # fmt: skip
    assert run_cli(capsys, "validate", str(wide_pads), "--strict", "--max-memory", "1G")[0] == 1


def test_validate_warns_of_a_run_whose_peak_is_over(capsys):
    # No tensor of the demo is over 64 KiB, but its first pool holds its input,
    # f32[1,16,32,32] (64 KiB), its output (16 KiB) and the scratch its fast kernel
    # declares (it takes this geometry): copies of the input and the chunks in flight,
    # 720 KiB.
    rc, out, _ = run_cli(capsys, "validate", str(DEMO), "--max-memory", "64K")
    assert rc == 0
    assert out.splitlines()[0] == (
        f"{DEMO}:91: warning: layer 5 'pool1' (MaxPool-v1): a run needs 800 KiB of tensors "
        "at this layer, more than the 64.0 KiB allowed (its kernel's scratch space is "
        "720 KiB); it would be refused"
    )
    diags = irrun.validate(DEMO, max_memory=64 * 1024)
    assert [(d.level, d.code) for d in diags] == [("warning", "over-budget")]
    assert irrun.load(DEMO, max_memory="64K").validate()[0].message == diags[0].message


def test_the_api_takes_a_budget_and_keeps_it(tmp_path):
    m = irrun.load(DEMO, max_memory=819200)  # exactly the peak (see above): allowed
    x = np.load(MODELS / "demo.inputs.npz")["image"]
    assert m.run(x)["probabilities"].shape == (1, 10)
    m.max_memory = 819200 - 1
    with pytest.raises(irrun.IrrunError, match=r"needs 800 KiB of tensors .* 800 KiB allowed"):
        m.run(x)
    # Pickles carry the budget to worker processes.
    assert pickle.loads(pickle.dumps(m)).max_memory == 819200 - 1
    m.max_memory = None
    assert m.max_memory is None and m.run(x)["probabilities"].shape == (1, 10)
    for bad in ("lots", -1, 1.5, True):
        with pytest.raises(irrun.IrrunError, match="max_memory"):
            irrun.load(DEMO, max_memory=bad)


def test_a_dynamic_model_is_planned_with_the_shapes_of_its_inputs():
    m = irrun.load(MODELS / "pooling_chain.xml", max_memory="1M")
    m.reshape({"image": ["?", 3, "?", "?"]})
    assert m.run(np.zeros((1, 3, 64, 64), np.float32))["pooled"].shape == (1, 3, 2, 2)
    # stem_pool's input, [4,3,256,256] f32 (3 MiB), its values and indices (768 KiB each)
    # and its fast kernel's scratch: copies of the input and the chunks in flight.
    with pytest.raises(irrun.IrrunError) as caught:
        m.run(np.zeros((4, 3, 256, 256), np.float32))
    # (The chunks in flight are one per thread this process may use: 33.8 MiB on two.)
    assert re.fullmatch(
        r"the run needs [\d.]+ MiB of tensors at this layer, more than the 1\.00 MiB allowed "
        r"\(--max-memory, or max_memory= in Python\), of which its kernel's scratch space is "
        r"[\d.]+ MiB", caught.value.message)
    assert caught.value.layer.name == "stem_pool"


def test_a_tensor_no_machine_can_hold_is_an_error(tmp_path, capsys):
    text = (MODELS / "maxpool_example1.xml").read_text()
    path = tmp_path / "m.xml"
    path.write_text(text.replace('shape="1,1,3,3"', 'shape="1,1,99999999999,99999999999"'))
    path.with_suffix(".bin").write_bytes((MODELS / "maxpool_example1.bin").read_bytes())
    finding = (f"{path}:7: error: layer 0 'input' (Parameter-v1) port 0: output 0 would be "
               "f32[1,1,99999999999,99999999999], 34694 EiB: more than NumPy can index (2^63 "
               "bytes)")  # fmt: skip
    rc, out, _ = run_cli(capsys, "validate", str(path))
    assert rc == 1 and out.splitlines()[0] == finding
    # The pool's outputs grow from it: they are not reported again.
    assert [d.code for d in irrun.validate(path)].count("impossible-size") == 1
    rc, out, err = run_cli(capsys, str(path))
    assert (rc, out) == (1, "")
    assert err == f"irrun: error: {finding.replace(': error:', ':', 1)}\n"


def test_random_inputs_need_their_own_memory_and_no_more():
    # 16 MiB of f32: drawn in float64 and cast at once, the draw alone took 32 MiB more.
    shape = (1, 4, 1024, 1024)
    tracemalloc.start()
    try:
        x = random_array(np.random.default_rng(0), shape, np.dtype(np.float32))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert x.nbytes == 16 * 2**20
    assert peak < x.nbytes + 17 * 2**20  # a chunk of 2^20 float64 draws, and its cast
    # The same values as one draw cast at once.
    once = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert np.array_equal(x, once)


def test_random_inputs_too_large_are_refused_before_the_draw(capsys):
    rc, out, err = run_cli(capsys, str(DEMO), "--shape", "[1,3,20000,20000]", "--max-memory", "4G")
    assert (rc, out) == (1, "")
    # 1x3x20000x20000 f32 is 4.47 GiB.
    assert err == (
        f"irrun: error: {DEMO}:4: layer 0 'image' (Parameter-v1): random inputs need 4.47 GiB, "
        "more than the 4.00 GiB allowed (input 'image' f32[1,3,20000,20000] is 4.47 GiB): give "
        "smaller shapes with --shape, or another limit with --max-memory\n"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the limit")
def test_an_address_space_limit_is_the_budget(tmp_path):
    # Under `ulimit -v` the run is refused up front instead of dying in a MemoryError:
    # the demo at 2000x2000 peaks at its first pool: its input (244 MiB), its output and
    # its fast kernel's scratch (857 MiB on two threads: copies of the input, the chunks in
    # flight).
    script = (
        "import resource, sys\n"
        "from irrun.core.memory import _address_space_used\n"
        "room = _address_space_used() + 250 * 2**20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (room, room))\n"
        "from irrun.cli import main\n"
        f"sys.exit(main([{str(DEMO)!r}, '--shape', '[1,3,2000,2000]']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"irrun: error: {DEMO}:91: layer 5 'pool1' (MaxPool-v1): "
                                  "the run needs "), done.stderr
    # (1.14 GiB where two threads may run: the chunks in flight are one per thread.)
    assert re.search(r"needs [\d.]+ [MG]iB of tensors at this layer, more than the ", done.stderr)
    assert "available to this process" in done.stderr and done.stderr.count("\n") == 1


def test_max_memory_on_the_command_line_is_checked(capsys):
    rc, _, err = run_cli(capsys, str(DEMO), "--max-memory", "4 apples")
    assert rc == 2 and "argument --max-memory: '4 apples' is not a size" in err
    rc, _, _ = run_cli(capsys, str(DEMO), "--max-memory", "none")
    assert rc == 0


def test_folded_weights_are_not_tensors_of_the_run(tmp_path, capsys, monkeypatch):
    # x f32[1,64] times a u8[64,64] weight decompressed as NNCF writes it: Convert (16 KiB),
    # Subtract of the converted zero point (256 bytes, and 16 KiB out, with 64 KiB of
    # scratch: its kernel's broadcast operands), Multiply by the scale (16 KiB, and 64 KiB of
    # scratch).  Unfolded, the Subtract and the Multiply are one elementwise chain, which
    # holds its input (the Convert's output) to its end: a run's peak is at its Multiply,
    # 16384 + 256 + 16384 + 16384 + 65536 bytes.  Folded at load, only the MatMul's output
    # f32[1,64] is the run's: 256 bytes.
    ov = pytest.importorskip("openvino")
    from openvino import opset1

    rng = np.random.default_rng(0)
    x = opset1.parameter([1, 64], np.float32, name="x")
    zp = opset1.convert(opset1.constant(rng.integers(0, 256, (64, 1), dtype=np.uint8)), "f32")
    w = opset1.multiply(
        opset1.subtract(
            opset1.convert(opset1.constant(rng.integers(0, 256, (64, 64), dtype=np.uint8)), "f32"),
            zp),
        opset1.constant(np.full((64, 1), 0.01, np.float32)),
    )  # fmt: skip
    path = tmp_path / "int8.xml"
    ov.save_model(ov.Model([opset1.matmul(x, w, False, True)], [x]), path)
    feeds = np.ones((1, 64), np.float32)
    unfolded = irrun.load(path, max_memory="32K", fold_constants=False)
    with pytest.raises(irrun.IrrunError, match=r"needs 112 KiB of tensors .* 32.0 KiB allowed"):
        unfolded.run(feeds)
    # The cap is half the budget, 16 KiB: the folded weight just fits.
    folded = irrun.load(path, max_memory="32K")
    assert (folded.folding.cap, folded.folding.bytes) == (16384, 16384)
    slots = tuple(folded._output_slots.values())
    assert folded._plan_peak({}, slots, False)[0].bytes == 256
    assert unfolded._plan_peak({}, slots, False)[0].bytes == 16384 + 256 + 16384 * 2 + 65536
    assert folded.run(feeds)[folded.outputs[0].name].shape == (1, 64)
    # A run that observes every layer makes the weight again after the run (its Convert
    # and Subtract, 16 KiB each and the Subtract's scratch, beside the 256-byte input and
    # output), and is refused.
    with pytest.raises(irrun.IrrunError, match=r"needs 96\.5 KiB"):
        folded.run(feeds, on_layer=lambda layer: None)
    # validate plans the run of a loaded model: folded as load would fold it.
    assert irrun.validate(path, max_memory="32K") == []
    # Under 30 KiB the cap is 15 KiB: the weight is kept compressed (irrun.core.compressed),
    # and the run holds its product's block of decompressed channels, 16 bytes an element
    # with the codes and look-up indices beside it: here the whole 64 x 64 weight, 64 KiB,
    # so a weight this small gains nothing from staying compressed, and validate says so.
    small = irrun.load(path, max_memory="30K")
    # It holds the zero point converted to f32 (the u8 codes and the scale are the .bin).
    assert small.folding.compressed == 1 and small.folding.bytes == 256
    found = irrun.validate(path, max_memory="30K")
    assert [(d.code, d.layer.type) for d in found] == [("over-budget", "MatMul")]
    assert "its kernel's scratch space is 64.0 KiB" in found[0].message
    capped = irrun.load(path, fold_constants=1024)  # no budget: the compressed weight runs
    assert capped.folding.compressed == 1
    np.testing.assert_array_equal(capped.run(feeds)[capped.outputs[0].name],
                                  folded.run(feeds)[folded.outputs[0].name])  # fmt: skip
    # Not kept compressed, the weight is left to the runs, whose peak is over.
    monkeypatch.setenv("IRRUN_COMPRESSED", "0")
    found = irrun.validate(path, max_memory="30K")
    # (at the chain's step, named by its last layer)
    assert [(d.code, d.layer.type) for d in found] == [("over-budget", "Multiply")]
    assert "a run needs 112 KiB of tensors at this layer" in found[0].message


def test_string_tensors_are_counted_with_their_text(tmp_path):
    # A string element is an object array's pointer and a Python str: 8 + 64 bytes for
    # one of up to 15 ASCII characters (sys.getsizeof("x" * 15) is 64 in CPython).
    ov = pytest.importorskip("openvino")
    x = ov.opset1.parameter([1000], ov.Type.string, name="x")
    x.output(0).get_tensor().set_names({"x"})
    path = tmp_path / "strings.xml"
    ov.save_model(ov.Model([ov.opset1.concat([x, x], 0)], [x], "s"), path)
    text = np.array([f"word {i}" for i in range(1000)], object)
    # The user's input is theirs: the run holds the Concat's 2000 strings.
    m = irrun.load(path, max_memory=2000 * 72)
    assert m.run({"x": text})[0].tolist() == text.tolist() * 2
    m.max_memory = 2000 * 72 - 1
    with pytest.raises(irrun.IrrunError, match=r"needs 141 KiB of tensors .* output string\[2000\]"):
        m.run({"x": text})
