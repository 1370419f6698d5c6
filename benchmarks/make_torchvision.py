"""Write nine torchvision CNNs as OpenVINO IR for ``benchmarks/networks_ratio.py``.

    /work/genvenv/bin/python benchmarks/make_torchvision.py            # all nine
    /work/genvenv/bin/python benchmarks/make_torchvision.py --only resnet50

Needs torch, torchvision and openvino.  No weights are downloaded: every model is
randomly initialised (``weights=None``) from a fixed seed, then converted with
``ov.convert_model`` on a 1x3x224x224 example and saved in f32.  The folder
(``benchmarks/models/`` by default) is a cache, not committed: resnet50 alone is
about 100 MB.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MODELS = (
    "resnet50", "densenet121", "squeezenet1_0", "regnet_y_400mf", "shufflenet_v2_x1_0",
    "efficientnet_b0", "convnext_tiny", "mobilenet_v2", "mnasnet0_5",
)  # fmt: skip
DEFAULT_DIR = Path(__file__).resolve().parent / "models"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="cache folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=MODELS)
    parser.add_argument("--force", action="store_true", help="write models already there")
    args = parser.parse_args(argv)
    try:
        import openvino as ov
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"make_torchvision.py needs torch, torchvision and openvino: {e}")
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or MODELS:
        path = args.out / f"{name}.xml"
        if path.exists() and not args.force:
            print(f"{name}: already in {path}")
            continue
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None).eval()
        with torch.no_grad():
            converted = ov.convert_model(model, example_input=torch.randn(1, 3, 224, 224))
        ov.save_model(converted, path, compress_to_fp16=False)
        size = path.with_suffix(".bin").stat().st_size
        print(f"{name}: {path} ({size / 2**20:.1f} MiB), torchvision {torchvision.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
