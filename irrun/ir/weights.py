"""The ``.bin`` weights file: found beside the ``.xml``, memory-mapped, never read whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import element_types
from .element_types import ElementType


class Weights:
    """A lazily memory-mapped weights file.

    ``path`` may not exist: a model without Const layers needs no ``.bin``,
    so the error is raised only when a constant is actually read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map: np.ndarray | None = None

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.exists else 0

    def _bytes(self) -> np.ndarray:
        if self._map is None:
            if self.size == 0:
                self._map = np.zeros(0, np.uint8)
            else:
                self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        return self._map

    def read(self, offset: int, size: int, et: ElementType, shape: tuple[int, ...]) -> np.ndarray:
        """Decode one constant. Raises ValueError naming what does not fit."""
        if not self.exists:
            raise ValueError(f"weights file {self.path} does not exist")
        count = int(np.prod(shape, dtype=np.int64))
        if offset < 0 or size < 0:
            raise ValueError(f"offset {offset} and size {size} must not be negative")
        if et.name == "string":
            return self._strings(offset, size, count).reshape(shape)
        need = element_types.byte_size(et, count)
        if size < need:
            raise ValueError(
                f"size {size} bytes is too small for shape {list(shape)} of {et} "
                f"(needs {need} bytes)"
            )
        if offset + size > self.size:
            raise ValueError(
                f"offset {offset} + size {size} = {offset + size} is past the end of "
                f"{self.path.name} ({self.size} bytes)"
            )
        # A plain ndarray view of the map: arrays derived from an np.memmap stay np.memmap,
        # whose Python-level __array_finalize__ then runs at every slice and reshape of a
        # weight in every run (0.4 ms a run of shufflenet_v2's 340 layers).
        raw = self._bytes().view(np.ndarray)[offset : offset + need]
        return element_types.decode(raw, et, count).reshape(shape)

    def raw(self, offset: int, size: int) -> np.ndarray:
        """``size`` bytes at ``offset``, as a view of the map (a packed constant as it lies)."""
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(f"bytes {offset}..{offset + size} are not in {self.path.name}")
        return self._bytes().view(np.ndarray)[offset : offset + size]

    def _strings(self, offset: int, size: int, count: int) -> np.ndarray:
        """A string constant: a count, offsets and bytes (its ``size`` bytes at most)."""
        if offset + size > self.size:
            raise ValueError(
                f"offset {offset} + size {size} = {offset + size} is past the end of "
                f"{self.path.name} ({self.size} bytes)"
            )
        raw = self._bytes().view(np.ndarray)[offset : offset + size]
        try:
            values, _ = element_types.decode_strings(raw, count)
        except ValueError as e:
            raise ValueError(f"size {size} bytes of strings: {e}") from None
        return values

    def __getstate__(self) -> dict:
        # Pickling reopens the map rather than copying the weights.
        return {"path": self.path, "_map": None}
