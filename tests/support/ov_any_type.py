"""One-op runs with inputs of any element type, for the ports that take every type.

``sample(name, shape, seed)`` draws an array of element type ``name`` in irrun's
representation (packed integers one per byte, nf4 as codes in ``NF4``, strings as object
arrays of str, low floats as ml_dtypes values); ``evaluate(build, inputs)`` runs
``build(*parameters)`` in OpenVINO's reference kernels (``Model.evaluate``) on such arrays
and ``run_irrun`` runs the same model, saved as IR, in irrun.  Inputs are ``(array,
name)`` pairs.

OpenVINO's own kernels are no oracle for data movement in every type: the reference
kernels of several movement ops crash on strings (Squeeze, Broadcast, Split, Tile...),
move the packed types and nf4 by the byte (Concat, Transpose, Pad... of u4 give wrong
elements) or run no kernel for a type at all.  ``moved`` computes the answer of a
data-movement op from OpenVINO all the same: the op runs on the positions ``1..n`` (i64)
of the data elements instead, and each output position picks the element it names (0: an
element the op fills in, all bits zero or "" for strings); every other element of a
movement op's output is an element of its input, so this is the op's answer for data of
any type.

``Case`` describes one op on data ports (of the swept type) and index ports (constant
values); ``check_data_type``, ``check_index_type`` and ``refused_on`` run the three kinds
of element-type test the op modules share: data of a type against ``moved``, index inputs
of a type against OpenVINO's run with i64 ones, and validate's error for a type a port
does not take.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from lxml import etree
from openvino import opset1

import irrun
from irrun.ir.element_types import ELEMENT_TYPES, NF4, STRING

from . import ov_packed
from .ov_oneop import CORE, CPU_CONFIG

_PACKED_RANGES = {"u1": (0, 2), "u2": (0, 4), "u3": (0, 8), "u4": (0, 16), "u6": (0, 64),
                  "i4": (-8, 8)}  # fmt: skip
_LOW_FLOAT_VALUES = {"f8e4m3": [-2.0, -1.5, -0.5, 0.0, 0.25, 1.0, 3.0, 448.0],
                     "f8e5m2": [-4.0, -1.0, -0.5, 0.0, 0.25, 1.5, 3.0, 57344.0],
                     "f8e8m0": [0.125, 0.5, 1.0, 2.0, 4.0, 1024.0],
                     "f4e2m1": [-6.0, -1.5, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0]}  # fmt: skip


def sample(name: str, shape, seed: int = 0) -> np.ndarray:
    """Distinct-looking values of element type ``name`` (irrun's representation)."""
    rng = np.random.default_rng(seed)
    et = ELEMENT_TYPES[name]
    shape = tuple(shape)
    if name == "string":
        out = np.empty(shape, STRING)
        flat = out.reshape(-1)
        for i in range(flat.size):
            flat[i] = "s" * int(rng.integers(0, 3)) + str(int(rng.integers(0, 1000)))
        return out
    if name == "boolean":
        return rng.random(shape) < 0.5
    if name == "nf4":
        return rng.integers(0, 16, shape).astype(np.uint8).view(NF4)
    if name in _PACKED_RANGES:
        lo, hi = _PACKED_RANGES[name]
        return rng.integers(lo, hi, shape).astype(et.dtype)
    if name in _LOW_FLOAT_VALUES:
        return rng.choice(np.array(_LOW_FLOAT_VALUES[name]), shape).astype(et.dtype)
    if et.dtype.kind == "f" or name == "bf16":
        return (rng.standard_normal(shape) * 10).astype(et.dtype)
    info = np.iinfo(et.dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(
        et.dtype
    )


def to_tensor(x: np.ndarray, name: str) -> ov.Tensor:
    if name == "string":
        return ov.Tensor(np.array(x.tolist(), dtype=str).reshape(x.shape))
    if name == "nf4":
        x = x.view(np.uint8)
    x = np.array(x, copy=True, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
    out = ov.Tensor(getattr(ov.Type, name), ov.Shape(list(x.shape)))
    packed = name in ov_packed.PACKED
    raw = ov_packed.pack(x, name) if packed else x.reshape(-1).view(np.uint8)
    if raw.size:
        out.data.reshape(-1).view(np.uint8)[:] = raw
    return out


def from_tensor(t: ov.Tensor, name: str) -> np.ndarray:
    if name == "string":
        out = np.empty(tuple(t.shape), STRING)
        out.reshape(-1)[:] = [str(s) for s in np.asarray(t.str_data).reshape(-1).tolist()]
        return out
    if name == "nf4":
        return ov_packed.array(t, name).astype(np.uint8).view(NF4)
    return ov_packed.array(t, name)


def model(build, inputs) -> ov.Model:
    """``build(*parameters)`` over parameters in0, in1... of the inputs' shapes and types;
    outputs out0, out1..."""
    params = []
    for i, (x, name) in enumerate(inputs):
        p = opset1.parameter(list(np.shape(x)), getattr(ov.Type, name), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    node = build(*params)
    outs = node.outputs()
    for k, out in enumerate(outs):
        out.get_tensor().set_names({f"out{k}"})
    return ov.Model(outs, params, "one_op")


def evaluate(build, inputs) -> list[np.ndarray]:
    """OpenVINO's reference kernels' outputs (raises where they refuse the types)."""
    m = model(build, inputs)
    outs = [ov.Tensor(o.get_element_type(), [0]) for o in m.outputs]
    if not m.evaluate(outs, [to_tensor(np.asarray(x), name) for x, name in inputs]):
        raise RuntimeError("evaluate returned false")
    return [from_tensor(t, str(o.get_element_type().to_string()))
            for t, o in zip(outs, m.outputs, strict=True)]  # fmt: skip


def run_irrun(build, inputs, tmp_path) -> list[np.ndarray]:
    m = model(build, inputs)
    path = tmp_path / "m.xml"
    ov.save_model(m, path, compress_to_fp16=False)
    got = irrun.load(path).run({f"in{i}": x for i, (x, _) in enumerate(inputs)})
    return [got[f"out{k}"] for k in range(len(m.outputs))]


def moved(build, inputs, data_ports=(0,)) -> list[np.ndarray]:
    """A movement op's outputs from OpenVINO, run on the positions of the data elements
    (the ``data_ports``, which share one element type, are numbered 1, 2... one after
    another; an output 0 is a filled element: 0 of the type, "" for strings).  The
    reference kernels run it, or the CPU plugin where they have no kernel for the op."""
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
    try:
        picked = evaluate(build, positions)
    except RuntimeError:
        compiled = CORE.compile_model(model(build, positions), "CPU", CPU_CONFIG)
        result = compiled([np.asarray(x) for x, _ in positions])
        picked = [np.asarray(result[k]) for k in range(len(compiled.outputs))]
    return [values[p] for p in picked]


def same(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Equal shapes, dtypes and elements (bit patterns for floats, NaNs alike)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype == STRING:
        assert got.tolist() == want.tolist(), what
    elif got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:  # floats (ml_dtypes' too) and nf4 codes, bit for bit
        assert got.tobytes() == want.tobytes(), f"{what}: {got} != {want}"



def refused(build, inputs, port: int, name: str, tmp_path) -> list[str]:
    """irrun's validate errors for the one-op model of ``build`` with parameter ``in{port}``
    retyped to ``name`` in the saved IR (a type OpenVINO may refuse to build with)."""
    m = model(build, inputs)
    path = tmp_path / "m.xml"
    ov.save_model(m, path, compress_to_fp16=False)
    root = etree.parse(str(path)).getroot()
    (layer,) = root.xpath(f"//layer[@type='Parameter'][@name='in{port}']")
    layer.find("data").set("element_type", name)
    precision = name
    ports = layer.xpath("output/port")
    for p in ports:
        p.set("precision", precision)
    for edge in root.xpath(f"//edge[@from-layer='{layer.get('id')}']"):
        (target,) = root.xpath(f"//layer[@id='{edge.get('to-layer')}']/input/"
                               f"port[@id='{edge.get('to-port')}']")  # fmt: skip
        target.set("precision", precision)
    path.write_bytes(etree.tostring(root))
    return [str(d) for d in irrun.validate(path) if d.level == "error"]


# --------------------------------------------------------------------------- one-op cases

# The integer types an index value fits in.
_RANGES = {name: (int(np.iinfo(ELEMENT_TYPES[name].dtype).min),
                  int(np.iinfo(ELEMENT_TYPES[name].dtype).max))
           for name in ("i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8")}  # fmt: skip
_RANGES.update({name: (lo, hi - 1) for name, (lo, hi) in _PACKED_RANGES.items()})


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
        lo, hi = _RANGES[index_type]
        return all(np.all((np.asarray(self.ports[k]) >= lo) & (np.asarray(self.ports[k]) <= hi))
                   for k in self.index_ports())  # fmt: skip


def check_data_type(case: Case, t: str, tmp_path) -> None:
    """irrun runs the op on data of type ``t`` as OpenVINO moves it (:func:`moved`)."""
    inputs = case.inputs(t)
    got = run_irrun(case.build(), inputs, tmp_path)
    want = moved(case.build(), inputs, tuple(range(len(inputs))))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        same(g, w, f"{t}: output {k}")


def check_index_type(case: Case, t: str, tmp_path, data_type: str = "i32") -> None:
    """irrun's run with index inputs of type ``t`` (parameters: OpenVINO's shape
    inference reads no u2, u3 or u6 constant) is OpenVINO's with i64 constants."""
    inputs = case.inputs(data_type)
    given = iter(inputs)
    params = [next(given) if isinstance(p, tuple)
              else (np.asarray(p).astype(ELEMENT_TYPES[t].dtype), t) for p in case.ports]  # fmt: skip
    got = run_irrun(case.build(parameters=True), params, tmp_path)
    want = moved(case.build("i64"), inputs, tuple(range(len(inputs))))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        same(g, w, f"{t} indices: output {k}")


def refused_on(case: Case, port: int, t: str, tmp_path, data_type: str = "f32") -> list[str]:
    """validate's errors when input ``port`` of the op is of type ``t`` (every port a
    parameter, the others of their usual types)."""
    inputs = [(sample(data_type, p, k), data_type) if isinstance(p, tuple)
              else (np.asarray(p, np.int64), "i64") for k, p in enumerate(case.ports)]  # fmt: skip
    return refused(case.build(parameters=True), inputs, port, t, tmp_path)


def index_types(op, case: Case) -> list[str]:
    """The integer types every index port of ``op`` (an OpDef) takes and the case's index
    values fit in."""
    ports = case.index_ports()
    taken = [t for t in ELEMENT_TYPES if t in _RANGES and all(t in op.port_types(k) for k in ports)]
    return [t for t in taken if case.fits(t)]
