"""Normalisation: batch, instance, layer, RMS, group and local-response norms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from torchx.core import FromInput, FromState, LeafLayer
from torchx.layers._channels_first import ChannelsFirst
from torchx.plugin import PositiveFloat, PositiveInt, Probability, format_shape

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "LayerNorm2d",
    "LocalResponseNorm",
    "RMSNorm",
]


class _PerChannelNorm(ChannelsFirst):
    """Batch and instance norms: ``num_features`` is the input's channel count."""

    channels_argument = "num_features"
    channels_state = FromState(("weight", "running_mean"), 0)
    """One weight (with ``affine``) or running mean (with running stats) per feature."""
    same_shape = True


def _optional_bias(bias: bool) -> dict[str, bool]:
    """``bias=False`` for the native constructor, only when asked: torch's batch,
    instance and group norms before 2.12 have no ``bias`` argument, and its
    default is what they do (``bias=False`` is refused there: see
    ``newer_native_arguments``)."""
    return {} if bias else {"bias": False}


class _BatchNorm(_PerChannelNorm):
    newer_native_arguments = frozenset({"bias"})

    def __init__(
        self,
        *,
        eps: PositiveFloat = 1e-5,
        momentum: Probability | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        bias: bool = True,
        num_features: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            eps=eps,
            momentum=momentum,
            affine=affine,
            track_running_stats=track_running_stats,
            **_optional_bias(bias),
            num_features=num_features,
            device=device,
            dtype=dtype,
            name=name,
        )


class BatchNorm1d(_BatchNorm):
    """``nn.BatchNorm1d`` with ``num_features`` read off dim 1 of ``(N, C)`` or ``(N, C, L)``."""

    native_class = nn.BatchNorm1d
    spatial_dims = (0, 1)


class BatchNorm2d(_BatchNorm):
    """``nn.BatchNorm2d`` with ``num_features`` read off dim 1 of ``(N, C, H, W)``."""

    native_class = nn.BatchNorm2d
    spatial_dims = 2


class BatchNorm3d(_BatchNorm):
    """``nn.BatchNorm3d`` with ``num_features`` read off dim 1 of ``(N, C, D, H, W)``."""

    native_class = nn.BatchNorm3d
    spatial_dims = 3


class _InstanceNorm(_PerChannelNorm):
    newer_native_arguments = frozenset({"bias"})

    def __init__(
        self,
        *,
        eps: PositiveFloat = 1e-5,
        momentum: Probability | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        bias: bool = True,
        num_features: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            eps=eps,
            momentum=momentum,
            affine=affine,
            track_running_stats=track_running_stats,
            **_optional_bias(bias),
            num_features=num_features,
            device=device,
            dtype=dtype,
            name=name,
        )


class InstanceNorm1d(_InstanceNorm):
    """``nn.InstanceNorm1d`` with ``num_features`` read off dim 1 of ``(N, C, L)``."""

    native_class = nn.InstanceNorm1d
    spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """``nn.InstanceNorm2d`` with ``num_features`` read off dim 1 of ``(N, C, H, W)``."""

    native_class = nn.InstanceNorm2d
    spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """``nn.InstanceNorm3d`` with ``num_features`` read off dim 1 of ``(N, C, D, H, W)``."""

    native_class = nn.InstanceNorm3d
    spatial_dims = 3


class _TrailingNorm(LeafLayer):
    """A norm over the trailing dims; ``normalized_shape`` defaults to the last dim."""

    same_shape = True
    input_layout = "(*, normalized_shape)"
    inferable_arguments = ("normalized_shape",)

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        given = self.arguments["normalized_shape"]
        size = FromInput(dim=-1).read(self, inputs)
        if given is None:
            return {"normalized_shape": (size,)}
        wanted = (given,) if isinstance(given, int) else tuple(given)
        got = tuple(inputs[0].shape[len(inputs[0].shape) - len(wanted) :])
        if got != wanted:
            raise self.shape_error(
                f"normalized_shape={wanted} does not match the input's trailing dims {got} "
                f"(input {format_shape(tuple(inputs[0].shape))})",
                fix="omit normalized_shape to normalise over the last dim as it comes",
            )
        return {}

    def infer_arguments_from_state(self, state: Mapping[str, torch.Tensor]) -> dict[str, Any] | None:
        if self.arguments["normalized_shape"] is not None:
            return {}
        weight = state.get("weight")
        return None if weight is None else {"normalized_shape": tuple(weight.shape)}


class LayerNorm(_TrailingNorm):
    """``nn.LayerNorm``; ``normalized_shape`` defaults to the input's last dim.

    On a feature map ``(N, C, H, W)`` that is ``W``, as in torch: to normalise
    over the channels of each position (ConvNeXt's norm), use
    :class:`LayerNorm2d`.

    Args:
        normalized_shape: the trailing dims to normalise over; ``None`` (the
            default) means the last dim of the first input.
    """

    native_class = nn.LayerNorm

    def __init__(
        self,
        *,
        normalized_shape: PositiveInt | tuple[PositiveInt, ...] | None = None,
        eps: PositiveFloat = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            normalized_shape=normalized_shape,
            eps=eps,
            elementwise_affine=elementwise_affine,
            bias=bias,
            device=device,
            dtype=dtype,
            name=name,
        )


class LayerNorm2dModule(nn.LayerNorm):
    """``nn.LayerNorm`` over dim 1 (the channels) of ``(N, C, H, W)``: the
    input seen as ``(N, H, W, C)``, normalised over ``C``, seen back as
    ``(N, C, H, W)`` (in channels-last memory)."""

    def __init__(
        self,
        num_channels: int,
        eps: float = 1e-6,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(
            num_channels,
            eps=eps,
            elementwise_affine=elementwise_affine,
            bias=bias,
            device=device,
            dtype=dtype,
        )

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        output = F.layer_norm(
            input.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps
        )
        return output.permute(0, 3, 1, 2)


class LayerNorm2d(ChannelsFirst):
    """Layer norm over the channels of a feature map ``(N, C, H, W)``, at
    each position (ConvNeXt's; timm's ``LayerNorm2d``): ``num_channels`` is
    read off dim 1, and ``weight`` and ``bias`` have shape ``(C,)``, the keys
    and shapes of timm's, whose checkpoints load as they are.

    It equals ``F.layer_norm(x.permute(0, 2, 3, 1), (C,), weight, bias,
    eps).permute(0, 3, 1, 2)``, and runs so; the output is in channels-last
    memory, which the convolutions that follow take as it is.

    Args:
        eps: added to the variance. Default: ``1e-6``, timm's and ConvNeXt's
            (``L.LayerNorm``'s, as torch's, is ``1e-5``).
        elementwise_affine: learn ``weight`` (and ``bias``). Default: True.
        bias: learn ``bias`` too. Default: True.
        num_channels: ``C``; ``None`` (the default) reads it off the input.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: ``(N, C, H, W)``, the input's shape.
    """

    native_class = LayerNorm2dModule
    channels_argument = "num_channels"
    channels_state = FromState("weight", 0)
    spatial_dims = 2
    same_shape = True

    def __init__(
        self,
        *,
        eps: PositiveFloat = 1e-6,
        elementwise_affine: bool = True,
        bias: bool = True,
        num_channels: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            eps=eps,
            elementwise_affine=elementwise_affine,
            bias=bias,
            num_channels=num_channels,
            device=device,
            dtype=dtype,
            name=name,
        )


class RMSNorm(_TrailingNorm):
    """``nn.RMSNorm``; ``normalized_shape`` defaults to the input's last dim."""

    native_class = nn.RMSNorm

    def __init__(
        self,
        *,
        normalized_shape: PositiveInt | tuple[PositiveInt, ...] | None = None,
        eps: PositiveFloat | None = None,
        elementwise_affine: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            normalized_shape=normalized_shape,
            eps=eps,
            elementwise_affine=elementwise_affine,
            device=device,
            dtype=dtype,
            name=name,
        )


class GroupNorm(LeafLayer):
    """``nn.GroupNorm`` with ``num_channels`` read off dim 1 of ``(N, C, *)``."""

    native_class = nn.GroupNorm
    newer_native_arguments = frozenset({"bias"})
    inferred_arguments: ClassVar = {"num_channels": FromInput(dim=1, state=FromState("weight", 0))}
    input_layout = "(N, C, *)"
    same_shape = True

    def __init__(
        self,
        num_groups: PositiveInt,
        *,
        eps: PositiveFloat = 1e-5,
        affine: bool = True,
        bias: bool = True,
        num_channels: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            num_groups=num_groups,
            eps=eps,
            affine=affine,
            **_optional_bias(bias),
            num_channels=num_channels,
            device=device,
            dtype=dtype,
            name=name,
        )


class LocalResponseNorm(LeafLayer):
    """``nn.LocalResponseNorm`` (nothing to infer)."""

    native_class = nn.LocalResponseNorm

    def __init__(
        self,
        size: PositiveInt,
        alpha: float = 1e-4,
        beta: float = 0.75,
        k: float = 1.0,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(size=size, alpha=alpha, beta=beta, k=k, name=name)
