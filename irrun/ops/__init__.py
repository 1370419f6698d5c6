"""The ops irrun runs, one module per family.  Importing this package registers every one
of them; a module's docstring opens with the op types it registers.

The graph's ends, element types and state:
    graph_ends            Parameter, Result, Const
    convert               Convert, ConvertLike
    variables             ReadValue, Assign
Elementwise:
    elementwise           Add, Subtract, Multiply, Divide, Power, Maximum, Minimum, Mod,
                          FloorMod, Abs, Negative, Sign, Sqrt, Exp, Log, Sin, Cos, Tanh,
                          Sigmoid, Erf, Floor, Ceiling, ReLU, Clamp, Elu, PRelu, Swish, Gelu,
                          HSigmoid, HSwish, Mish, SoftPlus, SoftSign
    unary_math            Acos, Acosh, Asin, Asinh, Atan, Atanh, Cosh, Sinh, Tan, Round,
                          HardSigmoid, Selu, IsFinite, IsInf, IsNaN, Identity,
                          SquaredDifference, ConvertPromoteTypes
    bitwise               BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, BitwiseLeftShift,
                          BitwiseRightShift
    logical               Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual,
                          LogicalAnd, LogicalOr, LogicalXor, LogicalNot, Select
    quantize              FakeQuantize
Reductions, sorting and searching:
    reduction             ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL1,
                          ReduceL2, ReduceLogicalAnd, ReduceLogicalOr, CumSum, SoftMax,
                          LogSoftmax
    topk                  TopK
    sorting               Bucketize, SearchSorted, Unique
    non_zero              NonZero
Products:
    matmul                MatMul
    einsum                Einsum
    attention             ScaledDotProductAttention
Normalization:
    normalization         BatchNormInference, GroupNormalization, LRN, MVN, NormalizeL2
    grn                   GRN
Convolution and pooling (window: the windows' geometry; pool_checks: the pools' warnings):
    convolution           Convolution, GroupConvolution
    convolution_backprop  ConvolutionBackpropData, GroupConvolutionBackpropData
    max_pool              MaxPool
    avg_pool              AvgPool
    adaptive_pool         AdaptiveAvgPool, AdaptiveMaxPool
Data movement:
    movement              Reshape, Concat, Split, VariadicSplit, Squeeze, Unsqueeze,
                          Transpose, ShapeOf, Broadcast, Pad, Tile, Roll
    slicing               Slice, StridedSlice
    gather                Gather, GatherElements, GatherND
    scatter               ScatterUpdate, ScatterElementsUpdate, ScatterNDUpdate
    reverse               Reverse, ReverseSequence
    layout                DepthToSpace, SpaceToDepth, ShuffleChannels
    space_batch           BatchToSpace, SpaceToBatch
    patches               ExtractImagePatches
    creation              Range, Eye, OneHot
Images and detection:
    interpolate           Interpolate
    detection             NonMaxSuppression, ROIAlign

If, Loop and TensorIterator register from :mod:`irrun.core.subgraphs`: their bodies need
core's machinery.  ``blocks`` splits elementwise work over the run's threads; ``basic``
holds no op, only ``convert`` under its old address for the modules still importing it there.
"""

from . import (  # noqa: F401  (importing a module registers its ops)
    adaptive_pool,
    attention,
    avg_pool,
    bitwise,
    convert,
    convolution,
    convolution_backprop,
    creation,
    detection,
    einsum,
    elementwise,
    gather,
    graph_ends,
    grn,
    interpolate,
    layout,
    logical,
    matmul,
    max_pool,
    movement,
    non_zero,
    normalization,
    patches,
    quantize,
    reduction,
    reverse,
    scatter,
    slicing,
    sorting,
    space_batch,
    topk,
    unary_math,
    variables,
)
