"""irrun: run and check OpenVINO IR models with NumPy.

>>> import irrun
>>> m = irrun.load("models/pooling_chain.xml")
>>> [o.name for o in m.outputs]
['pooled', 'indices']
"""

from .errors import Diagnostic, IrrunError, LayerRef, Location
from .model import LayerRun, Model, TensorSpec, load, validate

__version__ = "0.1.0"
__all__ = [
    "Diagnostic",
    "IrrunError",
    "LayerRef",
    "LayerRun",
    "Location",
    "Model",
    "TensorSpec",
    "__version__",
    "load",
    "validate",
]
