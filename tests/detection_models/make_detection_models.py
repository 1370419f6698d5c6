"""Regenerate the IR files in this folder: torchvision's detection ops in tiny modules,
converted by OpenVINO's PyTorch frontend as users convert theirs.

    python tests/detection_models/make_detection_models.py   # needs torch, torchvision, openvino

``torchvision.ops.nms`` becomes NonMaxSuppression-9 (corner boxes, sorted, no
soft NMS) and ``torchvision.ops.roi_align`` becomes ROIAlign-9 (``aligned=True`` as
``half_pixel_for_nn``, ``aligned=False`` as ``asymmetric``); ``batched_nms``
becomes an If-8 (not kept here).  torchvision's default ``sampling_ratio=-1``
(adaptive in torchvision) is passed through as ``sampling_ratio="-1"``, which
OpenVINO's reference kernel refuses and its CPU plugin turns into zeros:
``roi_default`` keeps that case.

``expected.npz`` holds, per model, the inputs and PyTorch's outputs (seeded random
weights and inputs; ``nms_tie``: boxes whose IoU equals the threshold), so that ``tests/ops/test_detection.py`` can compare irrun with
PyTorch too.  PyTorch is needed here only, not by the tests.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import torch
from torch import nn
from torchvision.ops import nms, roi_align

HERE = Path(__file__).resolve().parent


class Nms(nn.Module):
    def forward(self, boxes, scores):
        return nms(boxes, scores, 0.5)


class RoiHeads(nn.Module):
    """Features, two ROIAlign flavours over them, and a linear scorer per region."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(2 * 4 * 3 * 3, 5)

    def forward(self, x, rois):
        f = torch.relu(self.conv(x))
        a = roi_align(f, rois, (3, 3), spatial_scale=0.5, sampling_ratio=0, aligned=False)
        b = roi_align(f, rois, (3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)
        return self.fc(torch.cat([a, b], 1).flatten(1))


class RoiDefault(nn.Module):
    def forward(self, x, rois):
        return roi_align(x, rois, (2, 2), spatial_scale=1.0)


def _boxes(g: torch.Generator, n: int) -> torch.Tensor:
    corner = torch.rand(n, 2, generator=g) * 8
    return torch.cat([corner, corner + 1 + torch.rand(n, 2, generator=g) * 4], 1)


def main() -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    boxes = _boxes(g, 12)
    boxes[5] = boxes[2]  # identical boxes: the lower-scored one is suppressed
    scores = torch.rand(12, generator=g)
    image = torch.rand(2, 3, 12, 12, generator=g)
    rois = torch.cat([torch.tensor([[0.0], [1.0], [1.0], [0.0]]), _boxes(g, 4) * 1.5], 1)
    rois[3, 1:] = torch.tensor([-3.0, -2.0, 9.0, 14.0])  # partly outside the map
    cases = {
        "nms": (Nms(), (boxes, scores)),
        "roi_heads": (RoiHeads(), (image, rois)),
        "roi_default": (RoiDefault(), (image, rois)),
    }
    expected = {}
    for name, (module, example) in cases.items():
        module.eval()
        with torch.no_grad():
            out = module(*example)
            model = ov.convert_model(module, example_input=example)
        ov.save_model(model, HERE / f"{name}.xml", compress_to_fp16=False)
        for i, x in enumerate(example):
            expected[f"{name}.in{i}"] = x.numpy()
        expected[f"{name}.out"] = out.numpy()
    # Two boxes with IoU exactly 0.5, torchvision's threshold above: it keeps both.
    tie = (
        torch.tensor([[0.0, 0, 3, 1], [1, 0, 4, 1], [5, 5, 6, 6]]),
        torch.tensor([0.5, 0.25, 0.125]),
    )
    expected["nms_tie.in0"], expected["nms_tie.in1"] = (x.numpy() for x in tie)
    expected["nms_tie.out"] = Nms()(*tie).numpy()
    np.savez(HERE / "expected.npz", **expected)


if __name__ == "__main__":
    main()
