"""The ops irrun runs, one module per family.  Importing this package registers every one
of them; a module's docstring opens with the op types it registers.

The graph's ends, element types and state:
    graph_ends            Parameter, Result, Const
    convert               Convert, ConvertLike
    variables             ReadValue, Assign
Elementwise:
    arithmetic            Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, Mod, FloorMod,
                          SquaredDifference, ConvertPromoteTypes
    activations           Sigmoid, HSigmoid, HSwish, SoftPlus, Mish, SoftSign, Elu, ReLU, Clamp,
                          Selu, HardSigmoid, PRelu, Swish, Gelu
    unary                 Sqrt, Exp, Log, Erf, ErfInv, Sin, Cos, Tan, Tanh, Floor, Ceiling, Acos,
                          Asin, Atan, Cosh, Sinh, Acosh, Asinh, Atanh, Round, Abs, Negative,
                          Sign, IsFinite, IsNaN, IsInf, Identity
    bitwise               BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, BitwiseLeftShift,
                          BitwiseRightShift
    logical               Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, LogicalAnd,
                          LogicalOr, LogicalXor, Xor, LogicalNot, Select
    quantize              FakeQuantize, FakeConvert
Reductions, sorting and searching:
    reduction             ReduceMean, ReduceMax, ReduceSum, ReduceProd, ReduceMin, ReduceL1,
                          ReduceL2, ReduceLogicalAnd, ReduceLogicalOr, CumSum
    softmax               SoftMax, LogSoftmax
    topk                  TopK
    sorting               Bucketize, SearchSorted, Unique
    non_zero              NonZero
    ctc                   CTCGreedyDecoder, CTCGreedyDecoderSeqLen, CTCLoss
Strings:
    strings               StringTensorPack, StringTensorUnpack
Products:
    matmul                MatMul
    grouped_matmul        GroupedMatMul
    inverse               Inverse
    einsum                Einsum
    attention             ScaledDotProductAttention
Normalization:
    normalization         BatchNormInference, MVN, NormalizeL2, LRN, GroupNormalization
    grn                   GRN
Signal processing:
    signal                DFT, IDFT, RDFT, IRDFT, STFT, ISTFT
Convolution and pooling (window: the windows' geometry; pool_checks: the pools' warnings):
    convolution           Convolution, GroupConvolution
    binary_convolution    BinaryConvolution
    convolution_backprop  ConvolutionBackpropData, GroupConvolutionBackpropData
    deformable            DeformableConvolution, DeformablePSROIPooling
    max_pool              MaxPool
    avg_pool              AvgPool
    adaptive_pool         AdaptiveAvgPool, AdaptiveMaxPool
Data movement:
    movement              Reshape, Concat, Squeeze, Unsqueeze, Transpose, ShapeOf, Broadcast, Pad,
                          Split, VariadicSplit, Tile, Roll
    slicing               Slice, SliceScatter, StridedSlice
    gather                Gather, GatherElements, GatherND
    scatter               ScatterUpdate, ScatterElementsUpdate, ScatterNDUpdate
    reverse               Reverse, ReverseSequence
    layout                DepthToSpace, SpaceToDepth, ShuffleChannels
    space_batch           BatchToSpace, SpaceToBatch
    patches               ExtractImagePatches
    col2im                Col2Im
    creation              Range, Eye, OneHot
Sequences:
    recurrent             RNNCell, GRUCell, LSTMCell, RNNSequence, GRUSequence, LSTMSequence,
                          GatherTree
Embeddings and sparse tensors:
    embedding             EmbeddingBagOffsetsSum, EmbeddingBagOffsets, EmbeddingBagPackedSum,
                          EmbeddingBagPacked, EmbeddingSegmentsSum
    segments              SegmentMax, SparseFillEmptyRows
Images and detection:
    interpolate           Interpolate
    grid_sample           GridSample
    color                 NV12toRGB, NV12toBGR, I420toRGB, I420toBGR, RGBtoNV12, BGRtoNV12
    detection             NonMaxSuppression, ROIAlign, ROIAlignRotated
    experimental_detectron  ExperimentalDetectronPriorGridGenerator,
                          ExperimentalDetectronTopKROIs, ExperimentalDetectronROIFeatureExtractor,
                          ExperimentalDetectronGenerateProposalsSingleImage,
                          ExperimentalDetectronDetectionOutput, GenerateProposals
    detection_output      DetectionOutput
    nms_family            MulticlassNms, MatrixNms, NMSRotated
Random numbers:
    random                RandomUniform, Multinomial
    priors                PriorBox, PriorBoxClustered
    proposal              Proposal
    roi_pooling           ROIPooling, PSROIPooling
    yolo                  RegionYolo, ReorgYolo

If, Loop and TensorIterator register from :mod:`irrun.core.subgraphs`: their bodies need
core's machinery.  Shared shape and type helpers live in ``_shapes``; the kernels' scratch
declarations in ``_scratch``.
"""

from . import (  # noqa: F401  (importing a module registers its ops)
    activations,
    adaptive_pool,
    arithmetic,
    attention,
    avg_pool,
    binary_convolution,
    bitwise,
    col2im,
    color,
    convert,
    convolution,
    convolution_backprop,
    creation,
    ctc,
    deformable,
    detection,
    detection_output,
    einsum,
    embedding,
    experimental_detectron,
    gather,
    graph_ends,
    grid_sample,
    grn,
    grouped_matmul,
    interpolate,
    inverse,
    layout,
    logical,
    matmul,
    max_pool,
    movement,
    nms_family,
    non_zero,
    normalization,
    patches,
    priors,
    proposal,
    quantize,
    random,
    recurrent,
    reduction,
    reverse,
    roi_pooling,
    scatter,
    segments,
    signal,
    slicing,
    softmax,
    sorting,
    space_batch,
    strings,
    topk,
    unary,
    variables,
    yolo,
)
