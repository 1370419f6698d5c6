"""Element-type sweeps against OpenVINO: one-op models of any element type, run by irrun
and by OpenVINO, and the IR edits that give validate the types an op does not take.

Arrays are in irrun's representation throughout: the packed integers one element per
byte, nf4 as codes (:data:`irrun.ir.element_types.NF4`), strings as object arrays of
``str``, bf16 and the small floats as ml_dtypes values.

- :func:`sample` draws values of a type; :func:`to_tensor` and :func:`from_tensor` turn
  them into OpenVINO tensors and back, packing as OpenVINO packs (:mod:`support.ov_packed`,
  independent of irrun's own decoder).
- :func:`one_op` builds a one-op model; :func:`run_irrun` runs it saved as IR in irrun and
  :func:`run_openvino` in OpenVINO, its reference kernels (``Model.evaluate``) or its CPU
  plugin, as ``oracle`` says.
- :func:`assert_same` compares bit for bit, :func:`assert_matches` within a tolerance.
- :func:`refusals` retypes parameters in the saved IR (OpenVINO's Python API would not
  build such a model) and gives validate's errors.

The rest are the three kinds of sweep the op modules share, built on these:

- data movement, checked against OpenVINO moving the elements' positions (:func:`moved`),
  by a :class:`Case` per op;
- ops on hand-picked :func:`numbers` of each type, checked against OpenVINO's answer,
  computed in a working type where it has no kernel of the swept one
  (:func:`check_types`);
- ops fed through Converts from f32 (:func:`convertible` values), where NumPy and
  OpenVINO's Python API share no array type (:func:`typed_runs`).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import openvino as ov
from lxml import etree
from openvino import opset1

import irrun
from irrun.ir.element_types import ELEMENT_TYPES, FLOATS, LOW_FLOATS, NF4, STRING

from . import ov_packed
from .ov_oneop import CORE, CPU_CONFIG, one_op_model, run_cpu, run_reference, run_saved
from .ov_packed import convert_model

# --------------------------------------------------------------------------- values

# The packed integer types' ranges, [low, high).
_PACKED_RANGES = {"u1": (0, 2), "u2": (0, 4), "u3": (0, 8), "u4": (0, 16), "u6": (0, 64),
                  "i4": (-8, 8)}  # fmt: skip
# No "": movement checks read "" as an element the op filled in (see :func:`moved`).
_WORDS = ["a", "bc", "déf", "ghij", "\u4e2d\u6587"]


def sample(t: str, shape, seed=0) -> np.ndarray:
    """Values of element type ``t`` and ``shape``, in irrun's representation.

    ``seed`` is anything :func:`numpy.random.default_rng` takes, a Generator included, so
    that several draws can share one stream.  Integers are drawn from [-100, 100)
    ([0, 100) unsigned), the packed ones from their whole range, floats about 0 with a
    spread of 2 (f8e8m0: powers of two), strings from a few words, ASCII and not.
    """
    rng = np.random.default_rng(seed)
    et = ELEMENT_TYPES[t]
    if t == "string":
        out = np.empty(shape, STRING)
        flat = out.reshape(-1)
        for i, k in enumerate(rng.integers(0, len(_WORDS), flat.size)):
            flat[i] = _WORDS[k]
        return out
    if t == "nf4":
        return rng.integers(0, 16, shape).astype(np.uint8).view(NF4).reshape(shape)
    if t == "boolean":
        return rng.random(shape) < 0.5
    if t in _PACKED_RANGES:
        low, high = _PACKED_RANGES[t]
        return rng.integers(low, high, shape).astype(et.dtype)
    if et.dtype.kind in "iu":
        low = 0 if et.dtype.kind == "u" else -100
        return rng.integers(low, 100, shape).astype(et.dtype)
    if t == "f8e8m0":  # powers of two only
        return (2.0 ** rng.integers(-4, 5, shape)).astype(et.dtype)
    return (rng.standard_normal(shape) * 2).astype(et.dtype)


def typed(values, t: str) -> np.ndarray:
    """Numbers ``values`` as an array of element type ``t`` (nf4: codes)."""
    if t == "string":
        return np.array([str(v) for v in np.ravel(values)], STRING).reshape(np.shape(values))
    v = np.asarray(values)
    if t == "nf4":
        return v.astype(np.uint8).view(NF4)
    if t == "boolean":
        return v != 0
    return v.astype(ELEMENT_TYPES[t].dtype)


def to_tensor(x: np.ndarray, t: str) -> ov.Tensor:
    """An OpenVINO tensor of type ``t`` holding ``x`` (packed as OpenVINO packs)."""
    if t == "string":
        return ov.Tensor(np.array(x.tolist(), dtype=str).reshape(np.shape(x)))
    if t == "nf4":
        x = x.view(np.uint8)
    x = np.array(x, copy=True, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
    out = ov.Tensor(getattr(ov.Type, t), ov.Shape(list(x.shape)))
    raw = ov_packed.pack(x, t) if t in ov_packed.PACKED else x.reshape(-1).view(np.uint8)
    if raw.size:
        out.data.reshape(-1).view(np.uint8)[:] = raw
    return out


def from_tensor(tensor: ov.Tensor, t: str) -> np.ndarray:
    """The elements of OpenVINO tensor ``tensor`` of type ``t``."""
    if t == "string":
        values = [bytes(b).decode("utf-8", "surrogateescape")
                  for b in np.asarray(tensor.bytes_data).reshape(-1)]  # fmt: skip
        out = np.empty(len(values), STRING)
        out[:] = values
        return out.reshape(tuple(tensor.shape))
    got = ov_packed.array(tensor, t)
    return got.astype(np.uint8).view(NF4) if t == "nf4" else got


# --------------------------------------------------------------------------- runs


def one_op(build, types, shapes) -> ov.Model:
    """``build(*parameters)`` over parameters ``in0``, ``in1``... of ``types`` and
    ``shapes``, every output of the op a model output (``out0``, ``out1``...)."""
    params = []
    for i, (t, shape) in enumerate(zip(types, shapes, strict=True)):
        p = opset1.parameter(list(shape), getattr(ov.Type, t), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    outs = build(*params).outputs()
    for k, out in enumerate(outs):
        out.get_tensor().set_names({f"out{k}"})
    return ov.Model(outs, params, "one_op")


def run_irrun(model: ov.Model, inputs, tmp_path) -> list[np.ndarray]:
    """irrun's outputs of ``model`` saved as IR (its parameters named in0, in1...)."""
    return run_saved(model, list(inputs), tmp_path)


def run_openvino(model: ov.Model, inputs, types, oracle: str = "reference") -> list[np.ndarray]:
    """OpenVINO's outputs of ``model`` for ``inputs`` of ``types``: its reference kernels'
    (``oracle="reference"``) or its CPU plugin's (``"cpu"``, f32 precision, one thread).

    Raises RuntimeError where OpenVINO runs no kernel of the types.
    """
    tensors = [to_tensor(x, t) for x, t in zip(inputs, types, strict=True)]
    if oracle == "reference":
        outs = [ov.Tensor(o.get_element_type(), [0]) for o in model.outputs]
        if not model.evaluate(outs, tensors):
            raise RuntimeError("evaluate ran nothing")
    elif oracle == "cpu":
        request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
        request.infer(dict(enumerate(tensors)))
        outs = [request.get_output_tensor(k) for k in range(len(model.outputs))]
    else:
        raise ValueError(f"oracle {oracle!r}: 'reference' or 'cpu'")
    return [from_tensor(o, o.get_element_type().get_type_name()) for o in outs]


# --------------------------------------------------------------------------- comparisons

_NARROW_FLOATS = ("f16", "bf16", *LOW_FLOATS)


def assert_same(got, want, what: str = "") -> None:
    """Same shape, dtype and elements; floats and nf4 codes bit for bit, so that NaNs and
    signed zeros count."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype == STRING:
        assert got.tolist() == want.tolist(), what
        return
    if got.dtype.fields is not None or got.dtype.kind in "fV":
        got, want = np.ravel(got).view(np.uint8), np.ravel(want).view(np.uint8)
    np.testing.assert_array_equal(got, want, err_msg=what)


def assert_matches(got, want, rtol: float = 1e-6, atol: float = 0.0, what: str = "") -> None:
    """Same shape and dtype; integers, booleans, strings and codes exactly, floats within
    ``rtol`` (f32, f64) or one step of their own precision (narrower floats), NaN where
    NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    t = next((n for n in (*FLOATS, *LOW_FLOATS) if ELEMENT_TYPES[n].dtype == got.dtype), None)
    if t is None:
        assert got.tolist() == want.tolist(), f"{what}: {got.tolist()} != {want.tolist()}"
        return
    if t in _NARROW_FLOATS:
        info = ml_dtypes.finfo(got.dtype)
        rtol, atol = max(rtol, float(info.eps)), max(atol, float(info.smallest_subnormal))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True, err_msg=what)  # fmt: skip


# --------------------------------------------------------------------------- refusals


def refusals(model: ov.Model, tmp_path, retype: dict[int, str]) -> list:
    """irrun.validate's errors for ``model`` saved with its parameters ``in<k>`` retyped
    (``retype``: k -> element type), their ports' precisions and their consumers' with
    them: OpenVINO builds no model of a type its op does not take, so the file is edited."""
    path = tmp_path / "retyped.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    root = etree.parse(str(path)).getroot()
    for k, t in retype.items():
        (layer,) = root.xpath(f"//layer[@type='Parameter'][@name='in{k}']")
        layer.find("data").set("element_type", t)
        for port in layer.xpath("output/port"):
            port.set("precision", t)
        for edge in root.xpath(f"//edge[@from-layer='{layer.get('id')}']"):
            (target,) = root.xpath(f"//layer[@id='{edge.get('to-layer')}']/input/"
                                   f"port[@id='{edge.get('to-port')}']")  # fmt: skip
            target.set("precision", t)
    path.write_bytes(etree.tostring(root))
    return [d for d in irrun.validate(path) if d.level == "error"]


def assert_refused(build, inputs, port: int, et: str, tmp_path, label: str) -> None:
    """Validate's one error for input ``port`` of the one-op model of ``build`` on NumPy
    ``inputs`` retyped to ``et`` names the port, the type and the op's label."""
    errors = refusals(one_op_model(build, inputs), tmp_path, {port: et})
    assert [f.code for f in errors] == ["shape-error"], errors
    assert f"input {port} is {et}, which {label} does not take" in errors[0].message, errors


def assert_not_taken(errors: list[str], port: int, t: str, label: str) -> None:
    """One of validate's ``errors``, located at a layer, says that input ``port`` is of type
    ``t``, which op ``label`` does not take, and goes on to list the types it takes (the
    layer's own type may be spelled otherwise: PReLU-v1 is labelled PRelu-v1)."""
    assert any(f"): input {port} is {t}, which {label} does not take (it takes " in e
               for e in errors), errors  # fmt: skip


# --------------------------------------------------------------------------- data movement

# The integer types an index value fits in.
_INDEX_RANGES = {name: (int(np.iinfo(ELEMENT_TYPES[name].dtype).min),
                        int(np.iinfo(ELEMENT_TYPES[name].dtype).max))
                 for name in ("i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8")}  # fmt: skip
_INDEX_RANGES.update({name: (low, high - 1) for name, (low, high) in _PACKED_RANGES.items()})


def moved(build, inputs, data_ports=(0,)) -> list[np.ndarray]:
    """A movement op's outputs from OpenVINO for ``inputs`` ((array, type) pairs).

    OpenVINO's kernels are no oracle for data movement in every type: several crash on
    strings, move the packed types and nf4 by the byte or run no kernel of a type at all.
    So the op runs on the positions 1, 2... of the elements of the ``data_ports`` (which
    share one type) as i64 instead, and each output position picks the element it names;
    0 names an element the op fills in: zero of the type, "" for strings.  The reference
    kernels run it, or the CPU plugin where they have no kernel of the op.
    """
    positions, pool = [], [np.zeros(1, np.asarray(inputs[data_ports[0]][0]).dtype)]
    start = 1
    for k, (x, name) in enumerate(inputs):
        if k in data_ports:
            x = np.asarray(x)
            positions.append((np.arange(start, start + x.size, dtype=np.int64).reshape(x.shape),
                              "i64"))  # fmt: skip
            pool.append(x.reshape(-1))
            start += x.size
        else:
            positions.append((x, name))
    values = np.concatenate(pool)
    if values.dtype == STRING:
        values[0] = ""
    arrays, types = [x for x, _ in positions], [t for _, t in positions]
    model = one_op(build, types, [np.shape(x) for x in arrays])
    try:
        picked = run_openvino(model, arrays, types)
    except RuntimeError:
        picked = run_openvino(model, arrays, types, "cpu")
    return [values[p] for p in picked]


class Case:
    """An op on data ports (a shape: a parameter of the swept type) and index ports
    (values: a constant, i64 unless swept).  ``op(*nodes)`` takes the nodes in port order."""

    def __init__(self, op, *ports, seed: int = 0):
        self.op, self.ports, self.seed = op, ports, seed

    def data_ports(self) -> list[int]:
        return [k for k, p in enumerate(self.ports) if isinstance(p, tuple)]

    def index_ports(self) -> list[int]:
        return [k for k, p in enumerate(self.ports) if not isinstance(p, tuple)]

    def inputs(self, t: str) -> list[tuple[np.ndarray, str]]:
        return [(sample(t, self.ports[k], self.seed + k), t) for k in self.data_ports()]

    def build(self, index_type: str = "i64", parameters: bool = False):
        """The op over parameters for the data ports (and the index ports, with
        ``parameters``) and constants of ``index_type`` for the index ports."""

        def build(*params):
            given, nodes = iter(params), []
            for p in self.ports:
                if isinstance(p, tuple) or parameters:
                    nodes.append(next(given))
                else:
                    values = np.asarray(p)
                    nodes.append(ov.op.Constant(getattr(ov.Type, index_type),
                                                ov.Shape(list(values.shape)),
                                                values.reshape(-1).tolist()))  # fmt: skip
            return self.op(*nodes)

        return build

    def fits(self, index_type: str) -> bool:
        low, high = _INDEX_RANGES[index_type]
        return all(np.all((np.asarray(self.ports[k]) >= low) & (np.asarray(self.ports[k]) <= high))
                   for k in self.index_ports())  # fmt: skip

    def index_types(self, op) -> list[str]:
        """The integer types every index port of ``op`` (an OpDef) takes and this case's
        index values fit in."""
        ports = self.index_ports()
        taken = [t for t in ELEMENT_TYPES
                 if t in _INDEX_RANGES and all(t in op.port_types(k) for k in ports)]  # fmt: skip
        return [t for t in taken if self.fits(t)]

    def check_data_type(self, t: str, tmp_path) -> None:
        """irrun runs the op on data of type ``t`` as OpenVINO moves it (:func:`moved`)."""
        inputs = self.inputs(t)
        got = run_pairs(self.build(), inputs, tmp_path)
        want = moved(self.build(), inputs, tuple(range(len(inputs))))
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{t}: output {k}")

    def check_index_type(self, t: str, tmp_path, data_type: str = "i32") -> None:
        """irrun's run with index inputs of type ``t`` (parameters: OpenVINO's shape
        inference reads no u2, u3 or u6 constant) is OpenVINO's with i64 constants."""
        inputs = self.inputs(data_type)
        given = iter(inputs)
        params = [next(given) if isinstance(p, tuple)
                  else (np.asarray(p).astype(ELEMENT_TYPES[t].dtype), t) for p in self.ports]  # fmt: skip
        got = run_pairs(self.build(parameters=True), params, tmp_path)
        want = moved(self.build("i64"), inputs, tuple(range(len(inputs))))
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{t} indices: output {k}")

    def refused(self, port: int, t: str, tmp_path, data_type: str = "f32") -> list[str]:
        """validate's errors when input ``port`` of the op is of type ``t`` (every port a
        parameter, the others of their usual types)."""
        types = [data_type if isinstance(p, tuple) else "i64" for p in self.ports]
        shapes = [p if isinstance(p, tuple) else np.shape(p) for p in self.ports]
        model = one_op(self.build(parameters=True), types, shapes)
        return [str(d) for d in refusals(model, tmp_path, {port: t})]


def run_pairs(build, inputs, tmp_path) -> list[np.ndarray]:
    """irrun's outputs of the one-op model of ``build`` on ``inputs`` ((array, type) pairs)."""
    model = one_op(build, [t for _, t in inputs], [np.shape(x) for x, _ in inputs])
    return run_irrun(model, [x for x, _ in inputs], tmp_path)


# --------------------------------------------------------------------------- computed ops


def _is_float(t: str) -> bool:
    return t in FLOATS or t in LOW_FLOATS


def numbers(t: str, n: int = 8) -> np.ndarray:
    """``n`` (at most 8) values of type ``t``, as float64: both signs, zero and fractions
    where ``t`` holds them, every one exactly representable (:func:`typed` makes them
    arrays of the type)."""
    if t == "f8e8m0":  # powers of two, no zero, no sign
        v = [0.25, 0.5, 1, 2, 4, 8, 0.125, 16]
    elif _is_float(t):
        v = [-3, -1.5, -0.5, 0, 0.5, 1, 2, 6]
    elif t == "boolean" or t == "u1":
        v = [0, 1, 1, 0, 1, 0, 0, 1]
    elif t == "u2":
        v = [0, 1, 2, 3, 3, 2, 1, 0]
    elif t[0] == "u" or t == "nf4":
        v = [0, 1, 2, 3, 5, 7, 4, 6]
    else:
        v = [-4, -3, -1, 0, 1, 2, 5, 7]
    return np.array(v[:n], np.float64)


def const_like(values, node) -> ov.Node:
    """A constant of ``values`` of ``node``'s output element type."""
    t = node.get_output_element_type(0)
    v = np.asarray(values, np.float64)
    flat = [float(x) for x in v.reshape(-1)] if t.is_real() else [int(x) for x in v.reshape(-1)]
    return ov.op.Constant(t, ov.Shape(list(v.shape)), flat)


def run_typed(build, values, types, tmp_path) -> np.ndarray:
    """irrun's first output of ``build`` over parameters of ``types`` holding the numbers
    ``values`` (see :func:`typed`)."""
    arrays = [typed(v, t) for v, t in zip(values, types, strict=True)]
    return run_pairs(build, list(zip(arrays, types, strict=True)), tmp_path)[0]


def _work_type(t: str) -> str:
    if _is_float(t):
        return "f32"
    return "boolean" if t == "boolean" else "i32"


# Types OpenVINO's kernels are run on directly; the others (packed integers, nf4, the f8 and
# f4 floats), which its plugin may crash on, go through the work type.
_DIRECT = (*FLOATS, "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "boolean", "string")


def _first_run(build, values, types, oracles) -> tuple[np.ndarray, str]:
    """The first output of the first of ``oracles`` that runs the one-op model, and its
    element type."""
    model = one_op(build, types, [np.shape(v) for v in values])
    arrays = [typed(v, t) for v, t in zip(values, types, strict=True)]
    last = None
    for oracle in oracles:
        try:
            return run_openvino(model, arrays, types, oracle)[0], _out_type(model)
        except Exception as e:  # OpenVINO has no kernel of the types: next
            last = e
    raise AssertionError(f"OpenVINO runs {types} in none of {oracles}: {last}")


def _out_type(model: ov.Model) -> str:
    return model.output(0).get_element_type().get_type_name()


def _expected(build, values, types, oracles=("reference", "cpu")) -> np.ndarray:
    """OpenVINO's first output of ``build`` for the numbers ``values`` of ``types``: from the
    first of ``oracles`` that runs the types; where none does (OpenVINO has no kernel of
    the f8 types, the packed integers...), the op on ``work`` types (f32 for floats, i32
    for integers) and its output converted to the type the op gives, as irrun computes
    those types."""
    if all(t in _DIRECT for t in types):
        try:
            return _first_run(build, values, types, oracles)[0]
        except AssertionError:
            if all(_work_type(t) == t for t in types):
                raise
    target = _out_type(one_op(build, types, [np.shape(v) for v in values]))
    out, source = _first_run(build, values, [_work_type(t) for t in types], oracles)
    if source == target:
        return out
    return ov_packed.run_reference(convert_model(source, target, list(out.shape)), out, source,
                                   target)  # fmt: skip


def check_types(build, values, types, tmp_path, *, oracles=("reference", "cpu"), rtol=1e-6,
                atol=0.0, what=""):
    """irrun's first output of ``build`` on the numbers ``values`` of ``types`` against
    OpenVINO's (:func:`_expected`): integers, booleans and strings exactly, floats within
    ``rtol`` or one step of their own precision; returns irrun's output."""
    got = run_typed(build, values, types, tmp_path)
    want = _expected(build, values, types, oracles)
    if got.dtype != want.dtype and want.dtype == np.uint8 and got.dtype == np.int8:
        want = want.astype(np.int8)
    assert_matches(got, want, rtol, atol, what or f"{types}")
    return got


def refused(build, types, port: int, bad: str, tmp_path, shape=(2, 3), shapes=None) -> list[str]:
    """validate's errors for the one-op IR of ``build`` over parameters of ``types`` with
    input ``port`` retyped to ``bad``; the parameters are of ``shape`` (or each of its own
    of ``shapes``)."""
    shapes = shapes or [shape] * len(types)
    model = one_op(build, types, shapes)
    return [str(d) for d in refusals(model, tmp_path, {port: bad})]


# --------------------------------------------------------------------------- through Converts

# NumPy and OpenVINO's Python API share no array type for bf16, the small floats or the
# packed integers: :func:`typed_runs` feeds the op parameters of a NumPy type converted in
# the graph to the type under test, and converts outputs of these types to f32 (exactly:
# every value of those types is an f32).
_EDGE_F32 = {"bf16", "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "nf4", "u1", "u2", "u3", "u4",
            "u6", "i4"}  # fmt: skip


def converted_model(build, inputs, types, outputs, through=None) -> ov.Model:
    """The op of ``build`` on ``inputs`` converted to ``types``; with ``through``, the
    first input's type and the inputs of that type computed in ``through`` between
    Converts (``Convert(t) -> Convert(through) -> op -> Convert(t)``)."""
    params, nodes = [], []
    for i, (x, t) in enumerate(zip(inputs, types, strict=True)):
        p = opset1.parameter(list(x.shape), ov.Type(x.dtype), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
        node = p
        if ov.Type(x.dtype) != getattr(ov.Type, t):
            node = opset1.convert(p, getattr(ov.Type, t))
        if through is not None and t not in (through, "boolean") and t == types[0]:
            node = opset1.convert(node, getattr(ov.Type, through))
        nodes.append(node)
    op = build(*nodes)
    outs = []
    for k in range(outputs):
        out = op.output(k)
        et = out.get_element_type().get_type_name()
        if through is not None and et == through and types[0] != through:
            out = opset1.convert(out, getattr(ov.Type, types[0])).output(0)
            et = types[0]
        if et in _EDGE_F32:
            out = opset1.convert(out, ov.Type.f32).output(0)
        outs.append(out)
    for k, out in enumerate(outs):
        out.get_tensor().set_names({f"out{k}"})
    return ov.Model(outs, params, "one_op")


def typed_runs(build, inputs, types, tmp_path, outputs=1, through="f32"):
    """irrun's outputs of ``build`` on ``inputs`` converted to ``types`` (one per input,
    the NumPy arrays' own type to leave one as it is), and OpenVINO's answer.

    OpenVINO's answer is its reference kernels' on the same model or, where they refuse
    the first input's type, the op in ``through`` between Converts (the other inputs of
    the first one's type converted as well, those of other types, a boolean mask, left as
    they are), which is the f32 reference rounded to the type as irrun's kernels of those
    types compute it; for ops without a reference kernel (Einsum), the CPU plugin's answer
    to the same two models.
    """
    model = converted_model(build, inputs, types, outputs)
    got = run_saved(model, inputs, tmp_path)
    typed_model = converted_model(build, inputs, types, outputs, through=through)
    error = None
    runs = [(run_reference, model), (run_reference, typed_model)]
    if not set(types) & set(ov_packed.PACKED):  # the plugin's Convert to u1 corrupts its heap
        runs += [(run_cpu, model), (run_cpu, typed_model)]
    for run, m in runs:
        try:
            return got, run(m, inputs)
        except RuntimeError as e:
            error = e
    raise AssertionError(f"OpenVINO runs none of the models: {error}")


def convertible(t: str, shape, seed: int = 0, low: float = -4, high: float = 4) -> np.ndarray:
    """Values that ``t`` holds exactly, as f32 to be converted to ``t`` in the graph (small
    integers for the integer types, multiples of 1/4 or 1/2 for the floats), in [low, high]
    (non-negative for unsigned ones)."""
    rng = np.random.default_rng(seed)
    et = ELEMENT_TYPES[t]
    if t == "boolean":
        return rng.integers(0, 2, shape).astype(np.float32)
    if et.dtype.kind == "u" or t == "f8e8m0":
        low = max(low, 0)
    if t.startswith("u") and et.bits < 8:
        high = min(high, (1 << et.bits) - 1)
    if t == "i4":
        low, high = max(low, -8), min(high, 7)
    if t == "f8e8m0":
        return (2.0 ** rng.integers(-3, 3, shape)).astype(np.float32)
    if et.dtype.kind in "iu" or et.bits < 8:
        return rng.integers(int(low), int(high) + 1, shape).astype(np.float32)
    step = 0.5 if t in ("f8e4m3", "f8e5m2", "f4e2m1") else 0.25
    values = rng.integers(int(low / step), int(high / step) + 1, shape) * step
    if t == "f4e2m1":
        values = np.clip(values, -6, 6)
    return values.astype(np.float32)


def assert_typed_close(got, want, rtol: float = 2.0**-7, atol: float = 1e-6) -> None:
    """Each of ``got`` matches its ``want`` (:func:`assert_matches`; ``rtol`` is bf16's
    rounding, the widest of the types that reach the outputs as f32)."""
    for g, w in zip(got, want, strict=True):
        assert_matches(g, w, rtol, atol)
