"""Dropout: ``Dropout``, ``Dropout1d/2d/3d``, ``AlphaDropout``, ``FeatureAlphaDropout``,
and ``DropPath`` (stochastic depth)."""

from __future__ import annotations

import torch
from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import DropoutRate, Probability

__all__ = [
    "AlphaDropout",
    "DropPath",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
]


class _DropoutNd(LeafLayer):
    same_shape = True

    def __init__(self, p: Probability = 0.5, inplace: bool = False, *, name: str | None = None) -> None:
        super().__init__(p=p, inplace=inplace, name=name)


class Dropout(_DropoutNd):
    """``nn.Dropout``."""

    native_class = nn.Dropout


class Dropout1d(_DropoutNd):
    """``nn.Dropout1d``."""

    native_class = nn.Dropout1d
    same_shape = False  # the meta run checks the input rank


class Dropout2d(_DropoutNd):
    """``nn.Dropout2d``."""

    native_class = nn.Dropout2d
    same_shape = False  # the meta run checks the input rank


class Dropout3d(_DropoutNd):
    """``nn.Dropout3d``."""

    native_class = nn.Dropout3d
    same_shape = False  # the meta run checks the input rank


class AlphaDropout(_DropoutNd):
    """``nn.AlphaDropout``."""

    native_class = nn.AlphaDropout


class FeatureAlphaDropout(_DropoutNd):
    """``nn.FeatureAlphaDropout``."""

    native_class = nn.FeatureAlphaDropout
    same_shape = False  # the meta run checks the input rank


class DropPathModule(nn.Module):
    """Zeroes whole samples with probability ``p`` while training (stochastic
    depth), scaling the kept ones by ``1 / (1 - p)`` when ``scale_by_keep``."""

    # Its attributes' types, for TorchScript, which reads them as types, not as
    # the strings this file's annotations are (unannotated, it takes nn.Module's).
    __annotations__ = {"p": float, "scale_by_keep": bool}

    def __init__(self, p: float = 0.0, scale_by_keep: bool = True) -> None:
        super().__init__()
        self.p, self.scale_by_keep = p, scale_by_keep

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.p == 0.0 or not self.training:
            return input
        keep = 1.0 - self.p
        mask = input.new_empty([input.shape[0]] + [1] * (input.dim() - 1)).bernoulli_(keep)
        if self.scale_by_keep:
            mask.div_(keep)  # keep > 0: p < 1
        return input * mask

    def extra_repr(self) -> str:
        return f"p={self.p}" + ("" if self.scale_by_keep else ", scale_by_keep=False")


class DropPath(LeafLayer):
    """Stochastic depth: while training, each sample's input is zeroed with
    probability ``p`` (all of it: one draw per sample), else scaled by
    ``1 / (1 - p)``; in eval it passes through. Put it on a residual branch:
    ``x + L.DropPath(0.1)(branch(x))``.

    The draws are timm's (``DropPath`` in ``timm.layers``): one
    ``bernoulli_(1 - p)`` into a tensor of shape ``(N, 1, ..., 1)`` in the
    input's dtype and device, so the same seed drops the same samples.

    Args:
        p: the probability of dropping a sample, in ``[0, 1)``. Default: 0.
        scale_by_keep: scale the kept samples by ``1 / (1 - p)`` (default),
            so the expected output is the input.

    Shape:
        - Input: ``(N, *)``.
        - Output: ``(N, *)``, the input's shape.
    """

    native_class = DropPathModule
    same_shape = True
    input_layout = "(N, *)"

    def __init__(self, p: DropoutRate = 0.0, *, scale_by_keep: bool = True, name: str | None = None) -> None:
        super().__init__(p=p, scale_by_keep=scale_by_keep, name=name)
