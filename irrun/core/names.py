"""The names a model's tensors are shown under, and every name each answers to.

One rule names every tensor in what irrun writes and reads (``run -o``, ``--dump-dir``,
``--output-dir``, compare's references, ``Model.run``'s results): see :func:`tensor_name`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.records import Layer, Port
from .graph import LayerGraph


def tensor_name(layer: Layer, port: Port, result: str | None = None) -> str:
    """The name of ``layer``'s output ``port``: its first tensor name; else, for a tensor
    that is a model output (``result``, the name of the first Result it feeds), that
    Result's name, as OpenVINO names such a tensor when it saves a model; else the
    layer's name, ``NAME:PORT`` for a layer with several outputs.

    So a model output has the same name in ``-o`` files, dumps and ``Model.outputs``
    whether or not its tensor has a name (``ov.convert_model`` often leaves it without).

    >>> relu = Layer("5", "Relu_6", "ReLU", "opset1", 1, outputs=[Port(1, 2)])
    >>> tensor_name(relu, relu.outputs[0]), tensor_name(relu, relu.outputs[0], "Result_7")
    ('Relu_6', 'Result_7')
    """
    if port.names:
        return port.names[0]
    if result is not None:
        return result
    if len(layer.outputs) == 1:
        return layer.name
    return f"{layer.name}:{port.id}"


def result_names(lg: LayerGraph) -> dict[tuple[str, int], str]:
    """The name of the first Result (in run order) each layer output feeds, by (layer id,
    port id)."""
    found: dict[tuple[str, int], str] = {}
    for lid in lg.order:
        layer = lg.layers[lid]
        if layer.type == "Result" and layer.inputs:
            src = lg.sources.get((lid, layer.inputs[0].id))
            if src is not None:
                found.setdefault((src.layer, src.port), layer.name)
    return found


@dataclass(slots=True)
class TensorNames:
    """The name each layer output is shown under, and every name a tensor answers to."""

    by_port: dict[tuple[str, int], str]  # (layer id, port id) -> its name
    by_slot: dict[int, str]
    slots: dict[str, int]  # any accepted name -> slot

    @staticmethod
    def index(lg: LayerGraph, plan_slots: dict[tuple[str, int], int]) -> TensorNames:
        names = TensorNames({}, {}, {})
        slots = names.slots
        results = result_names(lg)
        for lid in lg.order:
            layer = lg.layers[lid]
            for port in layer.outputs:
                slot = plan_slots[(lid, port.id)]
                for name in port.names:
                    slots.setdefault(name, slot)
                shown = tensor_name(layer, port, results.get((lid, port.id)))
                slots.setdefault(shown, slot)
                names.by_port[(lid, port.id)] = shown
                names.by_slot[slot] = shown
            if layer.outputs:
                slots.setdefault(layer.name, plan_slots[(lid, layer.outputs[0].id)])
            for port in layer.outputs:
                slots.setdefault(f"{layer.name}:{port.id}", plan_slots[(lid, port.id)])
        return names
