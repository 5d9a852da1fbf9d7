"""Dropout: ``Dropout``, ``Dropout1d/2d/3d``, ``AlphaDropout``, ``FeatureAlphaDropout``."""

from __future__ import annotations

from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import Probability

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


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
