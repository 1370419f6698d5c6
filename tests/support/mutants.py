"""Mutated IR files, and a worker that puts one through ``irrun validate`` and ``irrun run``.

Shared by ``tests/cli/test_mutation_fuzz.py`` (a few hundred mutants in CI) and
``tests/fuzz_campaign.py`` (thousands, with figures per family).  A mutant is fully
determined by ``(campaign seed, index)``: :func:`make_mutant` draws the start model,
the family and the edit from ``random.Random(f"{seed}:{index}")``, so any one mutant
replays alone, whatever ran before it.

Each mutant runs in a forked child under a memory limit (``RLIMIT_AS``) and an alarm
whose default action kills it; the child writes what happened to a JSON file and the
parent judges it (:func:`problems`).  Importing this module has no side effects.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[2]
TORCH = ROOT / "tests" / "torch_models"
CORPUS = ROOT / "tests" / "corpus"

RUN_SECONDS = 10  # a mutant whose validate + run takes longer counts as a hang
MEMORY_BYTES = 3 << 30  # the address space a mutant's worker may use

HUGE = ["2147483648", "2147483647", "4294967297", "9223372036854775807", "9223372036854775808",
        "99999999999999999999999", "-9223372036854775808", "-2147483649"]  # fmt: skip
NUMBERS = ["0", "-1", "1", "-7", "3", "1.5", "-0", "1e309", "nan", "inf", "0x10", "+2", " 2 ",
           "2e3", "٣"]  # fmt: skip
WORDS = ["", " ", "x", "true", "false", "yes", "ceil", "floor", "ceil_torch", "same_upper",
         "same_lower", "valid", "explicit", "f32", "FP32", "i64", "boolean", "numpy", "none",
         "pdpd", "é", "\u202e", "a,b", "?", "..", "1..3", "&", "<x/>", "null"]  # fmt: skip
PRECISIONS = ["FP32", "FP16", "BF16", "FP64", "I64", "I32", "I8", "U8", "U1", "BOOL", "BOOLEAN",
              "STRING", "U4", "I4", "NF4", "F8E4M3", "DYNAMIC", "UNSPECIFIED", "fp32", "Q78"]  # fmt: skip
ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "u1", "boolean", "string",
                 "u4", "i4", "nf4", "f8e4m3", "f8e5m2", "dynamic", "undefined", "FP32", "bool"]  # fmt: skip


@dataclass(frozen=True)
class Start:
    """A valid model a mutation starts from."""

    name: str
    xml: bytes
    weights: bytes | None
    shape: str | None  # the --shape to validate and run it with (the PyTorch models' are dynamic)


@dataclass
class Mutant:
    seed: int
    index: int
    start: str
    family: str
    change: str
    xml: bytes
    weights: bytes | None
    shape: str | None
    files: dict[str, str] = field(default_factory=dict)  # extra files: name -> "fifo"

    def describe(self) -> str:
        """How to replay it: ``make_mutant(seed, index)``, and what it changed."""
        return (f"mutant {self.index} of seed {self.seed} ({self.family} on {self.start}"
                f"{' --shape ' + self.shape if self.shape else ''}): {self.change}")  # fmt: skip


def starts() -> list[Start]:
    """The bundled models, the PyTorch ones and the corpus of real conversions, each with
    the shape it runs with."""
    shapes = json.loads((TORCH / "shapes.json").read_text())
    found = []
    for xml in sorted((ROOT / "models").glob("*.xml")) + sorted(TORCH.glob("*.xml")):
        weights = xml.with_suffix(".bin")
        shape = shapes.get(xml.stem) if xml.parent == TORCH else None
        found.append(Start(
            xml.stem, xml.read_bytes(), weights.read_bytes() if weights.exists() else None,
            f"[{','.join(map(str, shape))}]" if shape else None,
        ))  # fmt: skip
    for name, entry in sorted(json.loads((CORPUS / "manifest.json").read_text()).items()):
        xml = CORPUS / f"{name}.xml"
        shape = ",".join(f"{k}[{','.join(map(str, v['shape']))}]"
                         for k, v in entry["inputs"].items())  # fmt: skip
        found.append(Start(name, xml.read_bytes(), xml.with_suffix(".bin").read_bytes(), shape))
    return found


# --- the families --------------------------------------------------------------------------
# Each takes the random source, the start's parsed tree (to edit in place) and the start,
# and returns what it changed (None: nothing to change here), or a tuple (change, xml
# bytes, weights) for the families that work on bytes.

Edit = Callable[[random.Random, etree._Element, Start], "str | tuple | None"]


def _where(el: etree._Element) -> str:
    layer = next((a for a in el.iterancestors("layer")), el if el.tag == "layer" else None)
    at = f"line {el.sourceline} <{el.tag}>"
    if layer is not None:
        at += f" of layer {layer.get('id')} {layer.get('type')}"
    return at


def _attrs(root: etree._Element, names: Iterable[str] | None = None) -> list[tuple]:
    """(element, attribute name) of every <data> attribute (only ``names``, if given)."""
    wanted = set(names) if names is not None else None
    return [(el, a) for el in root.iter("data") for a in el.attrib
            if wanted is None or a in wanted]  # fmt: skip


def _set(rng: random.Random, root, choices: list[str], names=None) -> str | None:
    found = _attrs(root, names)
    if not found:
        return None
    el, name = rng.choice(found)
    old = el.get(name)
    parts = old.split(",")
    if len(parts) > 1 and rng.random() < 0.6:  # one item of a list
        i = rng.randrange(len(parts))
        parts[i] = rng.choice(choices)
        new = ",".join(parts)
    else:
        new = rng.choice(choices)
    el.set(name, new)
    return f"{_where(el)}: {name}={old!r} -> {new!r}"


def attr_number(rng, root, start):
    return _set(rng, root, NUMBERS)


def attr_word(rng, root, start):
    return _set(rng, root, WORDS)


def attr_list(rng, root, start):
    lists = [(el, a) for el, a in _attrs(root) if "," in el.get(a)]
    if not lists:
        return None
    el, name = rng.choice(lists)
    old = el.get(name)
    parts = [p.strip() for p in old.split(",")]
    how = rng.randrange(5)
    if how == 0:
        parts = parts[:-1]
    elif how == 1:
        parts = [*parts, rng.choice(parts)]
    elif how == 2:
        parts = parts * 2
    elif how == 3:
        parts = parts[:1]
    else:
        parts = [*parts[:1], "", *parts[1:]]
    new = ",".join(parts)
    el.set(name, new)
    return f"{_where(el)}: {name}={old!r} -> {new!r}"


GEOMETRY = ("kernel", "pads_begin", "pads_end", "strides", "dilations", "shape", "axis", "axes",
            "group", "output_padding", "k", "sizes", "scales", "begin_mask", "offset", "size")  # fmt: skip


def huge(rng, root, start):
    if rng.random() < 0.3:  # a declared dim
        dims = list(root.iter("dim"))
        if dims:
            dim = rng.choice(dims)
            old, dim.text = dim.text, rng.choice(HUGE)
            return f"{_where(dim)}: {old!r} -> {dim.text!r}"
    return _set(rng, root, HUGE, GEOMETRY) or _set(rng, root, HUGE)


KINDS = ("layer", "port", "edge", "dim", "data", "input", "output")


def _element(rng, root) -> etree._Element | None:
    for _ in range(5):
        found = list(root.iter(rng.choice(KINDS)))
        if found:
            return rng.choice(found)
    return None


def delete(rng, root, start):
    el = _element(rng, root)
    if el is None:
        return None
    where = _where(el)
    el.getparent().remove(el)
    return f"deleted {where}"


def duplicate(rng, root, start):
    el = _element(rng, root)
    if el is None:
        return None
    el.addnext(_copy(el))
    return f"duplicated {_where(el)}"


def _copy(el):
    return etree.fromstring(etree.tostring(el))


def rewire(rng, root, start):
    edges = list(root.iter("edge"))
    if not edges:
        return None
    edge = rng.choice(edges)
    ids = [layer.get("id") for layer in root.iter("layer")]
    ports = [p.get("id") for p in root.iter("port")] + ["99", "-1"]
    name = rng.choice(("from-layer", "from-port", "to-layer", "to-port"))
    old = edge.get(name)
    new = rng.choice(ids if name.endswith("layer") else ports)
    if rng.random() < 0.1:
        new = rng.choice(("", "x", "1.0", HUGE[0]))
    edge.set(name, new)
    return f"{_where(edge)}: {name} {old!r} -> {new!r}"


def precision(rng, root, start):
    if rng.random() < 0.5:
        found = [p for p in root.iter("port") if p.get("precision")]
        if found:
            port = rng.choice(found)
            old, new = port.get("precision"), rng.choice(PRECISIONS)
            port.set("precision", new)
            return f"{_where(port)} id {port.get('id')}: precision {old!r} -> {new!r}"
    return _set(rng, root, ELEMENT_TYPES, ("element_type", "destination_type",
                                           "index_element_type", "output_type"))  # fmt: skip


def const_range(rng, root, start):
    consts = [el for el in root.iter("data") if el.get("offset") is not None]
    if not consts:
        return None
    el = rng.choice(consts)
    size = int(el.get("size")) if (el.get("size") or "").isdigit() else 0
    length = len(start.weights or b"")
    name = rng.choice(("offset", "size"))
    new = rng.choice([str(length), str(length + 1), str(length - 1), "-1", "-8", HUGE[0],
                      HUGE[3], HUGE[5], str(size + 1), str(max(size - 1, 0)), "0",
                      str(size * 2), "1.5", "", "x"])  # fmt: skip
    old = el.get(name)
    el.set(name, new)
    return f"{_where(el)}: {name} {old!r} -> {new!r} (.bin is {length} bytes)"


def truncate_bin(rng, root, start):
    weights = start.weights or b""
    how = rng.randrange(4)
    if how == 0:
        return "no .bin file", etree.tostring(root.getroottree()), None
    if how == 1:
        return "an empty .bin", etree.tostring(root.getroottree()), b""
    cut = rng.randrange(len(weights) + 1)
    if how == 2:
        return (f".bin cut to {cut} of {len(weights)} bytes",
                etree.tostring(root.getroottree()), weights[:cut])  # fmt: skip
    noise = bytes(rng.randrange(256) for _ in range(8))
    return (f".bin bytes {cut}.. overwritten with {noise.hex()} (NaN, inf, garbage)",
            etree.tostring(root.getroottree()), weights[:cut] + noise + weights[cut + 8:])  # fmt: skip


def truncate_xml(rng, root, start):
    cut = rng.randrange(len(start.xml))
    return f".xml cut to {cut} of {len(start.xml)} bytes", start.xml[:cut], start.weights


def garble(rng, root, start):
    data = bytearray(start.xml)
    pos = rng.randrange(len(data))
    noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    if rng.random() < 0.5:
        data[pos:pos + len(noise)] = noise
        what = "overwritten with"
    else:
        data[pos:pos] = noise
        what = "inserted"
    return f".xml bytes at {pos} {what} {noise.hex()}", bytes(data), start.weights


def dtd(rng, root, start):
    text = start.xml.decode()
    body = text.split("?>", 1)[1] if text.startswith("<?xml") else text
    kinds = {
        "internal entity": ('<!ENTITY e "7">', ('name="', 'name="&e;')),
        "external entity": ('<!ENTITY e SYSTEM "secret">', ('name="', 'name="&e;')),
        "external entity in text": ('<!ENTITY e SYSTEM "secret">', ("<dim>", "<dim>&e;")),
        "parameter entity": ('<!ENTITY % p SYSTEM "secret"> %p;', None),
        "entity bomb": ('<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
                        '<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">', ('name="', 'name="&d;')),
        "dtd only": ("", None),
        "external dtd": (None, None),
    }  # fmt: skip
    kind = rng.choice(sorted(kinds))
    decl, use = kinds[kind]
    doctype = '<!DOCTYPE net SYSTEM "secret">' if decl is None else f"<!DOCTYPE net [ {decl} ]>"
    if use is not None:
        body = body.replace(*use, 1)
    xml = f'<?xml version="1.0"?>\n{doctype}\n{body.lstrip()}'.encode()
    return f"a DTD: {kind} {doctype!r}", xml, start.weights


def encoding(rng, root, start):
    text = start.xml.decode()
    kinds = ["empty", "spaces", "latin-1 name", "utf-16", "bad utf-8", "bom", "declared latin-1",
             "nul", "declared ebcdic"]  # fmt: skip
    kind = rng.choice(kinds)
    if kind == "empty":
        data = b""
    elif kind == "spaces":
        data = b" \n\t\n"
    elif kind == "latin-1 name":
        data = text.replace('name="', 'name="\u00e9t\u00e9', 1).encode("latin-1")
    elif kind == "utf-16":
        data = text.encode("utf-16")
    elif kind == "bad utf-8":
        data = text.encode().replace(b'name="', b'name="\xc3\x28', 1)
    elif kind == "bom":
        data = b"\xef\xbb\xbf" + text.encode()
    elif kind == "declared latin-1":
        data = text.replace('<?xml version="1.0"?>',
                            '<?xml version="1.0" encoding="ISO-8859-1"?>').encode()  # fmt: skip
        data = data.replace(b'name="', 'name="\u00e9'.encode(), 1)
    elif kind == "nul":
        data = text.encode().replace(b"<layers>", b"<layers>\x00", 1)
    else:
        data = text.replace('<?xml version="1.0"?>',
                            '<?xml version="1.0" encoding="cp500"?>').encode()  # fmt: skip
    return f"the .xml file: {kind}", data, start.weights


OP_TYPES = ["Abs", "Add", "AvgPool", "BatchNormInference", "Broadcast", "Clamp", "Concat", "Const",
            "Convert", "Convolution", "ConvolutionBackpropData", "Divide", "Equal", "Gather",
            "GroupConvolution", "Interpolate", "LogSoftmax", "MVN", "MatMul", "MaxPool",
            "Multiply", "PRelu", "Pad", "Parameter", "ReLU", "ReduceMean", "Reshape", "Result",
            "Select", "ShapeOf", "SoftMax", "Split", "Squeeze", "StridedSlice", "TopK",
            "Transpose", "Unsqueeze", "VariadicSplit", "Loop", "relu"]  # fmt: skip
OPSETS = ["opset1", "opset3", "opset4", "opset8", "opset11", "opset13", "opset15", "opset99",
          "opset0", "extension", ""]  # fmt: skip


def retype(rng, root, start):
    """A layer's op swapped for another (same ports and <data>), or its opset changed."""
    layers = list(root.iter("layer"))
    layer = rng.choice(layers)
    name, choices = ("type", OP_TYPES) if rng.random() < 0.7 else ("version", OPSETS)
    old, new = layer.get(name), rng.choice(choices)
    layer.set(name, new)
    return f"{_where(layer)} id {layer.get('id')}: {name} {old!r} -> {new!r}"


def combo(rng, root, start):
    """Two or three edits of the tree at once (from the families that edit the tree)."""
    tree_edits = [attr_number, attr_list, attr_word, huge, delete, duplicate, rewire, precision,
                  const_range, retype]  # fmt: skip
    done = [edit(rng, root, start) for edit in rng.sample(tree_edits, rng.choice((2, 2, 3)))]
    done = [d for d in done if d]
    return "; ".join(done) if done else None


FAMILIES: dict[str, Edit] = {
    "combo": combo,
    "retype": retype,
    "attr-number": attr_number,
    "attr-list": attr_list,
    "attr-word": attr_word,
    "huge": huge,
    "delete": delete,
    "duplicate": duplicate,
    "rewire": rewire,
    "precision": precision,
    "const-range": const_range,
    "truncate-bin": truncate_bin,
    "truncate-xml": truncate_xml,
    "garble": garble,
    "dtd": dtd,
    "encoding": encoding,
}


def make_mutant(seed: int, index: int, pool: list[Start], family: str | None = None) -> Mutant:
    """Mutant ``index`` of campaign ``seed``; ``family`` forces the family (else every
    ``len(FAMILIES)`` consecutive indices cover each family once)."""
    rng = random.Random(f"{seed}:{index}")
    names = sorted(FAMILIES)
    if family is None:
        family = names[index % len(names)]
    for _ in range(20):
        start = rng.choice(pool)
        root = etree.fromstring(start.xml)
        made = FAMILIES[family](rng, root, start)
        if made is None:
            continue
        if isinstance(made, tuple):
            change, xml, weights = made
        else:
            change = made
            xml = etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8")
            weights = start.weights
        files = {"secret": "fifo"} if b"secret" in xml else {}
        return Mutant(seed, index, start.name, family, change, xml, weights, start.shape, files)
    raise AssertionError(f"family {family} found nothing to change in 20 starts")


# --- running one ---------------------------------------------------------------------------


def _cli(argv: list[str]) -> dict:
    """``irrun.cli.main(argv)`` with its stdout and stderr captured."""
    from irrun.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # what main let through: a crash
            rc = "traceback"
            err.write(traceback.format_exc())
    return {"rc": rc, "out": out.getvalue(), "err": err.getvalue(),
            "seconds": time.perf_counter() - start}  # fmt: skip


def _child(mutant: Mutant, workdir: Path) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the alarm kills: no handler to get stuck in
    signal.alarm(RUN_SECONDS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    xml = workdir / "m.xml"
    args = ["--shape", mutant.shape] if mutant.shape else []
    result = {"validate": _cli(["validate", str(xml), *args])}
    # Run even what validate refused: run must refuse it too.
    if result["validate"]["rc"] in (0, 1):
        # -q: a run that succeeds says nothing, so anything it prints is a finding.
        result["run"] = _cli(["run", str(xml), "-o", str(workdir / "out.npz"), "-q", *args])
        if result["validate"]["rc"] == 1 and result["run"]["rc"] == 0:
            import irrun

            found = irrun.validate(xml, shapes=mutant.shape)
            result["codes"] = sorted({d.code for d in found if d.level == "error"})
    result["left"] = sorted(p.name for p in workdir.iterdir())
    (workdir / "result.json").write_text(json.dumps(result))


def _prepare(mutant: Mutant, workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    for p in workdir.iterdir():
        p.unlink()
    (workdir / "m.xml").write_bytes(mutant.xml)
    if mutant.weights is not None:
        (workdir / "m.bin").write_bytes(mutant.weights)
    for name in mutant.files:
        os.mkfifo(workdir / name)


def _spawn(mutant: Mutant, workdir: Path) -> int:
    _prepare(mutant, workdir)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 0
        try:
            _child(mutant, workdir)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    return pid


def _collect(mutant: Mutant, workdir: Path, status: int, seconds: float) -> dict:
    result: dict = {"mutant": mutant, "seconds": seconds}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        result["killed"] = "over the time limit" if sig == signal.SIGALRM else signal.Signals(sig).name
        return result
    path = workdir / "result.json"
    if not path.exists():
        result["killed"] = f"the worker exited with {os.waitstatus_to_exitcode(status)}"
        return result
    result.update(json.loads(path.read_text()))
    return result


def run_all(mutants: Iterable[Mutant], workroot: Path, jobs: int = 2) -> Iterator[dict]:
    """Each mutant through validate (and run, if validate passed), ``jobs`` at a time."""
    # Imported once here, before the workers fork, not in each of them: irrun.cli imports
    # a command's module only when the command is given.
    import irrun.tools.run
    import irrun.tools.validate  # noqa: F401

    todo = iter(mutants)
    running: dict[int, tuple[Mutant, Path, float]] = {}
    free = [workroot / f"w{i}" for i in range(jobs)]
    while True:
        while free:
            mutant = next(todo, None)
            if mutant is None:
                break
            workdir = free.pop()
            running[_spawn(mutant, workdir)] = (mutant, workdir, time.perf_counter())
        if not running:
            return
        pid, status = os.waitpid(-1, 0)
        if pid not in running:
            continue
        mutant, workdir, began = running.pop(pid)
        yield _collect(mutant, workdir, status, time.perf_counter() - began)
        free.append(workdir)


# --- judging -------------------------------------------------------------------------------

LINE = re.compile(r"^\S.*?: (error|warning): ")
# Runs that may fail after validate passed: (what the error says, why validate can't know).
ALLOWED_RUN_FAILURES: list[tuple[str, Callable[[Mutant, str, str], bool]]] = [
    # A dynamic dim gets a made-up size for the random inputs (its least); validate checks
    # the model for every size, and cannot know the one run will make up.  The message
    # says so and how to give shapes.
    ("made-up input sizes",
     lambda m, err, checked: "random inputs with their unknown dims at their least" in err),
    # A Const turned Parameter gets random values; where those are a shape or axes, the
    # model is valid for some values and not for the random ones.
    ("made-up input values", lambda m, err, checked: m.change.endswith("-> 'Parameter'")),
    # Tensors larger than the memory left: validate warns of them (over-budget), and run
    # refuses them before it starts (docs/cli.md, --max-memory).
    ("over the memory budget",
     lambda m, err, checked: "a run would be refused" in checked and " of tensors at this "
     "layer, more than the " in err),
]  # fmt: skip


# Errors validate reports that stop no load, by design (docs/cli.md, "What irrun validate
# checks"; tests/cli/test_cli.py, tests/ir/test_load_fast.py): declared dims and precisions
# (OpenVINO re-infers them) and the schema's checks that are stricter than OpenVINO's
# reader (a second <data>, an unknown element: OpenVINO reads past them, and so does run).
NON_BLOCKING = {"shape-mismatch", "type-mismatch", "schema"}
# Outcomes counted in the figures that are not failures.
INFO_CLASSES = ("non-blocking-errors",)

CLASSES = ("traceback", "internal-error", "hang", "memory-error", "crash", "bad-exit",
           "not-one-line", "partial-output", "accepts-rejects", "rejects-accepts", "stray-output",
           "non-blocking-errors")  # fmt: skip


def problems(result: dict) -> list[tuple[str, str]]:
    """What went wrong with one mutant, as (class, detail) pairs; [] when all is well
    (but for the :data:`INFO_CLASSES`, which are outcomes to count, not failures)."""
    found = []
    if "killed" in result:
        cls = "hang" if "time" in result["killed"] else "crash"
        return [(cls, result["killed"])]
    for step in ("validate", "run"):
        r = result.get(step)
        if r is None:
            continue
        text = r["out"] + r["err"]
        if r["rc"] == "traceback" or "Traceback" in r["err"]:
            found.append(("traceback", f"{step}: {_last_line(r['err'])}"))
        if "MemoryError" in text:
            found.append(("memory-error", f"{step}: {_first(text, 'MemoryError')}"))
        elif "internal error" in text or "internal-error" in text:
            found.append(("internal-error", f"{step}: {_first(text, 'internal')}"))
        if r["rc"] not in (0, 1, 2):
            found.append(("bad-exit", f"{step} exited {r['rc']}"))
        if r["seconds"] > RUN_SECONDS:
            found.append(("hang", f"{step} took {r['seconds']:.1f} s"))
    v = result["validate"]
    if v["rc"] == 1:
        *lines, summary = v["out"].splitlines() or [""]
        if v["err"] or not all(LINE.match(line) for line in lines) or "error" not in summary:
            found.append(("not-one-line", f"validate printed {v['out'][-300:]!r} {v['err'][-300:]!r}"))
    elif v["rc"] == 2 and len(v["err"].splitlines()) != 1:
        found.append(("not-one-line", f"validate: {v['err'][-300:]!r}"))
    run = result.get("run")
    if run is not None and v["rc"] == 1:
        if run["rc"] == 0:
            errors = [line for line in v["out"].splitlines() if ": error: " in line]
            codes = set(result.get("codes", ()))
            cls = "rejects-accepts" if codes - NON_BLOCKING else "non-blocking-errors"
            found.append((cls, f"run exited 0; validate {sorted(codes)}: {errors[0][:300]}"))
        elif "out.npz" in result["left"]:
            found.append(("partial-output", f"left {result['left']}"))
    elif run is not None:
        if run["rc"] != 0:
            err = run["err"].splitlines()
            if len(err) != 1 or not err[0].startswith(("irrun: error: ", "irrun: internal error: ")) \
                    or run["out"]:  # fmt: skip
                found.append(("not-one-line", f"run: {run['out'][-200:]!r} {run['err'][-300:]!r}"))
            m = result["mutant"]
            checked = result.get("validate", {}).get("out", "")
            if not any(allowed(m, run["err"], checked) for _, allowed in ALLOWED_RUN_FAILURES):
                found.append(("accepts-rejects", f"run: {_last_line(run['err'])}"))
            if any(n.startswith(("out.npz", ".out.npz")) for n in result["left"]):
                found.append(("partial-output", f"left {result['left']}"))
        elif run["err"] or "out.npz" not in result["left"]:
            found.append(("stray-output", f"run exited 0: {run['err'][-300:]!r}, left {result['left']}"))
    return found


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:400] if lines else ""


def _first(text: str, word: str) -> str:
    return next((line[:400] for line in text.splitlines() if word in line), "")
