"""Rotary position embedding as optimum exports it, in one call: the layers' NumPy calls.

``rotate_half`` and its use (Llama, Qwen2, Mistral...) are seven layers::

    a = Multiply(q, cos)
    n = Multiply(Slice(q, second half), -1)        (PyTorch's neg, a Multiply by -1)
    r = Concat(n, Slice(q, first half))            (along the sliced axis)
    out = Add(a, Multiply(r, sin))

:func:`rotary` computes what the layers' reference kernels compute for f32 or f64 data of
one type broadcast as NumPy does: the same ufunc calls (``np.multiply``, ``np.add``,
``np.concatenate``) on the same operands in the same order, the slices taken with the
reference Slice's own index (:func:`irrun.ops.slicing._slice_index`) as views (the
reference copies them: the same elements), so the same bits.  It returns None where it
does not apply (another type, operands of different types, shapes that do not broadcast
or concatenate), and the layers then run one by one, each saying what is wrong.
"""

from __future__ import annotations

import numpy as np

_WIDE = (np.dtype(np.float32), np.dtype(np.float64))


def rotary(q: np.ndarray, cos: np.ndarray, sin: np.ndarray, negate: np.ndarray,
           second: tuple[slice, ...], first: tuple[slice, ...], axis: int,
           order: tuple[bool, bool, bool, bool]) -> np.ndarray | None:
    """The rotary layers' output for ``q`` (see the module's doc), or None.

    ``second`` and ``first`` are the Slices' indexes of ``q``, ``axis`` the Concat's
    (normalised); ``order`` whether ``q`` is the first operand of its Multiply by ``cos``,
    the slice the first of its Multiply by ``negate``, the concatenation the first of its
    Multiply by ``sin``, and ``q * cos`` the first of the Add.
    """
    dtype = q.dtype
    if dtype not in _WIDE or cos.dtype != dtype or sin.dtype != dtype or negate.dtype != dtype:
        return None
    q_first, slice_first, cat_first, a_first = order
    try:
        a = np.multiply(q, cos) if q_first else np.multiply(cos, q)
        half = q[second]
        n = np.multiply(half, negate) if slice_first else np.multiply(negate, half)
        r = np.concatenate((n, q[first]), axis=axis)
        b = np.multiply(r, sin) if cat_first else np.multiply(sin, r)
        out = np.add(a, b) if a_first else np.add(b, a)
    except ValueError:  # shapes that do not broadcast or concatenate: the layers name them
        return None
    return np.asarray(out)
