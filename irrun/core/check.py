"""Checking an IR file: every stage's findings, from the XML to shapes and memory.

Stages: the file and its XML, the structure against irrun's schema, the graph's
wiring, each layer's op, attributes and constants, then shapes, types and the memory
budget (see :func:`check_ir`).  :func:`irrun.core.model.load` and
:func:`irrun.core.model.validate` both start here.
"""

from __future__ import annotations

import difflib
import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import ops  # noqa: F401  (ops registers every kernel)
from ..errors import Diagnostic, IrrunError, Location, UsageError
from ..ir.reader import read_document, read_plain
from ..ir.registry import TensorInfo
from ..ir.schema import check_structure
from ..ir.weights import Weights
from ..ir.xml_file import parse_xml, read_xml_bytes
from .binding import UNSUPPORTED_CODES, Node, bind, missing_weights
from .budget import budget_findings
from .graph import LayerGraph, build_graph
from .propagation import Infos, propagate
from .reshape import ShapeSpec, input_shapes
from .subgraphs import attach_bodies
from .variable_checks import check_variables

# Errors that do not stop a model from loading: OpenVINO reads neither a port's dims nor
# its precision (it infers both), so irrun runs such a model too.
INFORMATIONAL_CODES = ("shape-mismatch", "type-mismatch")

# Every code a finding can have, with its level (docs/cli.md's table explains each).
# variable-unpaired is an error for a ReadValue-3 (OpenVINO refuses it), else a warning.
FINDING_LEVELS = {
    # the file and its XML
    "unreadable": "error", "not-ir": "error", "too-large": "error", "malformed-xml": "error",
    "doctype": "error", "schema": "error", "structure": "error",
    # identity and wiring
    "no-layers": "error", "duplicate-layer-id": "error", "duplicate-port-id": "error",
    "bad-edge": "error", "port-fed-twice": "error", "port-not-fed": "error", "cycle": "error",
    "no-result": "warning", "dead-layer": "warning", "unused-output": "info",
    # ops and attributes
    "unsupported-op": "error", "unknown-opset": "error", "input-count": "error",
    "missing-attribute": "error", "bad-attribute": "error", "unknown-attribute": "warning",
    "absent-attribute": "warning", "lenient-attribute": "warning",
    "missing-body": "error", "bad-port-map": "error",
    # weights
    "bad-weights": "error", "const-size": "warning",
    # types, shapes and memory
    "type-mismatch": "error", "shape-mismatch": "error", "shape-error": "error",
    "output-count": "error", "impossible-size": "error", "empty-window": "warning",
    "over-budget": "warning",
    # variables (ReadValue and Assign)
    "variable-unpaired": "warning", "variable-mismatch": "error", "variable-twice": "error",
    "variable-cycle": "error",
    "internal-error": "error",
}  # fmt: skip


def finding_codes(text: str) -> list[str]:
    """The codes in a comma-separated list (``--ignore``, ``--select``), each one checked.

    >>> finding_codes("unused-output, dead-layer")
    ['unused-output', 'dead-layer']
    >>> finding_codes("unused-ouptut")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: unknown finding code 'unused-ouptut' (did you mean 'unused-output'?); ...
    """
    codes = [c.strip() for c in text.split(",") if c.strip()]
    if not codes:
        raise ValueError("no finding code given (a code such as unused-output; several "
                         "separated by commas)")  # fmt: skip
    for code in codes:
        if code not in FINDING_LEVELS:
            close = difflib.get_close_matches(code, FINDING_LEVELS, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"unknown finding code '{code}'{hint}; the codes are "
                             f"{', '.join(sorted(FINDING_LEVELS))}")  # fmt: skip
    return codes


def select_findings(
    found: list[Diagnostic], ignore: Iterable[str] = (), select: Iterable[str] | None = None
) -> list[Diagnostic]:
    """The findings whose code is in ``select`` (all when None) and not in ``ignore``."""
    ignored, selected = set(ignore), None if select is None else set(select)
    return [d for d in found
            if d.code not in ignored and (selected is None or d.code in selected)]  # fmt: skip


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, unless it is off already.

    Loading makes tens of thousands of records that all live on; collections while
    they are made only walk them again and again, a tenth of the load's time.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _weights_path(xml: Path, weights: str | Path | None) -> Path:
    # Not with_suffix: it raises for a path with no name ("."), which parse_xml reports better.
    return Path(weights) if weights is not None else xml.parent / f"{xml.stem}.bin"


def _unique(found: list[Diagnostic]) -> list[Diagnostic]:
    """Each finding once, in the order given."""
    # Keyed by what the printed finding is made of rather than by its text: formatting
    # every finding (a big model has thousands of warnings) would cost more than the rest.
    return list({(d.code, d.level, d.location, d.layer, d.layer and d.port, d.message): d
                 for d in found}.values())  # fmt: skip


def _by_line(found: list[Diagnostic]) -> list[Diagnostic]:
    """In file order (stable: one line's findings keep their order), each finding once."""
    return sorted(_unique(found), key=lambda d: d.line)


def _one_missing_weights(found: list[Diagnostic], path: Path) -> list[Diagnostic]:
    """``found`` with one finding for a missing weights file, where the model and each of
    its bodies gave one: the first, counting every Const."""
    missing = [d for d in found if "missing-weights" in d.extra]
    if len(missing) < 2:
        return found
    consts = sum(d.extra["missing-weights"] for d in missing)
    first, rest = missing[0], {id(d) for d in missing[1:]}
    merged = missing_weights(path, consts, first.location)  # type: ignore[arg-type]
    return [merged if d is first else d for d in found if id(d) not in rest]


@dataclass
class Checked:
    """What checking an IR file found, and the graph it built on the way.

    ``findings`` are what ``validate`` reports, in file order; ``blocking`` the errors
    among them that stop ``load`` (everything but the structure checks that are
    stricter than OpenVINO and the comparisons with declared dims and precisions), in
    the order of the stages that found them, so that the first is the likeliest cause
    of the others.
    """

    path: Path
    findings: list[Diagnostic]
    blocking: list[Diagnostic]
    graph: LayerGraph | None = None
    nodes: dict[str, Node] | None = None
    infos: Infos | None = None
    shapes: dict[str, TensorInfo] | None = None  # new input shapes, by Parameter layer id
    # The XML of a file whose structure check was put off (see check_ir's ``complete``).
    deferred: bytes | None = None

    def complete(self) -> None:
        """Add the findings of the checks that were put off, once."""
        later: list[Diagnostic] = []
        if self.deferred is not None:
            later += check_structure(parse_xml(self.path, self.deferred), self.path)
            self.deferred = None
        if self.graph is not None and self.graph.unneeded is not None:
            later += self.graph.unneeded()
            self.graph.unneeded = None
        if later:
            self.findings = _by_line(later + self.findings)

    def refuse(self) -> None:
        """Raise the error that stops ``load``, if there is one.

        Ops irrun does not support come first, all of them named at once; then the first
        other problem, with the count of the rest.  A bug in an op's shape rule re-raises
        the original exception, so that ``--debug`` shows where it happened.
        """
        unsupported = [d for d in self.blocking if d.code in UNSUPPORTED_CODES]
        if len(unsupported) > 1:
            raise _unsupported_error(self.path, unsupported)
        first = unsupported[0] if unsupported else (self.blocking[0] if self.blocking else None)
        if first is None:
            return
        if "exception" in first.extra:
            raise first.extra["exception"]
        err = first.as_error()
        others = len(self.blocking) - 1
        if others:
            err = IrrunError(f"{err.message} (and {others} more: run 'irrun validate')",
                             err.location, err.layer, err.port, err.code)  # fmt: skip
        raise err


def _unsupported_error(path: Path, found: list[Diagnostic]) -> IrrunError:
    """One line naming every layer whose op irrun lacks, grouped by op, and what it has."""
    groups: dict[str, list[str]] = {}
    for d in found:
        assert d.layer is not None  # binding reports these at the layer
        layer = f"{d.layer.id} '{d.layer.name}' (line {d.line})"
        groups.setdefault(f"{d.layer.type} ({d.layer.opset})", []).append(layer)
    parts = [f"{op}: layer{'s' * (len(ls) > 1)} {', '.join(ls)}" for op, ls in groups.items()]
    return IrrunError(
        f"{len(found)} layers have ops irrun does not support: {'; '.join(parts)} "
        "('irrun ops' lists the ops irrun runs)",
        Location(str(path), found[0].line), code="unsupported-op",
    )  # fmt: skip


def check_ir(
    xml: str | Path,
    weights: str | Path | Weights | None = None,
    shapes: ShapeSpec | None = None,
    complete: bool = True,
    max_memory: int | str | None = "available",
) -> Checked:
    """Check an IR file through every stage irrun has, collecting every finding.

    Stages: the file and its XML, the structure against irrun's schema (the reader
    reads what it can beside it), the graph's wiring, each layer's op and attributes
    and constants, then shapes and types.  A stage that cannot start (no XML, no
    <net>) ends the check.  ``shapes`` (see :mod:`irrun.core.reshape`) gives the inputs
    new shapes; a bad one raises :class:`~irrun.errors.UsageError`.

    With ``complete=False`` (what ``load`` does) the structure check is put off when
    the reader read everything: its findings then stop no load, and
    :meth:`Checked.complete` adds them when they are asked for.  So are the warnings
    about layers and outputs that no Result needs.  With ``complete``, tensors and runs
    larger than ``max_memory`` are warned of (see :attr:`Model.max_memory`).
    """
    path = Path(xml)
    if not isinstance(weights, Weights):
        weights = Weights(_weights_path(path, weights))
    try:
        data = read_xml_bytes(path)
        # A load reads a file laid out as OpenVINO writes it without building its tree.
        doc = None if complete else read_plain(path, data)
        root = parse_xml(path, data) if doc is None else None
    except UsageError:
        raise
    except IrrunError as exc:
        unreadable = [Diagnostic.from_error(exc, "unreadable")]
        return Checked(path, unreadable, list(unreadable))
    read_problems: list[IrrunError] = []
    if root is not None:
        doc, read_problems = read_document(root, path, data)
    deferred = None
    if complete or read_problems:
        structure = check_structure(root, path)
    else:
        structure, deferred = [], data
    del root  # the records hold all that is needed; the tree is the largest thing in memory
    # The reader fails on elements the schema rejects as well: keep the schema's finding,
    # which says more, and let it stop the load as the reader's would have.
    schema_lines = {d.line for d in structure}
    reader_lines = {p.location.line for p in read_problems if p.location is not None}
    read_findings = [Diagnostic.from_error(p) for p in read_problems]
    unseen = [d for d in read_findings if d.line not in schema_lines]
    blocking = unseen + [d for d in structure if d.line in reader_lines]
    findings = structure + unseen
    if doc is None:
        return Checked(path, _by_line(findings), _unique(blocking))
    # Warnings that stop nothing are put off with the structure check.
    lg = build_graph(doc, unneeded=deferred is None)
    nodes, bound = bind(lg, weights)
    bound += attach_bodies(lg, nodes, weights)  # If and Loop layers' bodies and port maps
    bound = _one_missing_weights(bound, weights.path)
    new_shapes = input_shapes(lg, nodes, shapes) if shapes is not None else None
    infos, propagated = propagate(lg, nodes, new_shapes)
    if new_shapes is not None:  # load checks the file's own shapes, before any reshape
        propagated += [d for d in propagate(lg, nodes)[1]
                       if d.level == "error" and d.code not in INFORMATIONAL_CODES]
    later = lg.problems + bound + propagated + check_variables(lg, nodes, infos)
    findings += later
    blocking += [d for d in later if d.level == "error" and d.code not in INFORMATIONAL_CODES]
    if complete:
        findings += budget_findings(lg, nodes, infos, max_memory, not blocking)
    return Checked(path, _by_line(findings), _unique(blocking), lg, nodes, infos, new_shapes,
                   deferred)  # fmt: skip


def internal_error(xml: str | Path, exc: Exception) -> Diagnostic:
    """The finding that stands for a bug irrun hit while checking ``xml``."""
    return Diagnostic(
        "error", "internal-error",
        f"irrun failed while checking the file ({type(exc).__name__}: {exc}); this is a bug "
        "in irrun (run with --debug for details)", Location(str(xml)), extra={"exception": exc},
    )  # fmt: skip
