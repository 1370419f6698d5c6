"""Requests: runs of one model that keep its variables' values from one call to the next.

A stateful model (one with ReadValue and Assign layers, such as an LLM exported by
optimum-intel with its KV cache in variables) reads at each run what its Assigns wrote
at the run before.  :class:`Request` holds those values, as OpenVINO's ``InferRequest``
does; :meth:`irrun.Model.run` holds none, so it stays a pure function of its inputs that
threads may share.  Requests of one model share its weights and its plan: a request
costs only its variables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import IrrunError, Location
from ..ir.dims import format_shape, shape_fits
from ..ir.element_types import ELEMENT_TYPES

# The model (irrun.core.model) makes requests and a request only calls back into it, so
# this module imports nothing of it: ``Model``, ``TensorSpec`` and ``LayerRun`` below are
# that module's.
Model = Any
TensorSpec = Any
LayerRun = Any
Results = Any


class Request:
    """A model's runs with memory: each run reads the variables the previous one wrote.

    >>> import irrun, numpy as np
    >>> req = irrun.load("models/running_sum.xml").create_request()
    >>> for _ in range(3):
    ...     out = req.run({"x": np.ones((1, 4), np.float32)})
    >>> out["sum"]
    array([[3., 3., 3., 3.]], dtype=float32)
    >>> req.query_state()["total"]
    array([[3., 3., 3., 3.]], dtype=float32)
    >>> req.set_state("total", np.full((1, 4), 10, np.float32))
    >>> req.run({"x": np.ones((1, 4), np.float32)})["sum"]
    array([[11., 11., 11., 11.]], dtype=float32)
    >>> req.reset_state()
    >>> req.run({"x": np.ones((1, 4), np.float32)})["sum"]
    array([[1., 1., 1., 1.]], dtype=float32)

    A request is not for two threads at once (make one per thread: they share the
    model's weights).  A run that fails leaves the variables as they were.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self._specs: dict[str, TensorSpec] = {v.name: v for v in model.variables}
        self._values: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        held = sum(int(v.nbytes) for v in self._values.values())
        return (f"<irrun.Request of {str(self.model.path)!r}: {len(self._specs)} variables, "
                f"{len(self._values)} set, {held} bytes>")  # fmt: skip

    def run(
        self,
        feeds: Any,  # what Model.run takes: by name, by position, or one array
        outputs: Sequence[Any] | None = None,
        intermediate: bool = False,
        on_layer: Callable[[LayerRun], None] | None = None,
        cast: bool = False,
    ) -> Results:
        """Run as :meth:`irrun.Model.run` does (the same feeds, ``cast`` and
        :class:`~irrun.Results`), reading and then updating the variables."""
        result, assigned = self.model._execute(feeds, outputs, intermediate, on_layer,
                                               self._values, cast=cast)  # fmt: skip
        self._values.update(assigned)
        # The caller owns what is returned: no output may be the very memory a variable
        # keeps (a model may return what it assigns).
        kept = list(assigned.values())
        for name, value in result.items():
            if any(np.may_share_memory(value, v) for v in kept):
                result[name] = value.copy()
        return result

    @property
    def variables(self) -> list[TensorSpec]:
        """The model's variables (see :attr:`irrun.Model.variables`)."""
        return list(self._specs.values())

    def reset_state(self, name: str | None = None) -> None:
        """Unset every variable (or the one named): the next run reads initial values."""
        if name is None:
            self._values.clear()
        else:
            self._spec(name)
            self._values.pop(name, None)

    def query_state(self) -> dict[str, np.ndarray]:
        """Each variable's value, by id, as copies.

        A variable no run has set yet reads as OpenVINO's do: zeros of its shape, with
        a dynamic dim as 0.
        """
        out = {}
        for name, spec in self._specs.items():
            value = self._values.get(name)
            if value is None:
                out[name] = _unset(spec)
            else:
                out[name] = np.array(value, copy=True)
        return out

    def set_state(self, name: str, value: Any) -> None:
        """Give variable ``name`` a value for the next run to read (copied).

        Its element type must be the variable's and its shape must fit the variable's.
        """
        spec = self._spec(name)
        arr = np.asarray(value)
        where = Location(str(self.model.path))
        if spec.element_type != "dynamic" and str(arr.dtype) != _dtype_name(spec):
            raise IrrunError(f"variable '{name}' is {spec.element_type} (numpy "
                             f"{_dtype_name(spec)}), not {arr.dtype}", where)  # fmt: skip
        if not shape_fits(spec.shape, arr.shape):
            raise IrrunError(f"variable '{name}' has shape {format_shape(spec.shape)}, which "
                             f"{format_shape(arr.shape)} does not fit", where)  # fmt: skip
        self._values[name] = np.array(arr, copy=True)

    def _spec(self, name: str) -> TensorSpec:
        spec = self._specs.get(name)
        if spec is None:
            known = ", ".join(self._specs) or "none: the model keeps no state"
            raise IrrunError(f"no variable named '{name}' (variables: {known})",
                             Location(str(self.model.path)))  # fmt: skip
        return spec


def _dtype_name(spec: TensorSpec) -> str:
    return str(ELEMENT_TYPES[spec.element_type].dtype)


def _unset(spec: TensorSpec) -> np.ndarray:
    shape = tuple(d if isinstance(d, int) else d.lo for d in (spec.shape or ()))
    dtype = np.float32 if spec.element_type == "dynamic" else _dtype_name(spec)
    return np.zeros(shape, dtype)
