"""The fast layer: kernels that compute what the reference kernels of :mod:`irrun.ops`
compute, faster, and the machinery they need (threads, BLAS, kept memory).

irrun's values are defined by the reference kernels: one plain, whole-tensor NumPy
function per op, in :mod:`irrun.ops`.  A fast kernel is registered here against the op
versions it implements, with the condition under which it applies stated in words.  It
takes the reference kernel's arguments and returns the same outputs, or
``NotImplemented`` where its condition does not hold, and then the reference kernel
runs.  Each one is tested against its reference (``tests/fast/``): bit for bit where it
adds and multiplies in the same order (``exact``), within ``bound`` where it does not
(BLAS sums a product in an order of its own).

A default run takes each op's kernel from :func:`kernel_for`; a reference run
(``irrun.load(..., reference=True)``, ``irrun run --reference``) takes ``op.kernel``
itself, and no pass rewrites its plan.  Nothing in :mod:`irrun.ops` imports this
package (``tests/test_layers.py`` fails if something does).
"""

# Each module registers its fast kernels when imported.
from . import (  # noqa: F401
    activations,
    adaptive_pool,
    attention,
    avg_pool,
    convert,
    convolution,
    detection,
    gather,
    matmul,
    max_pool,
    movement,
    normalization,
    pool_chain,
    reduction,
    roi_align,
    scatter,
    slicing,
)

# isort: split
# Last: it gives each elementwise op that no module above gave a fast kernel its thread split.
from . import elementwise  # noqa: F401
from .registry import (
    Dispatch,
    FastKernel,
    fast_kernel,
    fast_kernels,
    kernel_for,
    register_fast,
    scratch_bytes,
)

__all__ = ["Dispatch", "FastKernel", "fast_kernel", "fast_kernels", "kernel_for",
           "register_fast", "scratch_bytes"]
