"""How much memory a run needs, known from shapes before anything is allocated.

Every tensor's byte size follows from its inferred shape and element type, and the
executor's schedule says when each is made and dropped: so the peak of a run is
known up front.  A run whose peak exceeds the budget (by default the memory this
process may still use) is refused with one line naming the layer where it peaks,
instead of dying halfway in a ``MemoryError`` or being killed by the system.

The plan counts every tensor a layer outputs as new memory, except Consts (views of
the memory-mapped ``.bin``) and values folded at load (:mod:`.folding`, held for the
model's life): views that some ops return (Reshape, Squeeze...) are
counted as if copied, and a kernel's scratch space is not counted.  The check errs on
the side of refusing a run that would only just have fitted.

A dim that only the run decides (NonZero's count, a Range of computed bounds) counts at
its upper bound when the shape rule knows one (NonZero: its input's element count), so
the plan is a bound on the run's peak; a tensor with a dim of no known upper bound counts
as nothing, and a ``MemoryError`` from it is reported at its layer.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
from collections.abc import Sequence
from dataclasses import dataclass

# NumPy indexes bytes with a signed 64-bit integer: no machine holds a larger array.
IMPOSSIBLE_BYTES = 2**63

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(i?b)?\s*", re.I)


def parse_size(text: str) -> int | None:
    """Bytes from ``512M``, ``4G``, ``1.5GiB``, ``1000000`` (binary units); None for ``none``.

    >>> parse_size("4G"), parse_size("1.5GiB"), parse_size("512m"), parse_size("1000")
    (4294967296, 1610612736, 536870912, 1000)
    >>> parse_size("none") is None
    True
    >>> parse_size("4 apples")
    Traceback (most recent call last):
    ValueError: '4 apples' is not a size (expected bytes, 512M, 4G, 1T... or none)
    """
    if text.strip().lower() in ("none", "unlimited"):
        return None
    m = _SIZE_RE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"'{text}' is not a size (expected bytes, 512M, 4G, 1T... or none)"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_bytes(n: int) -> str:
    """``n`` bytes for people, in binary units to three significant digits.

    >>> format_bytes(1000), format_bytes(4 * 2**30), format_bytes(3 * 2**62)
    ('1000 bytes', '4.00 GiB', '12.0 EiB')
    """
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        value /= 1024
        if value < 999.5 or unit == "EiB":
            break
    digits = 2 if value < 9.995 else 1 if value < 99.95 else 0
    return f"{value:.{digits}f} {unit}"


def available_memory() -> int | None:
    """The bytes this process may still allocate, or None when nothing says.

    The least of what the kernel reports as available (``MemAvailable``: free memory
    plus caches it can drop), the room left under the cgroup's limit (a container's
    ``memory.max``), and the room left under the process's address-space limit
    (``ulimit -v``).
    """
    found: list[int] = []
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # not on every system
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    cgroup = _cgroup_room()
    if cgroup is not None:
        found.append(cgroup)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append(max(0, soft - _address_space_used()))
    return min(found) if found else None


def _cgroup_room() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def _address_space_used() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tensor_bytes(shape: Sequence[int], itemsize: int) -> int:
    """Bytes of a dense array (a Python int: no overflow, however large the dims)."""
    count = itemsize
    for d in shape:
        count *= d
    return count


@dataclass(frozen=True)
class Peak:
    """The most memory a run holds at once: at which step, and its largest output there."""

    bytes: int
    step: int  # index into the schedule, -1 when the run allocates nothing
    slot: int  # the largest output of that step
    slot_bytes: int


def plan_peak(
    steps: Sequence[tuple[Sequence[int], Sequence[int], bool]], sizes: Sequence[int | None]
) -> Peak:
    """The peak of a schedule of ``(outputs, frees, allocates)`` steps.

    A step holds what is alive before it plus its own outputs; then what it is the last
    reader of is dropped.  ``sizes`` gives each slot's bytes (None: unknown, counted as
    nothing: the executor then reports the ``MemoryError`` at the layer, if it comes).

    >>> plan_peak([((0,), (), True), ((1,), (0,), True), ((2,), (1,), True)], [4, 10, 3])
    Peak(bytes=14, step=1, slot=1, slot_bytes=10)
    """
    live = 0
    held: dict[int, int] = {}  # slot -> the bytes counted for it
    best = Peak(0, -1, -1, 0)
    for i, (outs, frees, allocates) in enumerate(steps):
        made = [(sizes[s] or 0, s) for s in outs] if allocates else []
        total = sum(b for b, _ in made)
        if made and live + total > best.bytes:
            big, slot = max(made, key=lambda m: m[0])  # the first of equals
            best = Peak(live + total, i, slot, big)
        live += total
        held.update((s, b) for b, s in made)
        live -= sum(held.pop(s, 0) for s in frees)
    return best
