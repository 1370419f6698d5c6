"""RNNCell-1, GRUCell-3, LSTMCell-1, LSTMCell-4, RNNSequence-5, GRUSequence-5, LSTMSequence-5
and GatherTree-1: recurrent cells, their sequences, and beam-search backtracking.

A cell computes one step: its gates are ``x @ W.T + h @ R.T + B``, split in OpenVINO's gate
order (LSTM: f, i, c, o; GRU: z, r, h), each clipped to ``[-clip, clip]`` when ``clip > 0``
(0, the default, and any value not above 0 clip nothing) and passed through its activation,
named by ``activations`` (LSTM: f for the f, i, o gates, g for the cell gate, h for the new
cell state, which is never clipped; GRU: f for z and r, g for the candidate; RNN: f).
OpenVINO computes only ``sigmoid``, ``tanh`` and ``relu`` (names read without regard to
case); ``hardsigmoid`` passes its shape inference, but its CPU plugin and its reference
kernels refuse it, and so does irrun.  ``activations_alpha`` and ``activations_beta``
are read and, since none of those three takes a parameter, unused.

* GRU: ``ht = g(x Wh' + (r * h) Rh' + Bh)``, or with ``linear_before_reset``
  ``ht = g(x Wh' + r * (h Rh' + Rbh) + Wbh)`` with B's four parts z, r, Wbh, Rbh; then
  ``H = (1 - z) * ht + z * h``.
* LSTMCell-1 has a seventh input, the peepholes P (``[3 * hidden_size]``, parts f, i, o,
  zeros when absent), and ``input_forget``: ``f = f(.. + Pf * C)``, ``i = f(.. + Pi * C)``
  (or ``1 - f`` with ``input_forget``), ``o = f(.. + Po * C_new)``, as OpenVINO's reference
  kernel computes them.  Its CPU plugin ignores P, ``input_forget`` and
  ``weights_format``; irrun follows the reference (the plugin's results differ wherever P
  is not zero or ``input_forget`` is true).  ``weights_format`` other than ``fico`` is
  refused, as the reference refuses it.  OpenVINO's IR writer never writes P (it leaves
  its Const unconnected) but its reader takes a seventh input.
* Sequences run the cell over axis 1 of X (``[batch, seq_len, input_size]``) in each
  direction (``bidirectional``: forward in direction 0, reverse in 1).  A batch entry's
  steps stop at its ``sequence_lengths`` value: Y is zero past it, the last state is the
  one after its last step, and ``reverse`` goes from its last step back to step 0.  A
  length of 0 gives zeros for Y and for the last states (OpenVINO's reference and CPU
  plugin agree); a length below 0 or past seq_len is refused (OpenVINO leaves it
  undefined).  Where the model's shapes are dynamic, the CPU plugin ignores
  ``sequence_lengths`` (every entry runs all its steps); irrun does not follow it there,
  but its reference kernels and its own static-shape kernels.
* f16 and bf16 are computed in f32 and rounded once per output value, as the CPU plugin
  does; the states carried from step to step stay in f32.  The sums are the plugin's up
  to f32 summation order.
* The ``hidden_size`` attribute does not set any shape: as in OpenVINO, the hidden size is
  the states' (validate warns where the attribute differs).  irrun also requires W's last
  dim to be X's, which OpenVINO's shape inference lets through.

GatherTree-1 backtracks beams (TensorFlow's ``gather_tree``): for each batch entry and
beam, from step ``max_seq_len - 1`` (at most the last) back to 0, the step id is read at
the beam the parent ids lead to; steps at and past ``max_seq_len`` are ``end_token``, and
so is every step after the first ``end_token`` found.  Values are compared and used as
indices after truncation toward zero, as OpenVINO's reference does; a negative
``max_seq_len`` counts as the whole sequence (the reference reads it as a huge unsigned
value); a parent index outside the beams is refused.  The CPU plugin agrees for lengths
of 1 and more, in every type; for a length of 0 or below it leaves the batch entry's
output unwritten (whatever its memory held), where irrun follows the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval, format_shape
from ..ir.element_types import FLOATS, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import merge_dims, same_element_type

DIRECTIONS = ("forward", "reverse", "bidirectional")
UNKNOWN: Dim = Interval()

# --------------------------------------------------------------------------- activations


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
}


def _names(text: str) -> list[str]:
    """``"Sigmoid, tanh"`` -> ["sigmoid", "tanh"] (OpenVINO trims and lower-cases them)."""
    return [s.strip().lower() for s in text.split(",")] if text.strip() else []


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(s) for s in text.split(",")] if text.strip() else []
    except ValueError:
        raise KernelError(f"{what}='{text}' is not a list of numbers") from None


def _activations(a: SimpleNamespace, count: int) -> list[Callable[[np.ndarray], np.ndarray]]:
    names = _names(a.activations)
    if len(names) < count:
        raise KernelError(f"activations='{a.activations}' names {len(names)} functions; this "
                          f"op needs {count}")  # fmt: skip
    for name in names[:count]:
        if name not in _ACTIVATIONS:
            raise KernelError(f"activation '{name}' is not one OpenVINO computes (it computes "
                              f"{', '.join(_ACTIVATIONS)})")  # fmt: skip
    return [_ACTIVATIONS[n] for n in names[:count]]


def _clipper(clip: float) -> Callable[[np.ndarray], np.ndarray]:
    if not clip > 0:
        return lambda x: x
    return lambda x: np.clip(x, -clip, clip)


def _attrs(activations: str, extra: tuple[Attr, ...] = ()) -> tuple[Attr, ...]:
    return (
        Attr("hidden_size", "int"),
        Attr("activations", "str", activations),
        Attr("activations_alpha", "str", ""),
        Attr("activations_beta", "str", ""),
        Attr("clip", "float", 0.0),
        *extra,
    )


def _checker(count: int) -> Callable[[SimpleNamespace], None]:
    def check(a: SimpleNamespace) -> None:
        if a.hidden_size < 0:
            raise KernelError(f"hidden_size must not be negative, got {a.hidden_size}")
        _activations(a, count)
        _floats(a.activations_alpha, "activations_alpha")
        _floats(a.activations_beta, "activations_beta")
        if math.isnan(a.clip):
            raise KernelError("clip must be a number, got nan")
        if getattr(a, "weights_format", "fico") != "fico":
            raise KernelError(f"weights_format={a.weights_format} is not computed by OpenVINO "
                              f"(its reference kernel takes fico only)")  # fmt: skip

    return check


# --------------------------------------------------------------------------- cells


def _rank(info: TensorInfo, rank: int, what: str) -> tuple[Dim, ...] | None:
    if info.shape is not None and len(info.shape) != rank:
        raise ShapeError(f"{what} must have rank {rank}, got shape {format_shape(info.shape)}")
    return info.shape


def _dim(shape: tuple[Dim, ...] | None, i: int) -> Dim:
    return UNKNOWN if shape is None else shape[i]


def _per_gate(d: Dim, parts: int, what: str) -> Dim:
    """``d / parts`` for a dim that holds ``parts`` blocks of hidden_size."""
    if not isinstance(d, int):
        return UNKNOWN
    if d % parts:
        raise ShapeError(f"{what} is {d}, not a multiple of {parts} (gates x hidden_size)")
    return d // parts


def _hidden(states: Sequence[Dim], blocks: Sequence[tuple[Dim, int, str]]) -> Dim:
    """The hidden size the states agree on and W, R, B (and P)'s gate dims (each ``parts``
    blocks of it) agree with; W's and R's (the first two blocks) give it where the states
    do not, as in OpenVINO."""
    hidden: Dim = UNKNOWN
    for d in states:
        hidden = merge_dims(hidden, d, "hidden_size of the states and R")
    for k, (d, parts, what) in enumerate(blocks):
        per = _per_gate(d, parts, what)
        if isinstance(hidden, int) and isinstance(d, int) and per != hidden:
            raise ShapeError(f"{what} is {d}, expected {parts} x hidden_size = {parts * hidden}")
        if k < 2:
            hidden = merge_dims(hidden, per, what)
    return hidden


def _element_type(inputs: Sequence[TensorInfo], ports: Sequence[int]):
    return same_element_type([inputs[i] for i in ports if i < len(inputs)])


def _cell_infer(gates: int, states: int, bias_parts: Callable[[SimpleNamespace], int]):
    """The shape rule of a cell: X [batch, input], ``states`` states [batch, hidden], W
    [gates * hidden, input], R [gates * hidden, hidden], B [bias_parts * hidden] (and
    LSTMCell-1's P [3 * hidden])."""

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        x = _rank(inputs[0], 2, "X")
        hs = [_rank(inputs[1 + k], 2, "the initial state") for k in range(states)]
        w = _rank(inputs[1 + states], 2, "W")
        r = _rank(inputs[2 + states], 2, "R")
        # LSTMCell-1 may leave out B and P (zeros)
        b = _rank(inputs[3 + states], 1, "B") if len(inputs) > 3 + states else None
        p = _rank(inputs[4 + states], 1, "P") if len(inputs) > 4 + states else None
        et = _element_type(inputs, range(len(inputs)))
        batch = _dim(x, 0)
        for h in hs:
            batch = merge_dims(batch, _dim(h, 0), "batch size of X and the states")
        merge_dims(_dim(x, 1), _dim(w, 1), "input_size of X and W")
        parts = bias_parts(a)
        blocks = [(_dim(w, 0), gates, "W's first dim"), (_dim(r, 0), gates, "R's first dim"),
                  (_dim(b, 0), parts, "B's size"), (_dim(p, 0), 3, "P's size")]
        hidden = _hidden([_dim(h, 1) for h in hs] + [_dim(r, 1)], blocks)
        return [TensorInfo((batch, hidden), et) for _ in range(states)]

    return infer


def _hidden_warning(state_port: int, axis: int):
    def warn(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
        shape = inputs[state_port].shape if len(inputs) > state_port else None
        if shape is None or len(shape) <= axis or not isinstance(shape[axis], int):
            return []
        if shape[axis] != a.hidden_size:
            return [f"hidden_size={a.hidden_size} differs from the states' hidden size "
                    f"{shape[axis]}, which OpenVINO computes with"]  # fmt: skip
        return []

    return warn


def _wide(x: np.ndarray) -> np.ndarray:
    """``x`` in the type the cells compute in: f64 stays, narrower floats are f32."""
    return x if x.dtype == np.float64 else x.astype(np.float32, copy=False)


def _rnn_step(a, acts, x, h, w, r, b):
    (f,) = acts
    return (f(_clipper(a.clip)(x @ w.T + h @ r.T + b)),)


def _gru_step(a, acts, x, h, w, r, b):
    f, g = acts
    clip = _clipper(a.clip)
    xz, xr, xh = np.split(x @ w.T, 3, axis=-1)
    rz, rr, rh = np.split(r, 3, axis=0)
    if a.linear_before_reset:
        bz, br, wbh, rbh = np.split(b, 4)
    else:
        bz, br, bh = np.split(b, 3)
    z = f(clip(xz + h @ rz.T + bz))
    reset = f(clip(xr + h @ rr.T + br))
    if a.linear_before_reset:
        candidate = g(clip(xh + reset * (h @ rh.T + rbh) + wbh))
    else:
        candidate = g(clip(xh + (reset * h) @ rh.T + bh))
    return ((1 - z) * candidate + z * h,)


def _lstm_step(a, acts, x, h, c, w, r, b, p=None):
    f, g, hact = acts
    clip = _clipper(a.clip)
    gf, gi, gc, go = np.split(x @ w.T + h @ r.T + b, 4, axis=-1)
    pf, pi, po = (0, 0, 0) if p is None else np.split(p, 3)
    forget = f(clip(gf + pf * c))
    # input_forget (LSTMCell-1): the input gate is what the forget gate leaves
    inp = 1 - forget if getattr(a, "input_forget", False) else f(clip(gi + pi * c))
    cell = forget * c + inp * g(clip(gc))
    out = f(clip(go + po * cell))
    return out * hact(cell), cell


def _cell_kernel(step, count: int, states: int):
    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        acts = _activations(a, count)
        wide = [_wide(v) for v in arrays]
        if len(wide) == 3 + states:  # LSTMCell-1 without B
            wide.append(np.zeros(4 * arrays[1].shape[1], wide[0].dtype))
        with np.errstate(over="ignore", invalid="ignore"):
            out = step(a, acts, *wide)
        return tuple(o.astype(arrays[0].dtype) for o in out)

    return kernel


def _recurrent_scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                       outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The inputs in the computing type (f32, f64 for f64; a sequence's X is read a step at
    a time) and eight gate-sized temporaries of a step (the gates of a batch)."""
    shapes = [i.shape for i in inputs]
    if not all(s is not None and all(isinstance(d, int) for d in s) for s in shapes):
        return 0
    et = inputs[0].element_type
    wide = 8 if et is not None and et.name == "f64" else 4
    sequence = len(shapes[0]) == 3
    states = len(outputs) - sequence
    read = sum(math.prod(s) for s in (shapes[1:] if sequence else shapes))
    r_port = (3 if sequence else 2) + states
    return wide * (read + 8 * shapes[0][0] * shapes[r_port][-2])


def _lbr_parts(a: SimpleNamespace) -> int:
    return 4 if a.linear_before_reset else 3


_LBR = Attr("linear_before_reset", "bool", False)
_V0 = (Attr("input_forget", "bool", False),
       Attr("weights_format", "enum", "fico", ("fico", "icof", "ifco", "ifoc", "iofc")))

register(OpDef(type="RNNCell", version=1, since_opset=1, attrs=_attrs("tanh"),
               infer=_cell_infer(1, 1, lambda a: 1), kernel=_cell_kernel(_rnn_step, 1, 1),
               inputs=(5, 5), check=_checker(1), input_types=(FLOATS,) * 5,
               warn=_hidden_warning(1, 1), scratch=_recurrent_scratch))  # fmt: skip
register(OpDef(type="GRUCell", version=3, since_opset=3, attrs=_attrs("sigmoid,tanh", (_LBR,)),
               infer=_cell_infer(3, 1, _lbr_parts), kernel=_cell_kernel(_gru_step, 2, 1),
               inputs=(5, 5), check=_checker(2), input_types=(FLOATS,) * 5,
               warn=_hidden_warning(1, 1), scratch=_recurrent_scratch))  # fmt: skip
register(OpDef(type="LSTMCell", version=1, since_opset=1,
               attrs=_attrs("sigmoid,tanh,tanh", _V0),
               infer=_cell_infer(4, 2, lambda a: 4), kernel=_cell_kernel(_lstm_step, 3, 2),
               inputs=(5, 7), check=_checker(3), input_types=(FLOATS,) * 7,
               warn=_hidden_warning(1, 1), scratch=_recurrent_scratch))  # fmt: skip
register(OpDef(type="LSTMCell", version=4, since_opset=4, attrs=_attrs("sigmoid,tanh,tanh"),
               infer=_cell_infer(4, 2, lambda a: 4), kernel=_cell_kernel(_lstm_step, 3, 2),
               inputs=(6, 6), check=_checker(3), input_types=(FLOATS,) * 6,
               warn=_hidden_warning(1, 1), scratch=_recurrent_scratch))  # fmt: skip

# --------------------------------------------------------------------------- sequences


def _seq_infer(gates: int, states: int, bias_parts: Callable[[SimpleNamespace], int]):
    """X [batch, seq_len, input], states [batch, dirs, hidden], sequence_lengths [batch],
    W [dirs, gates * hidden, input], R [dirs, gates * hidden, hidden], B [dirs, parts *
    hidden] -> Y [batch, dirs, seq_len, hidden] and the last states."""

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        x = _rank(inputs[0], 3, "X")
        hs = [_rank(inputs[1 + k], 3, "the initial state") for k in range(states)]
        lengths = _rank(inputs[1 + states], 1, "sequence_lengths")
        w = _rank(inputs[2 + states], 3, "W")
        r = _rank(inputs[3 + states], 3, "R")
        b = _rank(inputs[4 + states], 2, "B")
        et = _element_type(inputs, [k for k in range(len(inputs)) if k != 1 + states])
        lengths_et = inputs[1 + states].element_type
        if lengths_et is not None and lengths_et.name not in INTEGERS:
            raise ShapeError(f"sequence_lengths must be integers, got {lengths_et.name}")
        batch = _dim(x, 0)
        for s in [*hs, lengths]:
            batch = merge_dims(batch, _dim(s, 0), "batch size of X, the states and "
                                                  "sequence_lengths")  # fmt: skip
        dirs: Dim = 2 if a.direction == "bidirectional" else 1
        for s, axis in [*((h, 1) for h in hs), (w, 0), (r, 0), (b, 0)]:
            if isinstance(_dim(s, axis), int) and _dim(s, axis) != dirs:
                raise ShapeError(f"direction={a.direction} needs num_directions = {dirs}, but "
                                 f"an input has {_dim(s, axis)} there")  # fmt: skip
        merge_dims(_dim(x, 2), _dim(w, 2), "input_size of X and W")
        parts = bias_parts(a)
        hidden = _hidden([_dim(h, 2) for h in hs] + [_dim(r, 2)], [
            (_dim(w, 1), gates, "W's second dim"), (_dim(r, 1), gates, "R's second dim"),
            (_dim(b, 1), parts, "B's second dim")])
        y = TensorInfo((batch, dirs, _dim(x, 1), hidden), et)
        return [y] + [TensorInfo((batch, dirs, hidden), et) for _ in range(states)]

    return infer


def _sequence(a: SimpleNamespace, step, count: int, x: np.ndarray, states: list[np.ndarray],
              lengths: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray):  # fmt: skip
    """Y and the last states of ``step`` run over X in each direction."""
    acts = _activations(a, count)
    batch, steps = x.shape[:2]
    n = lengths.astype(np.int64).reshape(-1)
    if n.size and (n.min() < 0 or n.max() > steps):
        bad = int(n[(n < 0) | (n > steps)][0])
        raise KernelError(f"sequence_lengths holds {bad}, outside 0..{steps} (seq_len)")
    hidden = states[0].shape[2]
    dirs = DIRECTIONS[:2] if a.direction == "bidirectional" else (a.direction,)
    y = np.zeros((batch, len(dirs), steps, hidden), x.dtype)
    last = [np.zeros_like(s) for s in states]
    rows = np.arange(batch)
    for d, direction in enumerate(dirs):
        wd, rd, bd = _wide(w[d]), _wide(r[d]), _wide(b[d])
        carried = [_wide(s[:, d]) for s in states]
        for k in range(steps):
            active = k < n
            # reverse: step k reads position n - 1 - k (its own for each batch entry)
            t = np.full(batch, k) if direction == "forward" else np.maximum(n - 1 - k, 0)
            with np.errstate(over="ignore", invalid="ignore"):
                new = step(a, acts, _wide(x[rows, t]), *carried, wd, rd, bd)
            keep = active[:, None]
            carried = [np.where(keep, v, old) for v, old in zip(new, carried, strict=True)]
            y[rows[active], d, t[active]] = new[0][active]
        for out, v in zip(last, carried, strict=True):
            out[:, d] = np.where((n > 0)[:, None], v, 0)  # a length of 0 leaves zeros
    return (y, *last)


def _seq_kernel(step, count: int, states: int):
    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x, st, lengths = arrays[0], list(arrays[1:1 + states]), arrays[1 + states]
        w, r, b = arrays[2 + states:5 + states]
        return _sequence(a, step, count, x, st, lengths, w, r, b)

    return kernel


def _seq_attrs(activations: str, extra: tuple[Attr, ...] = ()) -> tuple[Attr, ...]:
    return _attrs(activations, (Attr("direction", "enum", choices=DIRECTIONS), *extra))


def _seq_types(states: int) -> tuple[tuple[str, ...], ...]:
    return (FLOATS,) * (1 + states) + (INTEGERS,) + (FLOATS,) * 3


register(OpDef(type="RNNSequence", version=5, since_opset=5, attrs=_seq_attrs("tanh"),
               infer=_seq_infer(1, 1, lambda a: 1), kernel=_seq_kernel(_rnn_step, 1, 1),
               inputs=(6, 6), check=_checker(1), input_types=_seq_types(1),
               warn=_hidden_warning(1, 2), scratch=_recurrent_scratch))  # fmt: skip
register(OpDef(type="GRUSequence", version=5, since_opset=5,
               attrs=_seq_attrs("sigmoid,tanh", (_LBR,)),
               infer=_seq_infer(3, 1, _lbr_parts), kernel=_seq_kernel(_gru_step, 2, 1),
               inputs=(6, 6), check=_checker(2), input_types=_seq_types(1),
               warn=_hidden_warning(1, 2), scratch=_recurrent_scratch))  # fmt: skip
register(OpDef(type="LSTMSequence", version=5, since_opset=5,
               attrs=_seq_attrs("sigmoid,tanh,tanh"),
               infer=_seq_infer(4, 2, lambda a: 4), kernel=_seq_kernel(_lstm_step, 3, 2),
               inputs=(7, 7), check=_checker(3), input_types=_seq_types(2),
               warn=_hidden_warning(1, 2), scratch=_recurrent_scratch))  # fmt: skip

# --------------------------------------------------------------------------- GatherTree


def _gather_tree_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    step_ids, parents, max_len, end = inputs
    et = same_element_type(inputs)
    shape = step_ids.shape
    for s in (step_ids.shape, parents.shape):
        if s is not None and len(s) != 3:
            raise ShapeError(f"step_ids and parent_idx must have rank 3, got shape "
                             f"{format_shape(s)}")  # fmt: skip
    if shape is None:
        shape = parents.shape
    elif parents.shape is not None:
        shape = tuple(merge_dims(p, q, "shapes of step_ids and parent_idx")
                      for p, q in zip(shape, parents.shape, strict=True))  # fmt: skip
    lengths = _rank(max_len, 1, "max_seq_len")
    if shape is not None:
        batch = merge_dims(shape[1], _dim(lengths, 0), "batch size of step_ids and max_seq_len")
        shape = (shape[0], batch, shape[2])
    _rank(end, 0, "end_token")
    return [TensorInfo(shape, et)]


def _as_index(x: np.ndarray) -> np.ndarray:
    """Values as OpenVINO's reference reads them as indices: truncated toward zero."""
    return np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)


def _gather_tree(a: SimpleNamespace, step_ids: np.ndarray, parents: np.ndarray,
                 max_len: np.ndarray, end_token: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
    steps, batch, beams = step_ids.shape
    with np.errstate(invalid="ignore"):
        n = _as_index(max_len.reshape(-1))
        parent = _as_index(parents)
    n = np.where(n < 0, steps, np.minimum(n, steps))[:, None]  # [batch, 1]
    end = np.asarray(end_token, step_ids.dtype).reshape(())
    out = np.full(step_ids.shape, end, step_ids.dtype)
    beam = np.broadcast_to(np.arange(beams), (batch, beams))
    at = beam.copy()  # the beam the parents lead to, at the level below
    for level in range(steps - 1, -1, -1):
        inside = level < n
        # the last step of a beam reads its own beam; the ones before, its parent's
        at = np.where(level == n - 1, beam, at)
        used = at[np.broadcast_to(inside, at.shape)]
        if used.size and (used.min() < 0 or used.max() >= beams):
            bad = int(used[(used < 0) | (used >= beams)][0])
            raise KernelError(f"parent_idx leads to beam {bad} at time step {level}, outside "
                              f"0..{beams - 1}")  # fmt: skip
        safe = np.clip(at, 0, beams - 1)
        out[level] = np.where(inside, np.take_along_axis(step_ids[level], safe, axis=1), end)
        at = np.where(inside, np.take_along_axis(parent[level], safe, axis=1), at)
    # every step after the first end_token is end_token
    with np.errstate(invalid="ignore"):
        is_end = _as_index(out) == _as_index(end)
    ended = np.cumsum(is_end, axis=0) - is_end > 0
    time = np.arange(steps)[:, None, None]
    out[ended & (time < n[None])] = end
    return (out,)


register(OpDef(type="GatherTree", version=1, since_opset=1, attrs=(),
               infer=_gather_tree_infer, kernel=_gather_tree, inputs=(4, 4),
               input_types=(("i32", "i64", "f32", "f16", "f64"),) * 4,
               scratch=per_element(32)))  # fmt: skip
