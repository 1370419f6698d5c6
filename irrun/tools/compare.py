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
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.model import Model, load
from ..errors import IrrunError, LayerRef, Location, UsageError
from .common import (
    NPY_MAGIC,
    ZIP_MAGIC,
    Parents,
    check_magic,
    check_output_path,
    count,
    dump_json,
    load_array_file,
    random_seed,
    read_inputs,
    say_written,
    write_atomically,
)

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-5

# Tolerances: one value for every tensor, or per tensor name with "*" for the rest.
Tolerance = float | Mapping[str, float]
# What decides a tensor: each element (elemwise), or a statistic of the errors; one for
# every tensor, or per tensor name with "*" for the rest.
ERROR_STATS = ("elemwise", "max", "mean", "median")
ErrorStat = str | Mapping[str, str]

# What the CPU plugin is compiled with: f32 arithmetic, whatever the machine prefers.
OPENVINO_CONFIG: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}

# The problem of a model output the reference does not have.
MISSING = "missing in the reference"

# Layers whose outputs are inputs or weights, not computed values.
_NOT_COMPUTED = ("Parameter", "Const", "Result")


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


@dataclass
class Report:
    """A whole comparison: each tensor's result in the order compared (run order with
    ``mark_all``), and what was not compared."""

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
    backend: bool = False  # the reference ran here on the same inputs (OpenVINO)

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

    def lines(self) -> list[str]:
        """The text ``irrun compare`` prints: a line per tensor, notes, a summary."""
        out = [str(r) for r in self.results]
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
        tolerance = (
            f"atol {_tol_text(self.atol, DEFAULT_ATOL)}, rtol {_tol_text(self.rtol, DEFAULT_RTOL)}"
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
        first = self.first_diverging
        return {
            "model": self.model,
            "reference": self.reference,
            "passed": self.passed,
            "mark_all": self.mark_all,
            "atol": _tol_json(self.atol),
            "rtol": _tol_json(self.rtol),
            "check_error_stat": _tol_json(self.check_error_stat),
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
            "tensors": [r.as_dict() for r in self.results],
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


# ----------------------------------------------------------------------------- references


class Reference:
    """Reference values by irrun tensor name, read as they are compared."""

    description = "reference"

    def __init__(self) -> None:
        self.notes: list[str] = []
        # Reference tensors converted to irrun's element type before comparing, with why.
        self.casts: dict[str, np.dtype] = {}

    def names(self) -> list[str]:
        raise NotImplementedError

    def get(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ArrayReference(Reference):
    """Arrays in memory, keyed by tensor name."""

    def __init__(self, arrays: Mapping[str, np.ndarray], description: str = "reference") -> None:
        super().__init__()
        self._arrays = dict(arrays)
        self.description = description

    def names(self) -> list[str]:
        return list(self._arrays)

    def get(self, name: str) -> np.ndarray:
        return np.asarray(self._arrays[name])


class _NpzReference(Reference):
    # np.load reads an .npz member only when it is asked for: one tensor in memory at a time.
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.description = str(path)
        self._path = path
        check_magic(path, ZIP_MAGIC, ".npz", "reference")
        try:
            self._npz = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise IrrunError(f"cannot read as .npz: {exc}", Location(str(path))) from None
        if not isinstance(self._npz, np.lib.npyio.NpzFile):
            raise IrrunError(
                "a single array; the reference must be an .npz keyed by tensor name "
                "(irrun run -o out.npz writes one) or an irrun run --dump-dir directory",
                Location(str(path)),
            )

    def names(self) -> list[str]:
        return list(self._npz.files)

    def get(self, name: str) -> np.ndarray:
        try:
            return self._npz[name]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            where = Location(str(self._path))
            raise IrrunError(f"cannot read array '{name}': {exc}", where) from None

    def close(self) -> None:
        self._npz.close()


class _DumpReference(Reference):
    """A directory written by ``irrun run --dump-dir``: ``manifest.json`` and one .npy a tensor."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.description = f"{directory}{'' if str(directory).endswith('/') else '/'}"
        manifest = directory / "manifest.json"
        where = Location(str(manifest))
        if not manifest.is_file():
            raise IrrunError(
                "no manifest.json: a reference directory is one written by irrun run --dump-dir",
                Location(str(directory)),
            )
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            tensors = data["tensors"]
            self._files = {str(t["name"]): directory / str(t["file"]) for t in tensors}
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise IrrunError(f"not a dump manifest ({why})", where) from None
        if data.get("complete") is False:
            self.notes.append(
                f"{manifest} says the dump is incomplete (its run stopped early): "
                "tensors after that are not compared"
            )
        self.model = data.get("model")
        # The inputs the dump was made from: compare uses them when given none.
        inputs = data.get("inputs")
        self.inputs_file = directory / inputs if isinstance(inputs, str) else None
        self._inputs: dict[str, np.ndarray] = {}
        if self.inputs_file is not None and self.inputs_file.is_file():
            loaded = load_array_file(self.inputs_file)
            if not isinstance(loaded, dict):
                where = Location(str(self.inputs_file))
                raise IrrunError("expected an .npz of the inputs by name, not a .npy", where)
            self._inputs = loaded

    def names(self) -> list[str]:
        return [*self._files, *(n for n in self._inputs if n not in self._files)]

    def get(self, name: str) -> np.ndarray:
        if name not in self._files:
            return self._inputs[name]
        path = self._files[name]
        check_magic(path, NPY_MAGIC, ".npy", "reference")
        try:
            # Memory-mapped: a large dump is read page by page as it is compared.
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise IrrunError(f"cannot read as .npy: {exc}", Location(str(path))) from None


def open_reference(path: str | Path) -> Reference:
    """The reference in ``path``: an .npz keyed by tensor name, or a ``--dump-dir`` directory."""
    path = Path(path)
    if path.is_dir():
        return _DumpReference(path)
    return _NpzReference(path)


def openvino_reference(
    model: Model,
    feeds: Mapping[str, np.ndarray],
    mark_all: bool = False,
    config: Mapping[str, Any] | None = None,
) -> Reference:
    """Run the same IR with OpenVINO's CPU plugin on ``feeds``: its outputs, and with
    ``mark_all`` every computed tensor, under irrun's tensor names.

    Two plugin limitations are worked around, each with a note in the report:
    AdaptiveMaxPool with i64 indices (the plugin refuses them) runs with i32 indices,
    converted back to int64 before comparing; and a model with dynamic input shapes is
    reshaped to the inputs' shapes first (the plugin pads MaxPool-8/14 same_upper and
    same_lower wrongly on dynamic dims).
    """
    try:
        import openvino as ov
    except ImportError:
        raise IrrunError(
            "--ref-backend openvino needs OpenVINO, which is not installed: pip install openvino"
        ) from None
    notes: list[str] = []
    core = ov.Core()
    weights = model.weights.path
    try:
        ovm = core.read_model(str(model.path), str(weights) if weights.is_file() else None)
    except Exception as exc:
        where = Location(str(model.path))
        raise IrrunError(f"OpenVINO cannot read it: {_ov_message(exc)}", where) from None
    by_name: dict[str, list[tuple[LayerRef, tuple[str, ...]]]] = {}
    for layer, _, outs in model.layers():
        by_name.setdefault(layer.name, []).append((layer, outs))

    def irrun_name(op: Any, index: int) -> str | None:
        for _, outs in by_name.get(op.get_friendly_name(), ()):
            if index < len(outs):
                return outs[index]
        return None

    widened: dict[str, np.dtype] = {}
    for op in ovm.get_ordered_ops():
        attrs = op.get_attributes()
        if op.get_type_name() == "AdaptiveMaxPool" and attrs.get("index_element_type") == "i64":
            op.set_attribute("index_element_type", "i32")
            name = irrun_name(op, 1)
            if name is not None:
                widened[name] = np.dtype(np.int64)
                notes.append(
                    f"OpenVINO's CPU plugin has no i64 indices for AdaptiveMaxPool: "
                    f"'{op.get_friendly_name()}' ran there with i32 indices, compared as int64"
                )
    if widened:
        ovm.validate_nodes_and_infer_types()

    # Inputs: by tensor name, else by the Parameter's name, as irrun names its inputs.
    inputs: dict[int, np.ndarray] = {}
    for i, param in enumerate(ovm.get_parameters()):
        keys = {param.get_friendly_name(), *param.output(0).get_names()}
        spec = next((s for s in model.inputs if s.name in keys), None)
        if spec is None or spec.name not in feeds:
            raise IrrunError(
                f"OpenVINO's input '{param.get_friendly_name()}' has no irrun counterpart",
                Location(str(model.path)),
            )
        inputs[i] = np.asarray(feeds[spec.name])
    if any(p.get_partial_shape().is_dynamic for p in ovm.get_parameters()):
        shapes = ",".join(
            f"{p.get_friendly_name()}{list(inputs[i].shape)}".replace(" ", "")
            for i, p in enumerate(ovm.get_parameters())
        )
        ovm.reshape({i: ov.PartialShape(list(a.shape)) for i, a in inputs.items()})
        same_pads = any(
            op.get_type_name() == "MaxPool"
            and op.get_attributes().get("auto_pad") in ("same_upper", "same_lower")
            for op in ovm.get_ordered_ops()
        )
        why = " (its CPU plugin pads MaxPool-8/14 same_upper/same_lower wrongly on dynamic dims)"
        notes.append(
            f"OpenVINO's copy of the model was reshaped to the inputs' shapes {shapes}"
            + (why if same_pads else "")
        )

    # The model's own Results, before --mark-all adds more: irrun's outputs, in its order.
    own_results = list(ovm.get_results())
    output_of = _outputs_by_result(model, own_results)
    if mark_all:
        wanted = [
            out for op in ovm.get_ordered_ops()
            if op.get_type_name() not in ("Parameter", "Constant", "Result")
            for out in op.outputs()
        ]  # fmt: skip
        ovm.add_outputs(wanted)
    # Each model output is a Result; what feeds it says which irrun tensor it is.
    names: list[tuple[str, ...]] = []
    unmapped: list[str] = []
    for i, result in enumerate(ovm.get_results()):
        source = result.input_value(0)
        node = source.get_node()
        name = irrun_name(node, source.get_index())
        output = output_of.get(i)
        if name is None and output is None:
            unmapped.append(f"{node.get_friendly_name()}:{source.get_index()}")
        # An output whose tensor has no name is, in irrun, named after its Result; the
        # tensor itself is compared under the producing layer's name (--mark-all) only.
        keys = [output] if output is not None else []
        if name is not None and (output is None or mark_all):
            keys.append(name)
        if name in widened and output is not None:
            widened[output] = widened[name]
        names.append(tuple(dict.fromkeys(keys)))
    if unmapped:
        notes.append(
            f"OpenVINO's model has tensors irrun does not, not compared: {_some(unmapped)}"
        )
    try:
        compiled = core.compile_model(ovm, "CPU", dict(config or OPENVINO_CONFIG))
        request = compiled.create_infer_request()
        request.infer(inputs)
    except Exception as exc:
        where = Location(str(model.path))
        raise IrrunError(f"OpenVINO failed: {_ov_message(exc)}", where) from None
    arrays: dict[str, np.ndarray] = {}
    for i, keys in enumerate(names):
        for name in keys:
            if name not in arrays:
                # The request owns these buffers; keeping it alive avoids copying them.
                arrays[name] = request.get_output_tensor(i).data
    ref = ArrayReference(arrays, "OpenVINO CPU (f32)")
    ref.notes, ref.casts = notes, widened
    ref.keep_alive = request  # type: ignore[attr-defined]  # owns the arrays' memory
    return ref


def _outputs_by_result(model: Model, results: list[Any]) -> dict[int, str]:
    """irrun's name for each of OpenVINO's Results (by index) that feeds an output whose
    tensor has no name, which irrun names after the Result layer.

    The Result layer's name, which OpenVINO keeps as the Result's friendly name, says which
    one it is; where names do not tell (two Results of one name, a name irrun does not
    have), the position does, as both list the outputs in the IR's Result order.
    """
    unnamed = {s.name for s in model.outputs if not s.names}
    if not unnamed:
        return {}
    found: dict[int, str] = {}
    friendly = [r.get_friendly_name() for r in results]
    for i, name in enumerate(friendly):
        if name in unnamed and friendly.count(name) == 1:
            found[i] = name
    if len(results) == len(model.outputs):
        taken = set(found.values())
        for i, spec in enumerate(model.outputs):
            if i not in found and spec.name in unnamed and spec.name not in taken:
                found[i] = spec.name
    return found


def _ov_message(exc: Exception) -> str:
    """The informative line of an OpenVINO exception (they start with lines of source paths)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '"))]
    return (useful or lines or [type(exc).__name__])[-1]


# ----------------------------------------------------------------------------- comparing


class _Stop(Exception):
    """Raised from the layer callback to end the run at the first failure (fail_fast)."""


def compare(
    model: Model | str | Path,
    feeds: Mapping[str, np.ndarray] | None = None,
    reference: Reference | Mapping[str, np.ndarray] | str | Path | None = None,
    *,
    backend: str | None = None,
    mark_all: bool = False,
    atol: Tolerance = DEFAULT_ATOL,
    rtol: Tolerance = DEFAULT_RTOL,
    fail_fast: bool = False,
    seed: int | None = None,
    check_error_stat: ErrorStat = "elemwise",
) -> Report:
    """Run ``model`` on ``feeds`` and compare its tensors with ``reference``.

    ``reference`` is a dict of arrays by tensor name, a path to an .npz or a
    ``--dump-dir`` directory, or None with ``backend="openvino"`` to run OpenVINO on
    the same feeds.  ``feeds`` default to the reference's own copy of the inputs when it
    holds every one under the input's name (as a dump's inputs.npz does), else to the
    model's random inputs of ``seed`` (0 by default; a ``seed`` given always means random
    inputs); a failure on random inputs says so, with their shapes.  ``atol``
    and ``rtol`` are floats, or dicts by tensor name where ``"*"`` sets the default.
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
        if backend != "openvino":
            raise UsageError(f"unknown reference backend '{backend}' (irrun has: openvino)")
    elif reference is None:
        raise UsageError("no reference: give one, or backend='openvino'")
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
        if ref is None:
            ref = openvino_reference(model, feeds, mark_all)
        report = _compare(model, feeds, ref, mark_all, atol, rtol, fail_fast, check_error_stat)
        report.backend = backend is not None
        report.inputs = {
            "source": source,
            "seed": seed if source == "random" else None,
            "tensors": [{"name": name, "shape": list(np.shape(value)),
                         "dtype": str(np.asarray(value).dtype)}
                        for name, value in feeds.items()],
            "hint": _inputs_hint(model, reference, ref) if source == "random" else None,
        }  # fmt: skip
        return report
    finally:
        if owned and ref is not None:
            ref.close()


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


def _random_inputs_text(inputs: dict[str, Any], backend: bool) -> str:
    """``irrun ran on random inputs (seed 0: image [1, 3, 16, 16] float32) ...``."""
    shapes = ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in inputs["tensors"])
    ran = f"random inputs (seed {inputs['seed']}: {shapes})"
    if backend:
        return f"both ran on the same {ran}; --input gives others"
    return (f"irrun ran on {ran}, not on those the reference was made from: give those "
            f"with --input{inputs['hint'] or ''}")


def _compare(
    model: Model,
    feeds: Mapping[str, np.ndarray],
    ref: Reference,
    mark_all: bool,
    atol: Tolerance,
    rtol: Tolerance,
    fail_fast: bool,
    check_error_stat: ErrorStat = "elemwise",
) -> Report:
    report = Report(str(model.path), ref.description, [], mark_all, atol, rtol,
                    check_error_stat, list(ref.notes))  # fmt: skip
    ref_names = ref.names()
    in_ref = set(ref_names)
    output_names = [s.name for s in model.outputs]
    layer_of = {
        name: (layer, line) for layer, line, names in model.layers() for name in names
    }  # fmt: skip
    # An output whose tensor has no name goes by its Result's name: that layer is its place.
    unnamed = {s.name for s in model.outputs if not s.names}
    for result, line, _ in model.layers():
        if result.type == "Result" and result.name in unnamed and result.name not in layer_of:
            layer_of[result.name] = (result, line)
    compared: set[str] = set()
    known = set(model.tensor_names.values()) | set(output_names)
    inputs = {s.name for s in model.inputs}
    stand_in = _stand_ins(model, ref, [n for n in ref_names if n not in known | inputs])
    for output, other in stand_in.items():
        report.notes.append(
            f"output '{output}' is not in the reference: compared with its '{other}', the one "
            "array there of that shape that irrun has no tensor of"
        )

    def check(name: str, value: np.ndarray) -> None:
        compared.add(name)
        layer, line = layer_of.get(name, (None, 0))
        ref_name = stand_in.get(name, name)
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
            result = compare_arrays(
                value, expected, _tol(atol, name, DEFAULT_ATOL), _tol(rtol, name, DEFAULT_RTOL),
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


def _tol(tol: Tolerance, name: str, default: float) -> float:
    return float(_by_name(tol, name, default))


def _by_name(given: Any, name: str, default: Any) -> Any:
    """A setting given for every tensor, or per tensor name with "*" for the rest."""
    if isinstance(given, Mapping):
        return given.get(name, given.get("*", default))
    return given


# ----------------------------------------------------------------------------- text


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


def _tol_text(tol: Tolerance | ErrorStat, default: float | str) -> str:
    """``1e-05``, or the default then the per-tensor values: ``1e-05 conv1:0.001``."""
    show = str if isinstance(default, str) else _num
    if not isinstance(tol, Mapping):
        return show(tol)
    parts = [show(tol.get("*", default))]
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
        help="compare irrun's values with a reference",
        description="Run the model with irrun and compare its outputs (every layer's with "
        "--mark-all) with a reference: a file, or OpenVINO run on the same inputs. Prints a "
        "PASSED/FAILED line per tensor and a summary; exit 0 when all pass, 1 otherwise.",
    )  # fmt: skip
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--ref", metavar="REF.npz|DIR",
        help="reference values: an .npz keyed by tensor name (irrun run -o writes one) "
        "or a directory written by irrun run --dump-dir",
    )  # fmt: skip
    source.add_argument(
        "--ref-backend", choices=["openvino"],
        help="run this backend on the same inputs as the reference (OpenVINO's CPU plugin, f32)",
    )  # fmt: skip
    p.add_argument(
        "--mark-all", action="store_true",
        help="compare every tensor irrun computes, in run order, and name the first "
        "diverging layer",
    )  # fmt: skip
    p.add_argument(
        "--atol", type=_tolerance, action="append", default=[], metavar="[NAME:]VAL",
        help=f"absolute tolerance, for all tensors or one; repeatable (default {DEFAULT_ATOL})",
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
    p.add_argument("--fail-fast", action="store_true", help="stop at the first tensor that fails")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead")
    p.add_argument("-o", "--output", metavar="REPORT.json", help="also write the report here")
    p.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(Path(args.output))
    dump_inputs = _dump_inputs(args.ref) if args.ref and not args.input else None
    # Refuses a --seed that inputs from elsewhere would leave unused.
    random_seed(args, f"the dump's {dump_inputs.name}" if dump_inputs else None)
    model = load(args.model, args.weights, args.max_memory)
    feeds = None  # compare's choice: the reference's copy of the inputs, else random ones
    if args.input:
        feeds = read_inputs(model, args.input)
    elif dump_inputs is not None:
        # A dump keeps the inputs it was made from: those, not random ones, reproduce it.
        feeds = read_inputs(model, [str(dump_inputs)])
    report = compare(
        model, feeds, args.ref, backend=args.ref_backend, mark_all=args.mark_all,
        seed=args.seed,  # None: the reference's inputs if it holds them, else seed 0
        atol=_tolerances(args.atol, DEFAULT_ATOL), rtol=_tolerances(args.rtol, DEFAULT_RTOL),
        fail_fast=args.fail_fast,
        check_error_stat=_tolerances(args.check_error_stat, "elemwise"),
    )  # fmt: skip
    data = report.as_dict()
    if args.output:
        write_atomically(Path(args.output), lambda f: dump_json(data, f))
        say_written(f"the report of {count(len(report.results), 'tensor')}", args.output)
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
