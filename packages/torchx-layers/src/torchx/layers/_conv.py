"""Convolutions: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

One declaration serves all six: ``in_channels`` is dim 1 of a batched
``(N, C_in, *spatial)`` input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import torch
from torch import nn

from torchx.core import FromState, Layer
from torchx.layers._channels_first import ChannelsFirst
from torchx.plugin import ArgumentError, Padding, PositiveInt, Shape, Size, format_shape

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
]

PaddingMode = Literal["zeros", "reflect", "replicate", "circular"]


def _spatial(layer: Layer, name: str, dims: int) -> tuple[Any, ...] | None:
    """An argument given as one int or one per spatial dim, as one per dim;
    None when it is neither (the meta run reports it: torch takes a list of
    one as the kernel of one dim, not of every dim)."""
    value = layer.arguments[name]
    if not isinstance(value, (tuple, list)):
        return (value,) * dims
    return tuple(value) if len(value) == dims else None


def _window_count(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """How many windows of ``kernel`` (dilated) fit along ``size`` padded on
    both sides, ``stride`` apart: the output length of a convolution or a pooling."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _check_per_dim(layer: ChannelsFirst, names: tuple[str, ...]) -> None:
    """Refuse a size argument given as a list whose length is not the layer's
    spatial dims (torch would take a list of one as a kernel of one dim)."""
    dims = type(layer).spatial_dims
    for name in names:
        value = layer.arguments[name]
        if isinstance(value, (tuple, list)) and len(value) != dims:
            raise ArgumentError(
                f"{type(layer).__name__}: {name} must be one int or {dims} ints (one per spatial dim), "
                f"got {list(value)}",
                argument=name,
                fix=f"{name}={value[0]}" if len(value) == 1 else None,
            )


def _convolution_elements(cls: type[ChannelsFirst], arguments: Mapping[str, Any]) -> int:
    """A convolution's ``tensor_elements``: its weight, ``(out, in / groups,
    *kernel)`` (a transposed one's ``(in, out / groups, *kernel)``, as many),
    and its bias, ``out``."""
    kernel, dims = arguments["kernel_size"], cls.spatial_dims
    assert isinstance(dims, int)
    taps = math.prod(kernel) if isinstance(kernel, (tuple, list)) else kernel**dims
    out = arguments["out_channels"]
    weight = out * arguments["in_channels"] // arguments.get("groups", 1) * taps
    return int(weight + (out if arguments.get("bias", True) else 0))


class _ConvNd(ChannelsFirst):
    channels_argument = "in_channels"
    channels_state = FromState("weight", 1, times="groups")
    """A convolution's weight is ``(out_channels, in_channels / groups, *kernel)``."""
    channels_name = "C_in"
    tensor_elements = classmethod(_convolution_elements)

    def __init__(
        self,
        out_channels: PositiveInt,
        kernel_size: Size,
        *,
        stride: Size = 1,
        padding: Literal["same", "valid"] | Padding = 0,
        dilation: Size = 1,
        groups: PositiveInt = 1,
        bias: bool = True,
        padding_mode: PaddingMode = "zeros",
        in_channels: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            out_channels=out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
            padding_mode=padding_mode,
            in_channels=in_channels,
            device=device,
            dtype=dtype,
            name=name,
        )
        _check_per_dim(self, ("kernel_size", "stride", "dilation", "padding"))

    @classmethod
    def shape_fix(cls, module: nn.Module, inputs: tuple[Any, ...]) -> str | None:
        """Where the dilated kernel spans more than the padded input: the
        smallest input that fits, or a smaller kernel or more padding."""
        if not isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            return None
        kernel, dilation, padding = module.kernel_size, module.dilation, module.padding
        if isinstance(padding, str):  # "same" never shrinks; "valid" pads nothing
            padding = (0,) * len(kernel)
        spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
        sizes = tuple(inputs[0].shape[-len(kernel) :])
        if all(size + 2 * pad >= span for size, pad, span in zip(sizes, padding, spans, strict=True)):
            return None
        needed = tuple(max(span - 2 * pad, 1) for span, pad in zip(spans, padding, strict=True))
        return (
            f"give it spatial dims of at least {format_shape(needed)} (the kernel spans "
            f"{format_shape(tuple(spans))} at dilation {dilation}, less padding {padding} on each side), "
            "or a smaller kernel_size or dilation, or more padding"
        )

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        batch, _, *spatial = input_shapes[0]
        dims = len(spatial)
        padding = self.arguments["padding"]
        kernel, stride, dilation = (
            _spatial(self, name, dims) for name in ("kernel_size", "stride", "dilation")
        )
        pads = (0,) * dims if padding in ("same", "valid") else _spatial(self, "padding", dims)
        if kernel is None or stride is None or dilation is None or pads is None:
            return None  # the meta run reports the mismatch
        if padding == "same":
            out = list(spatial)
        else:
            out = [
                None if size is None else _window_count(size, k, s, p, d)
                for size, p, d, k, s in zip(spatial, pads, dilation, kernel, stride, strict=True)
            ]
            if any(size is not None and size < 1 for size in out):
                return None  # the kernel spans more than the padded input: the meta run reports it
        return (batch, self.arguments["out_channels"], *out)


class Conv1d(_ConvNd):
    """``nn.Conv1d`` with ``in_channels`` inferred; input ``(N, C_in, L)``."""

    native_class = nn.Conv1d
    spatial_dims = 1


class Conv2d(_ConvNd):
    """``nn.Conv2d`` with ``in_channels`` inferred.

    Shape:
        - Input: ``(N, C_in, H, W)``; ``C_in`` becomes ``in_channels``.
        - Output: ``(N, out_channels, H_out, W_out)`` as in ``nn.Conv2d``.

    Examples::

        >>> L.Conv2d(30, kernel_size=7)(torch.zeros(8, 20, 15, 15)).shape
        torch.Size([8, 30, 9, 9])
    """

    native_class = nn.Conv2d
    spatial_dims = 2


class Conv3d(_ConvNd):
    """``nn.Conv3d`` with ``in_channels`` inferred; input ``(N, C_in, D, H, W)``."""

    native_class = nn.Conv3d
    spatial_dims = 3


class _ConvTransposeNd(ChannelsFirst):
    channels_argument = "in_channels"
    channels_state = FromState("weight", 0)
    """A transposed convolution's weight is ``(in_channels, out_channels / groups, *kernel)``."""
    channels_name = "C_in"
    tensor_elements = classmethod(_convolution_elements)

    def __init__(
        self,
        out_channels: PositiveInt,
        kernel_size: Size,
        *,
        stride: Size = 1,
        padding: Padding = 0,
        output_padding: Padding = 0,
        groups: PositiveInt = 1,
        bias: bool = True,
        dilation: Size = 1,
        padding_mode: Literal["zeros"] = "zeros",
        in_channels: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            out_channels=out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            groups=groups,
            bias=bias,
            dilation=dilation,
            padding_mode=padding_mode,
            in_channels=in_channels,
            device=device,
            dtype=dtype,
            name=name,
        )
        _check_per_dim(self, ("kernel_size", "stride", "padding", "output_padding", "dilation"))

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        batch, _, *spatial = input_shapes[0]
        dims = len(spatial)
        names = ("padding", "dilation", "kernel_size", "stride", "output_padding")
        values = [_spatial(self, name, dims) for name in names]
        if any(value is None for value in values):
            return None
        padding, dilation, kernel, stride, extra = (value or () for value in values)
        out = [
            None if size is None else (size - 1) * s - 2 * p + d * (k - 1) + op + 1
            for size, p, d, k, s, op in zip(spatial, padding, dilation, kernel, stride, extra, strict=True)
        ]
        return (batch, self.arguments["out_channels"], *out)


class ConvTranspose1d(_ConvTransposeNd):
    """``nn.ConvTranspose1d`` with ``in_channels`` inferred; input ``(N, C_in, L)``."""

    native_class = nn.ConvTranspose1d
    spatial_dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """``nn.ConvTranspose2d`` with ``in_channels`` inferred; input ``(N, C_in, H, W)``."""

    native_class = nn.ConvTranspose2d
    spatial_dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """``nn.ConvTranspose3d`` with ``in_channels`` inferred; input ``(N, C_in, D, H, W)``."""

    native_class = nn.ConvTranspose3d
    spatial_dims = 3
