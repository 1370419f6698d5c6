"""The passes over a plan's schedule: rewrites that compute the same, faster.

The plan applies each pass of :data:`PASSES`, in order, to every schedule it makes
for a run that does not observe each layer (see :class:`irrun.core.executor.Plan`).
A pass is a function ``(schedule, kept slots) -> schedule`` over steps
(:mod:`irrun.core.steps`); it may put one step in the place of several.  To add one,
write it in a module of this package and list it here: neither the executor nor an
op changes.
"""

from __future__ import annotations

from ..steps import Pass
from .constants import gather_constants
from .elementwise_chains import fuse_elementwise_chains
from .inplace import fold_in_place
from .kv_cache import grow_kv_cache
from .pool_chains import fuse_pool_chains
from .rms_norm import fuse_rms_norms
from .rotary import fuse_rotary
from .shared_input import fuse_shared_inputs

# Applied in this order: the constants first, so that every constant is ready before any
# step that a later pass folds into another.
PASSES: tuple[Pass, ...] = (
    gather_constants, grow_kv_cache, fuse_pool_chains, fuse_rms_norms, fuse_rotary,
    fuse_elementwise_chains, fold_in_place, fuse_shared_inputs,
)  # fmt: skip

__all__ = [
    "PASSES", "fold_in_place", "fuse_elementwise_chains", "fuse_pool_chains",
    "fuse_rms_norms", "fuse_rotary", "fuse_shared_inputs", "gather_constants", "grow_kv_cache",
]  # fmt: skip
