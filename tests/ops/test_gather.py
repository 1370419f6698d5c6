"""The element types of the gathers (irrun/ops/gather.py): data of every type, indices
and axes of every type each version takes, against OpenVINO (see support.typed);
the gathers' values are tested in test_movement.py (Gather) and test_scatter.py
(GatherElements, GatherND)."""

from __future__ import annotations

import numpy as np
import pytest
from support.typed import Case, assert_not_taken

from irrun.ir.element_types import ANY
from irrun.ir.registry import resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset5, opset6, opset7, opset8  # noqa: E402

CASES = {
    "Gather-1": Case(lambda x, i, a: opset1.gather(x, i, a), (2, 3), [[2, 0], [1, 1]], np.array(1)),
    "Gather-7": Case(lambda x, i, a: opset7.gather(x, i, a, 1), (2, 3), [[2, 0], [1, 1]],
                     np.array(1)),
    "Gather-8": Case(lambda x, i, a: opset8.gather(x, i, a), (2, 3), [[2, 0], [-1, 1]],
                     np.array(-1)),
    # An index out of range picks a zero ("" for strings, all bits zero for the others).
    "Gather-8/out": Case(lambda x, i, a: opset8.gather(x, i, a), (2, 3), [3, 0], np.array(1)),
    "GatherElements-6": Case(lambda x, i: opset6.gather_elements(x, i, 1), (2, 3),
                             [[2, 0], [1, 1]]),
    "GatherElements-6/negative": Case(lambda x, i: opset6.gather_elements(x, i, -1), (2, 3),
                                      [[2, 0], [-1, 1]]),
    "GatherND-5": Case(lambda x, i: opset5.gather_nd(x, i, 1), (2, 3, 2), [[2], [0]]),
    "GatherND-8": Case(lambda x, i: opset8.gather_nd(x, i, 1), (2, 3, 2), [[2, 1], [0, 0]]),
}  # fmt: skip


def declared(op: str):
    type_, version = op.split("/")[0].split("-")
    return resolve(type_, f"opset{version}")


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("op", CASES)
def test_every_data_type(op, t, tmp_path):
    CASES[op].check_data_type(t, tmp_path)


INDEX_CASES = [(op, t) for op, case in CASES.items() for t in case.index_types(declared(op))]


@pytest.mark.parametrize(("op", "t"), INDEX_CASES)
def test_every_index_type(op, t, tmp_path):
    CASES[op].check_index_type(t, tmp_path, data_type="f32")


def test_index_cases_cover_the_declared_types():
    for op in CASES:
        label = declared(op).label
        swept = {t for o, t in INDEX_CASES if declared(o).label == label}
        assert swept >= set(declared(op).port_types(1)) - {"u1"}, (label, swept)


REFUSED = [("Gather-1", 1, "f32"), ("Gather-1", 2, "boolean"), ("Gather-7", 1, "f16"),
           ("Gather-8", 2, "string"), ("GatherElements-6", 1, "i8"),
           ("GatherElements-6", 1, "u4"), ("GatherND-5", 1, "f32"), ("GatherND-8", 1, "nf4")]


@pytest.mark.parametrize(("op", "port", "t"), REFUSED)
def test_a_type_not_taken_is_a_validate_error(op, port, t, tmp_path):
    errors = CASES[op].refused(port, t, tmp_path)
    label = declared(op).label
    assert_not_taken(errors, port, t, label)
