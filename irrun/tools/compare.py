"""``irrun compare``: irrun's values against a reference, tensor by tensor.

The reference is a file of arrays keyed by tensor name (what ``irrun run -o``
writes, or a ``--dump-dir`` directory with its ``manifest.json``) or OpenVINO
itself, run on the same inputs.  Without ``mark_all`` the model's outputs are
compared; with it every tensor irrun computes (all layers but Parameters, Consts
and Results), each as soon as irrun has computed it, so that no intermediate is
held longer than its layer's comparison.

An element passes when ``|irrun - ref| <= atol + rtol * |ref|`` (numpy.isclose's
rule, the reference on the right; Polygraphy's default ``elemwise`` check is the
slightly stricter "absolute error <= atol or relative error <= rtol").  NaN equals
NaN at the same position and an infinity equals the same infinity; anything else
against NaN or an infinity is an infinite error.  The relative error is
``|irrun - ref| / |ref|``: infinite where the reference is 0 and irrun is not.
A tensor fails when any element fails, or when its shape or element type differs
from the reference's, or when it is a model output the reference lacks.  An output whose
tensor has no name goes by its Result's name (as ``Model.outputs`` names it): OpenVINO's
Result of that name, else at that position, is its reference, and a file's array of another
name stands in for it only when no other array could (see :func:`_stand_ins`).

With another error statistic (``check_error_stat``, Polygraphy's ``--check-error-stat``)
a tensor passes when the ``max``, ``mean`` or ``median`` of its elements' absolute
errors is at most atol, or that of their relative errors at most rtol, as in
Polygraphy: a few elements far off can then pass where most are close.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..core.model import Model, load
from ..errors import IrrunError, UsageError
from ..ir.element_types import dtype_name
from ..text import count
from .common import (
    Parents,
    add_shape,
    add_threads,
    check_output_path,
    dump_json,
    random_seed,
    read_inputs,
    say_written,
    write_atomically,
)
from .compare_references import ArrayReference, Reference, open_reference, openvino_reference
from .compare_report import write_html
from .compare_results import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    ERROR_STATS,
    MISSING,
    ErrorStat,
    Report,
    TensorResult,
    Tolerance,
    _num,
    _some,
    compare_arrays,
)

# Layers whose outputs are inputs or weights, not computed values.
_NOT_COMPUTED = ("Parameter", "Const", "Result")


# ----------------------------------------------------------------------------- references


# ----------------------------------------------------------------------------- comparing


# The backends that compute a reference from the inputs.
BACKENDS = ("openvino", "reference")


def reference_run(model: Model, feeds: Mapping[str, np.ndarray], mark_all: bool) -> Reference:
    """``model``'s tensors as its reference twin computes them from ``feeds``: the same
    files and input shapes, loaded with ``reference=True``."""
    state = model.__getstate__()
    state["reference"], state["threads"] = True, None
    twin = Model.__new__(Model)
    twin.__setstate__(state)
    values = twin.run(feeds, intermediate=mark_all)
    return ArrayReference(values, "irrun's reference kernels")


class _Stop(Exception):
    """Raised from the layer callback to end the run at the first failure (fail_fast)."""


def compare(
    model: Model | str | Path,
    feeds: Mapping[str, np.ndarray] | None = None,
    reference: Reference | Mapping[str, np.ndarray] | str | Path | None = None,
    *,
    backend: str | None = None,
    mark_all: bool = False,
    atol: Tolerance | None = None,
    rtol: Tolerance = DEFAULT_RTOL,
    fail_fast: bool = False,
    seed: int | None = None,
    check_error_stat: ErrorStat = "elemwise",
) -> Report:
    """Run ``model`` on ``feeds`` and compare its tensors with ``reference``.

    ``reference`` is a dict of arrays by tensor name, a path to an .npz or a
    ``--dump-dir`` directory, or None with a ``backend`` that computes it from the same
    feeds: ``"openvino"`` (OpenVINO's CPU plugin, in f32) or ``"reference"`` (irrun's
    reference kernels, unfused, on one thread: what the fast plan is checked against).
    ``feeds`` default to the reference's own copy of the inputs when it
    holds every one under the input's name (as a dump's inputs.npz does), else to the
    model's random inputs of ``seed`` (0 by default; a ``seed`` given always means random
    inputs); a failure on random inputs says so, with their shapes.  ``atol``
    and ``rtol`` are floats, or dicts by tensor name where ``"*"`` sets the default.
    ``atol=None`` is the default for what is compared: 1e-5 (:data:`DEFAULT_ATOL`), but
    1e-3 for a model with compressed weights against OpenVINO's plugin, which
    decompresses them in f32 where the IR says f16 (docs/semantics.md); the report's
    ``tolerance_note`` says so.
    With ``mark_all`` every tensor irrun computes is compared (in run order), else
    the model's outputs.  ``fail_fast`` stops at the first tensor that fails.
    ``check_error_stat`` (one of :data:`ERROR_STATS`, or a dict of them as for the
    tolerances) decides each tensor by a statistic of its errors instead.

    >>> m = load("models/pooling_chain.xml")
    >>> x = {"image": np.ones((1, 3, 16, 16), np.float32)}
    >>> ref = m.run(x)
    >>> ref["pooled"] = ref["pooled"] + 0.5
    >>> report = compare(m, x, ref)
    >>> report.passed, [(r.name, r.passed, r.max_abs) for r in report.results]
    (False, [('pooled', False, 0.5), ('indices', True, 0.0)])
    """
    if not isinstance(model, Model):
        model = load(model)
    known = set(model.tensor_names.values())
    for what, tol in (("tolerance", atol), ("tolerance", rtol), ("error stat", check_error_stat)):
        # atol None: the reference's own default, known once it is opened or computed
        if isinstance(tol, Mapping):
            unknown = [n for n in tol if n != "*" and n not in known]
            if unknown:
                raise UsageError(
                    f"{what} for '{unknown[0]}': no tensor of that name in "
                    f"{model.path.name} (irrun compare --mark-all lists them)"
                )
    stats = check_error_stat.values() if isinstance(check_error_stat, Mapping) else [
        check_error_stat]  # fmt: skip
    odd = [s for s in stats if s not in ERROR_STATS]
    if odd:
        raise UsageError(f"error stat '{odd[0]}' is not one of {', '.join(ERROR_STATS)}")
    owned = not isinstance(reference, Reference)
    ref: Reference | None = None
    if backend is not None:
        if reference is not None:
            raise UsageError("give a reference or a backend, not both")
        if backend not in BACKENDS:
            raise UsageError(
                f"unknown reference backend '{backend}' (irrun has: {', '.join(BACKENDS)})"
            )
    elif reference is None:
        raise UsageError("no reference: give one, or a backend ('openvino' or 'reference')")
    elif isinstance(reference, Reference):
        ref = reference
    elif isinstance(reference, str | Path):
        ref = open_reference(reference)
    else:
        ref = ArrayReference(reference)
    try:
        source = "given"
        if feeds is None:
            taken = _reference_inputs(model, ref) if ref is not None and seed is None else None
            if taken is not None:
                feeds, source = taken, "reference"
            else:
                seed = 0 if seed is None else seed
                feeds, source = model.random_inputs(seed), "random"
        if source != "random":  # random ones are checked as they are made
            _check_shapes(model, feeds)
        if ref is None and backend == "reference":
            ref = reference_run(model, feeds, mark_all)
        elif ref is None:
            ref = openvino_reference(model, feeds, mark_all)
        # The reference's own atol, scaled to each tensor, for the tensors given none.
        scaled: set[str] | None = None
        explicit = atol is not None and (not isinstance(atol, Mapping) or "*" in atol)
        if ref.atol is not None and not explicit:
            scaled = set(atol) if isinstance(atol, Mapping) else set()
            atol = {"*": ref.atol, **(atol or {})}  # type: ignore[dict-item]
        elif atol is None:
            atol = DEFAULT_ATOL
        report = _compare(model, feeds, ref, mark_all, atol, rtol, fail_fast, check_error_stat,
                          scaled)  # fmt: skip
        if scaled is not None:
            report.tolerance_note = (
                f"atol {_num(ref.atol)} x each tensor's largest magnitude (at least 1) for "  # type: ignore[arg-type]
                f"{ref.atol_why}; --atol sets another"
            )
            report.atol_scaled = True
        report.backend = backend is not None
        report.layers = layer_graph(model)
        report.inputs = {
            "source": source,
            "seed": seed if source == "random" else None,
            "tensors": [{"name": name, "shape": list(np.shape(value)),
                         "dtype": dtype_name(np.asarray(value).dtype)}
                        for name, value in feeds.items()],
            "hint": _inputs_hint(model, reference, ref) if source == "random" else None,
        }  # fmt: skip
        return report
    finally:
        if owned and ref is not None:
            ref.close()


def layer_graph(model: Model) -> list[dict[str, Any]]:
    """``model``'s layers in run order, each with where its inputs come from, as the JSON
    report lists them (``irrun inspect``'s spelling): what the HTML report draws."""
    graph = model._graph
    found = []
    for ref, line, _ in model.layers():
        inputs = []
        for port in graph.layers[ref.id].inputs:
            src = graph.sources.get((ref.id, port.id))
            where = None if src is None else {"layer": src.layer, "port": src.port}
            inputs.append({"port": port.id, "from": where})
        found.append({**ref.as_dict(), "line": line or None, "inputs": inputs})
    return found


def _check_shapes(model: Model, feeds: Mapping[str, np.ndarray]) -> None:
    """Refuse inputs whose shapes the model does not fit, by irrun's shape propagation,
    before a backend is asked: its own refusal would name its internals, not the input."""
    if all(s.shape is not None and all(isinstance(d, int) for d in s.shape)
           for s in model.inputs):  # fmt: skip
        return  # static inputs: a run checks the arrays against them
    shapes = {name: list(np.shape(value)) for name, value in feeds.items()
              if model.input_spec(name) is not None}  # fmt: skip
    if len(shapes) != len(model.inputs):
        return  # the run says which input is missing
    errors = [d for d in model.validate(shapes) if d.level == "error"]
    if errors:
        given = ",".join(f"{n}{list(s)}".replace(" ", "") for n, s in shapes.items())
        err = errors[0]
        raise IrrunError(
            f"{err.message}, on the inputs' shapes {given}: give inputs of shapes the model "
            "fits", err.location, err.layer, err.port, err.code,
        )  # fmt: skip


def _reference_inputs(model: Model, ref: Reference) -> dict[str, np.ndarray] | None:
    """The reference's copy of every model input (under its name or a tensor name), or None
    when it lacks one: a reference holding its inputs says what it was made from."""
    names = set(ref.names())
    found: dict[str, np.ndarray] = {}
    for spec in model.inputs:
        key = next((n for n in (spec.name, *spec.names) if n in names), None)
        if key is None:
            return None
        found[spec.name] = np.asarray(ref.get(key))
    return found or None


def _inputs_hint(model: Model, given: Any, ref: Reference) -> str | None:
    """Where the inputs a reference was made from may be: ``M.inputs.npz`` beside the
    reference or the model (irrun's bundled models keep them so), or a dump's missing
    inputs file."""
    inputs_file = getattr(ref, "inputs_file", None)
    if isinstance(inputs_file, Path) and not inputs_file.is_file():
        return f" (the dump's {inputs_file} is missing)"
    if not isinstance(given, str | Path):
        return None
    path = Path(given)
    stems = dict.fromkeys((path.name.split(".")[0], model.path.stem))
    for directory in dict.fromkeys((path.parent, model.path.parent)):
        for stem in stems:
            candidate = directory / f"{stem}.inputs.npz"
            if candidate.is_file() and candidate != path:
                return f", perhaps --input {candidate}"
    return None


def _compare(
    model: Model,
    feeds: Mapping[str, np.ndarray],
    ref: Reference,
    mark_all: bool,
    atol: Tolerance,
    rtol: Tolerance,
    fail_fast: bool,
    check_error_stat: ErrorStat = "elemwise",
    scaled: set[str] | None = None,
) -> Report:
    """``scaled``: when not None, the atol of every tensor but those it names is a fraction
    of the tensor's largest finite reference magnitude, or of 1 if that is less."""
    report = Report(str(model.path), ref.description, [], mark_all, atol, rtol,
                    check_error_stat, list(ref.notes))  # fmt: skip
    ref_names = ref.names()
    in_ref = set(ref_names)
    output_names = [s.name for s in model.outputs]
    layer_of = {
        name: (layer, line) for layer, line, names in model.layers() for name in names
    }  # fmt: skip
    # An output whose tensor has no name goes by its Result's name (see
    # irrun.core.names.tensor_name), the layer computing it still its place.
    unnamed = {s.name for s in model.outputs if not s.names}
    for result, line, _ in model.layers():
        if result.type == "Result" and result.name in unnamed and result.name not in layer_of:
            layer_of[result.name] = (result, line)  # a tensor feeding two Results: the second
    compared: set[str] = set()
    known = set(model.tensor_names.values()) | set(output_names)
    inputs = {s.name for s in model.inputs}
    stand_in = _stand_ins(model, ref, [n for n in ref_names if n not in known | inputs])
    for output, other in stand_in.items():
        report.notes.append(
            f"output '{output}' is not in the reference: compared with its '{other}', the one "
            "array there of that shape that irrun has no tensor of"
        )

    tensor_of = _output_tensors(model)

    def check(name: str, value: np.ndarray) -> None:
        compared.add(name)
        layer, line = layer_of.get(tensor_of.get(name, name), layer_of.get(name, (None, 0)))
        ref_name = stand_in.get(name, name)
        if ref_name not in in_ref and tensor_of.get(name) in in_ref:
            # An unnamed tensor feeding two Results: a dump names it after the first only.
            ref_name = tensor_of[name]
        if ref_name not in in_ref:
            if name not in output_names:
                report.not_in_reference.append(name)
                return
            result = TensorResult(
                name, False, layer, line, tuple(np.shape(value)), str(np.asarray(value).dtype),
                problem=MISSING,
            )  # fmt: skip
        else:
            expected = ref.get(ref_name)
            if ref_name in ref.casts:
                expected = np.asarray(expected).astype(ref.casts[ref_name])
            tol = _tol(atol, name, DEFAULT_ATOL)
            if scaled is not None and name not in scaled:
                tol *= _magnitude(expected)
            result = compare_arrays(
                value, expected, tol, _tol(rtol, name, DEFAULT_RTOL),
                name, _by_name(check_error_stat, name, "elemwise"),
            )  # fmt: skip
            result.layer, result.line = layer, line
        report.results.append(result)
        if fail_fast and not result.passed:
            raise _Stop

    try:
        if mark_all:

            def on_layer(run: Any) -> None:
                if run.ref.type in _NOT_COMPUTED:
                    return
                for name, value in run.outputs.items():
                    check(name, value)

            outputs = model.run(feeds, on_layer=on_layer)
            # A model output fed straight by a Parameter or a Const has no computing layer.
            for name in output_names:
                if name not in compared:
                    check(name, outputs[name])
        else:
            outputs = model.run(feeds)
            for name in output_names:
                check(name, outputs[name])
    except _Stop:
        report.stopped_early = True
    # In the model's order, as the layers are listed (a run computes the layers folded at
    # load, or fused into one step, in an order of its own).
    if mark_all and not report.stopped_early:  # else the failure stays last, where it stopped
        order = {ref.id: i for i, (ref, _, _) in enumerate(model.layers())}
        report.results.sort(
            key=lambda r: order.get(r.layer.id, len(order)) if r.layer else len(order)
        )

    # A reference that holds the inputs tells whether it was made from the same ones:
    # comparing with values from other inputs is the likeliest mistake of all.
    for spec in model.inputs:
        if spec.name in in_ref and spec.name in feeds:
            given = compare_arrays(feeds[spec.name], ref.get(spec.name), 0.0, 0.0, spec.name)
            if not given.passed:
                how = given.problem or f"max abs difference {_num(given.max_abs)}"
                report.notes.append(
                    f"the reference's input '{spec.name}' is not the input given ({how}): "
                    "was the reference made from other inputs? (--input)"
                )
    strangers = [n for n in ref_names if n not in known and n not in stand_in.values()]
    lacking = [r.name for r in report.results if r.problem == MISSING and r.name in unnamed]
    if strangers and lacking:
        # Most likely the same outputs under other names, with nothing to tell which is which.
        report.notes.append(
            f"the reference has {len(strangers)} tensor{'s' * (len(strangers) != 1)} irrun "
            f"does not, not compared: {_some(strangers)}; irrun names an output whose tensor "
            f"has no name after its Result: save the reference's outputs as {_some(lacking)}"
        )
    elif strangers:
        report.notes.append(
            f"the reference has {len(strangers)} tensor{'s' * (len(strangers) != 1)} irrun "
            f"does not, not compared: {_some(strangers)} (irrun's names: irrun compare "
            "--mark-all lists them)"
        )
    unused = [n for n in ref_names if n in known and n not in compared and n not in inputs]
    if unused and not mark_all and not report.stopped_early:
        report.notes.append(
            f"the reference has {len(unused)} more of irrun's tensors ({_some(unused)}): "
            "add --mark-all to compare them"
        )
    return report


def _output_tensors(model: Model) -> dict[str, str]:
    """The name of the tensor each model output is, where the two differ (an unnamed
    tensor feeding several Results is named after the first, see
    :func:`irrun.core.names.tensor_name`)."""
    shown = model._names.by_slot
    return {
        name: shown[slot] for name, slot in model._output_slots.items()
        if slot in shown and shown[slot] != name
    }  # fmt: skip


def _stand_ins(model: Model, ref: Reference, strangers: list[str]) -> dict[str, str]:
    """For model outputs the reference lacks, its array to compare each with instead,
    where there is no doubt which: a reference made elsewhere (OpenVINO's outputs saved by
    index, say) names them otherwise.

    One missing output and one array irrun has no tensor of go together; with more, an
    output goes with an array only when each is the only one of its shape on either side.
    """
    in_ref = set(ref.names())
    missing = [s for s in model.outputs if s.name not in in_ref]
    if not missing or not strangers:
        return {}
    shapes = {n: tuple(np.shape(ref.get(n))) for n in strangers}
    static = {s.name: tuple(s.shape) for s in missing
              if s.shape is not None and all(isinstance(d, int) for d in s.shape)}  # fmt: skip
    if len(missing) == len(strangers) == 1:
        output, other = missing[0].name, strangers[0]
        # A shape irrun does not know yet (dynamic dims) cannot tell against it.
        fits = output not in static or static[output] == shapes[other]
        return {output: other} if fits else {}
    found: dict[str, str] = {}
    for output, shape in static.items():
        same = [n for n, ref_shape in shapes.items() if ref_shape == shape]
        outputs_of_shape = [o for o, other in static.items() if other == shape]
        if len(same) == 1 and outputs_of_shape == [output]:
            found[output] = same[0]
    return found


def _magnitude(values: np.ndarray) -> float:
    """The largest finite magnitude in ``values``, at least 1 (floats; 1 for the others)."""
    values = np.asarray(values)
    if values.dtype.kind != "f" or not values.size:
        return 1.0
    finite = np.abs(values[np.isfinite(values)])
    return max(1.0, float(finite.max())) if finite.size else 1.0


def _tol(tol: Tolerance, name: str, default: float) -> float:
    return float(_by_name(tol, name, default))


def _by_name(given: Any, name: str, default: Any) -> Any:
    """A setting given for every tensor, or per tensor name with "*" for the rest."""
    if isinstance(given, Mapping):
        return given.get(name, given.get("*", default))
    return given


# ----------------------------------------------------------------------------- text


# ----------------------------------------------------------------------------- command line


def _tolerance(text: str) -> tuple[str | None, float]:
    """``VAL`` or ``NAME:VAL``; the value follows the last colon, since names hold colons."""
    name: str | None = None
    value = text
    if ":" in text:
        name, value = text.rsplit(":", 1)
        if not name:
            raise ValueError(text)
    number = float(value)
    if not number >= 0 or math.isinf(number):
        raise ValueError(text)
    return name, number


_tolerance.__name__ = "tolerance"  # argparse: "invalid tolerance value: 'x'"


def _error_stat(text: str) -> tuple[str | None, str]:
    """``STAT`` or ``NAME:STAT``, STAT one of :data:`ERROR_STATS`."""
    name, _, stat = text.rpartition(":")
    if stat not in ERROR_STATS or (":" in text and not name):
        raise ValueError(text)
    return name or None, stat


_error_stat.__name__ = "error stat"  # argparse: "invalid error stat value: 'x'"


def _tolerances(given: list[tuple[str | None, Any]], default: Any) -> Any:
    """The values given as ``[NAME:]VAL``: one for every tensor, else a dict by name."""
    if not given:
        return default
    by_name = {name or "*": value for name, value in given}
    if list(by_name) == ["*"]:
        return by_name["*"]
    return by_name


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun compare`` to the command line."""
    p = sub.add_parser(
        "compare", parents=[parents.model, parents.inputs],
        description="Run the model with irrun and compare its outputs (every layer's with "
        "--mark-all) with a reference: a file, or OpenVINO run on the same inputs. Prints a "
        "PASSED/FAILED line per tensor and a summary; exit 0 when all pass, 1 otherwise.",
        epilog="examples:\n"
        "  irrun compare model.xml --ref-backend openvino\n"
        "  irrun compare model.xml --ref-backend openvino --mark-all --report report.html\n"
        "  irrun compare model.xml --ref expected.npz --input x.npy --atol 1e-4\n"
        "  irrun compare model.xml --ref dump             # a folder irrun run --dump-dir wrote",
    )  # fmt: skip
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--ref", metavar="REF.npz|DIR",
        help="reference values: an .npz keyed by tensor name (irrun run -o writes one) "
        "or a directory written by irrun run --dump-dir",
    )  # fmt: skip
    source.add_argument(
        "--ref-backend", choices=list(BACKENDS),
        help="compute the reference from the same inputs: openvino (OpenVINO's CPU plugin, "
        "f32) or reference (irrun's reference kernels, unfused, one thread)",
    )  # fmt: skip
    p.add_argument(
        "--mark-all", action="store_true",
        help="compare every tensor irrun computes, in run order, and name the first "
        "diverging layer",
    )  # fmt: skip
    p.add_argument(
        "--atol", type=_tolerance, action="append", default=[], metavar="[NAME:]VAL",
        help=f"absolute tolerance, for all tensors or one; repeatable (default {DEFAULT_ATOL}; "
        "1e-3 for compressed weights against OpenVINO)",
    )  # fmt: skip
    p.add_argument(
        "--rtol", type=_tolerance, action="append", default=[], metavar="[NAME:]VAL",
        help=f"relative tolerance, for all tensors or one; repeatable (default {DEFAULT_RTOL}). "
        "An element passes when |irrun - ref| <= atol + rtol * |ref|",
    )  # fmt: skip
    p.add_argument(
        "--check-error-stat", type=_error_stat, action="append", default=[],
        metavar="[NAME:]STAT",
        help="what decides a tensor, for all tensors or one; repeatable: elemwise (default: "
        "every element within the tolerances), or max, mean or median (that statistic of the "
        "absolute errors <= atol, or of the relative errors <= rtol)",
    )  # fmt: skip
    add_shape(p)
    p.add_argument("--fail-fast", action="store_true", help="stop at the first tensor that fails")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead")
    p.add_argument("-o", "--output", metavar="REPORT.json", help="also write the report here")
    p.add_argument(
        "--report", metavar="REPORT.html",
        help="also write the report as one self-contained HTML page: each tensor's error along "
        "the model's order, the worst layers, and the graph coloured by error (with --mark-all "
        "every layer's; without it, the outputs' only)",
    )  # fmt: skip
    add_threads(p)
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    if args.report and Path(args.report).suffix.lower() == ".json":
        # benchmark --report writes JSON; compare's is the page, its JSON is -o's.
        raise UsageError(
            f"--report {args.report}: --report writes an HTML page (report.html); -o writes "
            "the JSON report"
        )
    for path in (args.output, args.report):
        if path:
            check_output_path(Path(path))
    dump_inputs = _dump_inputs(args.ref) if args.ref and not args.input else None
    # Refuses a --seed that inputs from elsewhere would leave unused.
    random_seed(args, f"the dump's {dump_inputs.name}" if dump_inputs else None)
    model = load(
        args.model, args.weights, args.max_memory, threads=args.threads, reference=args.reference
    )
    if args.shape:
        model.reshape(args.shape)
    feeds = None  # compare's choice: the reference's copy of the inputs, else random ones
    if args.input:
        feeds = read_inputs(model, args.input, args.cast)
    elif dump_inputs is not None:
        # A dump keeps the inputs it was made from: those, not random ones, reproduce it.
        feeds = read_inputs(model, [str(dump_inputs)])
    report = compare(
        model, feeds, args.ref, backend=args.ref_backend, mark_all=args.mark_all,
        seed=args.seed,  # None: the reference's inputs if it holds them, else seed 0
        atol=_tolerances(args.atol, None), rtol=_tolerances(args.rtol, DEFAULT_RTOL),
        fail_fast=args.fail_fast,
        check_error_stat=_tolerances(args.check_error_stat, "elemwise"),
    )  # fmt: skip
    data = report.as_dict()
    if args.output:
        write_atomically(Path(args.output), lambda f: dump_json(data, f))
        say_written(f"the report of {count(len(report.results), 'tensor')}", args.output)
    if args.report:
        write_html(data, Path(args.report))
        say_written(f"the HTML report of {count(len(report.results), 'tensor')}", args.report)
    if args.json:
        dump_json(data, sys.stdout)
    else:
        print("\n".join(report.lines()))
    return 0 if report.passed else 1


def _dump_inputs(ref: str) -> Path | None:
    """The inputs.npz of a ``--dump-dir`` directory given as the reference, if it has one."""
    directory = Path(ref)
    if not (directory / "manifest.json").is_file():
        return None
    try:
        name = json.loads((directory / "manifest.json").read_text(encoding="utf-8")).get("inputs")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None  # opening the reference reports it
    path = directory / name if isinstance(name, str) else None
    return path if path is not None and path.is_file() else None


__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "ArrayReference",
    "Reference",
    "Report",
    "TensorResult",
    "compare",
    "compare_arrays",
    "open_reference",
    "openvino_reference",
]
