"""A pass for sub-graph bodies: a value a Loop accumulates by Concat grows in place.

torchvision's paste-masks loop (Mask R-CNN) builds its output one mask per iteration:

    Parameter(acc) -> Concat(acc, new, axis 0) -> Result --back edge--> Parameter(acc)

Run as written, iteration N's Concat copies the N masks before it (100 masks of
320x320: 2 GB copied, half a second).  In the plan of a Loop's or TensorIterator's
body (:class:`irrun.core.subgraphs.Body`) this pass gives each two-input Concat whose
first input is fed to the body (a Parameter) and whose output the body returns the KV
cache's appending kernel (:mod:`.kv_cache`): it appends ``new`` to a buffer with room
to spare and returns the filled part as a view, which the back edge feeds to the next
iteration's Concat, which finds the buffer behind it.  The buffer doubles when full, so
N iterations copy O(N).

The appending kernel writes only past the part any view of the buffer has shown, and
only when its first input is exactly that part; anything else (a Parameter fed
something else, another dtype) is the plain Concat: the values are the Concat's, bit for
bit.  The buffer may hold up to twice the accumulated value, which the memory plan
does not count.
"""

from __future__ import annotations

from ..steps import Step
from .kv_cache import _Append, _with_kernel


def grow_accumulators(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Give each Concat of a fed value and one more, whose output is kept, the appending
    kernel (see the module's docstring)."""
    made = {slot for step, _ in schedule for slot in step.outputs}
    changed: dict[int, Step] = {}
    for i, (step, _) in enumerate(schedule):
        if step.node.op.type != "Concat" or len(step.inputs) != 2 or len(step.outputs) != 1:
            continue
        if step.inputs[0] in made or step.outputs[0] not in keep:
            continue
        changed[i] = _with_kernel(step, _Append(step.kernel))
    if not changed:
        return schedule
    return [(changed.get(i, step), frees) for i, (step, frees) in enumerate(schedule)]
