"""Normalisation: batch, instance, layer, RMS, group and local-response norms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn

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
    """``bias=False`` for the native constructor, only when asked: torch's norms
    before 2.13 have no ``bias`` argument, and its default is what they do."""
    return {} if bias else {"bias": False}


class _BatchNorm(_PerChannelNorm):
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
