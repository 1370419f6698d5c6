"""The fast engine's plumbing (irrun.fast.jit): whether it is on, the warning when it is
asked for without numba, the compiles it records and ``irrun ... -v``'s lines about them,
and a read-only install (no writable cache directory)."""

from __future__ import annotations

import builtins
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.fast import jit

TREE = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}


@pytest.fixture
def env(monkeypatch):
    """Sets IRRUN_JIT (None: unset) and whether numba imports, as at start-up."""
    real_import = builtins.__import__

    def set_env(value: str | None, numba: bool = True) -> None:
        if value is None:
            monkeypatch.delenv("IRRUN_JIT", raising=False)
        else:
            monkeypatch.setenv("IRRUN_JIT", value)

        def importer(name, *args, **kwargs):
            if name == "numba" or name.startswith("numba."):
                raise ImportError("No module named 'numba'")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", real_import if numba else importer)
        jit.reset()

    yield set_env
    monkeypatch.undo()
    jit.reset()


def _numba_installed() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


needs_numba = pytest.mark.skipif(not _numba_installed(), reason="numba not installed")


@pytest.mark.parametrize(("value", "on"), [
    (None, True), ("", True), ("1", True), ("true", True), ("YES", True), ("on", True),
    ("0", False), ("false", False), ("No", False), (" off ", False), ("maybe", True),
])  # fmt: skip
@needs_numba  # the switch is read with numba importing for real
def test_on_by_default_with_numba_and_off_with_zero(env, value, on):
    env(value, numba=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit.enabled() is on


@pytest.mark.parametrize("value", [None, "", "0", "off"])
def test_without_numba_it_is_off_and_silent_unless_asked(env, value):
    env(value, numba=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit.enabled() is False


def test_asked_for_without_numba_warns_once_naming_the_extra(env):
    env("1", numba=False)
    with pytest.warns(RuntimeWarning) as caught:
        assert jit.enabled() is False
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("IRRUN_JIT asks for the fast engine but numba cannot be imported ")
    assert message.endswith("Install the optional extra: pip install 'irrun[fast]'")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit.enabled() is False  # decided once: no second warning
        assert jit.numba() is None


def test_the_extras_fast_and_jit_are_the_same():
    import tomllib

    with open(Path(__file__).parents[2] / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert extras["fast"] == extras["jit"] == ["numba>=0.59"]


def test_describe():
    assert (jit.Compiled("depthwise flat", "f32", 0.314, False, True).describe()
            == "jit: depthwise flat f32 compiled in 0.31 s (cached on disk)")
    assert (jit.Compiled("NMS pairs", "f32", 0.0123, True, True).describe()
            == "jit: NMS pairs f32 loaded from the disk cache in 0.01 s")
    assert (jit.Compiled("chain", "", 0.5, False, False).describe()
            == "jit: chain compiled in 0.50 s (no writable cache directory: not cached)")


def _twice(x, out):  # pragma: no cover - runs compiled
    for i in range(x.shape[0]):
        out[i] = x[i] + x[i]


@needs_numba
def test_each_compile_is_recorded_once_per_argument_types(env):
    env(None)
    since = len(jit.compiled())
    kernel = jit.compile(_twice, "twice")
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    kernel(x, out)
    kernel(x, out)  # compiled already: nothing more recorded
    assert out.tolist() == [0, 2, 4, 6, 8]
    kernel(x.astype(np.int64), out.astype(np.int64))
    got = jit.compiled(since)
    assert [(c.name, c.types) for c in got] == [("twice", "f32"), ("twice", "i64")]
    assert all(c.seconds > 0 and c.cached for c in got)


# A kernel run where no folder is writable: numba tries each cache directory by making a
# temporary file in it (its _CacheLocator.ensure_cache_path), which fails here as on a
# read-only install and home, even for root (whom file modes do not stop).
_READ_ONLY = """
import sys, tempfile
def refused(*args, **kwargs):
    raise PermissionError(13, "Read-only file system")
tempfile.TemporaryFile = refused
sys.path.insert(0, sys.argv[1])
import numpy as np
from irrun.fast import jit
import kernel
f = jit.compile(kernel.twice, "twice")
out = np.empty(3, np.float32)
f(np.arange(3, dtype=np.float32), out)
print(out.tolist(), [c.describe() for c in jit.compiled()])
"""


@needs_numba
def test_a_read_only_install_runs_uncached(tmp_path):
    (tmp_path / "kernel.py").write_text(
        "def twice(x, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] + x[i]\n")
    environ = {k: v for k, v in TREE.items() if not k.startswith("NUMBA_")}
    done = subprocess.run([sys.executable, "-c", _READ_ONLY, str(tmp_path)],
                          env={**environ, "IRRUN_JIT": "1"}, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"\[0\.0, 2\.0, 4\.0\] \['jit: twice f32 compiled in \d+\.\d\d s \(no writable cache "
        r"directory: not cached\)'\]\n", done.stdout)
    assert not list(tmp_path.rglob("*.nbi"))


def _depthwise_model(path: Path) -> None:
    import openvino as ov
    from openvino import opset1

    w = np.random.default_rng(0).standard_normal((8, 1, 1, 3, 3)).astype(np.float32)
    p = opset1.parameter([1, 8, 20, 20], ov.Type.f32, name="x")
    y = opset1.group_convolution(p, opset1.constant(w), [1, 1], [1, 1], [1, 1], [1, 1])
    ov.save_model(ov.Model([y], [p], "dw"), path, compress_to_fp16=False)


_VERBOSE_LINE = (r"irrun: jit: depthwise (flat|channels-last) f32 (compiled in \d+\.\d\d s \(cached on disk\)"
                 r"|loaded from the disk cache in \d+\.\d\d s)")


@needs_numba
def test_verbose_shows_the_run_s_compiles(tmp_path):
    """``irrun MODEL -v`` in a new process: the depthwise kernel is compiled (or loaded
    from numba's disk cache) during the run, and -v says so after the run's line; with
    IRRUN_JIT=0 nothing is compiled and nothing is said."""
    model = tmp_path / "dw.xml"
    _depthwise_model(model)
    for value, compiles in (("", True), ("0", False)):
        done = subprocess.run(
            [sys.executable, "-m", "irrun", str(model), "-v", "--threads", "1"],
            env={**TREE, "IRRUN_JIT": value}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()
        ran = next(i for i, line in enumerate(lines) if line.startswith("irrun: ran 1 time"))
        jit_lines = [line for line in lines if line.startswith("irrun: jit: ")]
        if compiles:
            assert lines[ran + 1 : ran + 2] == jit_lines[:1]
            assert len(jit_lines) == 1 and re.fullmatch(_VERBOSE_LINE, jit_lines[0])
        else:
            assert jit_lines == []
