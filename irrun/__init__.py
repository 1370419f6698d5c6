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

from .core.generation import Generation, generate
from .core.model import LayerRun, Model, Results, TensorSpec, load, validate
from .core.state import Request
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

# The tools' Python faces (neither imports OpenVINO until a backend asks for it).
from .tools.benchmark import BenchmarkResult, benchmark
from .tools.compare import compare
from .tools.compare_results import Report
from .version import __version__

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
    "generate",
    "load",
    "validate",
]
