"""irrun: run and check OpenVINO IR models with NumPy.

>>> import irrun
>>> m = irrun.load("models/pooling_chain.xml")
>>> [o.name for o in m.outputs]
['pooled', 'indices']

A problem with a file or its values raises :class:`IrrunError`; a malformed argument
(not the file's fault) raises :class:`UsageError`, a kind of :class:`IrrunError`, which
the command line reports with exit code 2:

>>> try:
...     irrun.validate("models/pooling_chain.xml", shapes="image[1,3")
... except irrun.UsageError as exc:
...     print(str(exc)[:32])
--shape: cannot read 'image[1,3'
"""

import importlib
from typing import TYPE_CHECKING

from .errors import (
    Diagnostic,
    InternalError,
    IrrunError,
    IrrunException,
    KernelError,
    LayerRef,
    Location,
    MissingFile,
    UsageError,
)
from .version import __version__

# What is imported on first use (PEP 562): name -> the module defining it.  NumPy, the
# kernels and networkx take most of a second to import, which `irrun --version`, `irrun
# --help` and a program that only catches irrun's errors have no use for.
_LAZY = {
    "Generation": "irrun.core.generation",
    "generate": "irrun.core.generation",
    "LayerRun": "irrun.core.model",
    "Model": "irrun.core.model",
    "TensorSpec": "irrun.core.model",
    "load": "irrun.core.model",
    "save": "irrun.core.model",
    "validate": "irrun.core.model",
    "Request": "irrun.core.state",
    "Results": "irrun.core.model",
    # The tools' Python faces (neither imports OpenVINO until a backend asks for it).
    "BenchmarkResult": "irrun.tools.benchmark",
    "benchmark": "irrun.tools.benchmark",
    "compare": "irrun.tools.compare",
    "Report": "irrun.tools.compare_results",
    # Surgery (irrun.edit): a subgraph, and the smallest subgraph that fails a check.
    "extract": "irrun.edit.extract",
    "reduce": "irrun.edit.reduce",
}

if TYPE_CHECKING:  # what type checkers and editors see
    from .core.generation import Generation, generate
    from .core.model import LayerRun, Model, Results, TensorSpec, load, save, validate
    from .core.state import Request
    from .edit.extract import extract
    from .edit.reduce import reduce
    from .tools.benchmark import BenchmarkResult, benchmark
    from .tools.compare import compare
    from .tools.compare_results import Report


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'irrun' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BenchmarkResult",
    "Diagnostic",
    "Generation",
    "InternalError",
    "IrrunError",
    "IrrunException",
    "KernelError",
    "LayerRef",
    "LayerRun",
    "Location",
    "MissingFile",
    "Model",
    "Report",
    "Request",
    "Results",
    "TensorSpec",
    "UsageError",
    "__version__",
    "benchmark",
    "compare",
    "extract",
    "generate",
    "load",
    "reduce",
    "save",
    "validate",
]
