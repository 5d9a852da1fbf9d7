"""Convolutions: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

One declaration serves all six: ``in_channels`` is dim 1 of a batched
``(N, C_in, *spatial)`` input.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from torch import nn

from torchx.core import FromInput, Layer
from torchx.core.shapes import Shape

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
]

PaddingMode = Literal["zeros", "reflect", "replicate", "circular"]
Size = int | tuple[int, ...]


def _channels(spatial_dims: int) -> dict[str, FromInput]:
    return {"in_channels": FromInput(dim=1, ranks=(spatial_dims + 2,))}


def _layout(spatial_dims: int) -> str:
    return "(N, C_in, " + ", ".join(["L"] if spatial_dims == 1 else ["D", "H", "W"][-spatial_dims:]) + ")"


def _spatial(native: nn.Module, name: str) -> tuple[Any, ...]:
    value = getattr(native, name)
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class _ConvNd(Layer):
    positive_arguments = ("out_channels", "groups", "kernel_size", "stride", "dilation")
    nonnegative_arguments = ("padding",)

    def __init__(
        self,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: str | Size = 0,
        dilation: Size = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: PaddingMode = "zeros",
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
        )

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        batch, _, *spatial = input_shapes[0]
        padding = getattr(self, "padding")  # noqa: B009 - native attribute after build
        kernel, stride, dilation = (_spatial(self, name) for name in ("kernel_size", "stride", "dilation"))
        if padding == "same":
            out = list(spatial)
        else:
            pads = (0,) * len(spatial) if padding == "valid" else _spatial(self, "padding")
            out = [
                None if size is None else (size + 2 * p - d * (k - 1) - 1) // s + 1
                for size, p, d, k, s in zip(spatial, pads, dilation, kernel, stride, strict=True)
            ]
        return (batch, self._torchx_arguments["out_channels"], *out)


class Conv1d(_ConvNd):
    """``nn.Conv1d`` with ``in_channels`` inferred; input ``(N, C_in, L)``."""

    native_class = nn.Conv1d
    inferred_arguments: ClassVar = _channels(1)
    input_layout = _layout(1)


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
    inferred_arguments: ClassVar = _channels(2)
    input_layout = _layout(2)


class Conv3d(_ConvNd):
    """``nn.Conv3d`` with ``in_channels`` inferred; input ``(N, C_in, D, H, W)``."""

    native_class = nn.Conv3d
    inferred_arguments: ClassVar = _channels(3)
    input_layout = _layout(3)


class _ConvTransposeNd(Layer):
    positive_arguments = ("out_channels", "groups", "kernel_size", "stride", "dilation")
    nonnegative_arguments = ("padding", "output_padding")

    def __init__(
        self,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size = 0,
        output_padding: Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Size = 1,
        padding_mode: PaddingMode = "zeros",
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
        )

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        batch, _, *spatial = input_shapes[0]
        names = ("padding", "dilation", "kernel_size", "stride", "output_padding")
        padding, dilation, kernel, stride, extra = (_spatial(self, name) for name in names)
        out = [
            None if size is None else (size - 1) * s - 2 * p + d * (k - 1) + op + 1
            for size, p, d, k, s, op in zip(spatial, padding, dilation, kernel, stride, extra, strict=True)
        ]
        return (batch, self._torchx_arguments["out_channels"], *out)


class ConvTranspose1d(_ConvTransposeNd):
    """``nn.ConvTranspose1d`` with ``in_channels`` inferred; input ``(N, C_in, L)``."""

    native_class = nn.ConvTranspose1d
    inferred_arguments: ClassVar = _channels(1)
    input_layout = _layout(1)


class ConvTranspose2d(_ConvTransposeNd):
    """``nn.ConvTranspose2d`` with ``in_channels`` inferred; input ``(N, C_in, H, W)``."""

    native_class = nn.ConvTranspose2d
    inferred_arguments: ClassVar = _channels(2)
    input_layout = _layout(2)


class ConvTranspose3d(_ConvTransposeNd):
    """``nn.ConvTranspose3d`` with ``in_channels`` inferred; input ``(N, C_in, D, H, W)``."""

    native_class = nn.ConvTranspose3d
    inferred_arguments: ClassVar = _channels(3)
    input_layout = _layout(3)
