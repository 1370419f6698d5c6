"""The names a model's tensors are shown under, and every name each answers to."""

from __future__ import annotations

from dataclasses import dataclass

from .graph import LayerGraph


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
        for lid in lg.order:
            layer = lg.layers[lid]
            for port in layer.outputs:
                slot = plan_slots[(lid, port.id)]
                for name in port.names:
                    slots.setdefault(name, slot)
                if port.names:
                    shown = port.names[0]
                elif len(layer.outputs) == 1:
                    shown = layer.name
                else:
                    shown = f"{layer.name}:{port.id}"
                names.by_port[(lid, port.id)] = shown
                names.by_slot[slot] = shown
            if layer.outputs:
                slots.setdefault(layer.name, plan_slots[(lid, layer.outputs[0].id)])
            for port in layer.outputs:
                slots.setdefault(f"{layer.name}:{port.id}", plan_slots[(lid, port.id)])
        return names
