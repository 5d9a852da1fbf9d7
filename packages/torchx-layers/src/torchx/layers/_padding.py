"""Padding layers: reflection, replication, zero, circular and constant, in 1-3 d."""

from __future__ import annotations

from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import AnyFloat

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

Padding = int | tuple[int, ...]


class _PadNd(LeafLayer):
    def __init__(self, padding: Padding, *, name: str | None = None) -> None:
        super().__init__(padding=padding, name=name)


class _ConstantPadNd(LeafLayer):
    """Pads with ``value``: any float, ``-inf`` and ``nan`` too."""

    def __init__(self, padding: Padding, value: AnyFloat, *, name: str | None = None) -> None:
        super().__init__(padding=padding, value=value, name=name)


class ReflectionPad1d(_PadNd):
    """``nn.ReflectionPad1d``."""

    native_class = nn.ReflectionPad1d


class ReflectionPad2d(_PadNd):
    """``nn.ReflectionPad2d``."""

    native_class = nn.ReflectionPad2d


class ReflectionPad3d(_PadNd):
    """``nn.ReflectionPad3d``."""

    native_class = nn.ReflectionPad3d


class ReplicationPad1d(_PadNd):
    """``nn.ReplicationPad1d``."""

    native_class = nn.ReplicationPad1d


class ReplicationPad2d(_PadNd):
    """``nn.ReplicationPad2d``."""

    native_class = nn.ReplicationPad2d


class ReplicationPad3d(_PadNd):
    """``nn.ReplicationPad3d``."""

    native_class = nn.ReplicationPad3d


class ZeroPad1d(_PadNd):
    """``nn.ZeroPad1d``."""

    native_class = nn.ZeroPad1d


class ZeroPad2d(_PadNd):
    """``nn.ZeroPad2d``."""

    native_class = nn.ZeroPad2d


class ZeroPad3d(_PadNd):
    """``nn.ZeroPad3d``."""

    native_class = nn.ZeroPad3d


class CircularPad1d(_PadNd):
    """``nn.CircularPad1d``."""

    native_class = nn.CircularPad1d


class CircularPad2d(_PadNd):
    """``nn.CircularPad2d``."""

    native_class = nn.CircularPad2d


class CircularPad3d(_PadNd):
    """``nn.CircularPad3d``."""

    native_class = nn.CircularPad3d


class ConstantPad1d(_ConstantPadNd):
    """``nn.ConstantPad1d``."""

    native_class = nn.ConstantPad1d


class ConstantPad2d(_ConstantPadNd):
    """``nn.ConstantPad2d``."""

    native_class = nn.ConstantPad2d


class ConstantPad3d(_ConstantPadNd):
    """``nn.ConstantPad3d``."""

    native_class = nn.ConstantPad3d
