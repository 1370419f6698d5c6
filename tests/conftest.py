"""Settings shared by the test modules.

Hypothesis draws new examples on every run here, so that over time it finds what a
fixed set would not; with CI set (as CI machines set it) it draws the same ones
every time, so that a run's verdict is the code's and not the draw's.  A case
found locally is kept in .hypothesis/ and replayed until it passes.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Every op registered before any test runs, as irrun.load does on first use: `import irrun` is
# lazy, so a test that looks an op up in the registry would otherwise depend on whether an
# earlier test in its process happened to load a model (pytest-xdist deals tests out freely).
import irrun.core.subgraphs  # If, Loop and TensorIterator register there
import irrun.ops  # noqa: F401

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The script that makes tests/torch_models needs PyTorch, which the tests do not.
collect_ignore = ["torch_models/make_torch_models.py", "torch_models/make_quickstart.py"]


@pytest.fixture(scope="session")
def core():
    """One OpenVINO runtime for the tests that compare with its CPU plugin (configured as
    ``support.ov_oneop.CPU_CONFIG``: f32, one thread)."""
    ov = pytest.importorskip("openvino")
    return ov.Core()


@pytest.fixture(autouse=True)
def _idle_machine(monkeypatch):
    """An idle machine, as far as irrun can tell: the threads a run uses by default and
    the busy machine's warning of ``benchmark`` and ``--profile`` follow the load
    average, which other work on the machine moves, and a test's verdict must not.
    Tests of that rule set the load themselves."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0), raising=False)
    from irrun import threads

    threads.default.cache_clear()
    yield
    threads.default.cache_clear()


@pytest.fixture
def without_ops(monkeypatch):
    """``without_ops("BinaryConvolution", ...)``: the test runs as if irrun lacked those op
    types (their registrations are taken out of the registry until it ends), so that the
    paths for an op irrun does not run stay tested whatever ops it runs."""
    from irrun.ir import registry

    def remove(*types: str) -> None:
        for name in types:
            monkeypatch.delitem(registry._REGISTRY, name.lower(), raising=False)

    return remove
