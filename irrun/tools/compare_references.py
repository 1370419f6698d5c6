"""The references ``irrun compare`` compares with: arrays, an ``.npz`` file, a
``--dump-dir`` directory, or OpenVINO's CPU plugin run on the same inputs.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from ..core.model import Model
from ..errors import IrrunError, LayerRef, Location
from ..ir import element_types
from .common import NPY_MAGIC, ZIP_MAGIC, check_magic, load_array_file
from .compare_results import _some

# What the CPU plugin is compiled with: f32 arithmetic, whatever the machine prefers.
OPENVINO_CONFIG: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
# The absolute tolerance of a model with compressed weights against the CPU plugin, a
# fraction of each tensor's largest magnitude: their decompression is in f16 in the IR and
# in irrun, in f32 in the plugin, and outputs differ by about 1e-3 of their magnitude
# (docs/semantics.md, "Quantized and compressed models").
COMPRESSED_ATOL = 1e-3
# Weights of these types, converted to a float type, are compressed weights.
_COMPRESSED = {"u8", "i8", "u4", "i4", "nf4", "f4e2m1", "u2", "u1"}


class Reference:
    """Reference values by irrun tensor name, read as they are compared."""

    description = "reference"

    # The absolute tolerance documented for what this reference is compared with, when it
    # is not compare's usual default, as a fraction of each tensor's largest magnitude (at
    # least 1), and why (see compare's ``atol``).
    atol: float | None = None
    atol_why: str = ""

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
        # Opened here and closed with the reference, or at once if NumPy fails partway (it
        # leaves a broken .npz's file open otherwise).
        self._file = open(path, "rb")  # noqa: SIM115 - kept open for lazy reads, see close
        try:
            self._npz = np.load(self._file, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            self._file.close()
            raise IrrunError(f"cannot read as .npz: {exc}", Location(str(path))) from None
        if not isinstance(self._npz, np.lib.npyio.NpzFile):
            self._file.close()
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
        self._file.close()


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
        raise IrrunError(f"OpenVINO refused to read it: {_ov_message(exc)}", where) from None
    by_name: dict[str, list[tuple[LayerRef, tuple[str, ...]]]] = {}
    for layer, _, outs in model.layers():
        by_name.setdefault(layer.name, []).append((layer, outs))

    def irrun_name(op: Any, index: int) -> str | None:
        for _, outs in by_name.get(op.get_friendly_name(), ()):
            if index < len(outs):
                return outs[index]
        return None

    config = dict(config or _config_for(ovm, notes))
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
        try:
            ovm.reshape({i: ov.PartialShape(list(a.shape)) for i, a in inputs.items()})
        except Exception as exc:
            raise IrrunError(
                f"OpenVINO refused the inputs' shapes {shapes}: {_ov_message(exc)}",
                Location(str(model.path)),
            ) from None
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
            # An Assign's output port is its variable's, which OpenVINO cannot make an output.
            if op.get_type_name() not in ("Parameter", "Constant", "Result", "Assign")
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
        # An output whose tensor has no name is, in irrun, named after its Result (the
        # first Result it feeds names the tensor, see irrun.core.names.tensor_name).
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
        compiled = core.compile_model(ovm, "CPU", config)
        request = compiled.create_infer_request()
        request.infer({i: _ov_input(a) for i, a in inputs.items()})
    except Exception as exc:
        where = Location(str(model.path))
        raise IrrunError(f"OpenVINO refused to run it: {_ov_message(exc)}", where) from None
    arrays: dict[str, np.ndarray] = {}
    for i, keys in enumerate(names):
        for name in keys:
            if name not in arrays:
                arrays[name] = _array(request.get_output_tensor(i))
    ref = ArrayReference(arrays, "OpenVINO CPU (f32)")
    ref.notes, ref.casts = notes, widened
    if config.get("DYNAMIC_QUANTIZATION_GROUP_SIZE") == 0:  # compressed weights
        ref.atol, ref.atol_why = (
            COMPRESSED_ATOL,
            (
                "compressed weights against OpenVINO's CPU plugin, as docs/semantics.md documents "
                '("Quantized and compressed models")'
            ),
        )
    ref.keep_alive = request  # type: ignore[attr-defined]  # owns the arrays' memory
    return ref


def _array(tensor: Any) -> np.ndarray:
    """An OpenVINO tensor's values as NumPy sees them, without a copy.

    The request owns the buffer (kept alive with the reference).  OpenVINO hands a bf16
    tensor's bits to NumPy as float16, which has no bf16: they are reinterpreted as
    ml_dtypes' bfloat16, as irrun computes it.
    """
    if tensor.get_element_type().get_type_name() == "string":  # bytes, as irrun holds them
        values = [b.decode("utf-8", "surrogateescape") for b in tensor.bytes_data.reshape(-1)]
        out = np.empty(len(values), object)
        out[:] = values
        return out.reshape(tuple(tensor.shape))
    data = tensor.data
    if tensor.get_element_type().get_type_name() == "bf16":
        data = data.view(np.uint16).view(ml_dtypes.bfloat16)
    return data


def _ov_input(array: np.ndarray) -> Any:
    """An input as OpenVINO takes it: a string tensor (irrun's object array of str) as
    its bytes, any other array as it is."""
    if array.dtype != np.dtype(object):
        return array
    import openvino as ov

    tensor = ov.Tensor(ov.Type.string, list(array.shape))
    if array.size:
        tensor.bytes_data = [element_types.encode_string(v) for v in array.reshape(-1).tolist()]
    return tensor


def _config_for(ovm: Any, notes: list[str]) -> dict[str, Any]:
    """The plugin's configuration for ``ovm``, with a note for what it cannot run in f32.

    Compressed weights (u8/i8/u4/i4 constants converted to floats): the plugin would
    quantize the activations they multiply to 8 bits on the fly, even with the f32 hint,
    unless DYNAMIC_QUANTIZATION_GROUP_SIZE is 0.  FakeQuantize layers: it runs them with
    INT8 kernels whatever it is told, so a value near a quantization boundary can land
    one level away (see docs/semantics.md, "Quantized and compressed models").
    """
    config = dict(OPENVINO_CONFIG)
    quantize = compressed = in_f16 = stateful = 0
    for op in ovm.get_ordered_ops():
        kind = op.get_type_name()
        stateful += kind == "ReadValue"
        if kind == "FakeQuantize":
            quantize += 1
        elif kind == "Convert" and op.get_output_element_type(0).is_real():
            source = op.input_value(0).get_node()
            if source.get_type_name() == "Constant" and (
                source.get_output_element_type(0).get_type_name() in _COMPRESSED
            ):
                compressed += 1
                in_f16 += op.get_output_element_type(0).get_type_name() == "f16"
    if compressed:
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
        notes.append(
            f"the model has {compressed} compressed weights: OpenVINO ran with "
            "DYNAMIC_QUANTIZATION_GROUP_SIZE 0, so that it does not quantize activations"
            + (
                "; they are decompressed in f16, which irrun rounds to f16 as the IR's types "
                "and OpenVINO's reference kernels do while the plugin keeps f32: expect "
                "differences of about 1e-3 of the outputs' range (--atol)"
                if in_f16
                else ""
            )
        )
    if stateful:
        # Else the plugin keeps the KV cache in f16 or u8 (optimum's exports ask for f16 in
        # their runtime_options), and a first run's attention reads its keys back rounded.
        config["KV_CACHE_PRECISION"] = "f32"
        asked = _runtime_option(ovm, "KV_CACHE_PRECISION")
        if asked not in (None, "f32"):
            notes.append(
                f"the model asks OpenVINO for a KV cache in {asked} (its runtime_options): "
                "OpenVINO ran with KV_CACHE_PRECISION f32, as irrun keeps the cache"
            )
    if quantize:
        notes.append(
            f"the model has {quantize} FakeQuantize layers, which OpenVINO's CPU plugin runs "
            "with INT8 kernels: a value near a quantization boundary may land one level away "
            "(compare with an --atol of about 1% of the outputs' range; with --mark-all the "
            "plugin runs the network in f32, without its INT8 fusion)"
        )
    return config


def _runtime_option(ovm: Any, name: str) -> str | None:
    """An option the IR's ``<rt_info><runtime_options>`` sets, or None."""
    try:
        if ovm.has_rt_info(["runtime_options", name]):
            return str(ovm.get_rt_info(["runtime_options", name]).astype(str))
    except Exception:  # an rt_info OpenVINO cannot read as text
        return None
    return None


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
    """The informative line of an OpenVINO exception (they start with lines of source paths
    and of the node being validated), with that node's name when it gives one.

    >>> print(_ov_message(RuntimeError(
    ...     "Check 'cmp::le(kernel, dim)' failed at src/core/pooling.hpp:149:\\n"
    ...     "While validating node 'opset1::Convolution Convolution_4 (...)' with "
    ...     "friendly_name 'conv':\\nKernel after dilation has size (dim: 3) larger than "
    ...     "the data shape after padding (dim: 1) at axis 0.\\n")))  # doctest: +ELLIPSIS
    at 'conv': Kernel after dilation has size (dim: 3) larger than the data shape after padding...
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines
              if not ln.startswith(("Exception from", "Check '", "While validating"))]  # fmt: skip
    line = (useful or lines or [type(exc).__name__])[-1]
    node = next((m.group(1) for ln in lines
                 if (m := re.search(r"with friendly_name '([^']*)'", ln))), None)  # fmt: skip
    return f"at '{node}': {line}" if node and node not in line else line
