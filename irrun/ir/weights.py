"""The ``.bin`` weights file: found beside the ``.xml``, memory-mapped, never read whole.

A constant is a read-only view of the map where its offset suits its element type.
OpenVINO packs constants back to back, so a weight often starts at an offset that is no
multiple of its element's size (after an odd-sized constant: the f32 weights of an
optimum-intel Llama export start at 13 modulo 64).  NumPy computes on such unaligned
arrays without SIMD and hands them to no BLAS: a linear layer's product by an unaligned
``[out, in]`` f32 weight ran 30-50 times slower than by the same values aligned.  So a
constant of at least :data:`ALIGNED_FROM` bytes whose offset is not a multiple of its
element's size is read from the file into anonymous memory of its own (page-aligned,
read-only, like the map), once, at load: the same bytes, so the same values.  It is read
with a file read, not through the map, so the process holds its bytes once, not twice.
Smaller unaligned constants (shape constants, biases of small layers) stay views: the
copy would cost more than it saves.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np

from . import element_types
from .element_types import ElementType

# Unaligned constants from this size are read into memory of their own (see above).
ALIGNED_FROM = 64 * 1024


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
        item = et.bits // 8 if et.bits >= 8 else 1  # packed types are read bytewise
        if offset % item and need >= ALIGNED_FROM:
            raw = self._aligned_copy(offset, need)
        else:
            # A plain ndarray view of the map: arrays derived from an np.memmap stay
            # np.memmap, whose Python-level __array_finalize__ then runs at every slice and
            # reshape of a weight in every run (0.4 ms a run of shufflenet_v2's 340 layers).
            raw = self._bytes().view(np.ndarray)[offset : offset + need]
        return element_types.decode(raw, et, count).reshape(shape)

    def raw(self, offset: int, size: int) -> np.ndarray:
        """``size`` bytes at ``offset``, as a view of the map (a packed constant as it lies)."""
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(f"bytes {offset}..{offset + size} are not in {self.path.name}")
        return self._bytes().view(np.ndarray)[offset : offset + size]
    def _aligned_copy(self, offset: int, size: int) -> np.ndarray:
        """``size`` bytes from ``offset``, read into page-aligned anonymous memory.

        An ``mmap.mmap`` holds them, so that what looks for views of the weights (the
        folding's memory count) takes them for weights, as it takes the file's map."""
        memory = mmap.mmap(-1, size)
        with open(self.path, "rb", buffering=0) as f:
            f.seek(offset)
            view = memoryview(memory)
            done = 0
            while done < size:
                got = f.readinto(view[done:])
                if not got:
                    raise ValueError(f"{self.path.name} ended {size - done} bytes early")
                done += got
            view.release()
        raw = np.frombuffer(memory, np.uint8)
        raw.flags.writeable = False
        return raw

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
