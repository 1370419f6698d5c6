"""Collection of the package's own modules (pyproject's testpaths include irrun/, whose
docstrings run as doctests).

irrun.fast.compressed_vector belongs to the optional fast engine: it imports numba and
llvmlite when imported (irrun imports it only with the engine on), so where numba is not
installed, as with the test extras alone, it is not collected.
"""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["irrun/fast/compressed_vector.py"]
