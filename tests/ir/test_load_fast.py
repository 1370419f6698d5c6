"""The load path's shortcuts give the same findings as a full check.

``load`` puts off the structure check (its findings never stop a load when the
reader read everything) and infers each kind of layer once per model; what
``Model.validate`` reports must still equal what ``irrun.validate`` reports.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.core.model import check_ir

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize("xml", sorted(MODELS.glob("*.xml")), ids=lambda p: p.name)
def test_model_validate_equals_validate(xml):
    m = irrun.load(xml)
    assert [str(d) for d in m.validate()] == [str(d) for d in irrun.validate(xml)]


def _with_schema_only_findings(tmp_path: Path) -> Path:
    """pooling_chain.xml with an element and an attribute the schema rejects and the
    reader ignores: findings that stop no load."""
    text = (MODELS / "pooling_chain.xml").read_text()
    text = text.replace("<layers>", "<layers>\n\t\t<!-- x -->", 1)
    text, n = re.subn(r"(<layer [^>]*?)>", r'\1 colour="red">', text, count=2)
    assert n == 2
    text = text.replace("</net>", "\t<extra/>\n</net>")
    path = tmp_path / "odd.xml"
    path.write_text(text)
    (tmp_path / "odd.bin").write_bytes((MODELS / "pooling_chain.bin").read_bytes())
    return path


def test_deferred_structure_findings_are_reported_by_model_validate(tmp_path):
    path = _with_schema_only_findings(tmp_path)
    eager = irrun.validate(path)
    assert any(d.code == "schema" for d in eager)
    checked = check_ir(path, complete=False)
    assert checked.deferred is not None
    assert not any(d.code == "schema" for d in checked.findings)
    m = irrun.load(path)
    assert [str(d) for d in m.validate()] == [str(d) for d in eager]
    assert [str(d) for d in m.validate()] == [str(d) for d in eager]  # completed once


def test_structure_is_checked_at_load_when_the_reader_fails(tmp_path):
    text = (MODELS / "pooling_chain.xml").read_text().replace('<port id="0"', "<port", 1)
    path = tmp_path / "bad.xml"
    path.write_text(text)
    checked = check_ir(path, complete=False)
    assert checked.deferred is None
    assert [str(d) for d in checked.findings] == [str(d) for d in irrun.validate(path)]
    with pytest.raises(irrun.IrrunError):
        irrun.load(path)


def test_repeated_layers_keep_their_own_findings(tmp_path):
    """Layers inferred once per kind still get findings at their own line and layer."""
    ov = pytest.importorskip("openvino")
    op1 = pytest.importorskip("openvino.opset1")
    x = op1.parameter([1, 2, 5, 5], ov.Type.f32, name="x")
    node = x
    for _ in range(4):  # each window past the end: an empty-window warning per layer
        node = op1.avg_pool(node, [3, 3], [0, 0], [0, 0], [1, 1], exclude_pad=True,
                            rounding_type="ceil")  # fmt: skip
    path = tmp_path / "chain.xml"
    ov.save_model(ov.Model([node], [x], "chain"), path)
    text = path.read_text()
    # The third pool's output declares a wrong dim: only that layer's port is wrong.
    layers = text.split("<layer ")
    layers[4] = layers[4].replace("<dim>2</dim>\n\t\t\t\t\t<dim>2</dim>", "<dim>2</dim>\n\t\t\t\t\t<dim>3</dim>", 1)
    path.write_text("<layer ".join(layers))
    found = irrun.load(path).validate()
    empty = [d for d in found if d.code == "empty-window"]
    assert len({d.layer.id for d in empty}) == 4 and len({d.line for d in empty}) == 4
    mismatch = [d for d in found if d.code == "shape-mismatch"]
    assert len(mismatch) >= 1 and {d.layer.id for d in mismatch} <= {"3", "4"}


def test_load_pauses_the_garbage_collector_and_restores_it(monkeypatch, tmp_path):
    import gc

    from irrun.core import model

    seen = []
    real = model.check_ir

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "check_ir", spy)
    assert gc.isenabled()
    irrun.load(MODELS / "pooling_chain.xml")
    assert seen == [False]
    assert gc.isenabled()
    broken = tmp_path / "broken.xml"
    broken.write_text("<net name='broken'")  # read, then refused
    with pytest.raises(irrun.IrrunError):
        irrun.load(broken)
    assert seen == [False, False]
    assert gc.isenabled()  # restored after the error too


def test_load_leaves_a_disabled_garbage_collector_disabled():
    import gc

    gc.disable()
    try:
        irrun.load(MODELS / "pooling_chain.xml")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_tensor_names_are_the_same_however_they_are_first_asked_for():
    """The names index is built on first use: by a run, by tensor_names or by layers()."""
    import numpy as np

    path = MODELS / "pooling_chain.xml"
    x = np.ones((1, 3, 16, 16), np.float32)
    by_run = irrun.load(path)
    values = by_run.run({"image": x}, intermediate=True)
    by_names = irrun.load(path)
    names = by_names.tensor_names
    assert set(values) <= set(names.values())  # every computed tensor, under its name
    assert "stem_pool:1" in values
    assert by_run.tensor_names == names
    assert names[(next(r.id for r, _, _ in by_names.layers() if r.name == "stem_pool"), 2)] == "stem_pool:2"
    assert irrun.load(path).run({"image": x}, outputs=["stem_pool:2"])["stem_pool:2"].shape == (1, 3, 8, 8)


def test_warnings_about_unneeded_outputs_come_with_validate_once():
    # load puts them off; Model.validate adds them, once however often it is asked.
    m = irrun.load(MODELS / "pooling_chain.xml")
    unused = [(d.layer.name, d.port) for d in m.validate() if d.code == "unused-output"]
    assert unused == [(d.layer.name, d.port) for d in irrun.validate(MODELS / "pooling_chain.xml")
                      if d.code == "unused-output"] != []  # fmt: skip
    assert [d.code for d in m.validate()].count("unused-output") == len(unused)


def test_a_dropped_model_is_freed_without_the_cycle_collector():
    # Nothing in a model refers back to it: memory comes back as soon as it is dropped,
    # not at some later collection (a loaded model holds thousands of records).
    import gc
    import weakref

    m = irrun.load(MODELS / "demo.xml")
    m.run({"image": np.zeros((1, 3, 32, 32), np.float32)})
    gone = weakref.ref(m._plan)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del m
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
