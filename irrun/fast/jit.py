"""The optional fast engine's plumbing: numba, whether it is used, and its compiled kernels.

Every kernel compiled by numba goes through here (:mod:`.conv_jit`, :mod:`.nms_jit`,
:mod:`.chain_jit`): numba is imported once, each kernel is compiled with numba's on-disk
cache, and each compile (or load from that cache) is recorded with its time, which
``irrun ... -v`` prints (:func:`compiled`).

**On by default where numba is installed.**  numba is the optional extra
``pip install 'irrun[fast]'`` (``irrun[jit]`` is the same, its former name).  Installing
it is the request: a user who installs an accelerated extra (onnxruntime's providers,
optimum's backends) expects it to be used without a second switch, and nothing is traded
for it, since every compiled kernel gives its NumPy kernel's bits (each module says how,
and its tests compare them).  The environment variable ``IRRUN_JIT``, read once
(:func:`enabled`), overrides: ``0`` (``false``, ``no``, ``off``) keeps the NumPy kernels,
for a run that must not pay a first compile, or to rule the engine out; ``1`` (``true``,
``yes``, ``on``) asks for it, and warns once, naming the extra, when numba cannot be
imported (the run then takes the NumPy kernels, with the same values).  Without numba and
without the variable, irrun is silent: the default install is complete.

**Compiles are cached on disk.**  A kernel compiles once per process at its first call
with new argument types (about 0.2-0.4 s each), and numba's cache (``cache=True``) keeps
the machine code for the next process, which loads it in milliseconds.  numba writes the
cache into ``__pycache__`` next to the module when that directory is writable, else into
the user's cache directory (``~/.cache/numba``), or ``NUMBA_CACHE_DIR`` when set; where
none is writable (a read-only install and home) the kernel is compiled without the cache,
every process again (:func:`compile`).  A cache is keyed by the source file's time stamp and
the CPU, so an upgrade or another machine compiles anew.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

ENV = "IRRUN_JIT"
INSTALL_HINT = "pip install 'irrun[fast]'"
_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Compiled:
    """One compile of a kernel for one set of argument types: ``name`` (``depthwise
    flat``), ``types`` (the element type of its first array, ``f32``), its ``seconds``,
    whether it was ``loaded`` from the disk cache instead of compiled, and whether the
    kernel has a disk cache (``cached``) that keeps it for the next process."""

    name: str
    types: str
    seconds: float
    loaded: bool
    cached: bool

    def describe(self) -> str:
        """A line for ``-v``: ``jit: depthwise flat f32 compiled in 0.31 s (cached on disk)``."""
        what = f"jit: {self.name} {self.types}".rstrip()
        if self.loaded:
            return f"{what} loaded from the disk cache in {self.seconds:.2f} s"
        where = "cached on disk" if self.cached else "no writable cache directory: not cached"
        return f"{what} compiled in {self.seconds:.2f} s ({where})"


_compiled: list[Compiled] = []
_lock = threading.Lock()


def compiled(since: int = 0) -> tuple[Compiled, ...]:
    """The compiles of this process so far, in order, from the ``since``-th
    (``len(compiled())`` before a run, then ``compiled(that)`` after it: the run's)."""
    with _lock:
        return tuple(_compiled[since:])


def setting() -> bool | None:
    """What ``IRRUN_JIT`` says: True (asked for), False (turned off), None (not set, or
    a value that says neither: the default)."""
    value = os.environ.get(ENV, "").strip().lower()
    return True if value in _ON else False if value in _OFF else None


@functools.cache
def numba() -> ModuleType | None:
    """numba, imported once; None where it cannot be (one warning if ``IRRUN_JIT`` asked
    for it)."""
    try:
        import numba as module
    except ImportError as e:
        if setting():
            warnings.warn(
                f"{ENV} asks for the fast engine but numba cannot be imported ({e}): irrun "
                f"runs its NumPy kernels (the same values, slower). Install the optional "
                f"extra: {INSTALL_HINT}", RuntimeWarning, stacklevel=3)
        return None
    return module


@functools.cache
def enabled() -> bool:
    """Whether the compiled kernels run: numba importable and ``IRRUN_JIT`` not ``0``.
    Decided once per process (``reset()`` decides again, for tests)."""
    return setting() is not False and numba() is not None


def reset() -> None:
    """Read ``IRRUN_JIT`` and look for numba again (tests that change them)."""
    enabled.cache_clear()
    numba.cache_clear()


def compile(fn: Callable[..., Any], name: str, **options: Any) -> Callable[..., Any]:
    """``fn`` compiled by numba (``njit``: no Python objects, no fast-math, so no
    reassociation and no fused multiply-add), releasing the GIL and cached on disk,
    recording each compile under ``name``; numba must be there (:func:`enabled`).

    ``options`` go to ``njit`` (``error_model="numpy"``: a float division by zero gives
    inf or NaN as in NumPy).  Where no cache directory is writable, numba refuses
    ``cache=True`` at once; the kernel is then compiled without it.
    """
    module = numba()
    assert module is not None, "compile() needs numba: check enabled() first"
    try:
        dispatcher = module.njit(cache=True, nogil=True, **options)(fn)
        cached = True
    except RuntimeError:  # "cannot cache function ...: no locator available"
        dispatcher = module.njit(cache=False, nogil=True, **options)(fn)
        cached = False
    _record_compiles(dispatcher, name, cached)
    return dispatcher


def _record_compiles(dispatcher: Any, name: str, cached: bool) -> None:
    """Time each compile of ``dispatcher``: numba calls its ``compile(signature)`` for each
    new set of argument types, which loads from the disk cache or compiles; the call is
    timed through an attribute of the instance, which numba looks up before its class's."""
    inner = dispatcher.compile

    def timed(sig: Any) -> Any:
        before = len(dispatcher.overloads)
        hits = sum(dispatcher._cache_hits.values())
        start = time.perf_counter()
        entry = inner(sig)
        seconds = time.perf_counter() - start
        if len(dispatcher.overloads) > before:
            loaded = sum(dispatcher._cache_hits.values()) > hits
            with _lock:
                _compiled.append(Compiled(name, _types(sig), seconds, loaded, cached))
        return entry

    dispatcher.compile = timed


def _types(sig: Any) -> str:
    """The element type of the first array among the argument types, in the IR's
    spelling (``f32``), or ``""``."""
    for t in sig if isinstance(sig, tuple) else getattr(sig, "args", ()):
        dtype = getattr(t, "dtype", None)
        if dtype is not None:
            text = str(dtype)
            for long, short in (("float", "f"), ("uint", "u"), ("int", "i")):
                if text.startswith(long):
                    return short + text[len(long):]
            return "boolean" if text == "bool" else text
    return ""
