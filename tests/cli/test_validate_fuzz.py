"""``irrun validate`` on whatever a file holds: never a traceback, never a hang.

Hostile files (binary garbage, an empty file, elements nested too deep, entity bombs, an
external entity naming a local file, a file past the size limit), then a seeded mutation
fuzz: a few thousand random edits of valid IR, each run in-process through
``irrun.cli.main`` under a time guard, must exit 0, 1 or 2 with one line per finding and
no internal error.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.cli import main
from irrun.ir.xml_file import DEFAULT_MAX_XML_MB

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO_XML = (MODELS / "pooling_chain.xml").read_text()
DEMO_BIN = (MODELS / "pooling_chain.bin").read_bytes()


def validate_cli(capsys, *args: str) -> tuple[int, str, str]:
    try:
        rc = main(["validate", *args])
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def only_finding(capsys, path: Path) -> str:
    rc, out, err = validate_cli(capsys, str(path))
    assert (rc, err) == (1, "")
    finding, summary = out.splitlines()
    assert summary == f"{path}: 1 error, 0 warnings"
    return finding


# --- hostile files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "error: the file is empty, expected an OpenVINO IR <net> document"),
        (os.urandom(0) + bytes(range(256)) * 64, "error: binary data, not an IR .xml file"),
        (b"\xff\xfe<\x00n\x00", "error: malformed XML: "),
        (b"<net version='11'><layers>\xc3\x28</layers></net>", "error: malformed XML: "),
        ("<net version='11'>" + "<layers>" * 300, "error: malformed XML: elements are nested "
         "more than 256 deep"),
    ],
    ids=["empty", "garbage", "utf16-cut", "bad-utf8", "deeply-nested"],
)  # fmt: skip
def test_hostile_bytes_are_one_finding(tmp_path, capsys, content, message):
    path = tmp_path / "bad.xml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    finding = only_finding(capsys, path)
    assert finding.startswith(f"{path}") and message in finding


def test_deep_but_legal_nesting_in_rt_info_is_read(tmp_path, capsys):
    nested = "<a>" * 200 + "</a>" * 200
    path = tmp_path / "m.xml"
    path.write_text(DEMO_XML.replace("\t</rt_info>", f"\t\t{nested}\n\t</rt_info>"))
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    assert [d.code for d in irrun.validate(path)] == ["unused-output"]


BILLION_LAUGHS = "\n".join([
    '<?xml version="1.0"?>',
    "<!DOCTYPE net [",
    ' <!ENTITY lol "lol">',
    *(f' <!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 2 else "&lol;" * 10}">'
      for i in range(2, 10)),
    "]>",
    '<net name="&lol9;" version="11"><layers><layer id="0" name="&lol9;" type="Parameter" '
    'version="opset1">&lol9;</layer></layers></net>',
])  # fmt: skip


def test_an_entity_bomb_is_refused_unexpanded(tmp_path, capsys):
    path = tmp_path / "bomb.xml"
    path.write_text(BILLION_LAUGHS)
    start = time.perf_counter()
    finding = only_finding(capsys, path)
    assert time.perf_counter() - start < 5
    assert finding == (f"{path}:2: error: document type declarations (<!DOCTYPE>, entities) "
                       "are not allowed in IR files")  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a POSIX named pipe")
def test_an_external_entity_is_never_read(tmp_path):
    # Opening a named pipe for reading blocks until a writer comes, and none does: had
    # validate opened the entity's file, it would hang until the timeout.
    fifo = tmp_path / "secret"
    os.mkfifo(fifo)
    path = tmp_path / "xxe.xml"
    entity = f'<!ENTITY x SYSTEM "{fifo.as_uri()}">'
    path.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE net [ {entity} ]>\n'
                    '<net name="&x;" version="11"><layers/></net>\n')  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "irrun", "validate", str(path), "--json"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 1
    assert '"code": "doctype"' in proc.stdout and "Traceback" not in proc.stderr


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path, capsys):
    path = tmp_path / "huge.xml"
    with path.open("wb") as f:  # a sparse 100 MB file: nothing is written, nothing is read
        f.truncate(100_000_000)
    finding = only_finding(capsys, path)
    assert finding == (
        f"{path}: error: the file is 100.0 MB, larger than irrun reads ({DEFAULT_MAX_XML_MB} MB; "
        "set IRRUN_MAX_XML_MB to change the limit)"
    )


def _chain(n: int) -> str:
    """A Parameter, ``n`` identity MaxPools in a chain, and a Result."""
    dims = "<dim>1</dim><dim>1</dim><dim>4</dim><dim>4</dim>"
    pool = ('<layer id="{i}" name="p{i}" type="MaxPool" version="opset1"><data strides="1, 1" '
            'pads_begin="0, 0" pads_end="0, 0" kernel="1, 1" rounding_type="floor" '
            f'auto_pad="explicit" /><input><port id="0" precision="FP32">{dims}</port></input>'
            f'<output><port id="1" precision="FP32">{dims}</port></output></layer>\n')  # fmt: skip
    layers = [
        '<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,1,4,4" '
        f'element_type="f32" /><output><port id="1" precision="FP32">{dims}</port></output>'
        "</layer>\n",
        *(pool.format(i=i) for i in range(1, n + 1)),
        f'<layer id="{n + 1}" name="y" type="Result" version="opset1"><input><port id="0" '
        f'precision="FP32">{dims}</port></input></layer>\n',
    ]
    edges = [f'<edge from-layer="{i}" from-port="1" to-layer="{i + 1}" to-port="0" />\n'
             for i in range(n + 1)]  # fmt: skip
    return (f'<net name="chain" version="11"><layers>\n{"".join(layers)}</layers><edges>\n'
            f'{"".join(edges)}</edges></net>\n')  # fmt: skip


def test_the_size_limit_can_be_set(tmp_path, capsys, monkeypatch):
    path = tmp_path / "chain.xml"
    path.write_text(_chain(300))
    size = path.stat().st_size
    assert 100_000 < size < 200_000
    monkeypatch.setenv("IRRUN_MAX_XML_MB", "0.1")
    assert only_finding(capsys, path) == (
        f"{path}: error: the file is {size / 1e6:.1f} MB, larger than irrun reads (0.1 MB; set "
        "IRRUN_MAX_XML_MB to change the limit)"
    )
    monkeypatch.setenv("IRRUN_MAX_XML_MB", "0.2")
    assert validate_cli(capsys, str(path)) == (0, f"{path}: valid\n", "")
    for wrong in ("lots", "0", "-5", "nan"):
        monkeypatch.setenv("IRRUN_MAX_XML_MB", wrong)
        complaint = f"IRRUN_MAX_XML_MB='{wrong}' is not a number of megabytes above 0"
        assert validate_cli(capsys, str(path)) == (2, "", f"irrun: error: {complaint}\n")


def test_many_layers_in_a_few_seconds(tmp_path):
    path = tmp_path / "chain.xml"
    path.write_text(_chain(3000))
    start = time.perf_counter()
    assert irrun.validate(path) == []
    assert time.perf_counter() - start < 10


# --- the mutation fuzz ------------------------------------------------------------------------

CASES = 3000
SEED = 20261121
CASE_SECONDS = 5  # a case taking longer counts as a hang

TOKENS = [
    "", " ", "0", "1", "2", "-1", "-7", "3, 3", "1,,2", "2,", "999999999", "4294967297",
    "18446744073709551617", "-99999999999999999999", "x", "?", "1..3", "..", "1.5", "1e309",
    "nan", "f32", "FP32", "i64", "u1", "boolean", "true", "yes", "floor", "ceil", "ceil_torch",
    "same_upper", "valid", "explicit", "opset1", "opset8", "opset99", "MaxPool", "AvgPool",
    "Relu", "Const", "Result", "Parameter", "\u00e9\u00e8", "&amp;", "&lt;", "a\\,b", "3&#10;3",
    "&#13;", "1,&#9;2",
]  # fmt: skip
SHAPES = ["[1,3,16,16]", "image[1,3,?,?]", "image[2,3,1..9,7]", "image[1]", "x[1,2]", "[...]",
          "image[1,3,0,0]", "a[1,", "image[99999999,3,3,3]"]  # fmt: skip


def _seeds(directory: Path) -> list[tuple[str, str, bytes | None]]:
    """(name, xml, weights) of the valid models the mutations start from."""
    out = []
    for xml in sorted(MODELS.glob("*.xml")):
        weights = xml.with_suffix(".bin")
        out.append((xml.stem, xml.read_text(), weights.read_bytes() if weights.exists() else None))
    out.append(("chain", _chain(3), None))
    mixed = _mixed_model(directory)
    if mixed is not None:
        out += [("mixed", mixed.read_text(), mixed.with_suffix(".bin").read_bytes())] * 4
    return out


def _mixed_model(directory: Path) -> Path | None:
    """IR saved by OpenVINO with many kinds of op, so that their rules are fuzzed too."""
    try:
        import openvino as ov
        import openvino.opset1 as o1
        import openvino.opset3 as o3
        import openvino.opset8 as o8
        import openvino.opset11 as o11
        import openvino.opset12 as o12
    except ImportError:
        return None

    def ints(*values: int):
        return o1.constant(np.array(values, np.int64))

    x = o1.parameter([1, 3, 8, 8], np.float32, name="x")
    conv = o1.convolution(x, o1.constant(np.full((4, 3, 3, 3), 0.25, np.float32)), [1, 1],
                          [1, 1], [1, 1], [1, 1])  # fmt: skip
    relu = o1.relu(o1.add(conv, o1.constant(np.ones((1, 4, 1, 1), np.float32))))
    grouped = o1.group_convolution(relu, o1.constant(np.full((4, 1, 1, 3, 3), 0.5, np.float32)),
                                   [2, 2], [0, 0], [0, 0], [1, 1])  # fmt: skip
    pooled = o8.max_pool(grouped, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2])
    moved = o1.transpose(pooled.output(0), ints(0, 2, 3, 1))
    batch = o8.gather(o3.shape_of(moved), ints(0), o1.constant(np.int64(0)))
    flat = o1.reshape(moved, o1.concat([batch, ints(-1)], 0), False)
    scores = o8.softmax(o1.matmul(flat, o1.constant(np.ones((16, 5), np.float32)), False, False),
                        -1)  # fmt: skip
    mean = o1.reduce_mean(scores, ints(1), True)
    padded = o12.pad(mean, ints(0, 1), ints(0, 2), "constant")
    squeezed = o1.squeeze(o1.unsqueeze(padded, ints(0)), ints(0))
    sliced = o1.strided_slice(squeezed, ints(0, 0), ints(1, 3), ints(1, 1), [0, 0], [0, 0])
    wide = o1.unsqueeze(o3.broadcast(sliced, ints(2, 3)), ints(0, 1))
    scaled = o11.interpolate(wide, o1.constant(np.array([2, 2], np.float32)), "nearest",
                             "scales", axes=ints(2, 3))  # fmt: skip
    out = o1.result(o1.clamp(scaled, -1.0, 1.0))
    path = directory / "mixed.xml"
    ov.save_model(ov.Model([out], [x], "mixed"), str(path), compress_to_fp16=False)
    return path


_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_DIM = re.compile(r"<dim>([^<]*)</dim>")
_NUMBER = re.compile(r"-?\d+")
_TAG = re.compile(r"</?([a-z_]+)")


def mutate(rng: random.Random, text: str) -> bytes:
    """One to three random edits of an IR file's text."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not text:
            break
        kind = rng.randrange(11)
        lines = text.split("\n")
        spot = None  # (start, end) of the text to replace, and what to put there
        if kind == 0:  # an attribute's value
            m = _pick(rng, _ATTR.finditer(text))
            spot = m and (m.start(2), m.end(2), rng.choice(TOKENS))
        elif kind == 1:  # an attribute removed
            m = _pick(rng, _ATTR.finditer(text))
            spot = m and (m.start(), m.end(), "")
        elif kind == 2:  # a dim
            m = _pick(rng, _DIM.finditer(text))
            spot = m and (m.start(1), m.end(1), rng.choice(TOKENS))
        elif kind == 3:  # a number anywhere
            m = _pick(rng, _NUMBER.finditer(text))
            new = str(rng.choice((0, 1, 2, 3, -1, 7, 255, 10**6, -(10**12), 2**63)))
            spot = m and (m.start(), m.end(), new)
        elif kind == 4:  # a line deleted
            del lines[rng.randrange(len(lines))]
        elif kind == 5:  # a line repeated
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
        elif kind == 6:  # two lines swapped
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 7:  # cut short
            lines = text[: rng.randrange(len(text))].split("\n")
        elif kind == 8:  # a tag renamed
            m = _pick(rng, _TAG.finditer(text))
            new = rng.choice(("layer", "port", "edge", "dim", "data", "input", "output", "net",
                              "layers", "edges", "rt_info", "x"))  # fmt: skip
            spot = m and (m.start(1), m.end(1), new)
        elif kind == 9:  # an edge rewired
            edges = [i for i, line in enumerate(lines) if "<edge " in line]
            if edges:
                i = rng.choice(edges)
                lines[i] = re.sub(r'(from|to)-(layer|port)="\d+"',
                                  lambda m: f'{m.group(1)}-{m.group(2)}="{rng.randrange(9)}"',
                                  lines[i])  # fmt: skip
        else:  # raw bytes
            pos = rng.randrange(len(text))
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
            return text[:pos].encode() + noise + text[pos:].encode()
        text = text[: spot[0]] + spot[2] + text[spot[1] :] if spot else "\n".join(lines)
    return text.encode()


def _pick(rng: random.Random, matches) -> re.Match | None:
    found = list(matches)
    return rng.choice(found) if found else None


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


LINE = re.compile(r"^\S+?(:\d+)?: (error|warning): ")


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")
def test_mutation_fuzz(tmp_path, capsys):
    rng = random.Random(SEED)
    seeds = _seeds(tmp_path)
    if (tmp_path / "mixed.xml").exists():  # the start is valid: only MaxPool's unused indices
        assert [d.code for d in irrun.validate(tmp_path / "mixed.xml")] == ["unused-output"]
    path = tmp_path / "case.xml"
    codes = {0: 0, 1: 0, 2: 0}
    slowest = 0.0
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in range(CASES):
            name, xml, weights = rng.choice(seeds)
            data = mutate(rng, xml)
            path.write_bytes(data)
            bin_path = path.with_suffix(".bin")
            bin_path.unlink(missing_ok=True)
            if weights is not None and rng.random() < 0.9:
                bin_path.write_bytes(weights[: rng.randrange(len(weights) + 1)]
                                     if rng.random() < 0.1 else weights)  # fmt: skip
            args = [str(path)]
            if rng.random() < 0.1:
                args += ["--shape", rng.choice(SHAPES)]
            if rng.random() < 0.1:
                args.append(rng.choice(("--strict", "--json")))
            start = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
            try:
                rc, out, err = validate_cli(capsys, *args)
            except Hang:
                pytest.fail(f"case {case} ({name}) took over {CASE_SECONDS} s:\n{data!r}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            slowest = max(slowest, time.perf_counter() - start)
            where = f"case {case} ({name}, {args[1:]}):\n{data!r}\n{out}{err}"
            assert rc in codes, where
            codes[rc] += 1
            assert "internal" not in out + err, where
            assert "Traceback" not in err, where
            if rc == 2:
                assert err.startswith(("irrun validate: error: ", "irrun: error: --shape")), where
            elif "--json" in args:
                report = json.loads(out)
                levels = [f["level"] for f in report["findings"]]
                assert report["summary"]["errors"] == levels.count("error"), where
                assert report["summary"]["passed"] == (rc == 0), where
            else:
                *findings, summary = out.splitlines()
                assert summary.startswith(f"{path}"), where
                assert all(LINE.match(line) for line in findings), where
    finally:
        signal.signal(signal.SIGALRM, previous)
    # The mutations reach every outcome, and most files are broken.
    assert codes[1] > CASES // 2 and codes[0] > 0 and codes[2] > 0, codes
    assert slowest < CASE_SECONDS
