"""Resampling and patch layers: pixel (un)shuffle, channel shuffle, upsampling, fold/unfold.

Nothing here is inferred; these layers exist so that they stack in
``Sequential`` and specs like every other layer.
"""

from __future__ import annotations

from typing import Literal

from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import PositiveInt

__all__ = ["ChannelShuffle", "Fold", "PixelShuffle", "PixelUnshuffle", "Unfold", "Upsample"]

Size = int | tuple[int, ...]
UpsampleMode = Literal["nearest", "linear", "bilinear", "bicubic", "trilinear", "nearest-exact"]


class PixelShuffle(LeafLayer):
    """``nn.PixelShuffle``: ``(N, C*r*r, H, W) -> (N, C, H*r, W*r)``."""

    native_class = nn.PixelShuffle

    def __init__(self, upscale_factor: PositiveInt, *, name: str | None = None) -> None:
        super().__init__(upscale_factor=upscale_factor, name=name)


class PixelUnshuffle(LeafLayer):
    """``nn.PixelUnshuffle``: the inverse of ``PixelShuffle``."""

    native_class = nn.PixelUnshuffle

    def __init__(self, downscale_factor: PositiveInt, *, name: str | None = None) -> None:
        super().__init__(downscale_factor=downscale_factor, name=name)


class ChannelShuffle(LeafLayer):
    """``nn.ChannelShuffle``."""

    native_class = nn.ChannelShuffle

    def __init__(self, groups: PositiveInt, *, name: str | None = None) -> None:
        super().__init__(groups=groups, name=name)


class Upsample(LeafLayer):
    """``nn.Upsample`` by ``size`` or ``scale_factor``."""

    native_class = nn.Upsample

    def __init__(
        self,
        size: Size | None = None,
        scale_factor: float | tuple[float, ...] | None = None,
        mode: UpsampleMode = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            size=size,
            scale_factor=scale_factor,
            mode=mode,
            align_corners=align_corners,
            recompute_scale_factor=recompute_scale_factor,
            name=name,
        )


class Fold(LeafLayer):
    """``nn.Fold``: sliding-window patches back into an image."""

    native_class = nn.Fold

    def __init__(
        self,
        output_size: Size,
        kernel_size: Size,
        dilation: Size = 1,
        padding: Size = 0,
        stride: Size = 1,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            output_size=output_size,
            kernel_size=kernel_size,
            dilation=dilation,
            padding=padding,
            stride=stride,
            name=name,
        )


class Unfold(LeafLayer):
    """``nn.Unfold``: sliding-window patches of an image."""

    native_class = nn.Unfold

    def __init__(
        self,
        kernel_size: Size,
        dilation: Size = 1,
        padding: Size = 0,
        stride: Size = 1,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride, name=name
        )
