"""Checks between the layers of one variable: its ReadValues and its Assign.

OpenVINO expects one ReadValue and one Assign per variable (ReadValue-6's spec), with
one type and shape, and reads the variable before it writes it within a run.  What
breaks that is a finding here, at the layer it concerns:

- ``variable-unpaired``: a ReadValue whose variable no Assign writes (it reads the
  initial value at every run: a warning), or an Assign whose variable nothing reads
  (an error for Assign-3, whose variable OpenVINO finds only through its ReadValue-3;
  a warning for Assign-6);
- ``variable-mismatch``: ReadValues of one variable that declare other types or shapes,
  or an Assign whose value cannot be the variable's (type, or shape not compatible);
- ``variable-twice``: two Assigns of one variable (which value is kept is undefined);
- ``variable-cycle``: an Assign that its own variable's ReadValue depends on, so the
  variable would be written before it is read.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import Diagnostic
from ..ir.dims import format_shape
from ..ops.variables import dims_compatible
from .binding import Node
from .graph import LayerGraph
from .propagation import Infos


def check_variables(lg: LayerGraph, nodes: Mapping[str, Node], infos: Infos) -> list[Diagnostic]:
    """The findings about every variable of the graph (see the module's docstring)."""
    reads: dict[str, list[str]] = {}
    writes: dict[str, list[str]] = {}
    for lid in lg.order:
        node = nodes.get(lid)
        if node is None or node.op is None or node.attrs is None:
            continue
        if node.op.type == "ReadValue":
            reads.setdefault(node.attrs.variable_id, []).append(lid)
        elif node.op.type == "Assign":
            writes.setdefault(node.attrs.variable_id, []).append(lid)
    if not reads and not writes:
        return []
    found: list[Diagnostic] = []

    def finding(level: str, code: str, lid: str, message: str) -> None:
        node = nodes[lid]
        found.append(Diagnostic(level, code, message, lg.doc.location(node.layer.line),  # type: ignore[arg-type]
                                node.ref))  # fmt: skip

    def out_info(lid: str):
        outputs = nodes[lid].layer.outputs
        return infos.get((lid, outputs[0].id)) if outputs else None

    def in_info(lid: str):
        inputs = nodes[lid].layer.inputs
        src = lg.sources.get((lid, inputs[0].id)) if inputs else None
        return infos.get(src) if src is not None else None

    for var, lids in reads.items():
        if var not in writes:
            finding("warning", "variable-unpaired", lids[0], f"no Assign writes variable "
                    f"'{var}': this ReadValue gives its initial value at every run")  # fmt: skip
        first = _declared(nodes[lids[0]])
        for other in lids[1:]:
            if _declared(nodes[other]) != first:
                line = nodes[lids[0]].layer.line
                finding("error", "variable-mismatch", other, f"variable '{var}' is declared "
                        f"otherwise by layer {lids[0]} (line {line})")  # fmt: skip
    for var, lids in writes.items():
        if var not in reads:
            v3 = nodes[lids[0]].op.version == 3  # type: ignore[union-attr]
            finding("error" if v3 else "warning", "variable-unpaired", lids[0],
                    f"no ReadValue reads variable '{var}'" + (
                        ": OpenVINO finds an Assign-3's variable through its ReadValue-3"
                        if v3 else ": what this Assign writes is never read"))  # fmt: skip
        for other in lids[1:]:
            finding("error", "variable-twice", other, f"variable '{var}' is also assigned by "
                    f"layer {lids[0]} (line {nodes[lids[0]].layer.line}): which value is kept "
                    "is undefined")  # fmt: skip
        if var not in reads:
            continue
        declared = out_info(reads[var][0])
        for lid in lids:
            given = in_info(lid)
            if declared is None or given is None:
                continue
            if None not in (declared.element_type, given.element_type) and \
                    declared.element_type is not given.element_type:  # fmt: skip
                finding("error", "variable-mismatch", lid, f"assigns {given.element_type.name} "  # type: ignore[union-attr]
                        f"to variable '{var}', which is {declared.element_type.name}")  # type: ignore[union-attr]
            elif not dims_compatible(declared.shape, given.shape):
                finding("error", "variable-mismatch", lid, f"assigns a value of shape "
                        f"{format_shape(given.shape)} to variable '{var}', of shape "
                        f"{format_shape(declared.shape)}")  # fmt: skip
    # Within a run a variable is read before it is written: no ReadValue may depend on
    # an Assign of its own variable.
    successors: dict[str, list[str]] = {}
    for src, dst, *_ in lg.edges:
        successors.setdefault(src, []).append(dst)
    for var, lids in writes.items():
        targets = set(reads.get(var, ()))
        if not targets:
            continue
        for lid in lids:
            after = _descendants(successors, lid)
            hit = sorted(targets & after, key=lambda t: nodes[t].layer.line)
            if hit:
                finding("error", "variable-cycle", lid, f"layer {hit[0]} reads variable "
                        f"'{var}' after this Assign writes it, within one run: a ReadValue "
                        "must not depend on its variable's Assign")  # fmt: skip
    return found


def _declared(node: Node) -> tuple:
    """A ReadValue's declaration of its variable: type and shape (ReadValue-6's only)."""
    a = node.attrs
    return (getattr(a, "variable_type", None), getattr(a, "variable_shape", None))


def _descendants(successors: Mapping[str, list[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for nxt in successors.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
