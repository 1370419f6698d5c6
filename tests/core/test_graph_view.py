"""Model.graph, the model as a networkx MultiDiGraph: its nodes and edges are the XML's,
its shapes and element types OpenVINO's (read_model's inferred partial shapes, which
are at times more precise than irrun's: then irrun's must contain OpenVINO's)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

import irrun
from irrun.ir.dims import Interval

ov = pytest.importorskip("openvino")

ROOT = Path(__file__).resolve().parents[2]
# Models whose every inferred shape is OpenVINO's to the dim.
EXACT = [
    "models/demo.xml",
    "models/pooling_chain.xml",
    "models/running_sum.xml",
    "tests/torch_models/unet.xml",
    "tests/torch_models/mobilenet_block.xml",
    "tests/sequence_models/onnx_lstm_bidirectional.xml",
]
# OpenVINO knows more dims of these (it tracks dims through ShapeOf -> Concat -> Reshape
# and through Loop bodies), so irrun's shapes are checked to contain OpenVINO's.
RELAXED = [
    "tests/torch_models/attention.xml",
    "tests/torch_models/channel_shuffle.xml",
    "tests/sequence_models/keras_rnn.xml",  # four Loops
    "tests/subgraph_models/torchvision_patterns.xml",  # an If and a Loop
    "tests/stateful/llama/openvino_model.xml",
]


def _path(rel: str) -> str:
    return str(ROOT / rel)


def _xml_graph(element: ET.Element) -> tuple[dict[str, ET.Element], Counter]:
    """The layers by id and the edges (from, to, (from port, to port)) of one <net> or body."""
    layers = {e.get("id"): e for e in element.find("layers")}  # type: ignore[union-attr]
    edges = Counter(
        (e.get("from-layer"), e.get("to-layer"), (int(e.get("from-port")), int(e.get("to-port"))))
        for e in element.find("edges")  # type: ignore[union-attr]
    )
    return layers, edges


def _check_wiring(g: nx.MultiDiGraph, element: ET.Element) -> int:
    """The graph has the XML's layers and edges, with their attributes; returns the number
    of bodies checked too."""
    layers, edges = _xml_graph(element)
    assert g.number_of_nodes() == len(layers)
    assert set(g.nodes) == set(layers)
    assert Counter(list(g.edges(keys=True))) == edges
    for u, v, (fp, tp), d in g.edges(keys=True, data=True):
        assert (d["from_port"], d["to_port"]) == (fp, tp)
        producer = g.nodes[u]
        port = producer["outputs"].index(fp)
        assert d["shape_text"] == producer["shape_texts"][port]
        assert d["element_type"] == producer["element_types"][port]
        assert d["tensor_names"] == producer["tensor_names"][port]
        assert tp in g.nodes[v]["inputs"]
    bodies = 0
    for lid, e in layers.items():
        d = g.nodes[lid]
        assert (d["id"], d["name"], d["type"], d["opset"]) == (
            lid, e.get("name"), e.get("type"), e.get("version"))  # fmt: skip
        data = e.find("data")
        assert d["attributes"] == (dict(data.attrib) if data is not None else {})
        out = e.find("output")
        assert list(d["outputs"]) == [int(p.get("id")) for p in (out if out is not None else [])]
        tags = [t for t in ("body", "then_body", "else_body") if e.find(t) is not None]
        assert sorted(d.get("bodies", {})) == sorted(tags)
        for tag in tags:
            bodies += 1 + _check_wiring(d["bodies"][tag], e.find(tag))  # type: ignore[arg-type]
    return bodies


@pytest.mark.parametrize("rel", EXACT + RELAXED)
def test_nodes_and_edges_are_the_xmls(rel):
    g = irrun.load(_path(rel)).graph
    bodies = _check_wiring(g, ET.parse(_path(rel)).getroot())
    assert bodies == {"tests/sequence_models/keras_rnn.xml": 4,
                      "tests/subgraph_models/torchvision_patterns.xml": 3}.get(rel, 0)  # fmt: skip


def _contains(mine, theirs) -> bool:
    """irrun's dim (an int or an Interval) admits every value OpenVINO's admits."""
    if isinstance(mine, int):
        return theirs.is_static and theirs.get_length() == mine
    assert isinstance(mine, Interval)
    lo, hi = theirs.get_min_length(), theirs.get_max_length()
    return mine.lo <= lo and (mine.hi is None or (hi != -1 and hi <= mine.hi))


def _compare(g: nx.MultiDiGraph, model, exact: bool, where: str, body: bool = False) -> int:
    """Compare each op OpenVINO keeps with the node of its name; returns how many were."""
    by_name: dict[str, list] = {}
    for _, d in g.nodes(data=True):
        by_name.setdefault(d["name"], []).append(d)
    compared = 0
    for op in model.get_ordered_ops():
        found = by_name.get(op.get_friendly_name(), [])
        assert len(found) == 1, f"{where}: {op.get_friendly_name()} names {len(found)} layers"
        d = found[0]
        n = op.get_output_size() if d["type"] != "Result" else 0  # a Result has no <output>
        what = f"{where}: {d['name']}"
        assert d["element_types"] == tuple(
            op.get_output_element_type(i).get_type_name() for i in range(n)), what  # fmt: skip
        shapes = [op.get_output_partial_shape(i) for i in range(n)]
        if exact:
            assert d["shape_texts"] == tuple(str(s) for s in shapes), what
        for mine, theirs in zip(d["shapes"], shapes, strict=True):
            if mine is None:
                assert theirs.rank.is_dynamic or not exact, what
                continue
            assert theirs.rank.is_dynamic or len(mine) == theirs.rank.get_length(), what
            if theirs.rank.is_static:
                assert all(map(_contains, mine, theirs)), f"{what}: {mine} {theirs}"
        if not body:  # read_model renames a body's tensor names that clash with others'
            for i in range(n):
                assert set(d["tensor_names"][i]) == op.output(i).get_names(), what
        if "bodies" in d:
            functions = ([op.get_function(0), op.get_function(1)] if d["type"] == "If"
                         else [op.get_function()])  # fmt: skip
            for inner, function in zip(d["bodies"].values(), functions, strict=True):
                compared += _compare(inner, function, exact, f"{what} body", True)
        compared += 1
    return compared


@pytest.mark.parametrize("rel,exact", [(r, True) for r in EXACT] + [(r, False) for r in RELAXED])
def test_shapes_and_types_are_openvinos(rel, exact):
    g = irrun.load(_path(rel)).graph
    compared = _compare(g, ov.Core().read_model(_path(rel)), exact, rel)
    # read_model keeps every layer of these (none is dead), bodies' too.
    assert compared == g.number_of_nodes() + sum(
        b.number_of_nodes() for _, d in g.nodes(data=True) for b in d.get("bodies", {}).values()
    )


@pytest.mark.parametrize("rel,layer,version,opset", [
    ("models/pooling_chain.xml", "stem_pool", 8, "opset8"),
    ("models/pooling_chain.xml", "avg_pool", 14, "opset14"),
    ("models/demo.xml", "softmax", 8, "opset8"),
    ("models/demo.xml", "conv1", 1, "opset1"),
    ("tests/subgraph_models/torchvision_patterns.xml", "prim::If/If", 8, "opset8"),
])  # fmt: skip
def test_versions_as_resolved_and_as_written(rel, layer, version, opset):
    g = irrun.load(_path(rel)).graph
    (d,) = [d for _, d in g.nodes(data=True) if d["name"] == layer]
    assert (d["version"], d["opset"]) == (version, opset)


def test_shapes_are_tuples_with_intervals_for_dynamic_dims():
    g = irrun.load(_path("tests/sequence_models/keras_rnn.xml")).graph
    (x,) = [d for _, d in g.nodes(data=True) if d["type"] == "Parameter"]
    assert x["shapes"] == ((Interval(0, None), 7, 4),)  # the XML's [-1,7,4]
    assert x["shape_texts"] == ("[?,7,4]",) and x["element_types"] == ("f32",)
    assert x["tensor_names"] == (("x",),) and x["tensors"] == ("x",)


@pytest.mark.parametrize("rel", ["models/demo.xml", "tests/stateful/llama/openvino_model.xml"])
def test_topological_order(rel):
    m = irrun.load(_path(rel))
    g = m.graph
    order = list(nx.topological_sort(g))
    assert sorted(order) == sorted(g.nodes)
    position = {lid: i for i, lid in enumerate(order)}
    assert all(position[u] < position[v] for u, v in g.edges())
    # The order irrun runs the layers in is one of the graph's topological orders.
    run_order = [ref.id for ref, _, _ in m.layers()]
    assert nx.is_topological_sort(g, run_order) if hasattr(nx, "is_topological_sort") else \
        all(run_order.index(u) < run_order.index(v) for u, v in g.edges())  # fmt: skip


def test_an_extracted_subgraph_runs_in_openvino():
    """The ancestors of the demo's output, as networkx gives them, are every layer it reads."""
    g = irrun.load(_path("models/demo.xml")).graph
    (pool2,) = [n for n, d in g.nodes(data=True) if d["name"] == "pool2"]
    sub = g.subgraph(nx.ancestors(g, pool2) | {pool2})
    assert sorted(d["type"] for _, d in sub.nodes(data=True)) == sorted(
        ["Parameter", "Const", "Convert", "Convolution", "ReLU", "MaxPool",
         "Const", "Convert", "Convolution", "ReLU", "AvgPool"])  # fmt: skip


def test_cached_until_reshape():
    m = irrun.load(_path("models/pooling_chain.xml"))
    g = m.graph
    assert m.graph is g
    m.reshape({"image": [8, 3, 64, 64]})
    reshaped = m.graph
    assert reshaped is not g and m.graph is reshaped
    model = ov.Core().read_model(_path("models/pooling_chain.xml"))
    model.reshape({"image": [8, 3, 64, 64]})
    assert _compare(reshaped, model, True, "reshaped") == reshaped.number_of_nodes()
    # The graph handed out before keeps the shapes it was built with.
    assert g.nodes["0"]["shape_texts"] == ("[1,3,16,16]",)
    assert reshaped.nodes["0"]["shape_texts"] == ("[8,3,64,64]",)
