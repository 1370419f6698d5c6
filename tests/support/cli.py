"""Running the command line in tests, and small IR files written as text."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from irrun.cli import main

MODELS = Path(__file__).resolve().parents[2] / "models"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """``irrun ARGS``: its exit code (argparse's usage errors included), stdout and stderr."""
    try:
        rc = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return dict(f)


def copy_model(name: str, directory: Path, as_name: str | None = None) -> Path:
    target = directory / f"{as_name or name}.xml"
    shutil.copy(MODELS / f"{name}.xml", target)
    shutil.copy(MODELS / f"{name}.bin", target.with_suffix(".bin"))
    return target


def dims_text(*dims: int) -> str:
    return "".join(f"<dim>{d}</dim>" for d in dims)


def pool_layer(lid: int, name: str, kernel: int, size: int, names: str | None) -> str:
    out = size // kernel
    named = f' names="{names}"' if names is not None else ""
    return f"""
        <layer id="{lid}" name="{name}" type="MaxPool" version="opset1">
            <data strides="{kernel}, {kernel}" pads_begin="0, 0" pads_end="0, 0"
                  kernel="{kernel}, {kernel}" rounding_type="floor" auto_pad="explicit" />
            <input><port id="0" precision="FP32">{dims_text(1, 1, size, size)}</port></input>
            <output><port id="1" precision="FP32"{named}>{dims_text(1, 1, out, out)}</port></output>
        </layer>"""


def parameter_layer(lid: int, name: str, names: str | None, size: int = 4) -> str:
    named = f' names="{names}"' if names is not None else ""
    return f"""
        <layer id="{lid}" name="{name}" type="Parameter" version="opset1">
            <data shape="1,1,{size},{size}" element_type="f32" />
            <output><port id="0" precision="FP32"{named}>{dims_text(1, 1, size, size)}</port></output>
        </layer>"""


def result_layer(lid: int, name: str, size: int) -> str:
    return f"""
        <layer id="{lid}" name="{name}" type="Result" version="opset1">
            <input><port id="0" precision="FP32">{dims_text(1, 1, size, size)}</port></input>
        </layer>"""


def net(name: str, layers: list[str], edges: list[tuple[int, int, int, int]]) -> str:
    edge_xml = "".join(
        f'\n        <edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}" />'
        for a, b, c, d in edges
    )
    return (
        f'<?xml version="1.0"?>\n<net name="{name}" version="11">\n    <layers>'
        + "".join(layers)
        + f"\n    </layers>\n    <edges>{edge_xml}\n    </edges>\n</net>\n"
    )


# One input with two tensor names; a pool whose port is named, feeding one Result, and an
# identity pool whose port has no names, feeding another: its output is keyed by the Result.
NAMES_IR = net(
    "names",
    [
        parameter_layer(0, "param_layer", "x,x_alias"),
        pool_layer(1, "pool", 2, 4, "pooled,pooled_alias"),
        result_layer(2, "named_result", 2),
        pool_layer(3, "identity", 1, 4, None),
        result_layer(4, "unnamed_result", 4),
    ],
    [(0, 0, 1, 0), (1, 1, 2, 0), (0, 0, 3, 0), (3, 1, 4, 0)],
)

# Two inputs: "a" (layer and tensor name alike) and tensor "b" of layer "b_layer".
TWO_INPUTS_IR = net(
    "two",
    [
        parameter_layer(0, "a", "a"),
        parameter_layer(1, "b_layer", "b"),
        pool_layer(2, "pool_a", 2, 4, "out_a"),
        pool_layer(3, "pool_b", 2, 4, None),
        result_layer(4, "result_a", 2),
        result_layer(5, "result_b", 2),
    ],
    [(0, 0, 2, 0), (1, 0, 3, 0), (2, 1, 4, 0), (3, 1, 5, 0)],
)
