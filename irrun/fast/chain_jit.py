"""Chains of elementwise ops compiled by numba into one loop: the fast engine's (:mod:`.jit`).

Where the fast engine is on, an elementwise chain (:class:`irrun.core.passes.
elementwise_chains.ElementwiseChain`) whose ops are all in :data:`OPS`, on f32 or f64 data
of one type, runs as one compiled loop over its output: each element goes through the
whole chain in registers, with no intermediate tensor, where NumPy makes one pass (and
one tensor) per op.  The loop is generated per chain and per *signature* (the element
type, each operand's rank and the axes it is broadcast along), compiled once and cached
on disk (the source is written to a file of irrun's cache folder, so that numba's cache
can key on it; where none is writable the loop is compiled uncached), and the compile is
recorded for ``-v``.  Outputs of at least ``blocks.MIN_SPLIT`` elements run on the run's
threads, ranges of their outermost axis longer than one (the loop releases the GIL).

Same bits as the reference kernels: only ops whose arithmetic numba reproduces exactly
are taken, each operation rounded in the data's type as NumPy rounds it (numba compiles
without fast-math: no reassociation, no fused multiply-add; a result computed in f64 and
rounded to f32, as numba may for a division, is the correctly rounded f32 one, since f64
holds more than twice f32's precision plus two bits).  Maximum and Minimum are the
reference's ``x > y ? x : y`` and ``x < y ? x : y`` (a NaN in ``x`` gives ``y``, a NaN
in ``y`` gives NaN, equal zeros give ``y``), ReLU ``x > 0 ? x : 0`` (NaN and -0 give +0),
Clamp ``t = x > lo ? x : lo; t < hi ? t : hi`` with bounds in the data's type, Abs and
Negative the sign bit, Sqrt, Floor and Ceiling the IEEE operations.  Exp, Tanh, Sigmoid,
Erf, Log and the like are not taken: numba calls another libm than NumPy's SIMD loops,
whose last bits differ; a chain with one of them takes the NumPy path.  Which NaN an
operation on NaNs gives (its payload, its sign) is the CPU's, as in NumPy's scalar loops,
not pinned (tests/support/bits.py).  tests/fast/test_chain_jit.py compares the bits with
the reference kernels over generated chains, broadcasts, NaN, infinities and signed
zeros.
"""

from __future__ import annotations

import hashlib
import importlib.util
import operator
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .. import threads
from . import blocks, jit

# Each op: its operands and the expression of its value (x and y the operands; lo and hi
# Clamp's bounds, z a zero of the data's type).
OPS: dict[str, tuple[int, str]] = {
    "Add": (2, "{x} + {y}"),
    "Subtract": (2, "{x} - {y}"),
    "Multiply": (2, "{x} * {y}"),
    "Divide": (2, "{x} / {y}"),
    "Maximum": (2, "{x} if {x} > {y} else {y}"),
    "Minimum": (2, "{x} if {x} < {y} else {y}"),
    "ReLU": (1, "{x} if {x} > z else z"),
    "Abs": (1, "abs({x})"),
    "Negative": (1, "-{x}"),
    "Sqrt": (1, "np.sqrt({x})"),
    "Floor": (1, "np.floor({x})"),
    "Ceiling": (1, "np.ceil({x})"),
    "Clamp": (1, "CLAMP"),
}
TYPES = (np.dtype(np.float32), np.dtype(np.float64))
RUNNING = -1

_lock = threading.Lock()
_kernels: dict[str, Callable[..., None]] = {}


def takes(parts: Sequence[tuple[str, SimpleNamespace, tuple[int, ...]]]) -> bool:
    """Whether a chain of these (op type, attributes, operands) can be compiled: every op
    in :data:`OPS` with NumPy broadcasting, the running value among each op's operands."""
    for kind, attrs, wiring in parts:
        if kind not in OPS or OPS[kind][0] != len(wiring):
            return False
        if getattr(attrs, "auto_broadcast", "numpy") != "numpy":
            return False
    return True


_DTYPE = operator.attrgetter("dtype")


class Prepared:
    """A chain's compiled loop for operands of given shapes and one element type."""

    def __init__(self, kernel: Callable[..., None], shape: tuple[int, ...], dtype: np.dtype,
                 ranks: list[tuple[int, tuple[int, ...]]], bounds: np.ndarray) -> None:
        self.kernel, self.shape, self.dtype = kernel, shape, dtype
        self.ranks = ranks  # (operand, its shape with the output's rank) where lower
        self.bounds = bounds

    def __call__(self, args: Sequence[np.ndarray]) -> np.ndarray | None:
        """The chain's output, or None where an operand's type is not the one compiled."""
        if set(map(_DTYPE, args)) != {self.dtype}:
            return None
        if self.ranks:
            args = list(args)
            for k, shape in self.ranks:
                args[k] = args[k].reshape(shape)
        out = np.empty(self.shape, self.dtype)
        try:
            if blocks.worth_splitting(out.size):
                self._split(out, args)
            else:
                self.kernel(out, self.bounds, *args)
        except jit.numba().core.errors.NumbaError:  # type: ignore[union-attr]
            # Arguments numba does not type (a byte order of their own): NumPy's path.
            return None
        return out

    def _split(self, out: np.ndarray, args: Sequence[np.ndarray]) -> None:
        """The loop on the run's threads (compiled ``nogil``): ranges of the outermost axis
        longer than one, each operand cut alike where it runs along it.  Each element is
        computed by the same operations: the same bits for any split."""
        ax = next((i for i, d in enumerate(out.shape) if d > 1), 0)
        inner = out.size // out.shape[ax]
        lead = (slice(None),) * ax

        def block(a: int, b: int) -> None:
            part = (*lead, slice(a, b))
            self.kernel(out[part], self.bounds,
                        *(x[part] if x.shape[ax] != 1 else x for x in args))

        threads.map_blocks(block, out.shape[ax], -(-blocks.MIN_BLOCK // max(inner, 1)))


def prepare(parts: Sequence[tuple[str, SimpleNamespace, tuple[int, ...]]],
            args: Sequence[np.ndarray], shape: tuple[int, ...]) -> Prepared | None:
    """The chain's loop for operands like ``args`` and an output of ``shape`` (their
    broadcast), compiled (or found compiled), or None where it does not compile: data
    other than one type of :data:`TYPES`, or a 0-D output."""
    dtype = args[0].dtype
    if dtype not in TYPES or any(a.dtype != dtype for a in args) or not shape:
        return None
    n = len(shape)
    # Per operand, which of the output's axes it runs along (the others it is broadcast on).
    along = tuple(tuple(i >= n - a.ndim and a.shape[i - (n - a.ndim)] != 1 for i in range(n))
                  for a in args)
    bounds = np.array([b for kind, attrs, _ in parts if kind == "Clamp"
                       for b in _clamp_bounds(attrs, dtype)] or [0], dtype)
    ranks = [(k, (1,) * (n - a.ndim) + a.shape) for k, a in enumerate(args) if a.ndim < n]
    return Prepared(_kernel(parts, dtype, n, along), shape, dtype, ranks, bounds)


def run(parts: Sequence[tuple[str, SimpleNamespace, tuple[int, ...]]],
        args: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """The chain's output of ``shape`` from ``args`` (:func:`prepare`, then the loop), or
    None where it does not compile."""
    prepared = prepare(parts, args, shape)
    return None if prepared is None else prepared(args)


def _clamp_bounds(attrs: SimpleNamespace, dtype: np.dtype) -> tuple[float, float]:
    with np.errstate(over="ignore"):
        return dtype.type(attrs.min), dtype.type(attrs.max)


def source(parts: Sequence[tuple[str, SimpleNamespace, tuple[int, ...]]], dtype: np.dtype,
           n: int, along: Sequence[Sequence[bool]]) -> str:
    """The Python source of the chain's loop for a signature (numba compiles it)."""
    m = len(along)
    names = ", ".join(f"a{k}" for k in range(m))
    lines = ["import numpy as np", "", "",
             f"def chain(out, bounds, {names}):  # pragma: no cover - runs compiled",
             f"    T = np.{dtype.name}", "    z = T(0)"]
    index = [f"i{d}" for d in range(n)]
    # Each operand is read in the loop of the innermost axis it runs along, before the
    # loops it is broadcast along (numba cannot know that ``out`` is not one of them, so
    # LLVM would not move the read out of the inner loops itself).
    depth = [max((d + 1 for d in range(n) if along[k][d]), default=0) for k in range(m)]
    for d in range(n + 1):
        if d:
            lines.append("    " * d + f"for i{d - 1} in range(out.shape[{d - 1}]):")
        for k in range(m):
            if depth[k] == d:
                at = ", ".join(index[e] if along[k][e] else "0" for e in range(n))
                lines.append("    " * (d + 1) + f"x{k} = a{k}[{at}]")
    pad = "    " * (n + 1)
    clamp = 0
    value = ""
    for i, (kind, _attrs, wiring) in enumerate(parts):
        operands = [value if k == RUNNING else f"x{k}" for k in wiring]
        expr = OPS[kind][1]
        if expr == "CLAMP":
            lo, hi = f"bounds[{2 * clamp}]", f"bounds[{2 * clamp + 1}]"
            clamp += 1
            x = operands[0]
            lines.append(f"{pad}t{i} = {x} if {x} > {lo} else {lo}")
            expr = f"t{i} if t{i} < {hi} else {hi}"
        else:
            expr = expr.format(x=operands[0], y=operands[1] if len(operands) > 1 else "")
        lines.append(f"{pad}v{i} = T({expr})")
        value = f"v{i}"
    lines.append(f"{pad}out[{', '.join(index) or '()'}] = {value}")
    return "\n".join(lines) + "\n"


def _kernel(parts, dtype: np.dtype, n: int, along) -> Callable[..., None]:
    text = source(parts, dtype, n, along)
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    found = _kernels.get(key)
    if found is not None:
        return found
    with _lock:
        found = _kernels.get(key)
        if found is None:
            kinds = "+".join(dict.fromkeys(kind for kind, _, _ in parts))
            name = f"chain of {len(parts)} ({kinds if len(kinds) < 40 else kinds[:37] + '...'})"
            found = _kernels[key] = jit.compile(_load(text, key), name, error_model="numpy")
    return found


def _load(text: str, key: str) -> Callable[..., None]:
    """The function ``chain`` of ``text``, from a file of irrun's cache folder (numba's
    disk cache needs one), or made in memory where no folder is writable."""
    for folder in _folders():
        path = folder / f"irrun_chain_{key}.py"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                temporary = path.with_suffix(f".{os.getpid()}.tmp")
                temporary.write_text(text)
                os.replace(temporary, path)
        except OSError:
            continue
        name = f"irrun_chain_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # numba's disk cache finds a function's globals through its module's name.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module.chain
    scope: dict[str, object] = {}
    exec(compile(text, f"<irrun chain {key}>", "exec"), scope)
    return scope["chain"]  # type: ignore[return-value]


def _folders() -> list[Path]:
    """Where the generated sources go: ``$NUMBA_CACHE_DIR/irrun``, else the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``)/irrun/chains."""
    found = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        found.append(Path(os.environ["NUMBA_CACHE_DIR"]) / "irrun")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    found.append(Path(base) / "irrun" / "chains")
    return found
