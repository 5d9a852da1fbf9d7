"""ConvNeXt written with TorchX's functional API, with timm's layer names.

Each layer is named as timm's ``ConvNeXt`` names it (``stem.0``,
``stages.1.downsample.1``, ``stages.2.blocks.0.conv_dw``, ``head.fc``), so
the model's state dict has timm's keys and a timm checkpoint of the same
configuration loads by name with ``torchx.load_weights``. A block is timm's
(``conv_mlp=False``): a 7x7 depthwise convolution, then, channels-last, a
layer norm and an inverted-bottleneck MLP scaled by a learned ``gamma``, on a
residual branch with stochastic depth.

    python examples/convnext.py      # the small configuration: its summary and a forward
"""

from __future__ import annotations

import torch

import torchx.layers as L
from torchx.functional import Functional, Placeholder

SMALL = ((1, 1, 2, 1), (16, 32, 64, 128))
"""(depths, dims) of the small configuration the tests use."""


def block(x: Placeholder, name: str, channels: int, drop_path: float, mlp_ratio: int = 4) -> Placeholder:
    """timm's ``ConvNeXtBlock`` on ``x`` of ``channels`` channels:
    ``x + drop_path(gamma * mlp(norm(conv_dw(x))))``, the norm, the MLP and
    ``gamma`` over channels-last ``(N, H, W, C)``."""
    y = L.Conv2d(channels, 7, padding=3, groups=channels, name=f"{name}.conv_dw")(x)
    y = y.permute(0, 2, 3, 1)
    y = L.LayerNorm(eps=1e-6, name=f"{name}.norm")(y)
    y = L.Linear(mlp_ratio * channels, name=f"{name}.mlp.fc1")(y)
    y = L.Linear(channels, name=f"{name}.mlp.fc2")(L.GELU(name=f"{name}.mlp.act")(y))
    gamma = L.Parameter((channels,), init="constant", value=1e-6, name=f"{name}.gamma")(x)
    y = (y * gamma).permute(0, 3, 1, 2)
    return x + L.DropPath(drop_path, name=f"{name}.drop_path")(y)


def convnext(
    depths: tuple[int, ...] = (3, 3, 9, 3),
    dims: tuple[int, ...] = (96, 192, 384, 768),
    classes: int = 1000,
    drop_path_rate: float = 0.0,
    batch: int | None = None,
    image_size: int = 224,
) -> Functional:
    """ConvNeXt (default: ConvNeXt-T): a 4x4 patchify stem, four stages of
    ``depths[i]`` blocks of ``dims[i]`` channels (each stage after the first
    halves the resolution), a pooled, normalised head. The drop-path rate rises
    linearly from 0 at the first block to ``drop_path_rate`` at the last, as
    timm's does."""
    x = Placeholder((batch, 3, image_size, image_size), name="image")
    y = L.Conv2d(dims[0], 4, stride=4, name="stem.0")(x)
    y = L.LayerNorm2d(name="stem.1")(y)
    rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
    for stage, (depth, dim) in enumerate(zip(depths, dims, strict=True)):
        if stage > 0:
            y = L.LayerNorm2d(name=f"stages.{stage}.downsample.0")(y)
            y = L.Conv2d(dim, 2, stride=2, name=f"stages.{stage}.downsample.1")(y)
        for index in range(depth):
            y = block(y, f"stages.{stage}.blocks.{index}", dim, rates.pop(0))
    y = L.AdaptiveAvgPool2d(1, name="head.global_pool")(y)
    y = L.LayerNorm2d(name="head.norm")(y)
    y = L.Linear(classes, name="head.fc")(L.Flatten(name="head.flatten")(y))
    return Functional(inputs=x, outputs=y)


def convnext_small_config(
    classes: int = 10, drop_path_rate: float = 0.0, batch: int | None = None, image_size: int = 64
) -> Functional:
    """The small ConvNeXt the tests use: depths (1, 1, 2, 1), dims (16, 32, 64, 128)."""
    depths, dims = SMALL
    return convnext(depths, dims, classes, drop_path_rate, batch, image_size)


if __name__ == "__main__":
    model = convnext_small_config()
    print(model)
    print(model.eval()(torch.randn(2, 3, 64, 64)).shape)
