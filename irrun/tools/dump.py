"""Per-layer outputs written to a directory as a run produces them (``--dump-dir``).

Each selected layer's outputs go to ``DIR/NNNN_NAME.npy`` the moment the layer
finishes, so a dump never holds more than the run itself does; ``manifest.json``
maps tensor names to files (names hold ``/`` and ``:``, file names cannot), and
``inputs.npz`` keeps the inputs the run was given, random ones included, so that
the dump can be reproduced or compared elsewhere.  The manifest is written when the
run ends, also when it fails (then with ``"complete": false``).

Consts (the weights) are left out unless ``--dump-type`` names them; Parameters are
in ``inputs.npz``.  A ``--dump-type`` no layer of the model has is refused (``irrun run``
checks it against the model).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..core.model import LayerRun
from ..errors import IrrunError, Location
from ..ir.element_types import dtype_name
from .common import save_npz, write_atomically

MANIFEST = "manifest.json"
INPUTS = "inputs.npz"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The per-layer output options of ``irrun run``."""
    dump = run.add_argument_group("per-layer outputs")
    dump.add_argument(
        "--dump-dir", metavar="DIR",
        help="write every layer's outputs to DIR as .npy files as they are computed, with "
        "manifest.json (tensor name -> file) and inputs.npz (the inputs used)",
    )  # fmt: skip
    dump.add_argument(
        "--dump-type", action="append", metavar="TYPE",
        help="only layers of these op types (MaxPool,AvgPool; repeatable). Consts are "
        "dumped only when named here",
    )  # fmt: skip
    dump.add_argument(
        "--dump-name", metavar="REGEX",
        help="only layers whose name or a tensor name matches this regular expression",
    )  # fmt: skip


def file_name(index: int, tensor: str) -> str:
    """``0007_conv1_weights.npy``: the layer's position, then its name made file-safe.

    >>> file_name(7, "features/conv1:0")
    '0007_features_conv1_0.npy'
    """
    return f"{index:04d}_{_UNSAFE.sub('_', tensor).strip('_')[:100] or 'tensor'}.npy"


class LayerDump:
    """The ``on_layer`` callback of a dumping run: writes what the filters select.

    ``types`` selects layers by op type (``MaxPool``), ``name`` by a regular expression
    searched in the layer's name and its tensors' names; both given, a layer must match
    both.
    """

    def __init__(
        self,
        directory: Path,
        model_path: Path,
        types: list[str] | None = None,
        name: str | None = None,
    ) -> None:
        self.directory = directory
        self.model_path = model_path
        self.types = set(types) if types else None
        try:
            self.name = re.compile(name) if name is not None else None
        except re.error as exc:
            raise ValueError(f"--dump-name {name!r} is not a regular expression: {exc}") from None
        self.entries: list[dict[str, Any]] = []
        self._index: dict[str, int] = {}  # layer id -> its place in the model, from 1

    def prepare(self, feeds: dict[str, np.ndarray], layer_ids: Sequence[str] = ()) -> None:
        """Make the directory, drop the files of an earlier dump there, save the inputs.

        ``layer_ids``, the computed layers in the model's order, number the files: a run
        reports its layers in an order of its own (fused steps, layers folded at load)."""
        self._index = {lid: i for i, lid in enumerate(layer_ids, 1)}
        where = Location(str(self.directory))
        if self.directory.exists() and not self.directory.is_dir():
            raise IrrunError("is a file, expected a directory for --dump-dir", where)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IrrunError(f"cannot create: {exc.strerror or exc}", where) from None
        # An earlier dump's files would sit beside this one's and look like part of it.
        old = self.directory / MANIFEST
        if old.is_file():
            try:
                listed = json.loads(old.read_text()).get("tensors", [])
                stale = [entry["file"] for entry in listed]
            except (ValueError, OSError, KeyError, TypeError, AttributeError):
                stale = []
            for name in stale:
                if isinstance(name, str) and "/" not in name and name.endswith(".npy"):
                    (self.directory / name).unlink(missing_ok=True)
            old.unlink()
        save_npz(self.directory / INPUTS, feeds)

    def selects(self, layer: LayerRun) -> bool:
        ref = layer.ref
        if self.types is not None:
            if ref.type not in self.types:
                return False
        elif ref.type in ("Const", "Parameter"):
            return False
        if self.name is not None:
            names = (ref.name, *layer.outputs)
            return any(self.name.search(n) for n in names)
        return True

    def __call__(self, layer: LayerRun) -> None:
        index = self._index.setdefault(layer.ref.id, len(self._index) + 1)
        if not self.selects(layer):
            return
        for port, (tensor, value) in zip(layer.ports, layer.outputs.items(), strict=True):
            name = file_name(index, tensor)
            if any(e["file"] == name for e in self.entries[-len(layer.ports) :]):
                name = file_name(index, f"{tensor}_port{port}")  # two names made one
            array = np.asarray(value)
            write_atomically(self.directory / name, lambda f, a=array: np.save(f, a), binary=True)
            self.entries.append(
                {
                    "name": tensor,
                    "layer": {"id": layer.ref.id, "name": layer.ref.name,
                              "type": layer.ref.type, "version": layer.ref.version},
                    "port": port,
                    "file": name,
                    "shape": list(array.shape),
                    "dtype": dtype_name(array.dtype),
                }
            )  # fmt: skip

    def summary(self) -> str:
        """``wrote 2 tensors of 2 layers to dump/ (listed in dump/manifest.json)``."""
        layers = len({e["layer"]["id"] for e in self.entries})
        tensors = len(self.entries)
        return (
            f"wrote {tensors} tensor{'s' * (tensors != 1)} of {layers} layer{'s' * (layers != 1)} "
            f"to {self.directory}{os.sep} (listed in {self.directory / MANIFEST})"
        )

    def finish(self, complete: bool) -> None:
        """Write the manifest of what was dumped; ``complete`` is False after a failure."""
        manifest = {
            "model": str(self.model_path),
            "complete": complete,
            "inputs": INPUTS,
            "tensors": self.entries,
        }

        def write(f: IO[str]) -> None:
            json.dump(manifest, f, indent=1)
            f.write("\n")

        write_atomically(self.directory / MANIFEST, write)
