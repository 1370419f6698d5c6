"""A pass: a KV cache grows in place instead of being copied whole at every step.

An LLM exported by optimum-intel keeps each layer's keys and values in a variable:

    ReadValue(v) -> [Gather(beam_idx, axis 0)] -> Concat(past, new, axis) -> Assign(v)

Run as written, step N's Concat copies the N tokens before it, so N steps copy O(N^2).
In a run that keeps state (a :class:`irrun.core.state.Request`, whose schedule holds
the Assign), this pass gives such a Concat a kernel that appends ``new`` to a buffer
with room to spare and returns the filled part as a view; the next step's ReadValue
gives that view back, and the append finds the buffer behind it.  The buffer doubles
when full, so N steps copy O(N) in all.  A Gather whose indices are ``0..n-1`` (greedy
search's ``beam_idx``) gives its data itself; other indices gather as before, and the
append then starts a new buffer.

Appending writes only past the part any view of the buffer has shown so far (its
``length``), and only when the past is exactly that part: a value a caller holds never
changes.  Anything else (another dtype, a past that is not such a view) is the plain
Concat.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import Any

import numpy as np

from ..steps import Step

# Growth: a new buffer holds twice what it must, and at least this many along the axis.
_MIN_ROOM = 32


class _Buffer:
    """A buffer the append made (held weakly: its views keep it), its axis, and how much
    of it views have shown."""

    __slots__ = ("axis", "length", "ref")

    def __init__(self, array: np.ndarray, axis: int, length: int) -> None:
        self.ref, self.axis, self.length = weakref.ref(array), axis, length


# id(array) -> its _Buffer, for as long as the array lives.
_BUFFERS: dict[int, _Buffer] = {}


def _adopt(array: np.ndarray, axis: int, length: int) -> _Buffer:
    buf = _Buffer(array, axis, length)
    key = id(array)
    _BUFFERS[key] = buf
    weakref.finalize(array, _BUFFERS.pop, key, None)
    return buf


def _prefix(view: np.ndarray, buf: _Buffer) -> bool:
    """Whether ``view`` is the buffer's first ``buf.length`` entries along its axis."""
    array, axis = view.base, buf.axis
    return (
        view.shape[axis] == buf.length
        and view.strides == array.strides
        and view.shape[:axis] == array.shape[:axis]
        and view.shape[axis + 1 :] == array.shape[axis + 1 :]
        and view.__array_interface__["data"][0] == array.__array_interface__["data"][0]
    )


class _Append:
    """Concat's kernel for two inputs, appending in place when the past allows it."""

    def __init__(self, concat: Any) -> None:
        self.concat = concat

    def __call__(self, attrs: Any, past: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, ...]:
        ndim = past.ndim
        if new.ndim != ndim or ndim == 0 or past.dtype != new.dtype:
            return self.concat(attrs, past, new)
        axis = attrs.axis + ndim if attrs.axis < 0 else attrs.axis
        if not 0 <= axis < ndim or past.shape[:axis] + past.shape[axis + 1 :] != \
                new.shape[:axis] + new.shape[axis + 1 :]:  # fmt: skip
            return self.concat(attrs, past, new)  # its own error
        length, extra = past.shape[axis], new.shape[axis]
        index: list[Any] = [slice(None)] * ndim
        base = past.base
        buf = _BUFFERS.get(id(base)) if base is not None else None
        if buf is not None and buf.ref() is base and buf.axis == axis and _prefix(past, buf) \
                and base.shape[axis] >= length + extra:  # fmt: skip
            index[axis] = slice(length, length + extra)
            base[tuple(index)] = new
        else:
            shape = list(past.shape)
            shape[axis] = max(2 * (length + extra), _MIN_ROOM)
            base = np.empty(shape, past.dtype)
            index[axis] = slice(0, length)
            base[tuple(index)] = past
            index[axis] = slice(length, length + extra)
            base[tuple(index)] = new
            buf = _adopt(base, axis, length)
        buf.length = length + extra
        index[axis] = slice(0, length + extra)
        return (base[tuple(index)],)


class _SameOrGather:
    """Gather's kernel, giving its data itself for indices 0..n-1 along axis 0."""

    def __init__(self, gather: Any) -> None:
        self.gather = gather

    def __call__(self, attrs: Any, data: np.ndarray, indices: np.ndarray,
                 *axis: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
        n = indices.shape[0] if indices.ndim == 1 else -1
        if data.ndim and n == data.shape[0] and axis and getattr(attrs, "batch_dims", 0) == 0 \
                and int(axis[0]) in (0, -data.ndim) and indices.dtype.kind in "iu" \
                and (indices.tolist() == list(range(n)) if n <= 64
                     else np.array_equal(indices, np.arange(n))):  # fmt: skip
            return (data,)
        return self.gather(attrs, data, indices, *axis)


def grow_kv_cache(
    schedule: list[tuple[Step, tuple[int, ...]]], keep: set[int]
) -> list[tuple[Step, tuple[int, ...]]]:
    """Give each ``ReadValue -> [Gather] -> Concat -> Assign`` of one variable in the
    schedule the appending Concat (see the module's docstring)."""
    producer = {slot: i for i, (step, _) in enumerate(schedule) for slot in step.outputs}
    changed: dict[int, Step] = {}
    for step, _ in schedule:
        if step.node.op.type != "Assign" or not step.inputs:
            continue
        var = step.attrs.variable_id
        c = producer.get(step.inputs[0])
        if c is None:
            continue
        concat = schedule[c][0]
        if concat.node.op.type != "Concat" or len(concat.inputs) != 2:
            continue
        p = producer.get(concat.inputs[0])
        if p is None:
            continue
        past = schedule[p][0]
        gather = None
        if past.node.op.type == "Gather" and len(past.inputs) >= 2:
            gather, r = p, producer.get(past.inputs[0])
            if r is None:
                continue
            past = schedule[r][0]
        if past.node.op.type != "ReadValue" or past.attrs.variable_id != var:
            continue
        changed[c] = _with_kernel(concat, _Append(concat.kernel))
        if gather is not None:
            step_ = schedule[gather][0]
            changed[gather] = _with_kernel(step_, _SameOrGather(step_.kernel))
    if not changed:
        return schedule
    return [(changed.get(i, step), frees) for i, (step, frees) in enumerate(schedule)]


def _with_kernel(step: Step, kernel: Any) -> Step:
    return replace(step, kernel=kernel)
