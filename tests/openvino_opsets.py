"""Regenerate ``irrun/ir/opsets.py``: which op types OpenVINO's opsets 1 to 17 hold.

    python tests/openvino_opsets.py      # needs openvino; takes a few minutes

Membership is asked of the installed OpenVINO's IR reader: a one-layer IR whose layer
has ``type=T version="opsetN"`` is refused with "Opset opsetN doesn't contain the
operation with type: T" exactly when opsetN lacks T (the reader looks the type up
before it builds the node).  Building a node with no inputs crashes some ops, so each
type is asked in a process of its own, and a crash counts as found.

OpenVINO's Python API cannot tell an op's versions apart (its factory modules lag the
C++ opset tables), so the versions are listed here by hand: for each type with more
than one, the opsets that introduced a new version, from OpenVINO's opset tables
(``src/core/include/openvino/opsets/opsetN_tbl.hpp``).  ``tests/tools/test_ops.py``
checks the committed file against the reader without building a node.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LATEST = 17
TARGET = Path(__file__).resolve().parents[1] / "irrun" / "ir" / "opsets.py"

# Every op type some opset of OpenVINO 2024-2026 has declared, spelled as its table does.
CANDIDATES = """
Abs Acos Acosh AdaptiveAvgPool AdaptiveMaxPool Add Asin Asinh Assign Atan Atanh AvgPool
BatchNormInference BatchToSpace BGRtoNV12 BinaryConvolution BitwiseAnd BitwiseLeftShift BitwiseNot
BitwiseOr BitwiseRightShift BitwiseXor Broadcast Bucketize CTCGreedyDecoder
CTCGreedyDecoderSeqLen CTCLoss Ceiling Clamp Col2Im Concat Constant Convert ConvertLike
ConvertPromoteTypes Convolution ConvolutionBackpropData Cos Cosh CumSum DFT
DeformableConvolution DeformablePSROIPooling DepthToSpace DetectionOutput Divide Einsum Elu
EmbeddingBagOffsets EmbeddingBagOffsetsSum EmbeddingBagPacked EmbeddingBagPackedSum
EmbeddingSegmentsSum Equal Erf ErfInv Exp ExperimentalDetectronDetectionOutput
ExperimentalDetectronGenerateProposalsSingleImage ExperimentalDetectronPriorGridGenerator
ExperimentalDetectronROIFeatureExtractor ExperimentalDetectronTopKROIs ExtractImagePatches Eye
FakeConvert FakeQuantize Floor FloorMod GRN GRUCell GRUSequence Gather GatherElements GatherND
GatherTree Gelu GenerateProposals Greater GreaterEqual GridSample GroupConvolution
GroupConvolutionBackpropData GroupNormalization GroupedMatMul HSigmoid HSwish HardSigmoid I420toBGR I420toRGB
IDFT IRDFT ISTFT Identity If Interpolate Inverse IsFinite IsInf IsNaN LRN LSTMCell LSTMSequence
Less LessEqual Log LogSoftmax LogicalAnd LogicalNot LogicalOr LogicalXor Loop MOE MVN MatMul
MatrixNms MaxPool Maximum Minimum Mish Mod MulticlassNms Multinomial Multiply NMSRotated NV12toBGR
NV12toRGB Negative NonMaxSuppression NonZero NormalizeL2 NotEqual OneHot PRelu PSROIPooling Pad
Parameter Power PriorBox PriorBoxClustered Proposal RDFT RNNCell RNNSequence ROIAlign
ROIAlignRotated ROIPooling RandomUniform Range ReadValue ReduceL1 ReduceL2 ReduceLogicalAnd
ReduceLogicalOr ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum RegionYolo Relu ReorgYolo
Reshape Result Reverse ReverseSequence RGBtoNV12 Roll Round STFT ScaledDotProductAttention
ScatterElementsUpdate ScatterNDUpdate ScatterUpdate SearchSorted SegmentMax Select Selu ShapeOf
ShuffleChannels Sigmoid Sign Sin Sinh Slice SliceScatter SoftPlus SoftSign Softmax SpaceToBatch
SpaceToDepth SparseConv SparseFillEmptyRows Split Sqrt SquaredDifference Squeeze
StridedSlice StringTensorPack StringTensorUnpack Subtract Swish Tan Tanh TensorIterator Tile
TopK Transpose Unique Unsqueeze VariadicSplit Xor
""".split()  # noqa: SIM905 (a word list reads better as text)

# The opsets that introduced each new version, for the types with more than one.
VERSIONS = {
    "Assign": (3, 6), "AvgPool": (1, 14, 16), "BatchNormInference": (1, 5), "Broadcast": (1, 3),
    "DeformableConvolution": (1, 8), "DetectionOutput": (1, 8), "Gather": (1, 7, 8),
    "GatherND": (5, 8), "Gelu": (2, 7), "Interpolate": (1, 4, 11), "LSTMCell": (1, 4),
    "MVN": (2, 6), "MaxPool": (1, 8, 14), "MulticlassNms": (8, 9),
    "NonMaxSuppression": (1, 3, 4, 5, 9), "OneHot": (1, 16), "Pad": (1, 12),
    "PriorBox": (1, 8), "Proposal": (1, 4), "ROIAlign": (3, 9), "Range": (1, 4),
    "ReadValue": (3, 6), "ScatterElementsUpdate": (3, 12), "ScatterNDUpdate": (4, 15),
    "ShapeOf": (1, 3), "Softmax": (1, 8), "Squeeze": (1, 15), "TopK": (1, 3, 11),
}  # fmt: skip

# The IR reader takes these in opset1 but builds them from opset2 (OpenVINO's own special case).
FROM_OPSET2 = ("MVN", "ROIPooling", "ReorgYolo")

_PROBE = r'''
import sys, openvino as ov
core = ov.Core()
t, start = sys.argv[1], int(sys.argv[2])
for n in range(start, int(sys.argv[3]) + 1):
    xml = f"""<?xml version="1.0"?><net name="p" version="11"><layers>
<layer id="0" name="x" type="{t}" version="opset{n}"><data/><output><port id="0" precision="FP32"><dim>1</dim></port></output></layer>
<layer id="1" name="r" type="Result" version="opset1"><input><port id="0"><dim>1</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges></net>"""
    try:
        core.read_model(xml.encode(), ov.Tensor(ov.Type.u8, [0]))
        found = True
    except Exception as e:
        found = "doesn't contain the operation" not in str(e)
    print("1" if found else "0", end="", flush=True)
'''


def membership(type_name: str) -> tuple[int, ...]:
    """The opsets (1..LATEST) whose reader knows ``type_name``."""
    bits = ""
    while len(bits) < LATEST:
        args = [sys.executable, "-c", _PROBE, type_name, str(len(bits) + 1), str(LATEST)]
        done = subprocess.run(args, capture_output=True, text=True)
        bits += done.stdout
        if done.returncode != 0 and len(bits) < LATEST:
            bits += "1"  # it crashed building the node: the lookup had found the type
    return tuple(n for n, bit in enumerate(bits, 1) if bit == "1")


def ranges(opsets: tuple[int, ...]) -> str:
    """``(1, 3, 4, 5)`` -> ``"1,3-5"``."""
    runs: list[list[int]] = []
    for n in opsets:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs)


def render(table: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> str:
    lines = [
        f'"""The op types of OpenVINO\'s opsets 1 to {LATEST} (as OpenVINO 2026.4 reads IR files).',
        "",
        "Generated by ``tests/openvino_opsets.py``; do not edit.  ``OPSETS`` maps each type,",
        "spelled as OpenVINO's opset tables spell it, to the opsets that hold it (as ranges)",
        "and the opsets that introduced each of its versions.",
        '"""',
        "",
        "OPSETS: dict[str, tuple[str, tuple[int, ...]]] = {",
    ]
    for t in sorted(table, key=str.lower):
        members, versions = table[t]
        lines.append(f'    "{t}": ("{ranges(members)}", {versions!r}),')
    lines += ["}", ""]
    return "\n".join(lines)


def main() -> None:
    with ThreadPoolExecutor(2) as pool:
        found = dict(zip(CANDIDATES, pool.map(membership, CANDIDATES), strict=True))
    table = {}
    for t, members in found.items():
        if not members:
            continue  # declared in some release, not in this one
        if t in FROM_OPSET2:
            members = tuple(n for n in members if n >= 2)
        versions = VERSIONS.get(t, (members[0],))
        assert versions[0] == members[0], (t, versions, members)
        table[t] = (members, versions)
    TARGET.write_text(render(table))
    print(f"wrote {TARGET} ({len(table)} op types)")


if __name__ == "__main__":
    main()
