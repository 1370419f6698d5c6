"""What the reader shares between elements written alike stays each element's own.

The reader keeps, across models, what it read from a layer's text after its start tag,
from a port's attributes and dims and from a layer's ``<data>``: a layer or port met
again reads from that, and each layer gets its own copy of the ``<data>`` dict.  Lines, names and problems must still be each
element's own, and nothing done to one model's records may reach another's.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field, replace
from pathlib import Path

import pytest

import irrun
from irrun.frozen import fast_init
from irrun.ir import reader
from irrun.ir.reader import Edge, read_document

MODELS = Path(__file__).resolve().parents[2] / "models"

_POOL = """\
\t\t<layer id="{id}" name="{name}" type="MaxPool" version="opset1">
\t\t\t<data strides="1,1" pads_begin="0,0" pads_end="0,0" kernel="1,1" rounding_type="floor" auto_pad="explicit"/>
\t\t\t<input>
\t\t\t\t<port id="0" precision="FP32"><dim>1</dim><dim>2</dim><dim>{h}</dim><dim>4</dim></port>
\t\t\t</input>
\t\t\t<output>
\t\t\t\t<port id="1" {precision}names="{names}"><dim>1</dim><dim>2</dim><dim>{h}</dim><dim>4</dim></port>
\t\t\t</output>
\t\t</layer>
"""


def _chain(tmp_path: Path, pools: list[dict], name: str = "m.xml") -> Path:
    """A Parameter, then the pools given (ids 1...), then a Result, edges between them."""
    layers = [
        '\t\t<layer id="0" name="x" type="Parameter" version="opset1">\n'
        '\t\t\t<data shape="1,2,4,4" element_type="f32"/>\n'
        '\t\t\t<output>\n\t\t\t\t<port id="0" precision="FP32" names="x">'
        "<dim>1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port>\n\t\t\t</output>\n\t\t</layer>\n"
    ]
    for i, pool in enumerate(pools, 1):
        fields = {"id": i, "name": f"pool{i}", "h": 4, "precision": 'precision="FP32" ',
                  "names": f"t{i}", **pool}  # fmt: skip
        layers.append(_POOL.format(**fields))
    last = len(pools) + 1
    layers.append(
        f'\t\t<layer id="{last}" name="out" type="Result" version="opset1">\n'
        '\t\t\t<input>\n\t\t\t\t<port id="0" precision="FP32">'
        "<dim>1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port>\n\t\t\t</input>\n\t\t</layer>\n"
    )
    edges = [f'\t\t<edge from-layer="0" from-port="0" to-layer="{1 if pools else last}" '
             'to-port="0"/>\n']  # fmt: skip
    edges += [f'\t\t<edge from-layer="{i}" from-port="1" to-layer="{i + 1}" to-port="0"/>\n'
              for i in range(1, last)]  # fmt: skip
    text = ('<?xml version="1.0"?>\n<net name="m" version="11">\n\t<layers>\n'
            + "".join(layers) + "\t</layers>\n\t<edges>\n" + "".join(edges)
            + "\t</edges>\n</net>\n")  # fmt: skip
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path: Path, text: bool = True):
    """Read ``path`` as load does, with its bytes (``text``: layers may be known by it)."""
    data = path.read_bytes()
    doc, problems = read_document(reader.parse_xml(path, data), path, data if text else None)
    assert doc is not None
    return doc, problems


def _records(doc) -> list:
    return [(layer, layer.inputs, layer.outputs) for layer in doc.layers]


def test_ports_read_alike_keep_their_own_lines(tmp_path):
    doc, problems = _read(_chain(tmp_path, [{"names": ""}] * 3))
    assert not problems
    lines = [p.line for layer in doc.layers for p in (*layer.inputs, *layer.outputs)]
    assert len(set(lines)) == len(lines)
    text = (tmp_path / "m.xml").read_text().splitlines()
    for layer in doc.layers:
        for port in (*layer.inputs, *layer.outputs):
            assert f'<port id="{port.id}"' in text[port.line - 1]
    pools = doc.layers[1:4]
    assert [p.outputs[0].dims for p in pools] == [(1, 2, 4, 4)] * 3
    assert len({id(p.outputs[0]) for p in pools}) == 3  # a Port each, not one shared


def test_ports_read_alike_keep_their_own_findings(tmp_path):
    """Two pools declare the same wrong dim: each is reported at its own port and layer."""
    path = _chain(tmp_path, [{"h": 5}, {}, {"h": 5}])
    text = path.read_text().splitlines()
    found = [d for d in irrun.validate(path) if d.code == "shape-mismatch"]
    mismatched = {(d.layer.name, text[d.line - 1].strip()[:16]) for d in found}
    assert ("pool1", '<port id="1" pre') in mismatched
    assert ("pool3", '<port id="1" pre') in mismatched
    assert len({d.line for d in found}) == len(found)


def test_an_output_port_without_precision_is_reported_every_time(tmp_path):
    """A cached input port with the same attributes must not hide the output's problem."""
    path = _chain(tmp_path, [{"precision": "", "names": ""}] * 2)
    # pool2's input written as the outputs are: <port id="1" names="">
    text = path.read_text().split('<layer id="2"')
    text[1] = text[1].replace('<port id="0" precision="FP32">', '<port id="1" names="">', 1)
    path.write_text('<layer id="2"'.join(text).replace('to-layer="2" to-port="0"',
                                                       'to-layer="2" to-port="1"'))
    _, problems = _read(path)
    missing = [p for p in problems if "has no precision" in p.message]
    assert [p.layer.name for p in missing] == ["pool1", "pool2"]
    assert len({p.location.line for p in missing}) == 2
    _, again = _read(path)  # with everything cached from the first read
    assert [str(p) for p in again] == [str(p) for p in problems]


def test_a_bad_dim_is_reported_for_each_port_that_has_it(tmp_path):
    path = _chain(tmp_path, [{"h": "x"}, {"h": "x"}])
    for _ in range(2):  # cold and warm
        _, problems = _read(path)
        bad = [p for p in problems if "<dim>x</dim>" in p.message]
        assert len(bad) == 4  # each pool's input and output
        assert len({(p.layer.name, p.location.line) for p in bad}) == 4


def test_a_port_with_rt_info_is_read_whole_after_one_without(tmp_path):
    path = _chain(tmp_path, [{}, {}])
    text = path.read_text()
    plain = "<port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>2</dim><dim>4</dim><dim>4</dim>"
    last = text.rindex(plain)  # the Result's input, written as the pools' inputs are
    text = (text[:last] + plain + '<rt_info><attribute name="k" value="v"/></rt_info>'
            + text[last + len(plain):])  # fmt: skip
    path.write_text(text)
    doc, problems = _read(path)
    assert not problems
    assert doc.layers[-1].inputs[0].rt_info == {"k": "v"}
    assert all(layer.inputs[0].rt_info == {} for layer in doc.layers[1:-1])


def test_data_dicts_are_not_shared_between_layers_or_models(tmp_path):
    path = _chain(tmp_path, [{}, {}])
    first, _ = _read(path)
    second, _ = _read(path)
    first.layers[1].data["kernel"] = "9,9"
    assert first.layers[2].data["kernel"] == "1,1"
    assert second.layers[1].data["kernel"] == "1,1"
    assert _read(path)[0].layers[1].data["kernel"] == "1,1"


def test_changing_one_models_ports_does_not_reach_another(tmp_path):
    path = _chain(tmp_path, [{}])
    first, _ = _read(path)
    first.layers[1].outputs[0].rt_info["k"] = "v"
    first.layers[1].outputs[0].dims = (7,)
    second, _ = _read(path)
    assert second.layers[1].outputs[0].rt_info == {}
    assert second.layers[1].outputs[0].dims == (1, 2, 4, 4)


def test_models_load_the_same_with_warm_caches():
    """Every model of the repository reads to equal records a second time."""
    for xml in sorted(MODELS.glob("*.xml")):
        doc, problems = _read(xml)
        again, problems_again = _read(xml)
        assert again.layers == doc.layers, xml.name
        assert again.edges == doc.edges, xml.name
        assert [str(p) for p in problems_again] == [str(p) for p in problems]


def test_layers_of_one_kind_share_a_kind_number(tmp_path):
    m = irrun.load(_chain(tmp_path, [{}, {}, {}]))
    kinds = [m._nodes[lid].kind for lid in m._graph.order]
    parameter, pools, result = kinds[0], kinds[1:4], kinds[4]
    assert len(set(pools)) == 1
    assert len({parameter, pools[0], result}) == 3


def test_edges_with_odd_numbers_are_read_as_openvino_reads_them(tmp_path):
    path = _chain(tmp_path, [{}])
    text = path.read_text().replace('from-layer="1" from-port="1"', 'from-layer="01" from-port="+1"')
    text = text.replace('to-layer="1" to-port="0"', 'to-layer="1" to-port=""')
    path.write_text(text)
    doc, problems = _read(path)
    assert doc.edges[0] == Edge("0", 0, "1", None, doc.edges[0].line)
    assert doc.edges[1] == Edge("1", 1, "2", 0, doc.edges[1].line)
    assert [p.code for p in problems] == ["structure"]


def test_layers_written_alike_are_read_from_their_text_at_their_own_lines(tmp_path):
    path = _chain(tmp_path, [{"names": ""}] * 3)
    reader._BODIES.clear()
    doc, problems = _read(path)
    assert not problems and reader._BODIES  # the pools after the first were known by text
    pools = doc.layers[1:4]
    for pool in pools:
        assert pool.data_line == pool.line + 1
        assert [p.line for p in pool.inputs] == [pool.line + 3]
        assert [p.line for p in pool.outputs] == [pool.line + 6]
        assert pool.data["kernel"] == "1,1" and pool.outputs[0].dims == (1, 2, 4, 4)
    assert [p.name for p in pools] == ["pool1", "pool2", "pool3"]
    assert len({id(p.data) for p in pools}) == 3
    assert _records(doc) == _records(_read(path, text=False)[0])


def test_layers_declaring_namespaces_are_read_by_themselves(tmp_path):
    """The same text reads otherwise under another namespace declared on the layer's line."""
    path = _chain(tmp_path, [{"names": ""}] * 3)
    text = path.read_text().replace("<data strides", '<data p:colour="red" strides')
    for i, uri in ((1, "urn:x"), (2, "urn:y"), (3, "urn:x")):
        text = text.replace(f'name="pool{i}" type="MaxPool" version="opset1"',
                            f'name="pool{i}" type="MaxPool" version="opset1" xmlns:p="{uri}"')
    path.write_text(text)
    for _ in range(2):  # cold and warm
        doc, _ = _read(path)
        assert [next(iter(layer.data)) for layer in doc.layers[1:4]] == [
            "{urn:x}colour", "{urn:y}colour", "{urn:x}colour"]  # fmt: skip
        assert _records(doc) == _records(_read(path, text=False)[0])


def test_layers_not_alone_on_their_lines_are_read_element_by_element(tmp_path):
    path = _chain(tmp_path, [{}, {}, {}])
    text = path.read_text()
    # pool2 starts on the line where pool1 ends, its data follows on the same line
    text = text.replace('</layer>\n\t\t<layer id="2"', '</layer><layer id="2"')
    text = text.replace('version="opset1">\n\t\t\t<data strides', 'version="opset1"><data strides')
    path.write_text(text)
    for _ in range(2):
        doc, problems = _read(path)
        assert not problems
        assert _records(doc) == _records(_read(path, text=False)[0])
        lines = path.read_text().splitlines()
        for layer in doc.layers:
            assert f'<layer id="{layer.id}"' in lines[layer.line - 1]
            if layer.data_line:
                assert "<data " in lines[layer.data_line - 1]


def test_windows_line_ends_read_as_unix_ones(tmp_path):
    path = _chain(tmp_path, [{}, {}])
    unix = _records(_read(path)[0])
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert _records(_read(path)[0]) == unix


@fast_init
@dataclass(frozen=True)
class _Record:
    a: int
    b: str = "b"
    c: list = field(default_factory=list, compare=False)


def test_fast_init_keeps_a_frozen_dataclass():
    r = _Record(1)
    assert r == _Record(1, "b") and hash(r) == hash(_Record(a=1))
    assert r.c == [] and r.c is not _Record(1).c
    assert replace(r, b="x") == _Record(1, "x")
    with pytest.raises(FrozenInstanceError):
        r.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Record()  # type: ignore[call-arg]
    assert repr(_Record(1, c=[2])) == "_Record(a=1, b='b', c=[2])"


def test_blank_text_that_is_read_is_kept(tmp_path):
    """The parser drops whitespace between elements, not an element's only text."""
    path = _chain(tmp_path, [{}])
    text = path.read_text().replace("<dim>2</dim><dim>4</dim><dim>4</dim></port>\n\t\t\t</output>",
                                    "<dim> 2 </dim><dim>4</dim><dim>  </dim></port>\n\t\t\t</output>",
                                    1)  # fmt: skip
    path.write_text(text)
    root = reader.parse_xml(path)
    port = root.find("layers")[0].find("output")[0]  # the Parameter's, written first
    assert [d.text for d in port] == ["1", " 2 ", "4", "  "]
    _, problems = _read(path)
    assert [p.message for p in problems] == [
        "<dim></dim> is not a dimension (expected an integer >= -1 or a range a..b)"]  # fmt: skip


_ODD_EDGES = {
    "plain": [],
    "as OpenVINO writes them": [('"/>', '" />', -1)],
    "spaced": [('<edge from-layer', '<edge \t from-layer'), ('to-port="0"/>', 'to-port="0"  />  ')],
    "missing attribute": [('from-layer="2" from-port="1" ', 'from-port="1" ')],
    "extra attribute": [('to-layer="3" to-port="0"', 'to-layer="3" to-port="0" note="x"')],
    "reordered": [('from-layer="2" from-port="1"', 'from-port="1" from-layer="2"')],
    "leading zeros": [('from-layer="2" from-port="1"', 'from-layer="02" from-port="01"'),
                      ('to-layer="4"', 'to-layer="004"')],
    "all zeros": [('from-layer="0"', 'from-layer="00"')],
    "plus sign": [('from-layer="2" from-port="1"', 'from-layer="+2" from-port=" +1"')],
    "not digits": [('to-layer="3" to-port="0"', 'to-layer="three" to-port="0x"')],
    "empty": [('to-layer="3" to-port="0"', 'to-layer="" to-port=""')],
    "non-ascii digits": [('to-layer="3"', 'to-layer="\u0663"'), ('from-port="1"', 'from-port="\u0661"')],
    "character reference": [('to-layer="3"', 'to-layer="&#51;"')],
    "single quotes": [('to-layer="3"', "to-layer='3'")],
    "two on one line": [('to-port="0"/>\n\t\t<edge from-layer="3"', 'to-port="0"/><edge from-layer="3"')],
    "split over lines": [('from-layer="3" from-port="1"', 'from-layer="3"\n\t\t\tfrom-port="1"')],
    "end tag": [('to-layer="5" to-port="0"/>', 'to-layer="5" to-port="0"></edge>')],
    "comment line": [('\t\t<edge from-layer="3"', '\t\t<!-- c -->\n\t\t<edge from-layer="3"')],
    "commented edge": [('\t\t<edge from-layer="3"',
                        '\t\t<!--\n\t\t<edge from-layer="9" from-port="1" to-layer="9" to-port="0"/>\n'
                        '\t\t-->\n\t\t<edge from-layer="3"')],
    "blank line": [('\t\t<edge from-layer="3"', '\n\t\t<edge from-layer="3"')],
    "other element": [('\t\t<edge from-layer="3"', '\t\t<note/>\n\t\t<edge from-layer="3"')],
    "other element first": [('<edges>\n', '<edges>\n\t\t<note/>\n')],
    "namespace": [('<edges>', '<edges xmlns="urn:x">')],
    "prefixed": [('<edges>', '<edges xmlns:e="urn:x">'), ('<edge from-layer="3"', '<e:edge from-layer="3"')],
    "edges on the first line": [('<edges>\n\t\t<edge', '<edges><edge')],
    "one edge": "one",
    "no edges": "none",
    "port fed twice": [('to-layer="5" to-port="0"', 'to-layer="4" to-port="0"')],
    "missing layer": [('to-layer="5" to-port="0"', 'to-layer="9" to-port="0"')],
    "windows line ends": "crlf",
}


@pytest.mark.parametrize("case", list(_ODD_EDGES))
def test_edges_read_from_lines_read_as_element_by_element(tmp_path, case):
    """Edges read from the file's lines are those read element by element, with the same
    findings, whatever the edges look like."""
    path = _chain(tmp_path, [{}, {}, {}, {}])
    text = path.read_text()
    change = _ODD_EDGES[case]
    if change == "one":
        path = _chain(tmp_path, [])
    elif change == "none":
        text = text[: text.index("\t<edges>")] + text[text.index("</edges>") + 9 :]
        path.write_text(text)
    elif change == "crlf":
        path.write_bytes(text.encode().replace(b"\n", b"\r\n"))
    else:
        for old, new, *count in change:
            assert old in text, (case, old)
            text = text.replace(old, new, *(count or [1]))
        path.write_text(text)
    doc, problems = _read(path)
    plain_doc, plain_problems = _read(path, text=False)
    assert doc.edges == plain_doc.edges
    assert [(str(p), p.location) for p in problems] == [
        (str(p), p.location) for p in plain_problems]  # fmt: skip
    graph, plain_graph = irrun.core.graph.build_graph(doc), irrun.core.graph.build_graph(plain_doc)
    assert [str(d) for d in graph.problems] == [str(d) for d in plain_graph.problems]


def test_plain_edges_are_read_from_the_lines(tmp_path, monkeypatch):
    path = _chain(tmp_path, [{}, {}])
    monkeypatch.setattr(reader._Reader, "edge", None)  # reading an element would fail
    doc, problems = _read(path)
    assert not problems
    first = path.read_text().splitlines().index("\t<edges>") + 2
    assert [(e.from_layer, e.to_layer, e.line) for e in doc.edges] == [
        ("0", "1", first), ("1", "2", first + 1), ("2", "3", first + 2)]  # fmt: skip
