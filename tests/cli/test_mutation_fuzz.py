"""Mutated IR files through ``irrun validate`` and ``irrun run``: the promise of issue 15.

A seeded sample of mutants of every family (``tests/support/mutants.py``) goes through validate
and, when validate passes, through ``run -o out.npz``, each in a forked worker with a
memory limit and a time limit.  None may crash, hang, show a traceback or an internal
error, print other than one line per problem, leave a partial output file, or pass
validate and then fail to run.  Then minimal hand-made mutants, one per root cause the
fuzz found, assert the exact finding.

The mutants are fixed by the seed (CI or not): a failure names the mutant, and
``python tests/fuzz_campaign.py --seed SEED --index N`` replays it alone.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from support import mutants

import irrun
from irrun.cli import main

SEED = 20261124
PER_FAMILY = 32  # 16 families: 512 mutants, about 20 s on 2 cores (+10 s per hang)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork() for the worker processes")
def test_mutants_keep_the_promise(tmp_path):
    pool = mutants.starts()
    todo = [mutants.make_mutant(SEED, i, pool) for i in range(PER_FAMILY * len(mutants.FAMILIES))]
    assert {m.family for m in todo} == set(mutants.FAMILIES)
    failed, outcomes = [], {"validate-rejects": 0, "run-ok": 0}
    start = time.perf_counter()
    for result in mutants.run_all(todo, tmp_path, jobs=min(2, os.cpu_count() or 1)):
        found = [(cls, detail) for cls, detail in mutants.problems(result)
                 if cls not in mutants.INFO_CLASSES]  # fmt: skip
        outcomes["validate-rejects"] += result.get("validate", {}).get("rc") == 1
        outcomes["run-ok"] += result.get("run", {}).get("rc") == 0
        if found:
            failed.append(f"{result['mutant'].describe()}\n  " +
                          "\n  ".join(f"{cls}: {detail}" for cls, detail in found))  # fmt: skip
    seconds = time.perf_counter() - start
    assert not failed, (f"{len(failed)} of {len(todo)} mutants broke the promise (replay one with "
                        f"python tests/fuzz_campaign.py --seed {SEED} --index N):\n\n"
                        + "\n\n".join(failed))  # fmt: skip
    # The sample reaches both outcomes: most mutants are refused, some still run.
    assert outcomes["validate-rejects"] > len(todo) // 2 and outcomes["run-ok"] > 20, outcomes
    print(f"{len(todo)} mutants in {seconds:.1f} s")


def test_the_start_models_validate_and_run(tmp_path):
    """Every mutation starts from a model that validate passes and that runs."""
    for start in mutants.starts():
        m = mutants.Mutant(SEED, -1, start.name, "none", "", start.xml, start.weights, start.shape)
        (result,) = mutants.run_all([m], tmp_path, jobs=1)
        assert result["validate"]["rc"] == 0, (start.name, result["validate"]["out"])
        assert mutants.problems(result) == [], start.name
        assert result["run"]["rc"] == 0, start.name


def test_a_mutant_replays_from_its_seed_and_index():
    pool = mutants.starts()
    a, b = mutants.make_mutant(7, 123, pool), mutants.make_mutant(7, 123, pool)
    assert (a.xml, a.weights, a.describe()) == (b.xml, b.weights, b.describe())
    assert a.describe().startswith("mutant 123 of seed 7 (")


# --- one minimal mutant per root cause ------------------------------------------------------

RESNET = Path(__file__).resolve().parents[1] / "torch_models" / "resnet_stem.xml"


def _validate(capsys, path: Path, *args: str) -> list[str]:
    rc = main(["validate", str(path), *args])
    out = capsys.readouterr().out.splitlines()
    assert rc == (1 if "error" in out[-1] else 0)
    return out


def _copy(tmp_path: Path, source: Path, edit) -> Path:
    text = source.read_text()
    new = edit(text)
    assert new != text
    path = tmp_path / "m.xml"
    path.write_text(new)
    shutil.copy(source.with_suffix(".bin"), path.with_suffix(".bin"))
    return path


def test_a_deleted_input_port_is_one_finding_not_a_shape_rule_crash(tmp_path, capsys):
    # The Convolution's second input port (its weights) deleted: before, its shape rule
    # also ran on the one input left and failed to unpack it (an internal-error finding).
    path = _copy(tmp_path, RESNET, lambda t: re.sub(
        r'(type="Convolution".*?<input>.*?</port>)\s*<port id="1".*?</port>', r"\1", t,
        count=1, flags=re.S))  # fmt: skip
    out = _validate(capsys, path, "--shape", "[1,3,64,64]")
    assert out == [
        f"{path}:26: error: layer 2 'Multiply_2871' (Convolution-v1): has 1 input ports, "
        "expected 2",
        f"{path}:328: error: layer 2 'Multiply_2871' (Convolution-v1): edge from layer 1 port 0 "
        "enters input port 1, but the layer has input port 0",
        f"{path} with x[1,3,64,64]: 2 errors, 0 warnings",
    ]


def test_a_duplicated_input_port_is_one_finding(tmp_path, capsys):
    # A ReLU's input port written twice, so that the one edge feeds both.
    path = _copy(tmp_path, RESNET, lambda t: re.sub(
        r'(type="ReLU".*?<input>\s*(<port id="0".*?</port>))', r"\1\2", t, count=1,
        flags=re.S))  # fmt: skip
    assert _validate(capsys, path, "--shape", "[1,3,64,64]") == [
        f"{path}:51: error: layer 3 'aten::relu/Relu' (ReLU-v1): has 2 input ports, expected 1",
        f"{path}:58: error: layer 3 'aten::relu/Relu' (ReLU-v1) port 0: input port id 0 is used "
        "again (first at line 53)",
        f"{path} with x[1,3,64,64]: 2 errors, 0 warnings",
    ]
    with pytest.raises(irrun.IrrunError, match=r"input port id 0 is used again .* more"):
        irrun.load(path)


def test_validate_with_shapes_reports_what_stops_the_load(tmp_path, capsys):
    # A Parameter whose own shape breaks the Convolution it feeds: load refuses the file
    # before any reshape, so validate --shape must say so too (it passed the file before).
    path = _copy(tmp_path, RESNET, lambda t: t.replace('shape="?,3,?,?"', 'shape="?"', 1))
    assert _validate(capsys, path, "--shape", "[1,3,64,64]") == [
        f"{path}:26: error: layer 2 'Multiply_2871' (Convolution-v1): data [?] must have rank 4 "
        "for 2 spatial dims (strides [2, 2]) (input [?], [16,3,7,7]; strides=[2,2], "
        "dilations=[1,1], pads_begin=[3,3], pads_end=[3,3], auto_pad=explicit)",
        f"{path} with x[1,3,64,64]: 1 error, 0 warnings; 1 info finding hidden: -v shows it",
    ]
    assert main(["run", str(path), "--shape", "[1,3,64,64]"]) == 1
    assert "data [?] must have rank 4" in capsys.readouterr().err


CHAIN = Path(__file__).resolve().parents[2] / "models" / "pooling_chain.xml"


@pytest.mark.parametrize(
    ("old", "new", "finding"),
    [
        ('shape="1,3,16,16"', 'shape="1,\u0663,16,16"',
         ":5: error: layer 0 'image' (Parameter-v1): attribute 'shape'=\"1,\u0663,16,16\": "
         "expected a shape such as 1,3,?,224"),
        ('axis="0"', 'axis="\u0660"',
         ":16: error: layer 1 'stem_pool' (MaxPool-v8): attribute 'axis'=\"\u0660\": expected "
         "an integer"),
        ('axis="0"', 'axis="0_0"',
         ":16: error: layer 1 'stem_pool' (MaxPool-v8): attribute 'axis'=\"0_0\": expected "
         "an integer"),
    ],
    ids=["arabic-indic-dim", "arabic-indic-int", "underscore-int"],
)  # fmt: skip
def test_numbers_are_ascii_digits(tmp_path, capsys, old, new, finding):
    # int() reads other scripts' digits and "1_0"; OpenVINO does not, so neither may irrun
    # (validate passed '٣' as 3, and a run then disagreed with the declared dims).
    path = _copy(tmp_path, CHAIN, lambda t: t.replace(old, new, 1))
    out = _validate(capsys, path)
    assert out[0] == f"{path}{finding}" and out[-1] == f"{path}: 1 error, 0 warnings; 1 info finding hidden: -v shows it"


@pytest.mark.parametrize("layers", ["<layers/>", "<layers>\n<layr id='0'/>\n</layers>"],
                         ids=["empty", "misspelt"])  # fmt: skip
def test_a_net_with_no_layers_is_refused_by_validate_and_run(tmp_path, capsys, layers):
    # Before, run wrote an empty .npz and exited 0.
    path = tmp_path / "empty.xml"
    path.write_text(f'<?xml version="1.0"?>\n<net name="empty" version="11">\n{layers}\n</net>\n')
    out = _validate(capsys, path)
    assert out[0] == f"{path}: error: the model has no layers: there is nothing to run"
    npz = tmp_path / "out.npz"
    assert main(["run", str(path), "-o", str(npz)]) == 1
    assert capsys.readouterr().err == (f"irrun: error: {path}: the model has no layers: there is "
                                       "nothing to run\n")  # fmt: skip
    assert not npz.exists()


def test_gather_from_an_empty_axis_gives_zeros(tmp_path, capsys):
    # The shape of a scalar Const (an empty vector) read by the Gathers that took the
    # input's shape apart: every index is out of range, which Gather answers with zeros;
    # the kernel indexed the empty axis instead (an internal error after validate passed).
    seg = RESNET.with_name("segmentation.xml")
    path = _copy(tmp_path, seg, lambda t: t.replace(
        '<edge from-layer="0" from-port="0" to-layer="9" to-port="0"',
        '<edge from-layer="2" from-port="0" to-layer="9" to-port="0"'))  # fmt: skip
    assert _validate(capsys, path, "--shape", "[2,8,16,16]")[-1].endswith("valid (1 info finding hidden: -v shows it)")
    out = tmp_path / "out.npz"
    assert main(["run", str(path), "--shape", "[2,8,16,16]", "-o", str(out), "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert [v.shape for v in np.load(out).values()] == [(2, 0, 0), (2, 0, 0)]


def test_attributes_past_64_bits_are_refused(tmp_path, capsys):
    # A pad of 2^63 fits no 64-bit integer (OpenVINO refuses it); irrun took it and its
    # convolution kernel failed in np.pad (an internal error after validate passed).
    path = _copy(tmp_path, CHAIN, lambda t: t.replace('pads_begin="1, 1"',
                                                      'pads_begin="1, 9223372036854775808"'))
    assert _validate(capsys, path)[0] == (
        f"{path}:16: error: layer 1 'stem_pool' (MaxPool-v8): attribute 'pads_begin'=\"1, "
        "9223372036854775808\": expected a comma-separated list of integers "
        "('9223372036854775808' is out of range (not a 64-bit integer))"
    )


def test_an_output_past_the_largest_dim_is_a_shape_error(tmp_path, capsys):
    # A pad of 2^63-1 fits, but the output it makes does not: validate passed it and run
    # failed in NumPy ("Maximum allowed dimension exceeded").
    path = _copy(tmp_path, RESNET, lambda t: t.replace(
        'strides="2, 2" dilations="1, 1" pads_begin="3, 3" pads_end="3, 3"',
        'strides="1, 1" dilations="1, 1" pads_begin="3, 3" pads_end="3, 9223372036854775807"'))  # fmt: skip
    # The window geometry, which convolutions share with the pools, says it first.
    assert _validate(capsys, path, "--shape", "[1,3,64,64]")[0] == (
        f"{path}:26: error: layer 2 'Multiply_2871' (Convolution-v1): 9223372036854775868 "
        "windows do not fit in a dim (at most 9223372036854775807) (input [1,3,64,64], "
        "[16,3,7,7]; strides=[1,1], dilations=[1,1], pads_begin=[3,3], "
        "pads_end=[3,9223372036854775807], auto_pad=explicit)"
    )


def test_shape_like_inputs_must_be_integers(tmp_path, capsys):
    # An Add retyped as Unsqueeze: its axes are then a float tensor computed at run time;
    # validate passed it, and run failed on whatever the floats truncated to.
    pools = RESNET.with_name("pools.xml")
    path = _copy(tmp_path, pools, lambda t: t.replace(
        'name="aten::add/Add" type="Add" version="opset1"',
        'name="aten::add/Add" type="Unsqueeze" version="opset1"'))  # fmt: skip
    found = [line for line in _validate(capsys, path, "--shape", "[1,3,17,17]")
             if ": error: " in line]  # fmt: skip
    assert found == [f"{path}:530: error: layer 31 'aten::add/Add' (Unsqueeze-v0): input 1 is f32, "
                     "which Unsqueeze-v0 does not take (it takes i64, i32, i16, i8, u64, u32, u16, "
                     "u8, i4, u1, u2, u3, u4, u6) (input [], [])"]  # fmt: skip
