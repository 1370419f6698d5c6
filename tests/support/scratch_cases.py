"""Inputs for the kernels whose scratch tests/ops/test_scratch.py measures beyond the
elementwise family: the data movement, indexing, sorting, detection and control ops, each
with tensors large enough (2**15 elements and more) that what a kernel holds per element
stands out from Python's own small objects."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace as NS

import numpy as np

from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import OpDef, resolve

ET = ELEMENT_TYPES
Case = tuple[OpDef, NS, list]


def _i(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _recurrent(rng, dtype: np.dtype) -> Iterator[Case]:
    """A bidirectional LSTM and GRU over 32 steps, LSTMCell-1 with peepholes, GatherTree."""
    batch, steps, size, hidden = 16, 32, 64, 64

    def f(*shape):
        return rng.standard_normal(shape).astype(dtype)

    lengths = rng.integers(0, steps + 1, batch)
    lstm = NS(hidden_size=hidden, activations="sigmoid,tanh,tanh", activations_alpha="",
              activations_beta="", clip=0.5, direction="bidirectional")  # fmt: skip
    yield (resolve("LSTMSequence", "opset5"), lstm,
           [f(batch, steps, size), f(batch, 2, hidden), f(batch, 2, hidden), lengths,
            f(2, 4 * hidden, size), f(2, 4 * hidden, hidden), f(2, 4 * hidden)])  # fmt: skip
    gru = NS(hidden_size=hidden, activations="sigmoid,tanh", activations_alpha="",
             activations_beta="", clip=0.0, direction="reverse", linear_before_reset=True)  # fmt: skip
    yield (resolve("GRUSequence", "opset5"), gru,
           [f(batch, steps, size), f(batch, 1, hidden), lengths, f(1, 3 * hidden, size),
            f(1, 3 * hidden, hidden), f(1, 4 * hidden)])  # fmt: skip
    cell = NS(hidden_size=hidden, activations="sigmoid,tanh,tanh", activations_alpha="",
              activations_beta="", clip=0.0, input_forget=True, weights_format="fico")  # fmt: skip
    yield (resolve("LSTMCell", "opset1"), cell,
           [f(256, size), f(256, hidden), f(256, hidden), f(4 * hidden, size),
            f(4 * hidden, hidden), f(4 * hidden), f(3 * hidden)])  # fmt: skip


def _gather_tree(rng, dtype: np.dtype) -> Iterator[Case]:
    steps, batch, beams = 64, 16, 32
    parents = rng.integers(0, beams, (steps, batch, beams)).astype(dtype)
    yield (resolve("GatherTree", "opset1"), NS(),
           [rng.integers(0, 100, (steps, batch, beams)).astype(dtype), parents,
            rng.integers(1, steps + 1, batch).astype(dtype), np.array(7, dtype)])  # fmt: skip


def cases(dtype: np.dtype) -> Iterator[Case]:
    """The cases for data of ``dtype`` (a float or an integer type)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((8, 64, 64)) * 10).astype(dtype)  # 32K elements
    img = (rng.standard_normal((2, 16, 32, 32)) * 10).astype(dtype)
    r = resolve
    for name in ("f32", "f16", "i64", "u8", "boolean", "i4", "u1", "f8e4m3", "f8e5m2",
                 "f8e8m0", "f4e2m1", "nf4"):
        yield r("Convert", "opset1"), NS(destination_type=ET[name]), [x]
    yield r("ConvertLike", "opset1"), NS(), [x, np.zeros(1, np.float16)]
    yield r("Reshape", "opset1"), NS(special_zero=False), [x, _i(64, 512)]
    yield r("Reshape", "opset1"), NS(special_zero=False), [x.transpose(2, 0, 1), _i(-1)]
    yield r("Concat", "opset1"), NS(axis=1), [x, x, x]
    yield r("Squeeze", "opset1"), NS(), [x[None], _i(0)]
    yield r("Unsqueeze", "opset1"), NS(), [x, _i(0, 2)]
    yield r("Transpose", "opset1"), NS(), [x, _i(2, 0, 1)]
    yield r("ShapeOf", "opset3"), NS(output_type=ET["i64"]), [x]
    yield r("Broadcast", "opset3"), NS(mode="numpy"), [x[:, :1], _i(8, 64, 64)]
    yield r("Broadcast", "opset3"), NS(mode="bidirectional"), [x[:1], _i(4, 1, 1, 1)]
    for mode in ("constant", "edge", "reflect", "symmetric"):
        yield r("Pad", "opset12"), NS(pad_mode=mode), [x, _i(0, 3, 5), _i(1, 2, 7), dtype.type(0)]
    yield r("Split", "opset1"), NS(num_splits=4), [x, np.int64(1)]
    yield r("VariadicSplit", "opset1"), NS(), [x, np.int64(2), _i(10, -1, 20)]
    yield r("Tile", "opset1"), NS(), [x, _i(2, 1, 3)]
    yield r("Roll", "opset7"), NS(), [x, _i(5, -7), _i(1, 2)]
    yield r("Range", "opset4"), NS(output_type=ET["f32"]), [np.float32(0), np.float32(65536),
                                                             np.float32(1)]
    yield r("Eye", "opset9"), NS(output_type=ET["f32"]), [np.int64(256), np.int64(256),
                                                           np.int64(3)]
    yield (r("OneHot", "opset1"), NS(axis=-1),
           [rng.integers(-2, 64, (8, 64)), np.int64(64), np.float32(1), np.float32(0)])
    yield r("Gather", "opset8"), NS(batch_dims=0), [x, rng.integers(-64, 64, (32, 40)), np.int64(1)]
    yield r("Gather", "opset8"), NS(batch_dims=1), [x, rng.integers(0, 64, (8, 70)), np.int64(2)]
    # An embedding table read where it lies (a few rows of 4 MiB, also transposed, which
    # np.take would copy whole), and data whose reshape merges non-contiguous axes.
    table = (rng.standard_normal((4096, 256)) * 10).astype(dtype)
    yield r("Gather", "opset8"), NS(batch_dims=0), [table, rng.integers(0, 4096, (1, 5)), np.int64(0)]
    yield r("Gather", "opset8"), NS(batch_dims=0), [table.T, rng.integers(0, 4096, (1, 5)), np.int64(1)]
    yield r("Gather", "opset8"), NS(batch_dims=0), [x.transpose(1, 0, 2), rng.integers(0, 64, 9), np.int64(2)]
    yield (r("GatherElements", "opset6"), NS(axis=1),
           [x, rng.integers(-64, 64, (8, 64, 64))])
    yield r("GatherND", "opset8"), NS(batch_dims=0), [x, rng.integers(0, 8, (300, 1))]
    yield r("GatherND", "opset8"), NS(batch_dims=1), [x, rng.integers(0, 64, (8, 50, 2))]
    if dtype.kind == "f":
        yield r("GRN", "opset1"), NS(bias=1.0), [img]
    name = {"float32": "f32", "float16": "f16", "float64": "f64", "int32": "i32"}.get(dtype.name)
    if name is not None:  # RandomUniform's output types among these
        for alignment in ("tensorflow", "pytorch"):
            yield (r("RandomUniform", "opset8"),
                   NS(output_type=ET[name], global_seed=1, op_seed=2, alignment=alignment),
                   [_i(64, 512), np.array(0, dtype), np.array(100, dtype)])
    if dtype.kind == "f":
        probs = np.abs(x.reshape(64, 512))
        for replacement in (True, False):
            yield (r("Multinomial", "opset13"),
                   NS(convert_type=ET["i64"], with_replacement=replacement, log_probs=False,
                      global_seed=1, op_seed=2), [probs, _i(8)])
    for mode in ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow"):
        if dtype.kind != "f" and mode == "cubic":
            continue
        yield (r("Interpolate", "opset11"),
               NS(mode=mode, shape_calculation_mode="scales",
                  coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor",
                  antialias=False, pads_begin=(), pads_end=(), cube_coeff=-0.75),
               [img, np.float32([1.5, 2.0]), _i(2, 3)])
        # One axis grows while another shrinks: a stage outgrows the input and the output.
        yield (r("Interpolate", "opset11"),
               NS(mode=mode, shape_calculation_mode="sizes",
                  coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor",
                  antialias=False, pads_begin=(0, 0, 1, 0), pads_end=(0, 0, 1, 0),
                  cube_coeff=-0.75),
               [img, _i(256, 4), _i(2, 3)])
    yield r("DepthToSpace", "opset1"), NS(mode="blocks_first", block_size=2), [img]
    yield r("SpaceToDepth", "opset1"), NS(mode="depth_first", block_size=2), [img]
    yield r("ShuffleChannels", "opset1"), NS(axis=1, group=4), [img]
    yield r("NonZero", "opset3"), NS(output_type=ET["i64"]), [x]
    yield (r("ExtractImagePatches", "opset3"),
           NS(sizes=(3, 3), strides=(2, 2), rates=(1, 1), auto_pad="same_upper"), [img])
    cols = (rng.standard_normal((2, 16 * 9, 100)) * 10).astype(dtype)
    yield (r("Col2Im", "opset15"), NS(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1),
                                      pads_end=(1, 1)), [cols, _i(10, 10), _i(3, 3)])
    if dtype in (np.float32, np.float16, np.uint8):
        yuv = np.abs(x).astype(dtype).reshape(-1)[:2 * 96 * 128].reshape(2, 96, 128, 1)
        for name in ("NV12toRGB", "I420toBGR"):
            yield r(name, "opset8"), NS(), [yuv]
        yield r("NV12toBGR", "opset8"), NS(), [yuv[:, :64], yuv[:, 64:].reshape(2, 32, 64, 2)]
        rgb = np.abs(x).astype(dtype).reshape(-1)[:2 * 32 * 170 * 3].reshape(2, 32, 170, 3)
        yield r("RGBtoNV12", "opset17"), NS(single_plane=True), [rgb]
        yield r("BGRtoNV12", "opset17"), NS(single_plane=False), [rgb]
    if dtype == np.float32:
        words = np.array([f"w{i % 1000}" for i in range(1 << 15)], object).reshape(256, 128)
        yield r("StringTensorUnpack", "opset15"), NS(), [words]
        symbols = np.frombuffer(b"".join(w.encode() for w in words.reshape(-1)), np.uint8)
        ends = np.cumsum([len(w) for w in words.reshape(-1)]).reshape(256, 128)
        yield (r("StringTensorPack", "opset15"), NS(),
               [ends - np.vectorize(len)(words), ends, symbols])
    if dtype.kind == "f":
        seq = x.reshape(16, 64, 32)  # [N, T, C]
        lengths = rng.integers(1, 65, 16)
        yield (r("CTCGreedyDecoder", "opset1"), NS(ctc_merge_repeated=True),
               [seq.transpose(1, 0, 2), (np.arange(64)[:, None] < lengths).astype(dtype)])
        yield (r("CTCGreedyDecoderSeqLen", "opset6"),
               NS(merge_repeated=True, classes_index_type=ET["i32"],
                  sequence_length_type=ET["i64"]), [seq, lengths])
        labels = rng.integers(0, 31, (16, 64))
        yield (r("CTCLoss", "opset4"),
               NS(preprocess_collapse_repeated=False, ctc_merge_repeated=True, unique=True),
               [seq, np.full(16, 64), labels, lengths // 2])
    grid = rng.uniform(-1.2, 1.2, (2, 24, 24, 2)).astype(np.float32)
    for mode in ("bilinear", "bicubic", "nearest"):
        yield (r("GridSample", "opset9"),
               NS(mode=mode, padding_mode="zeros", align_corners=False), [img, grid])
    if dtype.kind == "f":  # DeformableConvolution: 16 channels sampled at 32x32 positions
        dc = NS(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                auto_pad="explicit", group=2, deformable_group=4, bilinear_interpolation_pad=True)
        offsets = rng.uniform(-2, 2, (2, 4 * 18, 32, 32)).astype(dtype)
        filters = rng.standard_normal((8, 8, 3, 3)).astype(dtype)
        mask = rng.uniform(0, 1, (2, 4 * 9, 32, 32)).astype(dtype)
        yield r("DeformableConvolution", "opset8"), dc, [img, offsets, filters, mask]
        yield r("DeformableConvolution", "opset1"), dc, [img, offsets, filters]
        bc = NS(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                auto_pad="explicit", mode="xnor-popcount", pad_value=1.0)
        bits = rng.integers(0, 2, (8, 16, 3, 3)).astype(np.uint8)
        yield r("BinaryConvolution", "opset1"), bc, [img, bits]
        ps = NS(output_dim=4, spatial_scale=0.5, group_size=2, mode="bilinear_deformable",
                spatial_bins_x=2, spatial_bins_y=2, trans_std=0.1, part_size=2)
        rois = np.c_[rng.integers(0, 2, 512), rng.uniform(0, 64, (512, 4))].astype(dtype)
        yield (r("DeformablePSROIPooling", "opset1"), ps,
               [img, rois, rng.standard_normal((512, 2, 2, 2)).astype(dtype)])
    if dtype.kind == "f":
        lo, hi = dtype.type(-5), dtype.type(5)
        yield r("FakeQuantize", "opset1"), NS(levels=255, auto_broadcast="numpy"), [x, lo, hi, lo, hi]
    yield r("Reverse", "opset1"), NS(mode="index"), [x, _i(0, 2)]
    yield r("Reverse", "opset1"), NS(mode="mask"), [x, np.array([True, False, True])]
    yield (r("ReverseSequence", "opset1"), NS(batch_axis=0, seq_axis=2),
           [x, rng.integers(1, 64, 8)])
    updates = np.ones((8, 10, 64), dtype)
    yield r("ScatterUpdate", "opset3"), NS(), [x, rng.permutation(64)[:10], updates, np.int64(1)]
    for red in ("none", "sum", "prod", "min", "max", "mean"):
        yield (r("ScatterElementsUpdate", "opset12"), NS(reduction=red, use_init_val=True),
               [x, rng.integers(0, 64, (8, 32, 64)), np.ones((8, 32, 64), dtype), np.int64(1)])
    for red in ("none", "sum", "max"):
        yield (r("ScatterNDUpdate", "opset15"), NS(reduction=red),
               [x, rng.integers(0, 8, (20, 1)), np.ones((20, 64, 64), dtype)])
    yield r("Slice", "opset8"), NS(), [x, _i(1, 60), _i(7, 2), _i(1, -3), _i(0, 2)]
    yield (r("SliceScatter", "opset15"), NS(),
           [x, np.ones((8, 30, 20), dtype), _i(1, 60), _i(61, 2), _i(2, -3), _i(1, 2)])
    # Many indices into a small table: the gathered rows outgrow every input and output.
    table, many = x.reshape(512, 64)[:40], rng.integers(0, 40, 3000)
    weights = np.ones(3000, dtype)
    for red in ("sum", "mean"):
        yield (r("EmbeddingBagOffsets", "opset15"), NS(reduction=red),
               [table, many, np.sort(rng.integers(0, 3000, 50)), np.int64(2)])
    yield (r("EmbeddingBagOffsetsSum", "opset3"), NS(),
           [table, many, np.sort(rng.integers(0, 3000, 50)), np.int64(-1), weights])
    yield r("EmbeddingBagPacked", "opset15"), NS(reduction="mean"), [table, many.reshape(30, 100)]
    yield (r("EmbeddingBagPackedSum", "opset3"), NS(),
           [table, many.reshape(30, 100), weights.reshape(30, 100)])
    yield (r("EmbeddingSegmentsSum", "opset3"), NS(),
           [table, many, rng.integers(0, 20, 3000), np.int64(20), np.int64(3), weights])
    for fill in ("zero", "lowest"):
        yield (r("SegmentMax", "opset16"), NS(fill_mode=fill),
               [x, np.sort(rng.integers(0, 12, 8)), np.int64(10)])
    pairs = rng.integers(0, 64, (4096, 2))
    yield (r("SparseFillEmptyRows", "opset16"), NS(),
           [x.reshape(-1)[:4096], _i(5000, 64), pairs, dtype.type(7)])
    yield (r("StridedSlice", "opset1"),
           NS(begin_mask=(0, 0, 0), end_mask=(0, 0, 0), new_axis_mask=(), shrink_axis_mask=(),
              ellipsis_mask=()), [x, _i(0, 1, 60), _i(8, 60, 0), _i(1, 2, -3)])
    bounds = np.sort(rng.standard_normal(100)).astype(dtype) * 10
    yield r("Bucketize", "opset3"), NS(output_type=ET["i64"], with_right_bound=True), [x, bounds]
    yield (r("SearchSorted", "opset15"), NS(right_mode=False, output_type=ET["i64"]),
           [np.sort(x, axis=-1), x])
    for axis in (None, 1):
        yield (r("Unique", "opset10"),
               NS(sorted=True, index_element_type=ET["i64"], count_element_type=ET["i64"]),
               [x] if axis is None else [x, np.int64(axis)])
    yield r("SpaceToBatch", "opset2"), NS(), [img, _i(1, 1, 2, 2), _i(0, 0, 1, 0), _i(0, 0, 1, 0)]
    yield r("BatchToSpace", "opset2"), NS(), [img, _i(1, 1, 2, 1), _i(0, 0, 1, 0), _i(0, 0, 1, 0)]
    for sort in ("value", "index", "none"):
        yield (r("TopK", "opset11"),
               NS(axis=2, mode="max", sort=sort, index_element_type=ET["i32"], stable=True),
               [x, np.int64(20)])
    yield (r("TopK", "opset11"),
           NS(axis=0, mode="min", sort="value", index_element_type=ET["i64"], stable=False),
           [x, np.int64(3)])
    yield r("Einsum", "opset7"), NS(equation="abc,acd->abd"), [x, x]
    yield r("Einsum", "opset7"), NS(equation="abc->cb"), [x]
    yield r("Einsum", "opset7"), NS(equation="aij,aij->a"), [x, x]
    yield r("Einsum", "opset7"), NS(equation="abc,acd,ade->abe"), [x, x, x]
    yield r("GroupedMatMul", "opset17"), NS(), [x, x]
    if dtype.kind == "f":
        yield r("Inverse", "opset14"), NS(adjoint=True), [x + 64 * np.eye(64, dtype=dtype)]
    yield r("GroupedMatMul", "opset17"), NS(), [x.reshape(512, 64), x, _i(0, 100, 100, 260, 300,
                                                                          400, 410, 500)]
    if dtype.name in ("int32", "float32", "float16", "float64"):
        yield from _gather_tree(rng, dtype)
    yield (r("PriorBox", "opset8"),
           NS(min_size=(4.0, 8.0), max_size=(9.0, 12.0), aspect_ratio=(2.0, 3.0), density=(),
              fixed_ratio=(), fixed_size=(), clip=True, flip=True, step=0.0, offset=0.5,
              variance=(0.1, 0.1, 0.2, 0.2), scale_all_sizes=True,
              min_max_aspect_ratios_order=True), [_i(32, 32), _i(300, 300)])
    yield (r("PriorBoxClustered", "opset1"),
           NS(width=(2.0, 4.0, 8.0), height=(3.0, 5.0, 1.0), clip=True, step=0.0, step_w=0.0,
              step_h=0.0, offset=0.5, variance=()), [_i(64, 64), _i(300, 300)])
    yield r("ReorgYolo", "opset2"), NS(stride=(2,)), [x.reshape(1, 8, 64, 64)]
    if dtype.kind == "f":
        yield (r("RegionYolo", "opset1"),
               NS(coords=4, classes=3, num=4, do_softmax=True, mask=(), axis=1, end_axis=3,
                  anchors=()), [x.reshape(1, 32, 32, 32)])
        yield (r("RegionYolo", "opset1"),
               NS(coords=4, classes=3, num=9, do_softmax=False, mask=(0, 1, 2, 3), axis=1,
                  end_axis=3, anchors=()), [x.reshape(1, 32, 32, 32)])
        for version in ("opset1", "opset4"):
            yield (r("Proposal", version),
                   NS(base_size=16, pre_nms_topn=6000, post_nms_topn=300, nms_thresh=0.7,
                      feat_stride=16, min_size=16, ratio=(0.5, 1.0, 2.0), scale=(8.0, 16.0, 32.0),
                      clip_before_nms=True, clip_after_nms=False, normalize=False,
                      box_size_scale=1.0, box_coordinate_scale=1.0, framework=""),
                   [rng.uniform(0, 1, (1, 18, 38, 50)).astype(dtype),
                    rng.normal(0, 0.2, (1, 36, 38, 50)).astype(dtype),
                    np.array([600, 800, 1], dtype)])  # fmt: skip
        n_priors = 4000
        corners = np.sort(rng.uniform(0, 1, (n_priors, 2, 2)), axis=1).transpose(0, 2, 1)
        priors = np.stack([corners.reshape(-1), np.full(4 * n_priors, 0.1)])[None]
        for mxnet in (False, True):
            yield (r("DetectionOutput", "opset8"),
                   NS(background_label_id=0, top_k=400, variance_encoded_in_target=False,
                      keep_top_k=(200,), code_type="caffe.PriorBoxParameter.CENTER_SIZE",
                      share_location=True, nms_threshold=0.45, confidence_threshold=0.01,
                      clip_after_nms=False, clip_before_nms=False, decrease_label_id=mxnet,
                      normalized=True, input_height=1, input_width=1, objectness_score=0.0),
                   [rng.normal(0, 0.5, (2, 4 * n_priors)).astype(dtype),
                    rng.uniform(0, 1, (2, 5 * n_priors)).astype(dtype),
                    priors.astype(dtype)])  # fmt: skip
        boxes = np.sort(rng.uniform(0, 100, (2, 500, 4)).astype(dtype), axis=-1)
        scores = rng.uniform(0, 1, (2, 3, 500)).astype(dtype)
        yield (r("NonMaxSuppression", "opset9"),
               NS(box_encoding="corner", sort_result_descending=True, output_type=ET["i64"]),
               [boxes, scores, np.int64(200), np.float32(0.5), np.float32(0.1)])
        yield from _recurrent(rng, dtype)
        yield (r("MulticlassNms", "opset8"),
               NS(sort_result_type="score", sort_result_across_batch=True, output_type=ET["i64"],
                  iou_threshold=0.5, score_threshold=0.1, nms_top_k=-1, keep_top_k=-1,
                  background_class=-1, nms_eta=0.9, normalized=True), [boxes, scores])
        rotated = np.concatenate([boxes[..., :2], np.abs(boxes[..., 2:]) % 20 + 1,
                                  boxes[..., :1] / 50], -1)
        yield (r("NMSRotated", "opset13"),
               NS(sort_result_descending=True, output_type=ET["i64"], clockwise=True),
               [rotated[:, :200], scores[..., :200], np.int64(50), np.float32(0.5),
                np.float32(0.1)])
        for decay in ("linear", "gaussian"):
            yield (r("MatrixNms", "opset8"),
                   NS(sort_result_type="score", sort_result_across_batch=False,
                      output_type=ET["i64"], score_threshold=0.1, nms_top_k=-1, keep_top_k=-1,
                      background_class=-1, decay_function=decay, gaussian_sigma=2.0,
                      post_threshold=0.05, normalized=True), [boxes, scores])
        yield (r("MulticlassNms", "opset9"),
               NS(sort_result_type="classid", sort_result_across_batch=False,
                  output_type=ET["i32"], iou_threshold=0.5, score_threshold=0.1, nms_top_k=-1,
                  keep_top_k=-1, background_class=0, nms_eta=1.0, normalized=False),
               [boxes.reshape(4, 250, 4), scores.reshape(-1)[:1000].reshape(4, 250),
                np.array([100, 0, 150], np.int32)])
        yield (r("NonMaxSuppression", "opset4"),
               NS(box_encoding="corner", sort_result_descending=True, output_type=ET["i64"]),
               [boxes, scores, np.int64(200), np.float32(0.5), np.float32(0.1)])
        rois = np.sort(rng.uniform(0, 30, (40, 4)).astype(dtype), axis=-1)
        rois5 = np.concatenate([rng.integers(0, 2, (40, 1)).astype(dtype), rois], 1)
        for method in ("max", "bilinear"):
            yield (r("ROIPooling", "opset2"),
                   NS(output_size=(), output_roi=(), pooled_h=7, pooled_w=7, spatial_scale=1.0,
                      method=method), [img, rois5 if method == "max" else rois5 / 30])
        yield (r("PSROIPooling", "opset1"),
               NS(output_dim=4, group_size=2, spatial_scale=1.0, mode="average",
                  spatial_bins_x=1, spatial_bins_y=1), [img, rois5])
        yield (r("PSROIPooling", "opset1"),
               NS(output_dim=4, group_size=3, spatial_scale=1.0, mode="bilinear",
                  spatial_bins_x=2, spatial_bins_y=2), [img, rois5 / 30])
        for mode in ("avg", "max"):
            yield (r("ROIAlign", "opset9"),
                   NS(pooled_h=7, pooled_w=7, sampling_ratio=2, spatial_scale=1.0, mode=mode,
                      aligned_mode="half_pixel"), [img, rois, rng.integers(0, 2, 40)])
        rotated = np.concatenate([rois[:, :2], rois[:, 2:] - rois[:, :2] + 1,
                                  rng.uniform(-3, 3, (40, 1)).astype(dtype)], 1)
        for ratio in (0, 2):
            yield (r("ROIAlignRotated", "opset15"),
                   NS(pooled_h=7, pooled_w=7, sampling_ratio=ratio, spatial_scale=1.0,
                      clockwise_mode=True), [img, rotated, rng.integers(0, 2, 40)])
    if dtype.kind == "f":
        yield from _signal_cases(dtype, rng)
        yield from _detectron_cases(dtype, rng)


def _detectron_cases(dtype: np.dtype, rng: np.random.Generator) -> Iterator[Case]:
    """irrun/ops/experimental_detectron.py's ops."""
    r = resolve
    priors = rng.uniform(-30, 30, (9, 4)).astype(dtype)
    featmap, image = np.zeros((1, 1, 100, 120), dtype), np.zeros((1, 1, 800, 960), dtype)
    for h in (0, 50):
        yield (r("ExperimentalDetectronPriorGridGenerator", "opset6"),
               NS(flatten=True, h=h, w=0, stride_x=0.0, stride_y=0.0), [priors, featmap, image])
    rois = rng.uniform(0, 500, (20000, 4)).astype(dtype)
    yield (r("ExperimentalDetectronTopKROIs", "opset6"), NS(max_rois=5000),
           [rois, rng.uniform(0, 1, 20000).astype(dtype)])
    maps = [rng.standard_normal((1, 16, 64 // 2**k, 48 // 2**k)).astype(dtype) for k in range(4)]
    corner = rng.uniform(0, 200, (300, 2))
    regions = np.concatenate([corner, corner + rng.uniform(4, 600, (300, 2))], 1).astype(dtype)
    for ratio in (0, 2):
        yield (r("ExperimentalDetectronROIFeatureExtractor", "opset6"),
               NS(output_size=7, sampling_ratio=ratio, pyramid_scales=(4, 8, 16, 32),
                  aligned=True), [regions, *maps])
    n, cells = 9, (40, 50)
    corner = rng.uniform(0, 500, (cells[0] * cells[1] * n, 2))
    anchors = np.concatenate([corner, corner + rng.uniform(4, 90, corner.shape)], 1)
    yield (r("ExperimentalDetectronGenerateProposalsSingleImage", "opset6"),
           NS(min_size=2.0, nms_threshold=0.7, post_nms_count=300, pre_nms_count=6000),
           [np.array([600, 600, 1], dtype), anchors.astype(dtype),
            rng.normal(0, 0.5, (4 * n, *cells)).astype(dtype),
            rng.uniform(0, 1, (n, *cells)).astype(dtype)])
    corner = rng.uniform(0, 500, (2000, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(4, 90, corner.shape)], 1)
    yield (r("ExperimentalDetectronDetectionOutput", "opset6"),
           NS(score_threshold=0.05, nms_threshold=0.5, max_delta_log_wh=4.0, num_classes=8,
              post_nms_count=20, max_detections_per_image=100,
              class_agnostic_box_regression=False, deltas_weights=(10.0, 10.0, 5.0, 5.0)),
           [boxes.astype(dtype), rng.normal(0, 1, (2000, 32)).astype(dtype),
            rng.uniform(0, 1, (2000, 8)).astype(dtype), np.array([[600, 600, 1]], dtype)])
    yield (r("GenerateProposals", "opset9"),
           NS(min_size=2.0, nms_threshold=0.7, pre_nms_count=3000, post_nms_count=200,
              normalized=False, nms_eta=1.0, roi_num_type=ET["i32"]),
           [np.array([[600, 600, 1], [500, 400, 2]], dtype),
            anchors.reshape(*cells, n, 4).astype(dtype),
            rng.normal(0, 0.5, (2, 4 * n, *cells)).astype(dtype),
            rng.uniform(0, 1, (2, n, *cells)).astype(dtype)])


def _signal_cases(dtype: np.dtype, rng: np.random.Generator) -> Iterator[Case]:
    """The transforms (DFT and its kin take f32, f16 and bf16; STFT and ISTFT f64 too)."""
    r = resolve
    if dtype != np.float64:
        c = rng.standard_normal((8, 64, 32, 2)).astype(dtype)
        for op in ("DFT", "IDFT"):
            yield r(op, "opset7"), NS(), [c, _i(1, 2)]
            yield r(op, "opset7"), NS(), [c, _i(2, 0), _i(48, -1)]
        yield r("RDFT", "opset9"), NS(), [c[..., 0].copy(), _i(2, 1)]
        yield r("RDFT", "opset9"), NS(), [c[..., 0].copy(), _i(0, 2), _i(16, 80)]
        yield r("IRDFT", "opset9"), NS(), [c, _i(1, 2)]
        yield r("IRDFT", "opset9"), NS(), [c, _i(2, 1), _i(20, 100)]
    signal = rng.standard_normal((4, 8192)).astype(dtype)
    window = np.hanning(200).astype(dtype)
    for transpose in (False, True):
        yield (r("STFT", "opset15"), NS(transpose_frames=transpose),
               [signal, window, np.int64(256), np.int64(64)])
    spectrum = rng.standard_normal((4, 129, 125, 2)).astype(dtype)
    for center in (False, True):
        yield (r("ISTFT", "opset16"), NS(center=center, normalized=True),
               [spectrum, window, np.int64(256), np.int64(64)])
    yield (r("ISTFT", "opset16"), NS(center=False, normalized=False),
           [spectrum, window, np.int64(256), np.int64(64), np.int64(20000)])
