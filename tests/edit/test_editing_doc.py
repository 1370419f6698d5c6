"""docs/editing.md's commands print what the page shows, and OpenVINO runs what they write
as the full model computes it."""

from __future__ import annotations

import shlex

import numpy as np

from irrun import load
from tests.edit.support import CPU, ROOT, ov_values
from tests.support.cli import run_cli
from tests.support.docs import assert_same_output, page_commands

PAGE = (ROOT / "docs" / "editing.md").read_text()


def test_the_commands_of_docs_editing_md(core, capsys, monkeypatch, tmp_path):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    commands = page_commands(PAGE)
    assert [c.split()[1] for c, _ in commands] == ["extract", "fold", "validate"]
    for command, shown in commands:
        _, stdout, stderr = run_cli(capsys, *shlex.split(command)[1:])
        assert_same_output((stdout + stderr).rstrip("\n"), shown)
    # The cut's Parameter has the shape OpenVINO infers for that tensor in the full model.
    full = core.read_model(ROOT / "tests" / "corpus" / "bert.xml")
    declared = next(o.get_partial_shape() for op in full.get_ordered_ops() for o in op.outputs()
                    if "hidden_states.7" in o.get_names())  # fmt: skip
    cut = next(p for p in core.read_model("layer1.xml").get_parameters()
               if "hidden_states.7" in p.output(0).get_names())  # fmt: skip
    assert cut.get_partial_shape() == declared
    assert str(declared) == "[?,?,32]"
    # OpenVINO runs the folded layer, fed its own full model's value at the cut, to the
    # full model's output (its kernels fuse the two graphs otherwise: within 1e-5).
    xml = ROOT / "tests" / "corpus" / "bert.xml"
    bert = load(xml)
    with np.load(ROOT / "tests" / "corpus" / "bert.inputs.npz") as f:
        feeds = dict(f)
    want = ov_values(core, xml, feeds, ["hidden_states.7", "last_hidden_state"], bert)
    ovm = core.read_model("layer1_folded.xml")
    compiled = core.compile_model(ovm, "CPU", CPU)
    arrays = {"hidden_states.7": want["hidden_states.7"], **feeds}
    got = compiled([arrays[p.get_friendly_name()] for p in ovm.get_parameters()])
    np.testing.assert_allclose(got[compiled.outputs[0]], want["last_hidden_state"],
                               rtol=1e-5, atol=1e-5)  # fmt: skip
