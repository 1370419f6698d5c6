"""Convert a torchvision detection model with random weights to OpenVINO IR (scratch use).

Run with /work/genvenv: ``python gen_detection.py OUT_DIR [model]``.  The IR is too large
to commit; tests/core/test_subgraphs.py runs it when IRRUN_DETECTION_XML names it.
"""

import sys

import numpy as np
import openvino as ov
import torch
import torchvision


class Wrapped(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model([x[0]])[0]
        extra = [out[k] for k in ("masks", "keypoints") if k in out]
        return (out["boxes"], out["scores"], out["labels"], *extra)


def main() -> None:
    out_dir = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else "fasterrcnn_mobilenet_v3_large_320_fpn"
    torch.manual_seed(0)
    # Random weights score every box about 1/91: keep them all, so that the outputs say
    # something (the default threshold, 0.05, leaves none).
    # The models but the 320 one resize their input to 800 pixels: 192 keeps runs short.
    size = {} if "320" in name else {"min_size": 192, "max_size": 192}
    model = getattr(torchvision.models.detection, name)(
        weights=None, weights_backbone=None, box_score_thresh=0.0, box_detections_per_img=20,
        **size,
    )
    model.eval()
    example = torch.rand(1, 3, 160, 160)
    ov_model = ov.convert_model(Wrapped(model), example_input=example)
    ov.save_model(ov_model, f"{out_dir}/{name}.xml", compress_to_fp16=False)
    np.save(f"{out_dir}/{name}_input.npy", example.numpy())
    ops = {}
    for op in ov_model.get_ordered_ops():
        ops[op.get_type_name()] = ops.get(op.get_type_name(), 0) + 1
    print(sorted(ops.items()))


if __name__ == "__main__":
    main()
