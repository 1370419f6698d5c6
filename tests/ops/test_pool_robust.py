"""Pooling with attributes of any size: bounded work, no overflow, no NumPy noise.

A window far larger than the input only reads the input's elements, so a kernel,
pad or dilation of 2**31 or 2**63-1 must cost what the input and the output cost
(issue 15: such files validated, then hung or raised OverflowError in the run).
Values here come from closed forms (a window covering the whole plane, a kernel
of one) or from OpenVINO's CPU plugin; the time guards only catch hangs.  Each case
runs in the default mode (where the fast kernels decline such geometry, the reference
runs) and with the reference kernels only.
"""

from __future__ import annotations

import contextlib
import signal
import time

import numpy as np
import pytest
from support import reference_mode
from support.pools import write_pool

import irrun
from irrun.ops.window import clip_windows

DTYPES = {"f32": np.float32, "u8": np.uint8, "i32": np.int32}
HUGE = 2**31
LOWEST_F32 = np.finfo(np.float32).min


@contextlib.contextmanager
def hang_guard(seconds: int = 60):
    """Fail instead of hanging (a guard only: the cases take a fraction of a second)."""

    def expire(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(params=reference_mode.MODES)
def mode(request):
    """The default mode, or reference kernels only."""
    return request.param


def validate_and_run(path, x, mode="fast"):
    with hang_guard():
        findings = irrun.validate(path)
        assert [f for f in findings if f.level == "error"] == []
        return reference_mode.load(path, mode).run({"x": x})


def sequential_mean(x: np.ndarray, count) -> np.ndarray:
    """The plugin's average of every element of each plane: an f32 running sum."""
    total = np.cumsum(x.reshape(x.shape[0] * x.shape[1], -1), axis=1, dtype=np.float32)[:, -1]
    return (total / np.float32(count)).reshape(x.shape[:2])


# ------------------------------------------------------------------------ issue 15's files

SIZE = 1_000_000
SAME = {"strides": 1, "pads_begin": 0, "pads_end": 0, "auto_pad": "same_upper"}


@pytest.mark.parametrize(
    ("op", "opset", "attrs", "outputs"),
    [
        ("MaxPool", "opset1", {"kernel": HUGE, **SAME}, 1),
        ("MaxPool", "opset8", {"kernel": HUGE, "dilations": 1, **SAME}, 2),
        ("MaxPool", "opset14", {"kernel": HUGE, "dilations": 1, **SAME}, 2),
        ("AvgPool", "opset1", {"kernel": HUGE, "exclude-pad": "true", **SAME}, 1),
        ("AvgPool", "opset14", {"kernel": HUGE, "exclude-pad": "true", **SAME}, 1),
        ("AvgPool", "opset16", {"kernel": HUGE, "dilations": 1, "exclude-pad": "true", **SAME}, 1),
        ("AvgPool", "opset1", {"kernel": HUGE, "exclude-pad": "false", **SAME}, 1),
    ],
    ids=["max1", "max8", "max14", "avg1", "avg14", "avg16", "avg1-count-pads"],
)
def test_a_kernel_of_2_to_31_same_upper_covers_the_whole_input(mode, tmp_path, op, opset, attrs,
                                                               outputs):  # fmt: skip
    # same_upper pads (2**31 - 1 in all) put every window over the whole input.
    path = write_pool(tmp_path / "m.xml", op, opset, attrs, [1, 3, SIZE], outputs=outputs,
                      out_shape=[1, 3, SIZE])  # fmt: skip
    x = np.random.default_rng(0).standard_normal((1, 3, SIZE)).astype(np.float32)
    got = validate_and_run(path, x, mode)
    if op == "MaxPool":
        want = np.broadcast_to(x.max(axis=2, keepdims=True), x.shape)
        assert np.array_equal(got["r0"], want)
        if outputs == 2:
            first = np.argmax(x, axis=2)[..., None] + np.arange(3)[None, :, None] * SIZE
            assert np.array_equal(got["r1"], np.broadcast_to(first, x.shape))
    else:
        count = HUGE if attrs["exclude-pad"] == "false" else SIZE
        want = np.broadcast_to(sequential_mean(x, count)[..., None], x.shape)
        assert np.array_equal(got["r0"], want)


def test_a_kernel_of_2_to_31_with_strides_as_large(mode, tmp_path):
    # Window 0 lies wholly in the padding (lowest value), window 1 covers the input.
    attrs = {"kernel": HUGE, "strides": HUGE, "pads_begin": HUGE, "pads_end": HUGE}
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset1", attrs, [1, 3, SIZE],
                      out_shape=[1, 3, 2])  # fmt: skip
    x = np.random.default_rng(1).standard_normal((1, 3, SIZE)).astype(np.float32)
    got = validate_and_run(path, x, mode)["r0"]
    assert np.array_equal(got[..., 0], np.full((1, 3), LOWEST_F32))
    assert np.array_equal(got[..., 1], x.max(axis=2))


@pytest.mark.parametrize("op", ["AdaptiveMaxPool", "AdaptiveAvgPool"])
@pytest.mark.parametrize("out", [1, 2, 7, 999_999])
def test_adaptive_pools_over_a_million_elements(mode, tmp_path, op, out):
    outputs = 2 if op == "AdaptiveMaxPool" else 1
    path = write_pool(tmp_path / "m.xml", op, "opset8", {}, [1, 3, SIZE], outputs=outputs,
                      out_shape=[1, 3, out], target=[out])  # fmt: skip
    x = np.random.default_rng(2).standard_normal((1, 3, SIZE)).astype(np.float32)
    got = validate_and_run(path, x, mode)
    start = np.arange(out) * SIZE // out
    end = -(-(np.arange(out) + 1) * SIZE // out)
    for o in sorted({0, out // 2, out - 1}):
        window = x[..., start[o] : end[o]]
        if op == "AdaptiveMaxPool":
            assert np.array_equal(got["r0"][..., o], window.max(axis=2))
            assert np.array_equal(got["r1"][..., o], start[o] + np.argmax(window, axis=2))
        else:
            assert np.array_equal(got["r0"][..., o], sequential_mean(window, end[o] - start[o]))


# ------------------------------------------------------------------------ huge attribute values

EXTREMES = [2**31, 2**32 + 1, 99_999_999_999, 2**62, 2**63 - 1]


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize("et", ["u8", "f32"])
def test_a_huge_dilation_of_a_single_tap_is_the_identity(mode, tmp_path, value, et):
    attrs = {"kernel": 1, "strides": 1, "dilations": value, "pads_begin": 0, "pads_end": 0}
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset8", attrs, [1, 3, 1000], et=et,
                      outputs=2, out_shape=[1, 3, 1000])  # fmt: skip
    x = (np.arange(3000) % 251).astype(DTYPES[et]).reshape(1, 3, 1000)
    got = validate_and_run(path, x, mode)
    assert np.array_equal(got["r0"], x)
    assert np.array_equal(got["r1"], identity_index(x))


def identity_index(x: np.ndarray) -> np.ndarray:
    """Indices of a one-tap max pool: each element's own, but the plane's start where
    nothing is above the start value (0 in u8)."""
    index = np.arange(x.size).reshape(x.shape)
    plane_start = np.arange(x.shape[1])[None, :, None] * x.shape[2]
    return np.where(x == 0, plane_start, index) if x.dtype == np.uint8 else index


def test_a_dilation_larger_than_what_the_offsets_type_holds(mode, tmp_path):
    # One tap, a dilation of 300: the offsets fit in u8 but the distance does not.
    attrs = {"kernel": 1, "strides": 1, "dilations": 300, "pads_begin": 0, "pads_end": 0}
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset8", attrs, [1, 2, 1000], et="u8",
                      outputs=2, out_shape=[1, 2, 1000])  # fmt: skip
    x = (np.arange(2000) % 7).astype(np.uint8).reshape(1, 2, 1000)
    got = validate_and_run(path, x, mode)
    assert np.array_equal(got["r0"], x)
    assert np.array_equal(got["r1"], identity_index(x))


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize("rounding", ["floor", "ceil"])
def test_a_huge_stride(mode, tmp_path, value, rounding):
    # Window 0 is the first two elements; with ceil a second one starts past the input.
    attrs = {"kernel": 2, "strides": value, "dilations": 1, "pads_begin": 0, "pads_end": 0,
             "rounding_type": rounding}  # fmt: skip
    n = 1 if rounding == "floor" else 2
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset8", attrs, [1, 3, 10], outputs=2,
                      out_shape=[1, 3, n])  # fmt: skip
    x = np.random.default_rng(3).standard_normal((1, 3, 10)).astype(np.float32)
    got = validate_and_run(path, x, mode)
    assert np.array_equal(got["r0"][..., 0], x[..., :2].max(axis=2))
    planes = np.array([[0, 10, 20]])
    assert np.array_equal(got["r1"][..., 0], np.argmax(x[..., :2], axis=2) + planes)
    if n == 2:
        assert np.array_equal(got["r0"][..., 1], np.full((1, 3), LOWEST_F32))
        assert np.array_equal(got["r1"][..., 1], [[0, 10, 20]])


@pytest.mark.parametrize("value", [2**31, 99_999_999_999, 2**62])
@pytest.mark.parametrize("exclude_pad", ["true", "false"])
def test_huge_pads_and_stride_leave_one_window_on_the_input(mode, tmp_path, value, exclude_pad):
    # Windows start at -value, 0 and value: only the middle one holds elements.
    attrs = {"kernel": 4, "strides": value, "pads_begin": value, "pads_end": value,
             "exclude-pad": exclude_pad}  # fmt: skip
    op = "AvgPool"
    if exclude_pad == "true":  # AvgPool forbids windows wholly in excluded padding
        op, attrs = "MaxPool", {k: v for k, v in attrs.items() if k != "exclude-pad"}
    path = write_pool(tmp_path / "m.xml", op, "opset1", attrs, [1, 2, 6],
                      out_shape=[1, 2, 3])  # fmt: skip
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 6)
    got = validate_and_run(path, x, mode)["r0"]
    if op == "MaxPool":
        assert got.tolist() == [[[LOWEST_F32, 3, LOWEST_F32], [LOWEST_F32, 9, LOWEST_F32]]]
    else:  # every window divides by the kernel's 4 taps
        assert got.tolist() == [[[0, 1.5, 0], [0, 7.5, 0]]]


@pytest.mark.parametrize("attr", ["kernel", "strides", "dilations", "pads_begin", "pads_end"])
@pytest.mark.parametrize("value", [2**62, 2**63 - 1])
@pytest.mark.parametrize("op", ["MaxPool-8", "AvgPool-16"])
def test_extreme_values_are_a_result_or_a_shape_error(mode, tmp_path, attr, value, op):
    kind, version = op.split("-")
    attrs = {"kernel": 2, "strides": 1, "dilations": 1, "pads_begin": 0, "pads_end": 0, attr: value}
    if kind == "AvgPool":
        attrs["exclude-pad"] = "false"
    path = write_pool(tmp_path / "m.xml", kind, f"opset{version}", attrs, [1, 2, 50],
                      outputs=1 + (kind == "MaxPool"), out_shape=[1, 2, 1])  # fmt: skip
    with hang_guard():
        findings = [f for f in irrun.validate(path) if f.level == "error"]
    codes = {f.code for f in findings}
    # An output of 2^62 elements is past what NumPy can index: impossible-size.
    assert codes <= {"shape-error", "shape-mismatch", "impossible-size"}, findings
    if codes & {"shape-error", "impossible-size"}:
        with pytest.raises(irrun.IrrunError):
            irrun.load(path)
        return
    mismatch = [f for f in findings if f.code == "shape-mismatch"]
    out = int(str(mismatch[0].expected).strip("[]").split(",")[-1]) if mismatch else 1
    if out > 1000:
        return  # a valid but large output: nothing small to compare
    path = write_pool(tmp_path / "m.xml", kind, f"opset{version}", attrs, [1, 2, 50],
                      outputs=1 + (kind == "MaxPool"), out_shape=[1, 2, out])  # fmt: skip
    x = np.random.default_rng(4).standard_normal((1, 2, 50)).astype(np.float32)
    got = validate_and_run(path, x, mode)["r0"]
    assert got.shape == (1, 2, out)


# ------------------------------------------------------------------------ the clipped windows


@pytest.mark.parametrize("size", [1, 2, 5, 9])
@pytest.mark.parametrize("kernel", [1, 2, 3, 7, 2**40])
@pytest.mark.parametrize("stride", [1, 2, 3, 2**40])
@pytest.mark.parametrize("dilation", [1, 2, 5, 2**40])
@pytest.mark.parametrize("pad", [0, 1, 4, 2**40])
def test_clip_windows_lists_the_taps_inside(size, kernel, stride, dilation, pad):
    out = 6
    first, count = clip_windows(size, kernel, stride, dilation, pad, out)
    for o in range(out):
        # The taps inside, by their closed form: those at 0 <= o*s - pad + j*d < size.
        start = o * stride - pad
        lo = max(0, -(start // dilation)) if start < 0 else 0
        inside = [start + j * dilation for j in range(lo, min(kernel, lo + size + 1))
                  if 0 <= start + j * dilation < size]  # fmt: skip
        assert count[o] == len(inside)
        if inside:
            assert first[o] == inside[0]


def test_a_chain_of_pools_with_huge_kernels_runs_layer_by_layer(mode, tmp_path):
    # Stride 1 with kernel - 1 pads would join a fused chain, whose padding bands grow
    # with the kernel; here every window covers the whole plane.
    k = HUGE
    attrs = {"kernel": f"{k},{k}", "strides": "1,1", "pads_begin": f"{k // 2},{k // 2}",
             "pads_end": f"{k // 2 - 1},{k // 2 - 1}"}  # fmt: skip
    dims = "<dim>1</dim><dim>2</dim><dim>5</dim><dim>6</dim>"
    data = " ".join(f'{n}="{v}"' for n, v in attrs.items())
    layers = ['<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,2,5,6" '
              f'element_type="f32"/><output><port id="0" precision="FP32" names="x">{dims}'
              "</port></output></layer>"]  # fmt: skip
    for i, (op, extra) in enumerate([("MaxPool", ""), ("AvgPool", ' exclude-pad="true"'),
                                     ("MaxPool", "")], start=1):  # fmt: skip
        layers.append(f'<layer id="{i}" name="p{i}" type="{op}" version="opset1"><data {data}'
                      f'{extra}/><input><port id="0">{dims}</port></input><output><port id="1" '
                      f'precision="FP32">{dims}</port></output></layer>')  # fmt: skip
    layers.append('<layer id="4" name="r0" type="Result" version="opset1"><input><port id="0">'
                  f"{dims}</port></input></layer>")  # fmt: skip
    edges = ['<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>'] + [
        f'<edge from-layer="{i}" from-port="1" to-layer="{i + 1}" to-port="0"/>' for i in (1, 2, 3)
    ]
    path = tmp_path / "chain.xml"
    path.write_text(f'<?xml version="1.0"?>\n<net name="m" version="11"><layers>{"".join(layers)}'
                    f'</layers><edges>{"".join(edges)}</edges></net>\n')  # fmt: skip
    x = np.random.default_rng(6).standard_normal((1, 2, 5, 6)).astype(np.float32)
    got = validate_and_run(path, x, mode)["r0"]
    # The maximum M everywhere, then the average of 30 M's (summed in f32), then its maximum.
    tops = np.broadcast_to(x.max(axis=(2, 3), keepdims=True), x.shape)
    assert np.array_equal(got, sequential_mean(tops, 30)[..., None, None] + np.zeros_like(x))


def test_a_million_rows_of_padding_cost_what_the_output_costs(mode, tmp_path):
    # MaxPool-8, kernel 2x2, pads_begin 1000000 on the rows: the first 999999 output rows
    # lie wholly in the padding (f32's lowest, the plane's first index); the last three
    # read input rows -1..0, 0..1 and 1..2.  Values and indices by hand.
    attrs = {"kernel": "2,2", "strides": "1,1", "dilations": "1,1", "pads_begin": "1000000,0",
             "pads_end": "0,0"}
    out_shape = [1, 2, 1_000_002, 2]
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset8", attrs, [1, 2, 3, 3], outputs=2,
                      out_shape=out_shape)
    x = np.array([[[[5, 5, 1], [5, 7, 7], [-0.0, 0.0, 7]],
                   [[-0.0, 0.0, -1], [0.0, -0.0, -2], [np.nan, -3, -4]]]], np.float32)
    model = reference_mode.load(path, mode)
    model.run({"x": x})  # a first run makes the plans
    start = time.perf_counter()
    got = model.run({"x": x})
    seconds = time.perf_counter() - start
    values, index = got["r0"], got["r1"]
    assert values.shape == index.shape == tuple(out_shape)
    assert (values[:, :, :999_999] == LOWEST_F32).all()
    assert (index[0, 0, :999_999] == 0).all() and (index[0, 1, :999_999] == 9).all()
    last = values[0, :, 999_999:]
    want = np.array([[[5, 5], [7, 7], [7, 7]],
                     [[-0.0, 0.0], [-0.0, 0.0], [0.0, -0.0]]], np.float32)
    assert last.tolist() == want.tolist()
    assert np.signbit(last).tolist() == np.signbit(want).tolist()
    assert index[0, :, 999_999:].tolist() == [[[0, 1], [4, 4], [4, 4]],
                                              [[9, 10], [9, 10], [12, 13]]]
    assert seconds < 1.0, f"{seconds:.2f} s for an output of 4 million values and indices"
