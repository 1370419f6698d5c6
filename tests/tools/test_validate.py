"""``irrun validate`` on the command line: output lines, exit codes, levels (info shown with
-v, never failing --strict), --ignore and --select, --json, -o and --shape (new input shapes,
in OpenVINO's syntax), and the same through the Python API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run_cli

import irrun
from irrun.cli import main

MODELS = Path(__file__).resolve().parents[2] / "models"
UNUSED = (
    "pooling_chain.xml:32: info: layer 1 'stem_pool' (MaxPool-v8) port 2: output port 2 is not used"
)
HIDDEN = "1 info finding hidden: -v shows it"
STEM_DETAIL = (
    "kernel=[3,3], strides=[2,2], dilations=[1,1], pads_begin=[1,1], pads_end=[1,1], "
    "auto_pad=explicit, rounding_type=floor"
)


def _dims(*dims: int) -> str:
    return "".join(f"<dim>{d}</dim>" for d in dims)


# Two inputs, "a" (tensor names a, a_alias) and "b", each pooled 2x2 into a Result.
TWO_INPUTS = f"""<?xml version="1.0"?>
<net name="two" version="11">
	<layers>
		<layer id="0" name="a" type="Parameter" version="opset1">
			<data shape="1,1,4,4" element_type="f32" />
			<output><port id="0" precision="FP32" names="a,a_alias">{_dims(1, 1, 4, 4)}</port></output>
		</layer>
		<layer id="1" name="b" type="Parameter" version="opset1">
			<data shape="1,1,4,4" element_type="f32" />
			<output><port id="0" precision="FP32" names="b">{_dims(1, 1, 4, 4)}</port></output>
		</layer>
		<layer id="2" name="pool_a" type="MaxPool" version="opset1">
			<data strides="2, 2" pads_begin="0, 0" pads_end="0, 0" kernel="2, 2" rounding_type="floor" auto_pad="explicit" />
			<input><port id="0" precision="FP32">{_dims(1, 1, 4, 4)}</port></input>
			<output><port id="1" precision="FP32">{_dims(1, 1, 2, 2)}</port></output>
		</layer>
		<layer id="3" name="pool_b" type="MaxPool" version="opset1">
			<data strides="2, 2" pads_begin="0, 0" pads_end="0, 0" kernel="2, 2" rounding_type="floor" auto_pad="explicit" />
			<input><port id="0" precision="FP32">{_dims(1, 1, 4, 4)}</port></input>
			<output><port id="1" precision="FP32">{_dims(1, 1, 2, 2)}</port></output>
		</layer>
		<layer id="4" name="ra" type="Result" version="opset1">
			<input><port id="0" precision="FP32">{_dims(1, 1, 2, 2)}</port></input>
		</layer>
		<layer id="5" name="rb" type="Result" version="opset1">
			<input><port id="0" precision="FP32">{_dims(1, 1, 2, 2)}</port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="1" from-port="0" to-layer="3" to-port="0" />
		<edge from-layer="2" from-port="1" to-layer="4" to-port="0" />
		<edge from-layer="3" from-port="1" to-layer="5" to-port="0" />
	</edges>
</net>
"""


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    shutil.copy(MODELS / "pooling_chain.xml", tmp_path / "pooling_chain.xml")
    shutil.copy(MODELS / "pooling_chain.bin", tmp_path / "pooling_chain.bin")
    (tmp_path / "two.xml").write_text(TWO_INPUTS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def broken_demo(work: Path) -> Path:
    """pooling_chain.xml with a wrong dim on stem_pool's output port 1 (line 26)."""
    text = (work / "pooling_chain.xml").read_text()
    pos = text.index("<dim>8</dim>")
    (work / "bad.xml").write_text(text[:pos] + "<dim>9</dim>" + text[pos + 12 :])
    shutil.copy(work / "pooling_chain.bin", work / "bad.bin")
    return work / "bad.xml"


# --- exit codes and --strict -----------------------------------------------------------------


def warned(work: Path) -> Path:
    """pooling_chain.xml with an attribute MaxPool-8 does not have on stem_pool (line 16)."""
    text = (work / "pooling_chain.xml").read_text()
    (work / "warned.xml").write_text(
        text.replace('<data strides="2, 2"', '<data colour="red" strides="2, 2"', 1)
    )
    shutil.copy(work / "pooling_chain.bin", work / "warned.bin")
    return work / "warned.xml"


COLOUR = "warned.xml:16: warning: layer 1 'stem_pool' (MaxPool-v8): unknown attribute 'colour' is ignored"


def test_warnings_pass_unless_strict(work, capsys):
    warned(work)
    unused = UNUSED.replace("pooling_chain.xml", "warned.xml")
    assert run_cli(capsys, "validate", "warned.xml") == (
        0, f"{COLOUR}\nwarned.xml: valid (1 warning; {HIDDEN})\n", ""
    )  # fmt: skip
    assert run_cli(capsys, "validate", "warned.xml", "--strict", "-v") == (
        1, f"{COLOUR}\n{unused}\nwarned.xml: 0 errors, 1 warning (--strict: warnings fail); "
        "1 info finding\n", "",
    )  # fmt: skip
    assert run_cli(capsys, "validate", "two.xml", "--strict") == (0, "two.xml: valid\n", "")


def test_info_findings_show_with_verbose_and_never_fail(work, capsys):
    # stem_pool's indices (port 2) are read by nothing: what converters write for every
    # MaxPool-8/14, whose values output is used.
    assert run_cli(capsys, "validate", "pooling_chain.xml", "--strict") == (
        0, f"pooling_chain.xml: valid ({HIDDEN})\n", ""
    )  # fmt: skip
    assert run_cli(capsys, "validate", "pooling_chain.xml", "--strict", "--verbose") == (
        0, f"{UNUSED}\npooling_chain.xml: valid (1 info finding)\n", ""
    )  # fmt: skip
    (finding,) = irrun.validate(work / "pooling_chain.xml")
    assert (finding.level, finding.code, finding.port) == ("info", "unused-output", 2)


def test_a_layer_nothing_reads_is_a_warning(work, capsys):
    """A layer none of whose outputs is read is dead code (OpenVINO drops it), not a port
    a converter left: a warning, and --strict fails."""
    # two.xml without rb, the Result pool_b fed: pool_b, and b before it, lead nowhere.
    text = re.sub(r'\s*<layer id="5".*?</layer>', "", (work / "two.xml").read_text(), flags=re.S)
    (work / "dead.xml").write_text(text.replace('<edge from-layer="3" from-port="1" to-layer="5" to-port="0" />', ""))  # fmt: skip
    found = [(d.level, d.code, d.layer.name) for d in irrun.validate(work / "dead.xml")]
    assert found == [("warning", "dead-layer", "b"), ("warning", "dead-layer", "pool_b")]
    rc, out, _ = run_cli(capsys, "validate", "dead.xml", "--strict")
    assert (
        rc == 1
        and "warning: layer 3 'pool_b' (MaxPool-v1): reaches no Result: OpenVINO drops it" in out
    )


# --- --ignore and --select -------------------------------------------------------------------


def test_ignore_and_select_pick_findings_by_code(work, capsys):
    warned(work)
    unused = UNUSED.replace("pooling_chain.xml", "warned.xml")
    rc, out, _ = run_cli(
        capsys, "validate", "warned.xml", "--strict", "--ignore", "unknown-attribute"
    )
    assert (rc, out) == (0, f"warned.xml: valid ({HIDDEN})\n")
    # Repeated and comma-separated, spaces allowed; an ignored code that is absent is fine.
    rc, out, _ = run_cli(capsys, "validate", "warned.xml", "-v", "--ignore", "cycle, unused-output",
                         "--ignore", "dead-layer")  # fmt: skip
    assert (rc, out) == (0, f"{COLOUR}\nwarned.xml: valid (1 warning)\n")
    rc, out, _ = run_cli(capsys, "validate", "warned.xml", "-v", "--select", "unused-output")
    assert (rc, out) == (0, f"{unused}\nwarned.xml: valid (1 info finding)\n")
    rc, out, _ = run_cli(capsys, "validate", "warned.xml", "-v", "--select", "cycle",
                         "--select", "unused-output,unknown-attribute", "--ignore", "unused-output")  # fmt: skip
    assert (rc, out) == (0, f"{COLOUR}\nwarned.xml: valid (1 warning)\n")
    # Errors can be left out too: the exit code follows what is reported.
    broken_demo(work)
    assert run_cli(capsys, "validate", "bad.xml", "--ignore", "shape-mismatch")[:2] == (
        0, f"bad.xml: valid ({HIDDEN})\n"
    )  # fmt: skip
    report = json.loads(
        run_cli(capsys, "validate", "bad.xml", "--json", "--select", "unused-output")[1]
    )
    assert report["summary"] == {
        "passed": True,
        "errors": 0,
        "warnings": 0,
        "info": 1,
        "strict": False,
    }
    assert [f["code"] for f in report["findings"]] == ["unused-output"]


@pytest.mark.parametrize(
    ("option", "value", "complaint"),
    [
        ("--ignore", "unused-ouptut", "unknown finding code 'unused-ouptut' (did you mean 'unused-output'?)"),
        ("--select", "shape-err", "unknown finding code 'shape-err' (did you mean 'shape-error'?)"),
        ("--ignore", "dead-layer,colour", "unknown finding code 'colour'; the codes are absent-attribute, "),
        ("--select", ",", "no finding code given"),
    ],
)  # fmt: skip
def test_unknown_codes_are_usage_errors(work, capsys, option, value, complaint):
    rc, out, err = run_cli(capsys, "validate", "pooling_chain.xml", option, value)
    assert (rc, out) == (2, "")
    assert f"irrun validate: error: argument {option}: {complaint}" in err


def test_an_unknown_code_through_the_command_line(work):
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-m", "irrun", "validate", "pooling_chain.xml", "--ignore",
                           "unused_output"], capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert (proc.returncode, proc.stdout) == (2, "")
    complaint = re.search(r"argument --ignore: (.*)", proc.stderr).group(1)
    assert complaint.startswith("unknown finding code 'unused_output' (did you mean 'unused-output'?); "
                                "the codes are absent-attribute, bad-attribute, ")  # fmt: skip
    # Every code the codes list names is one docs/cli.md documents, with its level.
    codes = complaint.split("the codes are ")[1].split(", ")
    docs = (Path(irrun.__file__).parents[1] / "docs" / "cli.md").read_text()
    assert [c for c in codes if f"`{c}`" not in docs] == []


def test_errors_fail(work, capsys):
    broken_demo(work)
    rc, out, err = run_cli(capsys, "validate", "bad.xml")
    assert (rc, err) == (1, "")
    assert out.splitlines() == [
        f"bad.xml:26: error: layer 1 'stem_pool' (MaxPool-v8) port 1: declared [1,3,9,8], "
        f"inferred [1,3,8,8] ({STEM_DETAIL})",
        f"bad.xml: 1 error, 0 warnings; {HIDDEN}",
    ]
    rc, out, _ = run_cli(capsys, "validate", "bad.xml", "-v")
    assert rc == 1
    assert out.splitlines()[1:] == [
        UNUSED.replace("pooling_chain.xml", "bad.xml"), "bad.xml: 1 error, 0 warnings; 1 info finding"
    ]  # fmt: skip


# --- the JSON report -------------------------------------------------------------------------


def test_json_report(work, capsys):
    broken_demo(work)
    rc, out, err = run_cli(capsys, "validate", "bad.xml", "--json")
    assert (rc, err) == (1, "")
    report = json.loads(out)
    assert report["file"] == "bad.xml" and report["shapes"] is None
    # Info findings are in the report without -v.
    assert report["summary"] == {
        "passed": False,
        "errors": 1,
        "warnings": 0,
        "info": 1,
        "strict": False,
    }
    mismatch, unused = report["findings"]
    assert mismatch == {
        "level": "error",
        "code": "shape-mismatch",
        "file": "bad.xml",
        "line": 26,
        "layer": {"id": "1", "name": "stem_pool", "type": "MaxPool", "version": 8, "opset": None},
        "port": 1,
        "message": f"declared [1,3,9,8], inferred [1,3,8,8] ({STEM_DETAIL})",
        "expected": "[1,3,8,8]",
        "actual": "[1,3,9,8]",
    }
    assert (unused["level"], unused["code"], unused["line"], unused["port"]) == (
        "info", "unused-output", 32, 2
    )  # fmt: skip


def test_json_of_an_unreadable_file(work, capsys):
    (work / "empty.xml").write_text("")
    rc, out, _ = run_cli(capsys, "validate", "empty.xml", "--json")
    assert rc == 1
    (finding,) = json.loads(out)["findings"]
    assert finding["code"] == "unreadable" and finding["line"] is None
    assert finding["layer"] is None
    assert finding["message"] == "the file is empty, expected an OpenVINO IR <net> document"


def test_output_file_holds_the_same_report(work, capsys):
    broken_demo(work)
    rc, out, _ = run_cli(capsys, "validate", "bad.xml", "-o", "report.json")
    assert rc == 1
    assert out.splitlines()[-1] == f"bad.xml: 1 error, 0 warnings; {HIDDEN}"  # printed still
    assert run_cli(capsys, "validate", "bad.xml", "--json")[1] == (work / "report.json").read_text()
    assert sorted(p.name for p in work.iterdir()) == [
        "bad.bin", "bad.xml", "pooling_chain.bin", "pooling_chain.xml", "report.json", "two.xml",
    ]  # fmt: skip


def test_output_file_is_written_whole_or_not_at_all(work, capsys, monkeypatch):
    (work / "report.json").write_text("previous")

    def half_dump(report, f, **kwargs):
        f.write('{"file": ')
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", half_dump)
    rc, out, err = run_cli(capsys, "validate", "pooling_chain.xml", "-o", "report.json")
    assert (rc, out) == (1, "")
    assert err == "irrun: error: report.json: cannot write: No space left on device\n"
    assert (work / "report.json").read_text() == "previous"
    assert sorted(p.name for p in work.iterdir()) == [
        "pooling_chain.bin", "pooling_chain.xml", "report.json", "two.xml",
    ]  # fmt: skip


def test_output_path_is_checked_before_the_model(work, capsys):
    rc, out, err = run_cli(capsys, "validate", "nothere.xml", "-o", "nodir/report.json")
    assert (rc, out) == (1, "")
    assert err == "irrun: error: nodir/report.json: the output's directory does not exist\n"


# --- --shape ---------------------------------------------------------------------------------


def test_new_shapes_are_not_compared_with_the_declared_dims(work, capsys):
    rc, out, _ = run_cli(capsys, "validate", "pooling_chain.xml", "--shape", "image[1,3,32,32]")
    assert rc == 0
    assert out.splitlines() == [f"pooling_chain.xml with image[1,3,32,32]: valid ({HIDDEN})"]


def test_a_bare_shape_for_a_single_input_and_what_breaks(work, capsys):
    rc, out, _ = run_cli(capsys, "validate", "pooling_chain.xml", "--shape", "[1,3,2,2]")
    assert rc == 1
    assert out.splitlines() == [
        "pooling_chain.xml:40: error: layer 2 'avg_pool' (AvgPool-v14): kernel after dilation has size 2, "
        "larger than the input after padding (1 + 0 + 0 = 1) at spatial axis 0 (input [1,3,1,1]; "
        "kernel=[2,2], strides=[2,2], pads_begin=[0,0], pads_end=[0,0], auto_pad=explicit, "
        "rounding_type=ceil_torch, exclude_pad=true)",
        f"pooling_chain.xml with image[1,3,2,2]: 1 error, 0 warnings; {HIDDEN}",
    ]


def test_a_new_rank_breaks_the_pools(work, capsys):
    rc, out, _ = run_cli(capsys, "validate", "pooling_chain.xml", "--shape", "image[1,3,16]")
    assert rc == 1
    assert out.splitlines()[0].startswith(
        "pooling_chain.xml:15: error: layer 1 'stem_pool' (MaxPool-v8): kernel [3, 3] has 2 values but the "
        "input has 1 spatial dims (input [1,3,16];"
    )


@pytest.mark.parametrize(
    ("shape", "shown"),
    [("image[1,3,?,?]", "image[1,3,?,?]"), ("image[-1,3,16..64,..64]", "image[?,3,16..64,0..64]"),
     ("image[...]", "image[...]")],
)  # fmt: skip
def test_dynamic_new_shapes(work, capsys, shape, shown):
    rc, out, _ = run_cli(capsys, "validate", "pooling_chain.xml", "--shape", shape)
    assert rc == 0
    assert out.splitlines()[-1] == f"pooling_chain.xml with {shown}: valid ({HIDDEN})"


def test_several_inputs_by_layer_or_tensor_name(work, capsys):
    rc, out, _ = run_cli(capsys, "validate", "two.xml", "--shape", "a_alias[1,1,8,8],b[1,1,1,1]")
    assert rc == 1
    (error, summary) = out.splitlines()
    assert error.startswith(
        "two.xml:17: error: layer 3 'pool_b' (MaxPool-v1): kernel after dilation has size 2, "
        "larger than the input after padding (1 + 0 + 0 = 1) at spatial axis 0"
    )
    assert summary == "two.xml with a[1,1,8,8],b[1,1,1,1]: 1 error, 0 warnings"
    assert run_cli(capsys, "validate", "two.xml", "--shape", "a[2,1,6,6], b[2,1,6,6]")[0] == 0


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["two.xml", "--shape", "[1,1,8,8]"],
         "irrun: error: --shape [1,1,8,8]: the model has 2 inputs (a, b); name the input, as in "
         "NAME[1,1,8,8]\n"),
        (["two.xml", "--shape", "c[1,1,8,8]"],
         "irrun: error: --shape: no input named 'c' (inputs: a, b)\n"),
        (["two.xml", "--shape", "a[1,1,8,8],a_alias[1,1,4,4]"],
         "irrun: error: --shape: input 'a' is given twice\n"),
    ],
    ids=["bare-shape-for-two-inputs", "unknown-input", "input-twice"],
)  # fmt: skip
def test_shapes_that_do_not_fit_the_model_are_misuse(work, capsys, args, complaint):
    assert run_cli(capsys, "validate", *args) == (2, "", complaint)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("a[1,1", "cannot read 'a[1,1': expected NAME[d1,d2,...] items separated by commas"),
        ("a[1,x]", "a[1,x]: 'x' is not a dimension (a size, ?, -1 or a range a..b)"),
        ("a[1,-2]", "a[1,-2]: '-2' is not a dimension"),
        ("[1],[2]", "name every input when giving several shapes: x[...],y[...]"),
        ("a[1]b[2]", "cannot read 'a[1]b[2]'"),
        ("", "no shape given"),
    ],
)
def test_malformed_shapes_are_usage_errors(work, capsys, text, complaint):
    with pytest.raises(SystemExit) as info:
        main(["validate", "pooling_chain.xml", "--shape", text])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("irrun validate: error: ")
    assert f"irrun validate: error: argument --shape: {complaint}" in err


def test_the_python_api_takes_the_same_shapes(work):
    path = work / "pooling_chain.xml"
    by_text = irrun.validate(path, shapes="image[1,3,2,2]")
    assert [d.code for d in by_text] == ["unused-output", "shape-error"]
    assert irrun.validate(path, shapes={"image": [1, 3, 2, 2]}) == by_text
    assert irrun.validate(path, shapes={"image": "1,3,2,2"}) == by_text
    model = irrun.load(path)
    assert model.validate(shapes={"image": (1, 3, 2, 2)}) == by_text
    assert model.validate() == irrun.validate(path)  # the model keeps its own findings
    with pytest.raises(irrun.IrrunError, match="no input named 'x'"):
        irrun.validate(path, shapes={"x": [1]})


def test_shapes_of_a_broken_file_report_the_file(work, capsys):
    (work / "empty.xml").write_text("")
    rc, out, _ = run_cli(capsys, "validate", "empty.xml", "--shape", "x[1]")
    assert rc == 1
    assert out.splitlines()[-1] == "empty.xml: 1 error, 0 warnings"


# --- a bug in irrun is a finding, never a traceback (unless --debug) ---------------------------


@pytest.fixture
def broken_max_pool_rule(monkeypatch):
    """MaxPool-8's shape rule raising as a buggy rule would."""
    import dataclasses

    from irrun.ir import registry

    def infer(attrs, inputs):
        raise ZeroDivisionError("division by zero")

    versions = [dataclasses.replace(op, infer=infer) if op.version == 8 else op
                for op in registry._REGISTRY["maxpool"]]  # fmt: skip
    monkeypatch.setitem(registry._REGISTRY, "maxpool", versions)


def test_a_failing_shape_rule_is_reported_at_its_layer(work, capsys, broken_max_pool_rule):
    rc, out, err = run_cli(capsys, "validate", "pooling_chain.xml")
    assert (rc, err) == (1, "")
    assert out.splitlines() == [
        "pooling_chain.xml:15: error: layer 1 'stem_pool' (MaxPool-v8): irrun's shape rule for MaxPool-v8 "
        "failed (ZeroDivisionError: division by zero); this is a bug in irrun (--debug shows "
        "where)",
        f"pooling_chain.xml: 1 error, 0 warnings; {HIDDEN}",
    ]
    with pytest.raises(ZeroDivisionError):
        main(["validate", "pooling_chain.xml", "--debug"])
    # Running re-raises the original error: one line, or its traceback with --debug.
    rc, out, err = run_cli(capsys, "pooling_chain.xml")
    assert (rc, out) == (1, "")
    assert err == (
        "irrun: internal error: ZeroDivisionError: division by zero (a bug in irrun: "
        "please report it; --debug shows the traceback)\n"
    )


def test_a_bug_anywhere_in_the_checker_is_one_finding(work, capsys, monkeypatch):
    import irrun.core.check

    def broken(doc, unneeded=True):
        raise RuntimeError("boom")

    monkeypatch.setattr(irrun.core.check, "build_graph", broken)
    (finding,) = irrun.validate("pooling_chain.xml")
    assert (finding.level, finding.code, finding.line) == ("error", "internal-error", 0)
    rc, out, _ = run_cli(capsys, "validate", "pooling_chain.xml")
    assert rc == 1
    assert out.splitlines() == [
        "pooling_chain.xml: error: irrun failed while checking the file (RuntimeError: boom); this is a bug "
        "in irrun (run with --debug for details)",
        "pooling_chain.xml: 1 error, 0 warnings",
    ]
    with pytest.raises(RuntimeError, match="boom"):
        main(["validate", "pooling_chain.xml", "--debug"])


# --- a missing weights file ------------------------------------------------------------------


def test_a_missing_bin_is_one_finding_about_the_file(tmp_path):
    """Not one per Const: one finding naming the file, the number of Consts that read it
    (those in If bodies included) and --weights."""
    source = Path(__file__).resolve().parents[1] / "subgraph_models" / "torchvision_patterns.xml"
    text = source.read_text()
    (tmp_path / "tv.xml").write_text(text)
    consts = text.count('type="Const"')  # 77, some in the bodies of If layers
    first = text[: text.index('type="Const"')].count("\n") + 2  # the first Const's <data>
    said = (f"tv.xml:{first}: error: weights file tv.bin does not exist ({consts} Const layers "
            "read from it; give its path with --weights, or weights= in Python)")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-m", "irrun", "validate", "tv.xml"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout.splitlines() == [said, "tv.xml: 1 error, 0 warnings"]
    (finding,) = irrun.validate(tmp_path / "tv.xml")
    assert (finding.code, finding.layer, finding.line) == ("bad-weights", None, first)
    # --weights names the file instead: then all is well.
    found = irrun.validate(tmp_path / "tv.xml", weights=source.with_suffix(".bin"))
    assert [d for d in found if d.level != "info"] == []


# --- the codes -------------------------------------------------------------------------------

SOURCE = Path(irrun.__file__).parent
# Where findings are made: Diagnostic(level, code, ...), the checkers' report/finding/warning
# helpers, and the codes errors carry (code="..."), in irrun's sources.
MADE = re.compile(r'(?:Diagnostic|report|Finding|finding|warning)\(\s*(?:"(error|warning|info)"'
                  r'(?: if \w+ else "\w+")?,\s*)?"(?!(?:error|warning|info)")([a-z]+(?:-[a-z]+)*)"')  # fmt: skip
CARRIED = re.compile(
    r'\b(?:code|CODE)(?:: str)? = "([a-z-]+)"|code="([a-z-]+)"|return "([a-z]+-[a-z-]+)", '
)
# Errors a run or the Python API raises (memory, the inputs given or made up, an output asked
# for by an unknown name), never findings of validate.
RUN_ONLY = {"out-of-memory", "bad-input", "unknown-name", "input-shapes"}


def test_every_code_irrun_makes_is_known_with_its_level():
    from irrun.core.check import FINDING_LEVELS

    made: dict[str, set[str | None]] = {}
    for path in SOURCE.rglob("*.py"):
        text = path.read_text()
        for m in MADE.finditer(text):
            made.setdefault(m.group(2), set()).add(m.group(1))
        for m in CARRIED.finditer(text):
            made.setdefault(next(g for g in m.groups() if g), set()).add(None)
    assert sorted(set(made) - set(FINDING_LEVELS) - RUN_ONLY) == []
    assert sorted(set(FINDING_LEVELS) - set(made)) == []
    levels = {code: {lv for lv in found if lv} for code, found in made.items()}
    # A code made at one level is listed at that level.
    assert [c for c, lv in levels.items() if len(lv) == 1 and c in FINDING_LEVELS
            and lv != {FINDING_LEVELS[c]}] == []  # fmt: skip
