"""Regenerate the IR files in this folder: small PyTorch modules converted by
OpenVINO's PyTorch frontend, as users convert theirs (``ov.convert_model`` with an
example input, which leaves the batch and spatial dims dynamic and the shape
arithmetic of ``view``, ``chunk`` and ``flatten`` in the graph).

    python tests/torch_models/make_torch_models.py   # needs torch and openvino

The weights are random (seeded); ``tests/models/test_torch_models.py`` runs each file in
irrun and in OpenVINO's CPU plugin and compares the outputs.  PyTorch is needed
here only, not by the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import openvino as ov
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent


class ResNetStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 16, 3, 1, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.c1(x))), 3, 2, 1)
        x = F.adaptive_avg_pool2d(x + F.relu(self.c2(x)), 1)
        return self.fc(torch.flatten(x, 1))


class MobileNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, 2, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.se1, self.se2 = nn.Linear(16, 4), nn.Linear(4, 16)
        self.pw = nn.Conv2d(16, 24, 1)

    def forward(self, x):
        x = F.hardswish(self.c1(x))
        y = F.relu6(self.dw(x))
        w = F.hardsigmoid(self.se2(F.relu(self.se1(x.mean((2, 3))))))
        y = self.pw(y * w[:, :, None, None])
        return F.softmax(F.adaptive_avg_pool2d(y, (2, 2)).flatten(1), -1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.ln = nn.Linear(8, 32), nn.LayerNorm(32)
        self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        h = self.ln(self.emb(x))
        a = torch.softmax(self.q(h) @ self.k(h).transpose(1, 2) / 5.66, -1) @ self.v(h)
        first, second = torch.chunk(h, 2, dim=-1)
        return self.out(F.gelu(h + a + torch.cat([second, first], -1))).mean(1)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, 1, 1)
        self.up = nn.ConvTranspose2d(8, 8, 2, 2)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = F.leaky_relu(self.down(x), 0.1)
        b = F.max_pool2d(a, 2)
        c = self.up(b) + F.interpolate(b, scale_factor=2, mode="nearest")
        return torch.sigmoid(self.out(torch.cat([a, c], 1)))


class Pools(nn.Module):
    def forward(self, x):
        a = F.max_pool2d(x, 3, 2, 1, ceil_mode=True)
        b = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        _, i = F.max_pool2d(x, 2, 2, return_indices=True)
        return (a.sum() + b.sum(), i.float().mean(), F.adaptive_max_pool2d(x, (3, 5)),
                F.max_pool3d(x[:, None], (1, 2, 2)).squeeze(1), F.lp_pool2d(x, 2, 2))


class ChannelShuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        b, c, h, w = x.size()
        x = self.c(x).view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)
        return F.max_pool2d(x, 3, 2, 1)


class ConvNeXtBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 7, padding=3, groups=8)
        self.ln = nn.LayerNorm(8)
        self.l1, self.l2 = nn.Linear(8, 32), nn.Linear(32, 8)
        self.scale = nn.Parameter(torch.full((8,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.l2(F.gelu(self.l1(self.ln(y)))) * self.scale
        return x + y.permute(0, 3, 1, 2)


class EfficientNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 8, 3, padding=1)
        self.se1, self.se2 = nn.Conv2d(8, 2, 1), nn.Conv2d(2, 8, 1)

    def forward(self, x):
        y = F.silu(self.c(x))
        w = torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        return F.avg_pool2d(y * w, 2)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        x = F.adaptive_max_pool2d(x, 2)
        return F.log_softmax(self.fc(x.view(x.size(0), -1)), 1)


class Segmentation(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 4, 3, padding=2, dilation=2)

    def forward(self, x):
        y = F.relu(self.c(F.pad(x, (1, 1, 1, 1), mode="reflect")))
        y = F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)
        return y.argmax(1), y.amax(1)


MODELS = {  # name: (module, example input shape)
    "resnet_stem": (ResNetStem, (1, 3, 64, 64)),
    "mobilenet_block": (MobileNetBlock, (2, 3, 32, 32)),
    "attention": (Attention, (2, 5, 8)),
    "unet": (UNet, (1, 3, 16, 16)),
    "pools": (Pools, (1, 3, 17, 17)),
    "channel_shuffle": (ChannelShuffle, (2, 8, 16, 16)),
    "convnext_block": (ConvNeXtBlock, (2, 8, 16, 16)),
    "efficientnet_block": (EfficientNetBlock, (2, 8, 16, 16)),
    "classifier": (Classifier, (2, 8, 16, 16)),
    "segmentation": (Segmentation, (2, 8, 16, 16)),
}


def main() -> None:
    shapes = {}
    for name, (module, shape) in MODELS.items():
        torch.manual_seed(0)
        model = module().eval()
        converted = ov.convert_model(model, example_input=torch.randn(*shape))
        ov.save_model(converted, HERE / f"{name}.xml", compress_to_fp16=False)
        shapes[name] = list(shape)
    (HERE / "shapes.json").write_text(json.dumps(shapes, indent=1) + "\n")


if __name__ == "__main__":
    main()
