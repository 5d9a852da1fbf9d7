"""Placements: what a device id means once a backend has resolved and validated it.

A device backend (a plugin implementing ``torchx_resolve_device``) turns an id
such as ``2``, ``"gpu:2"`` or ``[0, 3]`` into a :class:`Placement`: the device
that tensor constructors and modules go to, and, for data-parallel and
distributed placements, how a module is run across devices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import torch
from torch import nn

__all__ = ["Placement", "PlacementKind", "Wrapper"]

PlacementKind: TypeAlias = Literal["device", "data_parallel", "distributed"]
"""One device; one process driving several GPUs; one process of several."""

Wrapper: TypeAlias = Callable[[nn.Module, tuple[Any, ...]], nn.Module]
"""Makes the module that runs ``module`` under a parallel placement, given the
first call's positional inputs (so lazy layers can build before replication)."""

_KINDS = ("device", "data_parallel", "distributed")


@dataclass(frozen=True)
class Placement:
    """A resolved, validated device id.

    :param device: where tensor constructors create and where modules move;
        for a data-parallel placement, its first GPU (the output device).
    :param kind: ``"device"``, ``"data_parallel"`` or ``"distributed"``.
    :param device_ids: the GPU indices a data-parallel placement spreads over.
    :param wrap: for parallel kinds, how a ``torchx.nn.Module`` called in the
        scope is wrapped (``torchx.DataParallel``, ``DistributedDataParallel``).
    :param cache: whether the id may be resolved once and remembered.
    """

    device: torch.device
    kind: PlacementKind = "device"
    device_ids: tuple[int, ...] = ()
    wrap: Wrapper | None = field(default=None, compare=False, repr=False)
    cache: bool = field(default=True, compare=False, repr=False)
    """Whether the id always means this placement; False for ids such as
    ``"cuda"`` that mean whatever device is current when a scope is made."""
    on_cpu: bool = field(init=False, compare=False, repr=False)
    """Whether ``device`` is the CPU (derived; read when a scope opens)."""

    def __post_init__(self) -> None:
        if not isinstance(self.device, torch.device):
            raise TypeError(f"Placement.device must be a torch.device, got {type(self.device).__name__}")
        if self.kind not in _KINDS:
            raise TypeError(f"Placement.kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")
        if (self.kind == "device") != (self.wrap is None):
            raise TypeError("a Placement has a wrap exactly when its kind is parallel")
        object.__setattr__(self, "on_cpu", self.device.type == "cpu")

    def __str__(self) -> str:
        if self.kind == "data_parallel":
            return f"data_parallel({', '.join(f'cuda:{index}' for index in self.device_ids)})"
        if self.kind == "distributed":
            return f"distributed({self.device})"
        return str(self.device)
