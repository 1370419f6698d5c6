"""Connectionist temporal classification: CTCGreedyDecoder-1, CTCGreedyDecoderSeqLen-6,
CTCLoss-4.

The greedy decoders take the most likely class of each time step (the first of equal
maxima), drop the blank class and, with merge_repeated, a class equal to the previous
step's (a blank between two equal classes keeps both); the classes left are packed to
the front of each row of the output, the rest of which is -1.

* CTCGreedyDecoder-1: ``data`` [T, N, C], ``sequence_mask`` [T, N]; a sequence ends at
  its first step whose mask is 0.  The blank is class C - 1.  The output [N, T, 1, 1]
  holds the classes in ``data``'s type.
* CTCGreedyDecoderSeqLen-6: ``data`` [N, T, C], ``sequence_length`` [N] (steps used per
  sequence, at most T), ``blank_index`` (0-D or 1-D of one value; C - 1 when absent).
  Outputs: the classes [N, T] in ``classes_index_type`` and their count [N] in
  ``sequence_length_type``.  A sequence length outside 0..T is refused at run time.

CTCLoss-4 is the negative log-likelihood of each sequence's labels given its logits
``logits`` [N, T, C] (log-softmax over C per step), over the first ``logit_length[n]``
steps and ``label_length[n]`` labels of ``labels`` [N, T]; ``blank_index`` is C - 1 when
absent.  The labels are first deduplicated (``unique``: each value once, at its first
place), or else, with ``preprocess_collapse_repeated``, runs of equal labels are
collapsed.  With ``ctc_merge_repeated`` (standard CTC) an alignment repeats each label
over one or more steps, with blanks around and between them, and a blank between equal
labels; without it each label takes exactly one step and blanks fill the rest (equal
labels may then be adjacent).  The likelihood sums the probabilities of all such
alignments: the forward recursion over the label sequence interleaved with blanks, a
loop over time steps, vectorized over the batch and the labels, in f64 log space,
rounded once to the logits' type.  A sequence with no alignment (too few steps) has an
infinite loss.  Lengths outside 0..T, a label length above the logit length, or labels
or a blank index outside 0..C-1 are refused at run time, as OpenVINO's reference
kernel refuses the lengths.

The decoders match OpenVINO's CPU plugin exactly, and CTCLoss matches it to about 1e-6
relative in f32 (``ov.Model.evaluate`` runs none of the three; its reference kernel for
CTCLoss, read, enumerates the alignments one by one in the logits' type).  Where they
differ, irrun follows the definition above (tests/ops/test_ctc.py checks it against a
brute-force sum over every alignment):

* Logits above about 88: the plugin and the reference take the log-softmax without
  subtracting the maximum, so exp overflows and the loss is infinite or NaN; irrun
  subtracts it.
* A label length of 0: the plugin crashes (a segmentation fault); the reference gives a
  loss of 0 (its search ends before it sums the blanks), or with
  ``preprocess_collapse_repeated`` reads one label anyway; irrun gives the loss of the
  all-blank alignment, ``-sum log p(blank)``.
* A label equal to the blank index (which no framework defines): irrun counts it as a
  label, as the reference's search does; the plugin gives other values, by no rule
  found, unless it is the last label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, format_shape
from ..ir.element_types import FLOATS, INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element, static_shape
from ._shapes import merge_dims

ET = element_types.ELEMENT_TYPES


def _rank(info: TensorInfo, rank: int, what: str) -> Sequence[Dim] | None:
    shape = info.shape
    if shape is not None and len(shape) != rank:
        raise ShapeError(f"{what} must be {rank}-D, got shape {format_shape(shape)}")
    return shape


def _one_value(info: TensorInfo, what: str, scalar_only: bool = False) -> None:
    shape = info.shape
    if shape is None or len(shape) == 0:
        return
    if scalar_only or len(shape) != 1 or (isinstance(shape[0], int) and shape[0] != 1):
        raise ShapeError(f"{what} must be a scalar{'' if scalar_only else ' or hold one value'}"
                         f", got shape {format_shape(shape)}")  # fmt: skip


def _blank(x: np.ndarray | None, classes: int) -> int:
    return classes - 1 if x is None else int(np.asarray(x).reshape(-1)[0])


def _pack(classes: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kept classes of each row [N, T] moved to its front, -1 after; and their count."""
    order = np.argsort(~keep, axis=1, kind="stable")
    count = keep.sum(axis=1)
    packed = np.take_along_axis(classes, order, axis=1)
    packed = np.where(np.arange(keep.shape[1]) < count[:, None], packed, -1)
    return packed, count


def _greedy(best: np.ndarray, steps: np.ndarray, drop: np.ndarray, merge: bool):
    """Classes kept from ``best`` [N, T] (argmax per step) within ``steps`` [N, T]."""
    previous = np.concatenate([np.full_like(best[:, :1], -1), best[:, :-1]], axis=1)
    keep = steps & ~drop
    if merge:
        keep &= best != previous
    return _pack(best, keep)


# --------------------------------------------------------------------------- CTCGreedyDecoder


def _greedy_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = _rank(inputs[0], 3, "data [T, N, C]")
    mask = _rank(inputs[1], 2, "sequence_mask [T, N]")
    time, batch = (data[0], data[1]) if data is not None else (DYNAMIC, DYNAMIC)
    if mask is not None:
        time = merge_dims(time, mask[0], "data and sequence_mask must have as many time steps")
        batch = merge_dims(batch, mask[1], "data and sequence_mask must have the same batch")
    return [TensorInfo((batch, time, 1, 1), inputs[0].element_type)]


def _greedy_kernel(a: SimpleNamespace, data: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray]:
    _greedy_infer(a, [TensorInfo(data.shape, None), TensorInfo(mask.shape, None)])
    time, batch, classes = data.shape
    if classes == 0:
        raise KernelError("data has no classes")
    if data.size == 0:
        return (np.full((batch, time, 1, 1), -1, data.dtype),)
    best = np.argmax(data, axis=2).T  # [N, T]
    # A sequence ends at its first step whose mask is 0.
    steps = np.cumprod(mask.T != 0, axis=1).astype(bool)
    packed, _ = _greedy(best, steps, best >= classes - 1, a.ctc_merge_repeated)
    return (packed.astype(data.dtype)[:, :, None, None],)


register(
    OpDef(type="CTCGreedyDecoder", version=1, since_opset=1,
          attrs=(Attr("ctc_merge_repeated", "bool", True),),
          infer=_greedy_infer, kernel=_greedy_kernel, inputs=(2, 2),
          input_types=(FLOATS, FLOATS), scratch=per_element(12, 8))
)  # fmt: skip


# --------------------------------------------------------------------------- CTCGreedyDecoderSeqLen


def _check_index_types(a: SimpleNamespace) -> None:
    for name in ("classes_index_type", "sequence_length_type"):
        if getattr(a, name).name not in INDEX_TYPES:
            raise KernelError(f"{name} must be i32 or i64, got {getattr(a, name).name}")


def _seq_len_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = _rank(inputs[0], 3, "data [N, T, C]")
    lengths = _rank(inputs[1], 1, "sequence_length [N]")
    if len(inputs) > 2:
        _one_value(inputs[2], "blank_index")
        if inputs[2].element_type is not None and inputs[1].element_type is not None and \
                inputs[2].element_type != inputs[1].element_type:  # fmt: skip
            raise ShapeError("sequence_length and blank_index must have one element type, got "
                             f"{inputs[1].element_type.name} and {inputs[2].element_type.name}")
    batch, time = (data[0], data[1]) if data is not None else (DYNAMIC, DYNAMIC)
    if lengths is not None:
        batch = merge_dims(batch, lengths[0], "data and sequence_length must have the same batch")
    return [TensorInfo((batch, time), a.classes_index_type),
            TensorInfo((batch,), a.sequence_length_type)]  # fmt: skip


def _seq_len_kernel(a: SimpleNamespace, data: np.ndarray, lengths: np.ndarray,
                    blank: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    infos = [TensorInfo(np.shape(x), None) for x in (data, lengths, blank) if x is not None]
    _seq_len_infer(a, infos)
    batch, time, classes = data.shape
    lengths = lengths.astype(np.int64)
    if lengths.size and (lengths.min() < 0 or lengths.max() > time):
        raise KernelError(f"sequence_length {lengths.tolist()} must lie in 0..{time}")
    if classes == 0 and time and lengths.any():
        raise KernelError("data has no classes")
    best = np.argmax(data, axis=2) if data.size else np.zeros((batch, time), np.int64)
    steps = np.arange(time) < lengths[:, None]
    packed, count = _greedy(best, steps, best == _blank(blank, classes), a.merge_repeated)
    return packed.astype(a.classes_index_type.dtype), count.astype(a.sequence_length_type.dtype)


register(
    OpDef(type="CTCGreedyDecoderSeqLen", version=6, since_opset=6,
          attrs=(Attr("merge_repeated", "bool", True),
                 Attr("classes_index_type", "element_type", ET["i32"]),
                 Attr("sequence_length_type", "element_type", ET["i32"])),
          infer=_seq_len_infer, kernel=_seq_len_kernel, inputs=(2, 3),
          check=_check_index_types, input_types=(FLOATS, INDEX_TYPES, INDEX_TYPES),
          scratch=per_element(12, 8))
)  # fmt: skip


# --------------------------------------------------------------------------- CTCLoss


def _loss_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    logits = _rank(inputs[0], 3, "logits [N, T, C]")
    logit_length = _rank(inputs[1], 1, "logit_length [N]")
    labels = _rank(inputs[2], 2, "labels [N, T]")
    label_length = _rank(inputs[3], 1, "label_length [N]")
    if len(inputs) > 4:
        _one_value(inputs[4], "blank_index", scalar_only=True)
    ints = {i.element_type for i in inputs[1:] if i.element_type is not None}
    if len(ints) > 1:
        raise ShapeError("logit_length, labels, label_length and blank_index must have one "
                         f"element type, got {', '.join(sorted(t.name for t in ints))}")
    batch: Dim = DYNAMIC if logits is None else logits[0]
    for shape, what in ((logit_length, "logit_length"), (labels, "labels"),
                        (label_length, "label_length")):  # fmt: skip
        if shape is not None:
            batch = merge_dims(batch, shape[0], f"logits and {what} must have the same batch")
    if logits is not None and labels is not None:
        merge_dims(logits[1], labels[1], "logits and labels must have as many time steps")
    return [TensorInfo((batch,), inputs[0].element_type)]


def _targets(labels: np.ndarray, lengths: np.ndarray, unique: bool, collapse: bool):
    """The labels each sequence is scored against, [N, L] (padded), and their count [N]."""
    t = labels.shape[1]
    used = np.arange(t) < lengths[:, None]
    if unique:
        # A label is kept at its first place among the used ones.
        same = labels[:, :, None] == labels[:, None, :]  # [N, T, T]
        earlier = np.tril(np.ones((t, t), bool), -1)
        keep = used & ~(same & earlier & used[:, None, :]).any(axis=2)
    elif collapse:
        keep = used.copy()
        keep[:, 1:] &= labels[:, 1:] != labels[:, :-1]
    else:
        keep = used
    return _pack(labels, keep)


def _loss_kernel(a: SimpleNamespace, logits: np.ndarray, logit_length: np.ndarray,
                 labels: np.ndarray, label_length: np.ndarray,
                 blank: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
    args = (logits, logit_length, labels, label_length, blank)
    _loss_infer(a, [TensorInfo(np.shape(x), None) for x in args if x is not None])
    n, time, classes = logits.shape
    steps, count = logit_length.astype(np.int64), label_length.astype(np.int64)
    if n and (steps.min() < 0 or steps.max() > time or count.min() < 0 or count.max() > time):
        raise KernelError(f"logit_length {steps.tolist()} and label_length {count.tolist()} "
                         f"must lie in 0..{time}")  # fmt: skip
    if (count > steps).any():
        raise KernelError(f"a label_length {count.tolist()} exceeds its logit_length "
                         f"{steps.tolist()}")  # fmt: skip
    blank_index = _blank(blank, classes)
    if not 0 <= blank_index < classes:
        raise KernelError(f"blank_index {blank_index} must lie in 0..{classes - 1}")
    labels = labels.astype(np.int64)
    in_use = np.arange(time) < count[:, None]
    if ((labels < 0) | (labels >= classes))[in_use].any():
        raise KernelError(f"labels must lie in 0..{classes - 1}")
    if n == 0:
        return (np.zeros((0,), logits.dtype),)
    target, length = _targets(labels, count, a.unique, a.preprocess_collapse_repeated)
    width = int(length.max(initial=0))
    target = np.maximum(target[:, :width], 0)
    # The extended sequence: blank, label 1, blank, label 2, ..., blank: [N, S].
    size = 2 * width + 1
    ext = np.full((n, size), blank_index, np.int64)
    ext[:, 1::2] = target
    is_label = (np.arange(size) % 2 == 1)[None, :]
    # A label may follow the label two places back directly: always without merging,
    # with it only when the two differ.
    skip = np.zeros((n, size), bool)
    skip[:, 3::2] = True if not a.ctc_merge_repeated else target[:, 1:] != target[:, :-1]
    x = logits.astype(np.float64)
    log_probs = x - x.max(axis=2, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(axis=2, keepdims=True))
    rows = np.arange(n)[:, None]
    minus_inf = np.float64(-np.inf)
    alpha = np.full((n, size), minus_inf)
    if time:
        first = log_probs[:, 0][rows, ext]
        alpha[:, :2] = first[:, :2]
    with np.errstate(invalid="ignore"):
        for t in range(1, time):
            stay = alpha if a.ctc_merge_repeated else np.where(is_label, minus_inf, alpha)
            one = np.concatenate([np.full((n, 1), minus_inf), alpha[:, :-1]], axis=1)
            two = np.concatenate([np.full((n, 2), minus_inf), alpha[:, :-2]], axis=1)
            two = np.where(skip, two, minus_inf)
            new = np.logaddexp(np.logaddexp(stay, one), two) + log_probs[:, t][rows, ext]
            alpha = np.where((t < steps)[:, None], new, alpha)
    end = alpha[np.arange(n), 2 * length]
    last = np.where(length > 0, alpha[np.arange(n), np.maximum(2 * length - 1, 0)], minus_inf)
    likelihood = np.logaddexp(end, last)
    # No steps at all: only the empty label sequence has an alignment (the empty one).
    likelihood = np.where(steps == 0, np.where(length == 0, 0.0, minus_inf), likelihood)
    return ((-likelihood).astype(logits.dtype),)


def _loss_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                  outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The log-softmax of the logits in f64 (three arrays as large), ``unique``'s
    comparison of each label with every other, and the forward variables per label
    position (a few [N, 2T + 1] arrays in f64)."""
    logits = static_shape(inputs[0])
    if logits is None:
        return 0
    n, t, _ = logits
    pairs = 2 * n * t * t if a.unique else 0
    return 32 * math.prod(logits) + pairs + 96 * n * (2 * t + 1) + 64 * n * t


register(
    OpDef(type="CTCLoss", version=4, since_opset=4,
          attrs=(Attr("preprocess_collapse_repeated", "bool", False),
                 Attr("ctc_merge_repeated", "bool", True), Attr("unique", "bool", False)),
          infer=_loss_infer, kernel=_loss_kernel, inputs=(4, 5),
          input_types=(FLOATS, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES),
          scratch=_loss_scratch)
)  # fmt: skip
