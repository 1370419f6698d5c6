"""One-pool IR files written as text, for the pooling tests."""

from __future__ import annotations

import numpy as np

PRECISIONS = {"f32": "FP32", "f16": "FP16", "bf16": "BF16", "f64": "FP64", "boolean": "BOOL",
              "u8": "U8", "i8": "I8", "i32": "I32", "i64": "I64", "u16": "U16", "i16": "I16",
              "u32": "U32", "u64": "U64"}  # fmt: skip

def write_pool(path, op: str, opset: str, attrs: dict, shape, et: str = "f32", outputs: int = 1,
               out_shape=None, target=None):  # fmt: skip
    """A Parameter -> pool -> Result(s) IR, with ``target`` as an adaptive pool's Const."""
    dims = "".join(f"<dim>{d}</dim>" for d in shape)
    out_dims = "".join(f"<dim>{d}</dim>" for d in out_shape)
    data = " ".join(f'{k}="{v}"' for k, v in attrs.items())
    prec = PRECISIONS.get(et, et)
    layers = [f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape='
              f'"{",".join(map(str, shape))}" element_type="{et}"/><output><port id="0" '
              f'precision="{prec}" names="x">{dims}</port></output></layer>']  # fmt: skip
    edges = ['<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>']
    ports = f'<port id="0">{dims}</port>'
    weights = b""
    if target is not None:
        weights = np.asarray(target, np.int64).tobytes()
        layers.append(f'<layer id="9" name="t" type="Const" version="opset1"><data element_type='
                      f'"i64" shape="{len(target)}" offset="0" size="{len(weights)}"/><output>'
                      f'<port id="0" precision="I64"><dim>{len(target)}</dim></port></output>'
                      "</layer>")  # fmt: skip
        edges.append('<edge from-layer="9" from-port="0" to-layer="1" to-port="1"/>')
        ports += f'<port id="1"><dim>{len(target)}</dim></port>'
    outs = "".join(f'<port id="{2 + i}" precision="{prec if i == 0 else "I64"}">{out_dims}</port>'
                   for i in range(outputs))  # fmt: skip
    layers.append(f'<layer id="1" name="pool" type="{op}" version="{opset}"><data {data}/>'
                  f"<input>{ports}</input><output>{outs}</output></layer>")  # fmt: skip
    for i in range(outputs):
        layers.append(f'<layer id="{3 + i}" name="r{i}" type="Result" version="opset1"><input>'
                      f'<port id="0">{out_dims}</port></input></layer>')  # fmt: skip
        edges.append(f'<edge from-layer="1" from-port="{2 + i}" to-layer="{3 + i}" to-port="0"/>')
    path.write_text(f'<?xml version="1.0"?>\n<net name="m" version="11"><layers>{"".join(layers)}'
                    f'</layers><edges>{"".join(edges)}</edges></net>\n')  # fmt: skip
    path.with_suffix(".bin").write_bytes(weights)
    return path
