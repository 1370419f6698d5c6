"""Which op version a layer's ``version="opsetN"`` denotes, and how ``<data>`` is read.

Expected values are OpenVINO's: every table here is also checked against
OpenVINO's own IR reader (``ov.Core().read_model`` on a hand-written layer),
so a wrong row fails on the OpenVINO side before irrun is asked.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import openvino as ov
import pytest

import irrun
from irrun.ir import element_types, registry
from irrun.ir.attributes import AttrError, parse_attributes, parse_bool, parse_int_list
from irrun.ir.registry import LookupFailure, describe_versions, resolve

CORE = ov.Core()
POOLS = ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool")
LATEST = 16  # the last opset holding the pools (opset17 holds none of them)


def expected_version(op_type: str, opset: int) -> int | None:
    """By hand from OpenVINO's opset lists (semantics notes §1.5); None: not in that opset."""
    if op_type == "MaxPool":
        return 1 if opset <= 7 else 8 if opset <= 13 else 14
    if op_type == "AvgPool":
        return 1 if opset <= 13 else 14 if opset <= 15 else 16
    return 8 if opset >= 8 else None


# --- hand-written IR read by OpenVINO ----------------------------------------------------------

POOL_DATA = {
    "MaxPool": {"strides": "1, 1", "pads_begin": "0, 0", "pads_end": "0, 0", "kernel": "2, 2",
                "rounding_type": "floor", "auto_pad": "explicit"},
    "AvgPool": {"strides": "1, 1", "pads_begin": "0, 0", "pads_end": "0, 0", "kernel": "2, 2",
                "exclude-pad": "true", "rounding_type": "floor", "auto_pad": "explicit"},
    "AdaptiveAvgPool": {},
    "AdaptiveMaxPool": {"index_element_type": "i32"},
}  # fmt: skip


def pool_ir(op_type: str, version: str, data: dict[str, str] | None = None) -> str:
    """A Parameter [1,2,8,8] into one pooling layer (plus a Const output_shape for adaptive)."""
    data = POOL_DATA[_canonical(op_type)] if data is None else data
    dims = "<dim>1</dim><dim>2</dim><dim>8</dim><dim>8</dim>"
    attrs = " ".join(f'{k}="{v}"' for k, v in data.items())
    adaptive = "adaptive" in op_type.lower()
    const = (
        '<layer id="3" name="size" type="Const" version="opset1">'
        '<data element_type="i64" shape="2" offset="0" size="16"/>'
        '<output><port id="0" precision="I64"><dim>2</dim></port></output></layer>'
        if adaptive else ""
    )  # fmt: skip
    size_port = '<port id="1" precision="I64"><dim>2</dim></port>' if adaptive else ""
    opset = version.removeprefix("opset")
    two = op_type.lower() == "adaptivemaxpool" or (
        op_type.lower() == "maxpool" and opset.isdigit() and int(opset) >= 8
    )
    index_port = '<port id="3" precision="I64"/>' if two else ""
    size_edge = '<edge from-layer="3" from-port="0" to-layer="1" to-port="1"/>' if adaptive else ""
    return f"""<?xml version="1.0"?>
<net name="t" version="11">
<layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,2,8,8" element_type="f32"/>
<output><port id="0" precision="FP32">{dims}</port></output></layer>
{const}
<layer id="1" name="pool" type="{op_type}" version="{version}"><data {attrs}/>
<input><port id="0" precision="FP32">{dims}</port>{size_port}</input>
<output><port id="2" precision="FP32"/>{index_port}</output></layer>
<layer id="2" name="out" type="Result" version="opset1">
<input><port id="0" precision="FP32"/></input></layer>
</layers>
<edges>
<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>{size_edge}
<edge from-layer="1" from-port="2" to-layer="2" to-port="0"/>
</edges>
</net>
"""


def _canonical(op_type: str) -> str:
    return next(t for t in POOLS if t.lower() == op_type.lower())


@pytest.fixture
def write_ir(tmp_path):
    def write(text: str) -> Path:
        path = tmp_path / "m.xml"
        path.write_text(text)
        # output_shape [4, 4] for the adaptive pools' Const
        path.with_suffix(".bin").write_bytes((4).to_bytes(8, "little") * 2)
        return path

    return write


def ov_pool(path: Path) -> ov.Node:
    """The layer named 'pool' as OpenVINO reads it; raises RuntimeError when it refuses."""
    model = CORE.read_model(path)
    return next(op for op in model.get_ops() if op.get_friendly_name() == "pool")


def ov_version(path: Path) -> int:
    return int(ov_pool(path).get_type_info().version_id.removeprefix("opset"))


# --- opset -> op version -----------------------------------------------------------------------

MAPPING = [
    (op_type, n, expected_version(op_type, n)) for op_type in POOLS for n in range(1, LATEST + 1)
]


@pytest.mark.parametrize(
    ("op_type", "opset", "version"),
    [(t, n, v) for t, n, v in MAPPING if v is not None],
)
def test_opset_picks_the_op_version(write_ir, op_type, opset, version):
    op = resolve(op_type, f"opset{opset}")
    assert (op.type, op.version) == (op_type, version)
    assert op.since_opset == version and op.label == f"{op_type}-v{version}"
    assert ov_version(write_ir(pool_ir(op_type, f"opset{opset}"))) == version


@pytest.mark.parametrize(
    ("op_type", "opset"), [(t, n) for t, n, v in MAPPING if v is None]
)  # fmt: skip
def test_adaptive_pools_are_not_in_opsets_before_8(write_ir, op_type, opset):
    with pytest.raises(RuntimeError, match=f"opset{opset} doesn't contain"):
        ov_pool(write_ir(pool_ir(op_type, f"opset{opset}")))
    with pytest.raises(LookupFailure) as info:
        resolve(op_type, f"opset{opset}")
    assert str(info.value) == (
        f"opset{opset} has no op {op_type} (irrun supports {op_type}-v8 (opset8..16))"
    )


def test_describe_versions():
    assert describe_versions("MaxPool") == (
        "MaxPool-v1 (opset1..7), MaxPool-v8 (opset8..13), MaxPool-v14 (opset14..16)"
    )
    assert describe_versions("avgpool") == (
        "AvgPool-v1 (opset1..13), AvgPool-v14 (opset14..15), AvgPool-v16 (opset16..16)"
    )
    assert describe_versions("AdaptiveMaxPool") == "AdaptiveMaxPool-v8 (opset8..16)"


@pytest.mark.parametrize(
    "version",
    ["opset0", "opset18", "opset99", "foo", "", "OPSET8", "Opset8", " opset8", "opset8 ",
     "opset08", "opset-1", "8", "opset"],
)  # fmt: skip
@pytest.mark.parametrize("op_type", ["MaxPool", "AvgPool", "AdaptiveMaxPool"])
def test_unsupported_opsets(write_ir, op_type, version):
    with pytest.raises(RuntimeError):
        ov_pool(write_ir(pool_ir(op_type, version)))
    with pytest.raises(LookupFailure) as info:
        resolve(op_type, version)
    assert str(info.value) == f"unsupported opset '{version}' (expected opset1 to opset17)"


@pytest.mark.parametrize("op_type", POOLS)
def test_opset17_holds_no_pool(write_ir, op_type):
    # OpenVINO 2026.4's opset17 holds Parameter, Convert, ShapeOf and its new ops only.
    with pytest.raises(RuntimeError, match="opset17 doesn't contain"):
        ov_pool(write_ir(pool_ir(op_type, "opset17", POOL_DATA[op_type])))
    with pytest.raises(LookupFailure) as info:
        resolve(op_type, "opset17")
    assert str(info.value).startswith(f"opset17 has no op {op_type} (irrun supports ")
    assert str(info.value).endswith("..16))")


def test_opset17_as_openvino_2026_4_has_it():
    held = {t for t in registry.OPSETS if 17 in registry.openvino_opsets(t)}
    assert held == {"Parameter", "Convert", "ShapeOf", "ErfInv", "GroupedMatMul", "RGBtoNV12",
                    "BGRtoNV12"}  # fmt: skip
    assert registry.LATEST_OPSET == 17
    assert resolve("ShapeOf", "opset17").label == "ShapeOf-v3"
    assert resolve("Convert", "opset17").since_opset == 1
    assert describe_versions("ShapeOf").endswith("ShapeOf-v3 (opset3..17)")


def test_unknown_op_type_says_no_opset_has_it(write_ir):
    with pytest.raises(RuntimeError, match="doesn't contain the operation with type: MaxPoolX"):
        ov_pool(write_ir(pool_ir("MaxPoolX", "opset8", POOL_DATA["MaxPool"])))
    with pytest.raises(LookupFailure) as info:
        resolve("MaxPoolX", "opset8")
    assert str(info.value) == (
        "unknown op type 'MaxPoolX' (no opset of OpenVINO has it; did you mean MaxPool?)"
    )
    with pytest.raises(LookupFailure, match=r"^unknown op type 'Frobnicate' \(no opset of "
                       r"OpenVINO has it\)$"):  # fmt: skip
        resolve("Frobnicate", "opset8")


def test_an_openvino_op_irrun_lacks_is_named_as_such(without_ops):
    without_ops("BinaryConvolution")
    with pytest.raises(LookupFailure) as info:
        resolve("BinaryConvolution", "opset8")
    assert str(info.value) == (
        "op type 'BinaryConvolution' is not supported by irrun (OpenVINO has it in opset1..16; "
        "'irrun ops' lists the ops irrun runs)"
    )


@pytest.mark.parametrize(
    ("op_type", "opset"), [("MaxPool", 1), ("AvgPool", 16), ("Softmax", 8), ("Const", 3)]
)  # fmt: skip
def test_openvino_spellings(op_type, opset):
    assert resolve(op_type, f"opset{opset}").since_opset <= opset
    assert opset in registry.openvino_opsets(op_type)


def test_an_op_missing_from_one_opset_is_refused_there():
    # OpenVINO's opset2 lacks ShuffleChannels, which opset1 and opset3 hold.
    assert registry.openvino_opsets("ShuffleChannels") == frozenset({1, *range(3, 17)})
    assert registry.describe_opsets(registry.openvino_opsets("ShuffleChannels")) == (
        "opset1, opset3..16"
    )


@pytest.mark.parametrize(
    ("spelling", "opset", "version"),
    [("maxpool", 1, 1), ("MAXPOOL", 8, 8), ("mAxPoOl", 14, 14), ("avgpool", 16, 16),
     ("AVGPOOL", 14, 14), ("adaptiveavgpool", 8, 8), ("ADAPTIVEMAXPOOL", 16, 8)],
)  # fmt: skip
def test_type_names_are_case_insensitive(write_ir, spelling, opset, version):
    assert ov_version(write_ir(pool_ir(spelling, f"opset{opset}"))) == version
    op = resolve(spelling, f"opset{opset}")
    assert (op.type, op.version) == (_canonical(spelling), version)


@pytest.mark.parametrize("spelling", ["MaxPool ", " MaxPool", "Max_Pool", "MaxPooling"])
def test_type_names_are_not_trimmed(write_ir, spelling):
    with pytest.raises(RuntimeError):
        ov_pool(write_ir(pool_ir(spelling, "opset8", POOL_DATA["MaxPool"])))
    with pytest.raises(LookupFailure, match="unknown op type"):
        resolve(spelling, "opset8")


def test_validate_reports_the_opset_error_at_the_layer(write_ir):
    path = write_ir(pool_ir("AdaptiveAvgPool", "opset7"))
    errors = [d for d in irrun.validate(path) if d.level == "error"]
    assert [(d.code, d.layer.name) for d in errors] == [("unknown-opset", "pool")]
    assert "AdaptiveAvgPool-v8 (opset8..16)" in errors[0].message


# --- attribute parsing -------------------------------------------------------------------------


def avg_data(**changes: str | None) -> dict[str, str]:
    """AvgPool's ``<data>`` with some attributes changed (None: removed)."""
    data = dict(POOL_DATA["AvgPool"])
    for key, value in changes.items():
        key = key.replace("exclude_pad", "exclude-pad")
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def read_both(write_ir, op_type: str, version: str, data: dict[str, str]):
    """(OpenVINO's attributes or None, irrun's ParsedAttributes or the AttrError)."""
    try:
        ov_attrs = ov_pool(write_ir(pool_ir(op_type, version, data))).get_attributes()
    except RuntimeError:
        ov_attrs = None
    try:
        parsed = parse_attributes(resolve(op_type, version).attrs, data)
    except AttrError as exc:
        return ov_attrs, exc
    return ov_attrs, parsed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2,2", (2, 2)),
        ("2, 2", (2, 2)),  # as ov.save_model writes lists
        (" 2 , 2 ", (2, 2)),
        ("2,2,", (2, 2)),  # one trailing comma
        ("  2,2 ,", (2, 2)),
        ("3", (3,)),
    ],
)
def test_int_lists(write_ir, text, expected):
    assert parse_int_list(text) == expected
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(kernel=text, strides=text))
    if len(expected) == 2:
        assert ov_attrs is not None and tuple(ov_attrs["kernel"]) == expected
    assert parsed.values["kernel"] == expected and parsed.warnings == ()


@pytest.mark.parametrize("text", ["2,,2", ",2,2", "2,,", ",,", "a,2", "2,a"])
def test_int_list_with_an_empty_or_bad_field_is_an_error(write_ir, text):
    with pytest.raises(ValueError):
        parse_int_list(text)
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(strides=text))
    assert ov_attrs is None
    assert isinstance(parsed, AttrError) and parsed.attr == "strides"
    assert str(parsed).startswith(f"attribute 'strides'=\"{text}\": expected a comma-separated")


def test_empty_pads_mean_zeros(write_ir):
    ov_attrs, parsed = read_both(
        write_ir, "AvgPool", "opset1", avg_data(pads_begin="", pads_end="")
    )
    assert ov_attrs["pads_begin"] == [0, 0] and ov_attrs["pads_end"] == [0, 0]
    assert parsed.values["pads_begin"] == () and parsed.values["pads_end"] == ()
    assert parse_int_list("") == ()


@pytest.mark.parametrize("text", [",", " ", "2, 2, ", "+2, 2", "2, +2"])
def test_int_lists_openvino_refuses(write_ir, text):
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(strides=text))
    assert ov_attrs is None
    assert isinstance(parsed, AttrError)


@pytest.mark.parametrize("text", ["1, 2_0", "1, 2abc", "1.7, 2", "3x, 2"])
def test_int_list_numeric_prefixes_are_refused(write_ir, text):
    # OpenVINO reads the leading digits and drops the rest; irrun refuses such a value
    # deliberately (docs/semantics.md), since it is a mistake in the file, not a number.
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(strides=text))
    assert ov_attrs is not None
    assert isinstance(parsed, AttrError) and "not an integer" in str(parsed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("True", True), ("TRUE", True), ("tRuE", True), ("1", True),
     ("false", False), ("False", False), ("FALSE", False), ("fAlSe", False), ("0", False)],
)  # fmt: skip
def test_booleans(write_ir, text, expected):
    assert parse_bool(text) is expected
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(exclude_pad=text))
    assert ov_attrs["exclude-pad"] is expected
    assert parsed.values["exclude_pad"] is expected and parsed.warnings == ()


@pytest.mark.parametrize("text", ["yes", "no", "off", "", " true", "false ", "2", "-1", "t"])
def test_unparsable_boolean_keeps_the_default_with_a_warning(write_ir, text):
    with pytest.raises(ValueError):
        parse_bool(text)
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(exclude_pad=text))
    assert ov_attrs["exclude-pad"] is True  # OpenVINO silently keeps its default
    assert parsed.values["exclude_pad"] is True
    assert len(parsed.warnings) == 1
    assert f"'exclude-pad'=\"{text}\"" in parsed.warnings[0] and "uses true" in parsed.warnings[0]


def test_exclude_pad_defaults_to_true(write_ir):
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(exclude_pad=None))
    assert ov_attrs["exclude-pad"] is True
    assert parsed.values["exclude_pad"] is True and parsed.warnings == ()


@pytest.mark.parametrize("version", ["opset1", "opset14", "opset16"])
def test_exclude_pad_with_an_underscore_is_ignored(write_ir, version):
    data = avg_data(exclude_pad=None)
    data["exclude_pad"] = "false"
    ov_attrs, parsed = read_both(write_ir, "AvgPool", version, data)
    assert ov_attrs["exclude-pad"] is True
    assert parsed.values["exclude_pad"] is True
    assert parsed.warnings == ("unknown attribute 'exclude_pad' is ignored",)


@pytest.mark.parametrize(
    ("attr", "text", "expected"),
    [("rounding_type", "floor", "floor"), ("rounding_type", "CEIL", "ceil"),
     ("rounding_type", "Floor", "floor"), ("rounding_type", "CEIL_TORCH", "ceil_torch"),
     ("rounding_type", "Ceil_Torch", "ceil_torch"), ("auto_pad", "SAME_UPPER", "same_upper"),
     ("auto_pad", "Same_Lower", "same_lower"), ("auto_pad", "VALID", "valid"),
     ("auto_pad", "Explicit", "explicit")],
)  # fmt: skip
def test_enums_are_case_insensitive(write_ir, attr, text, expected):
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset14", avg_data(**{attr: text}))
    assert ov_attrs[attr] == expected
    assert parsed.values[attr] == expected


@pytest.mark.parametrize(
    ("attr", "text"),
    [("rounding_type", " floor"), ("rounding_type", "floor "), ("rounding_type", ""),
     ("rounding_type", "round"), ("auto_pad", " valid"), ("auto_pad", "valid "),
     ("auto_pad", "notset"), ("auto_pad", "auto"), ("auto_pad", "same"), ("auto_pad", "")],
)  # fmt: skip
def test_enums_are_not_trimmed(write_ir, attr, text):
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset14", avg_data(**{attr: text}))
    assert ov_attrs is None
    assert isinstance(parsed, AttrError) and parsed.attr == attr
    assert f"'{attr}'=\"{text}\"" in str(parsed)


def test_missing_required_attribute(write_ir):
    ov_attrs, parsed = read_both(write_ir, "AvgPool", "opset1", avg_data(kernel=None))
    assert ov_attrs is None
    assert isinstance(parsed, AttrError) and str(parsed) == "attribute 'kernel' is required"


def test_unknown_attributes_are_ignored_with_a_warning(write_ir):
    data = dict(POOL_DATA["MaxPool"], foo="bar", **{"exclude-pad": "false"})
    ov_attrs, parsed = read_both(write_ir, "MaxPool", "opset1", data)
    assert ov_attrs is not None and "foo" not in ov_attrs
    assert parsed.warnings == (
        "unknown attribute 'foo' is ignored",
        "unknown attribute 'exclude-pad' is ignored",
    )


# --- element types in <data> -------------------------------------------------------------------


def convert_ir(destination: str) -> str:
    return f"""<?xml version="1.0"?>
<net name="t" version="11">
<layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="3" element_type="f32"/>
<output><port id="0" precision="FP32"><dim>3</dim></port></output></layer>
<layer id="1" name="pool" type="Convert" version="opset1"><data destination_type="{destination}"/>
<input><port id="0" precision="FP32"><dim>3</dim></port></input>
<output><port id="1" precision="FP32"><dim>3</dim></port></output></layer>
<layer id="2" name="out" type="Result" version="opset1">
<input><port id="0" precision="FP32"/></input></layer>
</layers>
<edges>
<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
</edges>
</net>
"""


@pytest.mark.parametrize(
    ("text", "name"),
    [("f32", "f32"), ("F32", "f32"), ("I64", "i64"), ("i32", "i32"), ("boolean", "boolean"),
     ("BOOLEAN", "boolean"), ("Boolean", "boolean"), ("bf16", "bf16"), ("BF16", "bf16"),
     ("F16", "f16"), ("u1", "u1"), ("U4", "u4"), ("i4", "i4"), ("U8", "u8"), ("f64", "f64")],
)  # fmt: skip
def test_element_types_are_canonical_names_in_any_case(write_ir, text, name):
    ov_node = ov_pool(write_ir(convert_ir(text)))
    assert ov_node.get_attributes()["destination_type"] == name
    assert element_types.from_attribute(text).name == name
    parsed = parse_attributes(resolve("Convert", "opset1").attrs, {"destination_type": text})
    assert parsed.values["destination_type"] is element_types.ELEMENT_TYPES[name]


@pytest.mark.parametrize(
    "text", ["FP32", "FP16", "fp32", "bool", "BOOL", "BIN", "int32", "float", "f32 ", " f32", ""]
)
def test_legacy_and_padded_element_type_names_are_errors(write_ir, text):
    with pytest.raises(RuntimeError):
        ov_pool(write_ir(convert_ir(text)))
    with pytest.raises(ValueError, match="is not an element type"):
        element_types.from_attribute(text)
    with pytest.raises(AttrError, match="destination_type"):
        parse_attributes(resolve("Convert", "opset1").attrs, {"destination_type": text})


def ov_reads_precision(write_ir, precision: str) -> bool:
    """Whether OpenVINO accepts ``precision`` on an output port (it parses it, then ignores it)."""
    text = convert_ir("f32").replace('<port id="1" precision="FP32">',
                                     f'<port id="1" precision="{precision}">')  # fmt: skip
    try:
        ov_pool(write_ir(text))
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize(
    ("text", "name"),
    [("FP32", "f32"), ("f32", "f32"), ("FP16", "f16"), ("FP64", "f64"), ("I64", "i64"),
     ("i32", "i32"), ("BOOL", "boolean"), ("boolean", "boolean"), ("BIN", "u1"), ("bin", "u1"),
     ("U1", "u1"), ("BF16", "bf16")],
)  # fmt: skip
def test_port_precisions_take_legacy_names(write_ir, text, name):
    assert ov_reads_precision(write_ir, text)
    assert element_types.from_precision(text).name == name


@pytest.mark.parametrize("text", ["Fp32", "fp32", "Bool", "bool", "F32 ", "float32"])
def test_port_precisions_are_case_sensitive(write_ir, text):
    assert not ov_reads_precision(write_ir, text)
    with pytest.raises(ValueError, match="is not a port precision"):
        element_types.from_precision(text)


# --- every opset's version, against OpenVINO's Python opsets and C++ opset tables ---------------


# Op type in the IR -> the Python factory name, to read OpenVINO's opset tables.
FACTORIES = {
    "Convolution": "convolution", "GroupConvolution": "group_convolution", "Add": "add",
    "Subtract": "subtract", "Multiply": "multiply", "Divide": "divide", "Maximum": "maximum",
    "Minimum": "minimum", "Power": "power", "Abs": "abs", "Sqrt": "sqrt", "Exp": "exp",
    "Clamp": "clamp", "ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HSwish": "hswish",
    "HSigmoid": "hsigmoid", "Swish": "swish", "Gelu": "gelu", "MatMul": "matmul",
    "BatchNormInference": "batch_norm_inference", "Negative": "negative", "Log": "log",
    "Erf": "erf", "Sin": "sin", "Cos": "cos", "Floor": "floor", "Ceiling": "ceiling",
    "Sign": "sign", "Elu": "elu", "SoftPlus": "softplus", "Mish": "mish",
    "SoftSign": "softsign", "PRelu": "prelu", "Mod": "mod", "FloorMod": "floor_mod",
    "Equal": "equal", "NotEqual": "not_equal", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "LogicalNot": "logical_not",
    "LogicalAnd": "logical_and", "LogicalOr": "logical_or", "LogicalXor": "logical_xor",
    "Select": "select", "LogSoftmax": "log_softmax", "TopK": "topk",
    "ConvolutionBackpropData": "convolution_backprop_data",
    "GroupConvolutionBackpropData": "group_convolution_backprop_data",
    "ReverseSequence": "reverse_sequence", "BatchToSpace": "batch_to_space",
    "SpaceToBatch": "space_to_batch", "Eye": "eye", "Bucketize": "bucketize",
    "SearchSorted": "search_sorted", "GRN": "grn", "Unique": "unique",
}  # fmt: skip


def openvino_version(op_type: str, opset: int) -> int | None:
    """The opset that introduced the version opsetN holds (None: not in opsetN)."""
    module = importlib.import_module(f"openvino.opset{opset}")
    factory = getattr(module, FACTORIES[op_type], None)
    if factory is None:
        return None
    return int(factory.__module__.split(".")[-2].removeprefix("opset"))


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    for n in range(1, 17):
        want = openvino_version(op_type, n)
        if want is None:
            with pytest.raises(LookupError):
                resolve(op_type, f"opset{n}")
        else:
            assert resolve(op_type, f"opset{n}").since_opset == want, (op_type, n)


def test_versions_by_hand():
    assert resolve("Gelu", "opset6").label == "Gelu-v2"
    assert resolve("Gelu", "opset7").label == "Gelu-v7"
    assert resolve("BatchNormInference", "opset4").label == "BatchNormInference-v1"
    assert resolve("BatchNormInference", "opset16").label == "BatchNormInference-v5"
    assert resolve("relu", "opset1").type == "ReLU"
    assert resolve("HSigmoid", "opset5").label == "HSigmoid-v5"
    with pytest.raises(LookupError):
        resolve("HSwish", "opset3")


# op -> the opset whose version opsetN holds, per OpenVINO's C++ opset tables.  Python's
# opset4..11 modules re-export Range from opset1, but the C++ opset4 holds Range-v4 (an IR
# with version="opset4" and output_type reads: test_range_versions_in_openvino in
# tests/ops/test_creation.py).
VERSIONS = {
    "Slice": {n: 8 for n in range(8, 17)},
    "Range": {n: (1 if n < 4 else 4) for n in range(1, 17)},
    "Tile": {n: 1 for n in range(1, 17)},
    "Roll": {n: 7 for n in range(7, 17)},
    "OneHot": {n: (1 if n < 16 else 16) for n in range(1, 17)},
    "NonZero": {n: 3 for n in range(3, 17)},
}
PYTHON_FACTORIES = {"Slice": "slice", "Tile": "tile", "Roll": "roll", "OneHot": "one_hot",
                    "NonZero": "non_zero"}  # fmt: skip


@pytest.mark.parametrize("op_type", sorted(VERSIONS))
def test_versions_for_every_opset(op_type):
    for n in range(1, 17):
        want = VERSIONS[op_type].get(n)
        if want is None:
            with pytest.raises(LookupError):
                resolve(op_type, f"opset{n}")
        else:
            assert resolve(op_type, f"opset{n}").since_opset == want, (op_type, n)
        if op_type in PYTHON_FACTORIES:  # Python's factories agree
            factory = getattr(importlib.import_module(f"openvino.opset{n}"),
                              PYTHON_FACTORIES[op_type], None)  # fmt: skip
            got = None if factory is None else int(factory.__module__.split(".")[-2][5:])
            assert got == want, (op_type, n)


# --------------------------------------------------------------------------- element types


@pytest.mark.parametrize("op", registry.supported_ops(), ids=lambda op: op.label)
def test_every_op_declares_the_element_types_of_each_port(op):
    # What docs/ops.md lists: one set per port (ANY where any type goes), none left out.
    ports = op.inputs[0] if op.variadic else op.inputs[1]
    assert len(op.input_types) >= ports, f"{op.label} declares {len(op.input_types)} of {ports}"
    for port, types in enumerate(op.input_types):
        assert types, f"{op.label} port {port} declares no element type"
        unknown = set(types) - set(element_types.ELEMENT_TYPES)
        assert not unknown, f"{op.label} port {port}: {unknown} are no element types"


def test_port_types_of_an_op_of_any_number_of_inputs():
    concat = resolve("Concat", "opset1")
    assert concat.variadic and concat.port_types(0) == concat.port_types(7) == element_types.ANY
    pad = resolve("Pad", "opset12")
    assert not pad.variadic and pad.port_types(9) is None
    assert element_types.describe_types(pad.port_types(1)) == "integers, packed integers"


def test_a_type_a_port_does_not_take_is_named_with_those_it_takes():
    op = resolve("Sin", "opset1")
    info = registry.TensorInfo((2,), element_types.ELEMENT_TYPES["string"])
    with pytest.raises(registry.ShapeError, match=r"^input 0 is string, which Sin-v1 does not "
                       r"take \(it takes f64, f32, .*\)$"):  # fmt: skip
        op.infer(None, [info])
