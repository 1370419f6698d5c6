"""Regenerate the IR files in this folder: recurrent layers as users convert them, from
Keras and from ONNX, by OpenVINO's own converters.

    CI=true python tests/sequence_models/make_sequence_models.py   # needs tensorflow, onnx, openvino

* ``keras_rnn``: a Keras 3 Sequential of LSTM, GRU (``reset_after``), a bidirectional LSTM
  and a Dense head, exported as a TensorFlow SavedModel and converted; OpenVINO's
  TensorFlow frontend turns each recurrent layer into a Loop-5 whose body is the cell
  (MatMul, Sigmoid, Tanh...), not into an LSTMSequence.  Expected: Keras's own outputs.
* ``onnx_lstm``, ``onnx_gru``, ``onnx_rnn``: ONNX's LSTM, GRU (``linear_before_reset=1``)
  and RNN, forward, all sequences full length; the frontend makes LSTMSequence-5,
  GRUSequence-5 and RNNSequence-5.  Expected: ONNX's reference evaluator
  (``onnx.reference``).
* ``onnx_lstm_bidirectional``, ``onnx_gru_reverse``: bidirectional LSTM with
  ``sequence_lens`` shorter than the sequence and ``clip``, and a reversed GRU with
  sequence lengths; ONNX's reference evaluator runs neither (it ignores direction,
  lengths and clip), so the expected values are OpenVINO's CPU plugin's at f32.

``expected.npz`` holds, per model, its inputs (``<model>/in/<name>``) and expected outputs
(``<model>/out/<index>``).  tensorflow and onnx are needed here only, not by the tests
(tests/ops/test_recurrent.py reads these files).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import openvino as ov

HERE = Path(__file__).resolve().parent
CPU = {"INFERENCE_PRECISION_HINT": "f32"}


def keras_rnn(tmp: Path) -> tuple[ov.Model, dict, list]:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((7, 4), batch_size=2),
        keras.layers.LSTM(8, return_sequences=True),
        keras.layers.GRU(6, return_sequences=True),
        keras.layers.Bidirectional(keras.layers.LSTM(5)),
        keras.layers.Dense(3),
    ])  # fmt: skip
    x = np.random.default_rng(0).standard_normal((2, 7, 4)).astype(np.float32)
    expected = [model(x).numpy()]
    model.export(str(tmp / "keras_rnn"), format="tf_saved_model", verbose=False)
    converted = ov.convert_model(str(tmp / "keras_rnn"))
    converted.inputs[0].get_tensor().set_names({"x"})
    return converted, {"x": x}, expected


def _onnx_model(kind: str, direction: str, lengths: list[int], clip: float | None, **attrs):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(len(kind) + len(direction))
    steps, batch, size, hidden = 6, 3, 4, 5
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    dirs = 2 if direction == "bidirectional" else 1

    def f(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    weights = [numpy_helper.from_array(f(dirs, gates * hidden, size), "W"),
               numpy_helper.from_array(f(dirs, gates * hidden, hidden), "R"),
               numpy_helper.from_array(f(dirs, 2 * gates * hidden), "B")]  # fmt: skip
    feeds = {"X": f(steps, batch, size), "L": np.array(lengths, np.int32),
             "h0": f(dirs, batch, hidden)}  # fmt: skip
    names = ["X", "W", "R", "B", "L", "h0"]
    outputs = ["Y", "Yh"]
    if kind == "LSTM":
        feeds["c0"] = f(dirs, batch, hidden)
        names.append("c0")
        outputs.append("Yc")
    if clip is not None:
        attrs["clip"] = clip
    node = helper.make_node(kind, names, outputs, hidden_size=hidden, direction=direction, **attrs)
    value = {"X": TensorProto.FLOAT, "L": TensorProto.INT32, "h0": TensorProto.FLOAT,
             "c0": TensorProto.FLOAT}  # fmt: skip
    graph = helper.make_graph(
        [node], kind.lower(),
        [helper.make_tensor_value_info(n, value[n], list(feeds[n].shape)) for n in feeds],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in outputs],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    return model, feeds


def onnx_case(tmp: Path, name: str, kind: str, direction: str, lengths: list[int],
              clip: float | None = None, by_onnx: bool = True, **attrs):  # fmt: skip
    import onnx
    from onnx.reference import ReferenceEvaluator

    model, feeds = _onnx_model(kind, direction, lengths, clip, **attrs)
    path = tmp / f"{name}.onnx"
    onnx.save(model, path)
    converted = ov.convert_model(str(path))
    if by_onnx:
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:
        compiled = ov.Core().compile_model(converted, "CPU", CPU)
        expected = list(compiled(feeds).values())
    return converted, feeds, expected


def main() -> None:
    import tempfile

    os.environ.setdefault("CI", "true")  # OpenVINO's telemetry slows conversion tenfold
    saved: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        made = {
            "keras_rnn": keras_rnn(tmp),
            "onnx_lstm": onnx_case(tmp, "onnx_lstm", "LSTM", "forward", [6, 6, 6]),
            "onnx_gru": onnx_case(tmp, "onnx_gru", "GRU", "forward", [6, 6, 6],
                                  linear_before_reset=1),
            "onnx_rnn": onnx_case(tmp, "onnx_rnn", "RNN", "forward", [6, 6, 6]),
            "onnx_lstm_bidirectional": onnx_case(
                tmp, "onnx_lstm_bidirectional", "LSTM", "bidirectional", [6, 4, 1], clip=1.5,
                by_onnx=False),
            "onnx_gru_reverse": onnx_case(
                tmp, "onnx_gru_reverse", "GRU", "reverse", [2, 6, 5], by_onnx=False),
        }  # fmt: skip
        for name, (model, feeds, expected) in made.items():
            # The CPU plugin at f32 agrees with every expected value written here.
            compiled = ov.Core().compile_model(model, "CPU", CPU)
            got = list(compiled(feeds).values())
            for want, have in zip(expected, got, strict=True):
                np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
            ov.save_model(model, HERE / f"{name}.xml", compress_to_fp16=False)
            for key, value in feeds.items():
                saved[f"{name}/in/{key}"] = value
            for index, value in enumerate(expected):
                saved[f"{name}/out/{index}"] = np.asarray(value, np.float32)
    np.savez_compressed(HERE / "expected.npz", **saved)


if __name__ == "__main__":
    main()
