"""Write torchvision detection models, post-processing included, as OpenVINO IR for
``benchmarks/detection.py``.

    CI=true /work/genvenv/bin/python benchmarks/make_detection.py          # all three
    CI=true /work/genvenv/bin/python benchmarks/make_detection.py --only ssdlite320

Needs torch, torchvision and openvino.  No weights are downloaded: every model is
randomly initialised (``weights=None, weights_backbone=None``) from a fixed seed, put
in eval mode (so the IR holds the post-processing: score filtering, box decoding,
per-class NMS, top-k, and for Mask R-CNN the mask paste), converted with
``ov.convert_model`` on a fixed seeded example image and saved in f32 to
``benchmarks/models/detection/`` (a cache, not committed; kept apart from the CNNs of
``make_torchvision.py`` so that ``networks_ratio.py`` does not pick them up).

Random weights score every box near 1/91 (a softmax over 91 classes), under the
default thresholds of some models, so the post-processing would see few or no boxes.
The score thresholds are lowered to 0.001 here (``MODELS``) so that many boxes go
through NMS and top-k, as with a trained model on a busy image.  The IR is converted once from
the example image; the benchmark feeds it the same image.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parent / "models" / "detection"
# name -> (torchvision builder, keyword arguments beyond weights=None, weights_backbone=None)
MODELS = {
    "ssdlite320": ("ssdlite320_mobilenet_v3_large", {"score_thresh": 0.001}),
    "fasterrcnn_mobilenet_320": ("fasterrcnn_mobilenet_v3_large_320_fpn",
                                 {"box_score_thresh": 0.001}),
    # maskrcnn_resnet50_fpn at a 320 image (min_size/max_size), so that it converts and runs
    # within minutes; the post-processing (RoIAlign, NMS, mask paste) is the same.
    "maskrcnn": ("maskrcnn_resnet50_fpn",
                 {"box_score_thresh": 0.001, "min_size": 320, "max_size": 320}),
}  # fmt: skip


def _wrapped(model, keys):
    """``model`` taking one image (3, H, W) and giving its detections as a tuple of tensors
    (tracing cannot return torchvision's list of dicts)."""
    import torch

    class Detections(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, image):
            found = self.model([image])[0]
            return tuple(found[k] for k in keys)

    return Detections().eval()


def example_image(size: int):
    """The fixed example image (3, size, size) in [0, 1): seeded, so the same each run."""
    import torch

    g = torch.Generator().manual_seed(1)
    return torch.rand(3, size, size, generator=g)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="cache folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=tuple(MODELS))
    parser.add_argument("--force", action="store_true", help="write models already there")
    args = parser.parse_args(argv)
    try:
        import numpy as np
        import openvino as ov
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"make_detection.py needs torch, torchvision and openvino: {e}")
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or MODELS:
        path = args.out / f"{name}.xml"
        if path.exists() and not args.force:
            print(f"{name}: already in {path}")
            continue
        builder, kwargs = MODELS[name]
        torch.manual_seed(0)
        model = getattr(torchvision.models.detection, builder)(
            weights=None, weights_backbone=None, **kwargs).eval()  # fmt: skip
        image = example_image(320)
        with torch.no_grad():
            boxes = model([image])[0]["boxes"]
            keys = ("boxes", "scores", "labels") + (("masks",) if name == "maskrcnn" else ())
            converted = ov.convert_model(_wrapped(model, keys), example_input=(image,))
        ov.save_model(converted, path, compress_to_fp16=False)
        np.save(path.with_suffix(".npy"), image.numpy())
        size = path.with_suffix(".bin").stat().st_size
        print(f"{name}: {path} ({size / 2**20:.1f} MiB), torchvision {torchvision.__version__}, "
              f"{len(boxes)} detections in torch on the example image", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
