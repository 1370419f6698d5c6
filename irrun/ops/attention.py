"""ScaledDotProductAttention-13: ``softmax(Q·Kᵀ·scale + bias) · V`` over the last two axes.

Inputs: query ``[N, ..., L, E]``, key ``[N, ..., S, E]``, value ``[N, ..., S, Ev]``, then
optionally attention_mask, scale and sink (OpenVINO 2026 reads 3 to 6 inputs; the sink
is no part of the written spec but its shape inference and CPU plugin take it).

- Batch dims (all but the last two) broadcast with numpy's rules among query, key,
  value and a mask of rank >= 3; a mask of higher rank adds leading output dims, and
  a mask's L or S of 1 broadcasts (OpenVINO merges L and S with the mask's, so a
  query L of 1 takes the mask's L).
- ``scale`` (a scalar or one element) replaces the default ``1/sqrt(E)``.
- A boolean mask keeps positions where it is true (false adds -inf); a float mask of
  the query's type is added; a scalar mask broadcasts.  With ``causal=true`` the mask
  input is ignored entirely (neither its type nor its shape is checked) and position
  ``(i, j)`` gets -inf where ``j > i``: the triangle is anchored at the top left even
  when L != S, as in the specification's ``triu(k=1)`` and the CPU plugin.
- ``sink`` (rank equal to the query's, last dim 1, broadcasting to ``[..., L, 1]``)
  is one more logit per row that takes part in the softmax's normalisation but
  not in the product with value: ``softmax(concat(scores, sink))[..., :S] · V``.
  irrun follows that definition also where the CPU plugin fails to compile: a sink
  (or output) whose batch dims come from key or value broadcasting over the query's.
- E of query and key and S of key and value must be equal (no broadcasting there).
- A row whose every position is -inf gives NaN (0/0), as both OpenVINO's decomposition
  (the reference: the specification's pseudo-code run on reference kernels) and the
  CPU plugin give; with a sink such a row gives 0.  No keys (S = 0) give zeros.

Element types: any floating type, the same for query, key, value, scale, sink and
a float mask.  f32 and f64 compute in their own type; f16, bf16 and the f8 types
compute in f32 and round once, as the CPU plugin does under an f32 precision hint.
The query is scaled before its product with the key (as OpenVINO's decomposition of
the op does), and the softmax subtracts each row's maximum.

Tolerance against the CPU plugin and the reference: rtol 1e-5 and atol 1e-6 times the
largest |output| for f32 (both sum Q·Kᵀ and P·V in other orders and with other exp
approximations); for f16 inputs 2e-3 relative to the largest |output| (a rounding of
outputs in [-max|V|, max|V|] to 11 bits).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Shape, format_shape
from ..ir.element_types import ANY, FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import largest
from ._shapes import broadcast_dims, broadcast_shapes, try_merge_dims

# OpenVINO takes the floats and the low floats (one type for all but a boolean mask);
# irrun computes in f32 (f64 in f64) and rounds once, which f8e8m0 and f4e2m1 cannot
# be compared in (no OpenVINO kernel runs them).
REAL_TYPES = (*FLOATS, "f8e4m3", "f8e5m2")
_NAMES = ("query", "key", "value", "attention_mask", "scale", "sink")


def _bdim(a: Dim, b: Dim, what: str) -> Dim:
    """OpenVINO's ``Dimension::broadcast_merge``: a 1 yields the other, else they merge."""
    out = broadcast_dims(a, b)
    if out is None:
        raise ShapeError(what)
    return out


def _merge(a: Dim, b: Dim, what: str) -> Dim:
    out = try_merge_dims(a, b)
    if out is None:
        raise ShapeError(what)
    return out


def _batch(n: Shape | None, other: Shape, what: str) -> Shape | None:
    try:
        return broadcast_shapes(n, other, "numpy")
    except ShapeError:
        raise ShapeError(what) from None


def _element_type(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    """The output type; ShapeError where OpenVINO's type checks refuse the inputs."""
    ports = [0, 1, 2, 4, 5]
    mask_et = inputs[3].element_type if len(inputs) > 3 else None
    if mask_et is not None and not a.causal and mask_et.name != "boolean":
        # The mask is declared ANY: causal=true ignores it, whatever its type.
        if mask_et.name not in REAL_TYPES:
            raise ShapeError(
                f"attention_mask is {mask_et.name}; it must be boolean or the query's "
                "floating type (or causal=true, which ignores it)"
            )
        ports.append(3)
    typed = [(p, inputs[p].element_type) for p in ports if p < len(inputs)]
    known = [(p, et) for p, et in typed if et is not None]
    if len({et.name for _, et in known}) > 1:
        shown = ", ".join(f"{_NAMES[p]} {et.name}" for p, et in known)
        raise ShapeError(f"inputs must share one element type, got {shown}")
    return known[0][1] if known else None


def sdpa_shape(a: SimpleNamespace, shapes: Sequence[Shape | None]) -> Shape | None:
    """The output shape from the input shapes, with OpenVINO's checks; raises ShapeError.

    >>> sdpa_shape(SimpleNamespace(causal=False), [(1, 6, 1, 3, 8), (2, 1, 2, 7, 8),
    ...            (2, 6, 1, 7, 16), (1, 1, 2, 3, 7)])
    (2, 6, 2, 3, 16)
    """
    q, k, v = shapes[:3]
    for name, s in zip(_NAMES, (q, k, v), strict=False):
        if s is not None and len(s) < 3:
            raise ShapeError(f"{name} must have rank >= 3, got {format_shape(s)}")
    n: Shape | None = None
    length = e = source = ev = None
    if q is not None:
        n, length, e = q[:-2], q[-2], q[-1]
    if k is not None:
        what = f"key {format_shape(k)} does not match query {format_shape(q)}"
        n = _batch(n, k[:-2], what)
        e = k[-1] if e is None else _merge(e, k[-1], what)
        source = k[-2]
    if v is not None:
        what = (f"value {format_shape(v)} does not match query {format_shape(q)} "
                f"and key {format_shape(k)}")
        n = _batch(n, v[:-2], what)
        source = v[-2] if source is None else _merge(source, v[-2], what)
        ev = v[-1]
    if len(shapes) > 3 and not a.causal and shapes[3]:
        m = shapes[3]
        what = (f"attention_mask {format_shape(m)} does not broadcast to the scores "
                f"[..., L={length if length is not None else '?'}, "
                f"S={source if source is not None else '?'}]")
        if len(m) < 2:
            raise ShapeError(f"attention_mask must be a scalar or have rank >= 2; {what}")
        length = m[-2] if length is None else _bdim(length, m[-2], what)
        source = m[-1] if source is None else _bdim(source, m[-1], what)
        if len(m) >= 3:
            n = _batch(n, m[:-2], what)
    if len(shapes) > 4 and shapes[4] is not None:
        s = shapes[4]
        if not (len(s) == 0 or (len(s) == 1 and try_merge_dims(s[0], 1) is not None)):
            raise ShapeError(f"scale must be a scalar or have one element, got {format_shape(s)}")
    if len(shapes) > 5 and shapes[5] is not None:
        _check_sink(shapes[5], q, n, length)
    if n is None:
        return None
    return (*n, length if length is not None else DYNAMIC, ev if ev is not None else DYNAMIC)


def _check_sink(sink: Shape, q: Shape | None, n: Shape | None, length: Dim | None) -> None:
    what = f"sink {format_shape(sink)} does not fit the scores' rows [..., L, 1]"
    if q is not None and len(sink) != len(q):
        raise ShapeError(f"sink must have the query's rank {len(q)}, got {format_shape(sink)}")
    if try_merge_dims(sink[-1], 1) is None:
        raise ShapeError(what)
    if length is not None and len(sink) >= 2:
        _bdim(length, sink[-2], what)
    if n is not None and len(sink) >= 2:
        _batch(n, sink[:-2], what)


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    et = _element_type(a, inputs)
    return [TensorInfo(sdpa_shape(a, [i.shape for i in inputs]), et)]


def compute_type(dtype: np.dtype) -> np.dtype:
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _sdpa(a: SimpleNamespace, q: np.ndarray, k: np.ndarray, v: np.ndarray,
          mask: np.ndarray | None = None, scale: np.ndarray | None = None,
          sink: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    out_dtype = q.dtype
    ct = compute_type(out_dtype)
    q, k, v = (x.astype(ct, copy=False) for x in (q, k, v))
    check_sizes(q, k, v)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        out = attend(a.causal, q * scale_factor(q, scale), k, v, mask, sink)
    return (out.astype(out_dtype, copy=False),)


def check_sizes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """KernelError unless query and key agree on E, and key and value on S."""
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise KernelError(
            f"query {format_shape(q.shape)}, key {format_shape(k.shape)} and value "
            f"{format_shape(v.shape)} do not agree on E and S"
        )


def scale_factor(q: np.ndarray, scale: np.ndarray | None) -> np.generic:
    """The scale input's value, or ``1/sqrt(E)``, in the query's type."""
    ct = q.dtype
    if scale is None:
        return ct.type(1.0) / np.sqrt(ct.type(q.shape[-1]))
    return ct.type(np.asarray(scale, dtype=ct).reshape(-1)[0])


def attend(causal: bool, q: np.ndarray, k: np.ndarray, v: np.ndarray,
           mask: np.ndarray | None, sink: np.ndarray | None) -> np.ndarray:
    """``softmax(q·kᵀ + bias) · v`` for a scaled query, the scores laid out ``[..., L, S]``;
    the sink, if given, is one more logit per row in the softmax's sum."""
    ct = q.dtype
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    bias = attention_bias(causal, mask, scores.shape[-2:], ct)
    if bias is not None:
        scores = scores + bias
    # -inf for a row of no keys (S = 0), which then gives zeros.
    top = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
    if sink is not None:
        sink = np.asarray(sink, dtype=ct)
        scores, top = _fit_sink(scores, top, sink, v.shape[:-2])
        top = np.maximum(top, sink)
    e = np.exp(scores - top)
    total = np.sum(e, axis=-1, keepdims=True)
    if sink is not None:
        total = total + np.exp(sink - top)
    return np.matmul(e / total, v)


def _fit_sink(scores: np.ndarray, top: np.ndarray, sink: np.ndarray, value_batch):
    """Scores and row maxima stretched over the sink's batch dims, where value adds them."""
    rows = (*scores.shape[:-1], 1)
    allowed = np.broadcast_shapes(scores.shape[:-2], value_batch) + rows[-2:]
    try:
        fits = np.broadcast_shapes(allowed, sink.shape) == allowed
    except ValueError:
        fits = False
    if not fits:
        raise KernelError(
            f"sink {format_shape(sink.shape)} does not broadcast to the scores' rows "
            f"{format_shape(allowed)}"
        )
    wider = np.broadcast_shapes(rows, sink.shape)
    if wider != rows:
        scores = np.broadcast_to(scores, wider[:-1] + scores.shape[-1:]).copy()
        top = np.broadcast_to(top, wider)
    return scores, top


def attention_bias(causal: bool, mask: np.ndarray | None, ls: tuple[int, int], ct: np.dtype):
    """What is added to the scores: the causal triangle, a mask's -inf, or the mask."""
    if causal:
        rows, cols = ls
        above = np.arange(cols)[None, :] > np.arange(rows)[:, None]
        return np.where(above, ct.type(-np.inf), ct.type(0))
    if mask is None:
        return None
    if mask.dtype == np.bool_:
        return np.where(mask, ct.type(0), ct.type(-np.inf))
    return mask.astype(ct, copy=False)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:
    """Four arrays of the scores (the output's rows times S) and six of the largest tensor
    (f32 copies of f16 inputs, the scaled query), in the compute type."""
    out, key = outputs[0], inputs[1]
    if out.shape is None or key.shape is None or out.element_type is None:
        return 0
    scores = largest([TensorInfo((*out.shape[:-1], key.shape[-2]), None)])
    width = compute_type(out.element_type.dtype).itemsize
    return width * (4 * scores + 6 * largest([*inputs, *outputs]))


register(
    OpDef(
        type="ScaledDotProductAttention", version=13, since_opset=13,
        attrs=(Attr("causal", "bool", False),),
        infer=_infer, kernel=_sdpa, inputs=(3, 6), shape_attrs=("causal",),
        input_types=(REAL_TYPES, REAL_TYPES, REAL_TYPES, ANY, REAL_TYPES, REAL_TYPES),
        fresh_output=True, view_reader=True, scratch=_scratch,
        doc="softmax(Q·Kᵀ·scale + mask) · V with optional causal mask, scale and sink",
    )
)
