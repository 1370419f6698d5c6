"""What ``irrun compare`` finds: each tensor's comparison (:class:`TensorResult`) and the
report of a whole run (:class:`Report`), with their text and JSON.

An element passes when ``|irrun - ref| <= atol + rtol * |ref|``; see :mod:`.compare`
for the rules, which :func:`compare_arrays` applies to one tensor.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import IrrunError, LayerRef, Location

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-5

# Tolerances: one value for every tensor, or per tensor name with "*" for the rest.
Tolerance = float | Mapping[str, float]
# What decides a tensor: each element (elemwise), or a statistic of the errors; one for
# every tensor, or per tensor name with "*" for the rest.
ERROR_STATS = ("elemwise", "max", "mean", "median")
ErrorStat = str | Mapping[str, str]

# The problem of a model output the reference does not have.
MISSING = "missing in the reference"


@dataclass
class TensorResult:
    """How one tensor compares: pass or fail, and why.

    ``problem`` says why a tensor failed without element errors to show (shape or
    element type mismatch, missing from the reference); the errors are ``None``
    then, except for an element type mismatch, which still compares the values.
    ``worst`` is the position of the largest absolute error, with the two values
    there.
    """

    name: str
    passed: bool
    layer: LayerRef | None = None
    line: int = 0
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    ref_shape: tuple[int, ...] | None = None
    ref_dtype: str | None = None
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    problem: str | None = None
    mismatches: int = 0  # elements outside the tolerance
    # The error statistic that decides, and its value over the absolute and the
    # relative errors (None for elemwise, where each element decides).
    check_error_stat: str = "elemwise"
    stat_abs: float | None = None
    stat_rel: float | None = None
    max_abs: float | None = None
    mean_abs: float | None = None
    max_rel: float | None = None
    mean_rel: float | None = None
    worst: tuple[int, ...] | None = None
    worst_values: tuple[Any, Any] | None = None  # (irrun, reference) at ``worst``

    def __str__(self) -> str:
        """``PASSED | NAME | layer ... | SHAPE DTYPE | max abs E at [i, j] | mean abs ...``."""
        fields = ["PASSED" if self.passed else "FAILED", self.name]
        if self.layer is not None:
            fields.append(str(self.layer))
        if self.shape is not None:
            fields.append(f"{list(self.shape)} {self.dtype}")
        if self.problem is not None:
            fields.append(self.problem)
        if self.max_abs is not None:
            if self.stat_abs is not None:
                fields.append(
                    f"{self.check_error_stat} error abs {_num(self.stat_abs)} rel "
                    f"{_num(self.stat_rel)} (atol {_num(self.atol)}, rtol {_num(self.rtol)})"
                )
            elif self.mismatches:
                size = math.prod(self.shape or ())
                fields.append(
                    f"{self.mismatches} of {size} elements differ "
                    f"(atol {_num(self.atol)}, rtol {_num(self.rtol)})"
                )
            worst = f"max abs {_num(self.max_abs)}"
            if self.worst is not None and self.max_abs:  # every position is worst at 0
                worst += f" at {list(self.worst)}"
                if not self.passed and self.worst_values is not None:
                    a, b = self.worst_values
                    worst += f" (irrun {_value(a)}, reference {_value(b)})"
            fields += [
                worst,
                f"mean abs {_num(self.mean_abs)}",
                f"max rel {_num(self.max_rel)}",
                f"mean rel {_num(self.mean_rel)}",
            ]
        return " | ".join(fields)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "layer": self.layer.as_dict() if self.layer is not None else None,
            "line": self.line or None,
            "shape": _list(self.shape),
            "dtype": self.dtype,
            "reference_shape": _list(self.ref_shape),
            "reference_dtype": self.ref_dtype,
            "atol": self.atol,
            "rtol": self.rtol,
            "problem": self.problem,
            "mismatches": self.mismatches,
            "check_error_stat": self.check_error_stat,
            "stat_abs": _json_float(self.stat_abs),
            "stat_rel": _json_float(self.stat_rel),
            "max_abs": _json_float(self.max_abs),
            "mean_abs": _json_float(self.mean_abs),
            "max_rel": _json_float(self.max_rel),
            "mean_rel": _json_float(self.mean_rel),
            "worst": _list(self.worst),
            "worst_values": (
                None if self.worst_values is None else [_json_float(v) for v in self.worst_values]
            ),
        }


class LayerErrors(NamedTuple):
    """The errors of one layer's compared tensors: the largest absolute and relative errors
    (inf where a tensor has no values to compare, as on a shape mismatch), whether all
    passed, and the tensors' positions in :attr:`Report.results`."""

    max_abs: float
    max_rel: float
    passed: bool
    tensors: list[int]


@dataclass
class Report:
    """A whole comparison: each tensor's result in the order compared (the model's order with
    ``mark_all``), and what was not compared.

    :meth:`as_dict` is its JSON (``irrun compare --json``), :meth:`html` and :meth:`to_html`
    its picture (``irrun compare --report``): the error along the graph, the worst layers and
    the graph coloured by error, drawn from that same JSON.
    """

    model: str
    reference: str  # what the reference was, for people
    results: list[TensorResult]
    mark_all: bool
    atol: Tolerance = DEFAULT_ATOL
    rtol: Tolerance = DEFAULT_RTOL
    check_error_stat: ErrorStat = "elemwise"
    notes: list[str] = field(default_factory=list)
    not_in_reference: list[str] = field(default_factory=list)  # irrun tensors not compared
    stopped_early: bool = False  # fail_fast stopped at the first failure
    # Where the inputs came from: {"source": "given" | "reference" | "random", "seed": N or
    # None, "tensors": [{"name", "shape", "dtype"}], "hint": where the reference's inputs
    # may be, as the end of the note on random inputs, or None}.
    inputs: dict[str, Any] | None = None
    backend: bool = False  # the reference ran here on the same inputs (a backend)
    # Why the default tolerances are not the usual ones (compressed weights against
    # OpenVINO's plugin), printed first; None when they are.
    tolerance_note: str | None = None
    atol_scaled: bool = False  # the default atol is a fraction of each tensor's magnitude
    # The model's layers in run order, for drawing the graph: each {"id", "name", "type",
    # "version", "opset", "line", "inputs": [{"port", "from": {"layer", "port"} or None}]};
    # None when the report was not made by compare().
    layers: list[dict[str, Any]] | None = None

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[TensorResult]:
        return [r for r in self.results if not r.passed]

    @property
    def first_diverging(self) -> TensorResult | None:
        """The first failing tensor in run order, when every layer was compared
        (``mark_all``); without it, the first diverging layer is not known."""
        if not self.mark_all:
            return None
        return next((r for r in self.diverging if r.layer is not None), None)

    @property
    def diverging(self) -> list[TensorResult]:
        """The failures with values to compare (not the tensors missing in the reference)."""
        return [r for r in self.results if not r.passed and r.problem != MISSING]

    def layer_errors(self) -> dict[str, LayerErrors]:
        """Each compared layer's errors (the worst of its tensors'), by layer id."""
        found: dict[str, LayerErrors] = {}
        for i, r in enumerate(self.results):
            if r.layer is None:
                continue
            inf = float("inf")
            abs_err = inf if r.max_abs is None else r.max_abs
            rel_err = inf if r.max_rel is None else r.max_rel
            before = found.get(r.layer.id)
            if before is None:
                found[r.layer.id] = LayerErrors(abs_err, rel_err, r.passed, [i])
            else:
                found[r.layer.id] = LayerErrors(
                    max(before.max_abs, abs_err), max(before.max_rel, rel_err),
                    before.passed and r.passed, [*before.tensors, i],
                )  # fmt: skip
        return found

    def worst_first(self) -> list[int]:
        """The positions in :attr:`results` from the worst tensor to the best: the failures
        first, each group by its largest absolute error (none to compare counts as inf),
        then by its largest relative error; ties keep the model's order."""

        def badness(i: int) -> tuple[bool, float, float]:
            r = self.results[i]
            abs_err = math.inf if r.max_abs is None or math.isnan(r.max_abs) else r.max_abs
            rel_err = math.inf if r.max_rel is None or math.isnan(r.max_rel) else r.max_rel
            return (not r.passed, abs_err, rel_err)

        return sorted(range(len(self.results)), key=badness, reverse=True)

    def html(self) -> str:
        """The report as one self-contained HTML page (no file or network is referred to):
        the error of every compared tensor along the model's order, plotted; the worst
        tensors, as a table; the graph with each layer coloured by its error; and
        :meth:`as_dict`'s JSON, embedded. Compared with ``mark_all``, every layer has an
        error to show; without, only the outputs' layers."""
        from .compare_report import render_html

        return render_html(self.as_dict())

    def to_html(self, path: str | Path) -> None:
        """Write :meth:`html` to ``path``, whole or not at all (an IrrunError if it cannot be
        written)."""
        from .compare_report import write_html

        write_html(self.as_dict(), Path(path))

    def lines(self) -> list[str]:
        """The text ``irrun compare`` prints: a line per tensor, notes, a summary."""
        out = [f"note: {self.tolerance_note}"] if self.tolerance_note else []
        out += [str(r) for r in self.results]
        out += [f"note: {n}" for n in self.notes]
        if self.not_in_reference:
            n = len(self.not_in_reference)
            out.append(
                f"note: {n} of irrun's tensor{'s' * (n != 1)} not in the reference, not compared: "
                f"{_some(self.not_in_reference)}"
            )
        failed = len(self.failed)
        if failed and self.inputs is not None and self.inputs["source"] == "random":
            out.append(f"note: {_random_inputs_text(self.inputs, self.backend)}")
        total = len(self.results)
        scale = " x largest magnitude" if self.atol_scaled else ""
        tolerance = (
            f"atol {_tol_text(self.atol, DEFAULT_ATOL, scale)}, "
            f"rtol {_tol_text(self.rtol, DEFAULT_RTOL)}"
        )
        if self.check_error_stat != "elemwise":
            tolerance += f", check {_tol_text(self.check_error_stat, 'elemwise')} error"
        stopped = " (--fail-fast: stopped at the first failure)" if self.stopped_early else ""
        counted = f"of {total} tensor{'s' * (total != 1)}"
        if failed:
            out.append(
                f"FAILED | {failed} {counted} failed{stopped} | {tolerance} | "
                f"irrun vs {self.reference}"
            )
            first = self.first_diverging
            if not self.diverging:
                pass  # only missing tensors: nothing diverged
            elif first is not None:
                among = f" (among the {total} tensors compared)" if self.not_in_reference else ""
                out.append(
                    f"first diverging layer{among}: {_layer_text(first.layer)} at "
                    f"{Location(self.model, first.line)}"
                )
            else:
                out.append(
                    "first diverging layer: unknown; run again with --mark-all to compare "
                    "every layer"
                )
        else:
            out.append(
                f"PASSED | {total} {counted} passed | {tolerance} | irrun vs {self.reference}"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """The JSON report: ``tensors`` in the order compared, each with its layer, its
        ``order`` (its layer's position in the model's run order) and its errors;
        ``worst_first`` (positions in ``tensors``, see :meth:`worst_first`); and, when
        compare() made the report, ``layers``: the model's layers in run order with their
        inputs' sources and the errors of their compared tensors (``passed`` None for a
        layer not compared)."""
        first = self.first_diverging
        order = {layer["id"]: i for i, layer in enumerate(self.layers or ())}
        tensors = []
        for r in self.results:
            entry = r.as_dict()
            entry["order"] = order.get(r.layer.id) if r.layer is not None else None
            tensors.append(entry)
        errors = self.layer_errors()
        layers = None
        if self.layers is not None:
            layers = []
            for layer in self.layers:
                e = errors.get(layer["id"])
                layers.append({
                    **layer,
                    "tensors": [] if e is None else e.tensors,
                    "passed": None if e is None else e.passed,
                    "max_abs": None if e is None else _json_float(e.max_abs),
                    "max_rel": None if e is None else _json_float(e.max_rel),
                })  # fmt: skip
        return {
            "model": self.model,
            "reference": self.reference,
            "passed": self.passed,
            "mark_all": self.mark_all,
            "atol": _tol_json(self.atol),
            "rtol": _tol_json(self.rtol),
            "check_error_stat": _tol_json(self.check_error_stat),
            "tolerance_note": self.tolerance_note,
            "atol_scaled": self.atol_scaled,
            "summary": {
                "compared": len(self.results),
                "failed": len(self.failed),
                "not_in_reference": len(self.not_in_reference),
                "stopped_early": self.stopped_early,
            },
            "first_diverging_layer": (
                None
                if first is None or first.layer is None
                else {**first.layer.as_dict(), "tensor": first.name, "line": first.line or None}
            ),
            "inputs": self.inputs,
            "notes": list(self.notes),
            "not_in_reference": list(self.not_in_reference),
            "tensors": tensors,
            "worst_first": self.worst_first(),
            "layers": layers,
        }


def compare_arrays(
    actual: np.ndarray,
    expected: np.ndarray,
    atol: float = DEFAULT_ATOL,
    rtol: float = DEFAULT_RTOL,
    name: str = "",
    check_error_stat: str = "elemwise",
) -> TensorResult:
    """Compare irrun's ``actual`` with the reference's ``expected``, element by element,
    or by a statistic of the elements' errors (see the module's docstring).

    >>> r = compare_arrays(np.array([1.0, 2.0, np.nan]), np.array([1.0, 2.5, np.nan]), name="y")
    >>> r.passed, r.max_abs, r.worst, r.mismatches
    (False, 0.5, (1,), 1)
    >>> for text in str(r).split(" | "):
    ...     print(text)
    FAILED
    y
    [3] float64
    1 of 3 elements differ (atol 1e-05, rtol 1e-05)
    max abs 0.5 at [1] (irrun 2, reference 2.5)
    mean abs 0.167
    max rel 0.2
    mean rel 0.0667

    One element far off fails it; its median error passes:

    >>> r = compare_arrays(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.0]),
    ...                    check_error_stat="median")
    >>> r.passed, r.stat_abs, r.mismatches
    (True, 0.0, 1)
    """
    if check_error_stat not in ERROR_STATS:
        raise ValueError(f"check_error_stat {check_error_stat!r} is not one of {ERROR_STATS}")
    actual, expected = np.asarray(actual), np.asarray(expected)
    result = TensorResult(
        name, True, shape=actual.shape, dtype=str(actual.dtype), ref_shape=expected.shape,
        ref_dtype=str(expected.dtype), atol=atol, rtol=rtol, check_error_stat=check_error_stat,
    )  # fmt: skip
    if actual.shape != expected.shape:
        result.passed = False
        result.problem = (
            f"shape mismatch: irrun {list(actual.shape)}, reference {list(expected.shape)}"
        )
        return result
    if actual.dtype != expected.dtype:
        # The values are still compared, so that the line tells a mere type difference
        # (i32 against i64 indices) from a wrong value.
        result.passed = False
        result.problem = f"element type mismatch: irrun {actual.dtype}, reference {expected.dtype}"
    if np.dtype(object) in (actual.dtype, expected.dtype):  # string tensors: equal or not
        pairs = zip(actual.reshape(-1).tolist(), expected.reshape(-1).tolist(), strict=True)
        bad = np.array([x != y for x, y in pairs], bool).reshape(actual.shape)
        result.mismatches = int(np.count_nonzero(bad))
        result.passed = result.passed and not result.mismatches
        result.max_abs = result.mean_abs = result.max_rel = result.mean_rel = 0.0
        result.stat_abs = result.stat_rel = 0.0
        if result.mismatches:
            worst = np.unravel_index(int(np.argmax(bad)), actual.shape)
            result.worst = tuple(int(i) for i in worst)
            result.worst_values = (actual[worst], expected[worst])
            result.problem = result.problem or f"{result.mismatches} strings differ"
        return result
    a, b = _as_float(actual), _as_float(expected)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # Equal elements, NaN against NaN and an infinity against the same one, have no error.
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        abs_err = np.where(same, 0.0, np.abs(a - b))
        abs_err[np.isnan(abs_err)] = np.inf  # NaN against a number
        mag = np.abs(b)
        rel_err = np.where(abs_err == 0, 0.0, abs_err / mag)
        rel_err[np.isnan(rel_err)] = np.inf  # inf / inf
        # An infinite error fails even against an infinite tolerance (irrun 5, reference inf).
        bad = (abs_err > atol + rtol * np.where(np.isnan(mag), 0.0, mag)) | np.isinf(abs_err)
    result.mismatches = int(np.count_nonzero(bad))
    if check_error_stat == "elemwise":
        result.passed = result.passed and not result.mismatches
    elif a.size:
        stat = {"max": np.max, "mean": np.mean, "median": np.median}[check_error_stat]
        with np.errstate(invalid="ignore", over="ignore"):
            result.stat_abs, result.stat_rel = float(stat(abs_err)), float(stat(rel_err))
        result.passed = result.passed and (result.stat_abs <= atol or result.stat_rel <= rtol)
    else:
        result.stat_abs = result.stat_rel = 0.0
    if a.size == 0:
        result.max_abs = result.mean_abs = result.max_rel = result.mean_rel = 0.0
        return result
    worst = np.unravel_index(int(np.argmax(abs_err)), a.shape)
    result.worst = tuple(int(i) for i in worst)
    result.worst_values = (actual[worst].item(), expected[worst].item())
    with np.errstate(invalid="ignore", over="ignore"):
        result.max_abs = float(abs_err[worst])
        result.mean_abs = float(abs_err.mean())
        result.max_rel = float(rel_err.max())
        result.mean_rel = float(rel_err.mean())
    return result


def _as_float(array: np.ndarray) -> np.ndarray:
    # float64 holds every f16/f32 value and integer exactly up to 2**53: enough to measure
    # errors in; booleans count as 0 and 1.
    if array.dtype.kind == "c":
        raise IrrunError(f"cannot compare complex values ({array.dtype})")
    return array.astype(np.float64)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.9g}"
    return str(v)


def _some(names: Iterable[str], limit: int = 6) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _tol_text(tol: Tolerance | ErrorStat, default: float | str, scale: str = "") -> str:
    """``1e-05``, or the default then the per-tensor values: ``1e-05 conv1:0.001``;
    ``scale`` follows the default."""
    show = str if isinstance(default, str) else _num
    if not isinstance(tol, Mapping):
        return show(tol) + scale
    parts = [show(tol.get("*", default)) + scale]
    parts += [f"{n}:{show(v)}" for n, v in tol.items() if n != "*"]
    return " ".join(parts)


def _tol_json(tol: Tolerance) -> Any:
    return dict(tol) if isinstance(tol, Mapping) else tol


def _layer_text(layer: LayerRef | None) -> str:
    # "3 'conv1' (Convolution-v1)": LayerRef's text without its leading "layer ".
    return str(layer).removeprefix("layer ")


def _json_float(v: Any) -> Any:
    # JSON has no NaN or infinity; their names are kept as strings.
    if isinstance(v, float) and not math.isfinite(v):
        return _num(v)
    return v


def _list(t: tuple[int, ...] | None) -> list[int] | None:
    return None if t is None else list(t)


def _random_inputs_text(inputs: dict[str, Any], backend: bool) -> str:
    """``irrun ran on random inputs (seed 0: image [1, 3, 16, 16] float32) ...``."""
    shapes = ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in inputs["tensors"])
    ran = f"random inputs (seed {inputs['seed']}: {shapes})"
    if backend:
        return f"both ran on the same {ran}; --input gives others"
    return (
        f"irrun ran on {ran}, not on those the reference was made from: give those "
        f"with --input{inputs['hint'] or ''}"
    )
