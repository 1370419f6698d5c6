"""No ops: :func:`~irrun.ops.convert.convert` under its old address, for the modules
that still import it from here (elementwise, unary_math) until their rework lands."""

from .convert import convert as convert
