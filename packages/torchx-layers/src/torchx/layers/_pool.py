"""Pooling: max, average, adaptive, LP, fractional max, and max-unpooling.

Pooling has nothing to infer; these layers exist so that pooling stacks in
``Sequential`` and specs like every other layer.
"""

from __future__ import annotations

from typing import ClassVar

from torch import nn

from torchx.core import LeafLayer
from torchx.layers._conv import _spatial, _window_count
from torchx.plugin import Padding, PositiveFloat, Shape, Size

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
]

OptionalSize = int | None | tuple[int | None, ...]


class _Window(LeafLayer):
    """A pooling window (its sizes and strides are positive, its padding
    non-negative: the annotations say so)."""


class _SlidingWindow(_Window):
    """Max or average pooling, whose output size its window gives."""

    spatial_dims: ClassVar[int]

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        """Each spatial size, the windows along it (as a convolution's); None
        (the meta run says why, or works it out) for an input without its batch
        dim, ``ceil_mode``, indices returned, padding over half the kernel, or a
        window longer than the input (3-d average pooling refuses it, padded or
        not)."""
        shape, dims, arguments = input_shapes[0], self.spatial_dims, self.arguments
        if (
            len(shape) != dims + 2
            or 0 in shape[1:]
            or arguments["ceil_mode"]
            or arguments.get("return_indices")
        ):
            return None
        kernel = _spatial(self, "kernel_size", dims)
        stride = kernel if arguments["stride"] is None else _spatial(self, "stride", dims)
        padding = _spatial(self, "padding", dims)
        dilation = _spatial(self, "dilation", dims) if "dilation" in arguments else (1,) * dims
        windows = (kernel, stride, padding, dilation)
        if any(value is None or any(type(item) is not int for item in value) for value in windows):
            return None
        out: list[int | None] = []
        for size, k, s, p, d in zip(shape[2:], *windows, strict=True):  # type: ignore[arg-type]
            span = d * (k - 1) + 1
            if 2 * p > k or (size is not None and size < span):
                return None
            out.append(None if size is None else _window_count(size, k, s, p, d))
        return (*shape[:2], *out)


class _MaxPoolNd(_SlidingWindow):
    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Padding = 0,
        dilation: Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            return_indices=return_indices,
            ceil_mode=ceil_mode,
            name=name,
        )


class MaxPool1d(_MaxPoolNd):
    """``nn.MaxPool1d``."""

    native_class = nn.MaxPool1d
    spatial_dims = 1


class MaxPool2d(_MaxPoolNd):
    """``nn.MaxPool2d``."""

    native_class = nn.MaxPool2d
    spatial_dims = 2


class MaxPool3d(_MaxPoolNd):
    """``nn.MaxPool3d``."""

    native_class = nn.MaxPool3d
    spatial_dims = 3


class AvgPool1d(_SlidingWindow):
    """``nn.AvgPool1d``."""

    native_class = nn.AvgPool1d
    spatial_dims = 1

    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Padding = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
            name=name,
        )


class _AvgPoolNd(_SlidingWindow):
    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Padding = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
            divisor_override=divisor_override,
            name=name,
        )


class AvgPool2d(_AvgPoolNd):
    """``nn.AvgPool2d``."""

    native_class = nn.AvgPool2d
    spatial_dims = 2


class AvgPool3d(_AvgPoolNd):
    """``nn.AvgPool3d``."""

    native_class = nn.AvgPool3d
    spatial_dims = 3


class _AdaptiveMaxPoolNd(LeafLayer):
    def __init__(
        self, output_size: OptionalSize, return_indices: bool = False, *, name: str | None = None
    ) -> None:
        super().__init__(output_size=output_size, return_indices=return_indices, name=name)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """``nn.AdaptiveMaxPool1d``."""

    native_class = nn.AdaptiveMaxPool1d


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """``nn.AdaptiveMaxPool2d``."""

    native_class = nn.AdaptiveMaxPool2d


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """``nn.AdaptiveMaxPool3d``."""

    native_class = nn.AdaptiveMaxPool3d


class _AdaptiveAvgPoolNd(LeafLayer):
    spatial_dims: ClassVar[int]

    def __init__(self, output_size: OptionalSize, *, name: str | None = None) -> None:
        super().__init__(output_size=output_size, name=name)

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        """The input's leading dims, then ``output_size`` (``None``: the input's size); None (the
        meta run says why) for a rank or an empty dim the pooling does not take."""
        shape, dims = input_shapes[0], self.spatial_dims
        size = self.arguments["output_size"]
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * dims
        if len(shape) not in (dims + 1, dims + 2) or len(sizes) != dims or 0 in shape[-dims - 1 :]:
            return None
        return (
            *shape[:-dims],
            *(old if new is None else new for new, old in zip(sizes, shape[-dims:], strict=True)),
        )


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """``nn.AdaptiveAvgPool1d``."""

    native_class = nn.AdaptiveAvgPool1d
    spatial_dims = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """``nn.AdaptiveAvgPool2d``."""

    native_class = nn.AdaptiveAvgPool2d
    spatial_dims = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """``nn.AdaptiveAvgPool3d``."""

    native_class = nn.AdaptiveAvgPool3d
    spatial_dims = 3


class _LPPoolNd(_Window):
    def __init__(
        self,
        norm_type: PositiveFloat,
        kernel_size: Size,
        stride: Size | None = None,
        ceil_mode: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            norm_type=norm_type, kernel_size=kernel_size, stride=stride, ceil_mode=ceil_mode, name=name
        )


class LPPool1d(_LPPoolNd):
    """``nn.LPPool1d``."""

    native_class = nn.LPPool1d


class LPPool2d(_LPPoolNd):
    """``nn.LPPool2d``."""

    native_class = nn.LPPool2d


class LPPool3d(_LPPoolNd):
    """``nn.LPPool3d``."""

    native_class = nn.LPPool3d


class _FractionalMaxPoolNd(LeafLayer):
    def __init__(
        self,
        kernel_size: Size,
        output_size: Size | None = None,
        output_ratio: float | tuple[float, ...] | None = None,
        return_indices: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(
            kernel_size=kernel_size,
            output_size=output_size,
            output_ratio=output_ratio,
            return_indices=return_indices,
            name=name,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """``nn.FractionalMaxPool2d``."""

    native_class = nn.FractionalMaxPool2d


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """``nn.FractionalMaxPool3d``."""

    native_class = nn.FractionalMaxPool3d


class _MaxUnpoolNd(LeafLayer):
    def __init__(
        self, kernel_size: Size, stride: Size | None = None, padding: Padding = 0, *, name: str | None = None
    ) -> None:
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, name=name)


class MaxUnpool1d(_MaxUnpoolNd):
    """``nn.MaxUnpool1d``; call it as ``layer(input, indices)``."""

    native_class = nn.MaxUnpool1d


class MaxUnpool2d(_MaxUnpoolNd):
    """``nn.MaxUnpool2d``; call it as ``layer(input, indices)``."""

    native_class = nn.MaxUnpool2d


class MaxUnpool3d(_MaxUnpoolNd):
    """``nn.MaxUnpool3d``; call it as ``layer(input, indices)``."""

    native_class = nn.MaxUnpool3d
