"""A device backend written as a third party would, for the core tests.

It knows a few made-up ids, so the core's scope machinery is tested without
torchx-device (and without a GPU): ``"here"`` is the CPU, ``"void"`` the meta
device, ``"mirror"`` a data-parallel placement on meta whose wrapper is
recorded, ``"absent"`` a device that is never present.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from torchx.core import DeviceError, DeviceUnavailableError, Placement, hookimpl


class RecordingWrapper(nn.Module):
    """Stands in for DataParallel: runs the module, counting calls."""

    made: ClassVar[list[RecordingWrapper]] = []

    def __init__(self, module: nn.Module, inputs: tuple[Any, ...]) -> None:
        super().__init__()
        self.module = module
        self.first_inputs = inputs
        self.calls = 0
        RecordingWrapper.made.append(self)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.module(*args, **kwargs)


class FakeBackend:
    """A plugin object implementing ``torchx_resolve_device``."""

    def __init__(self) -> None:
        self.asked: list[object] = []

    @hookimpl
    def torchx_resolve_device(self, device_id: object) -> Placement | None:
        self.asked.append(device_id)
        if device_id == "here":
            return Placement(torch.device("cpu"))
        if device_id == "void":
            return Placement(torch.device("meta"))
        if device_id == "mirror":
            return Placement(torch.device("meta"), "data_parallel", (0, 1), wrap=RecordingWrapper)
        if device_id == "absent":
            raise DeviceUnavailableError("device id 'absent' names a device this machine lacks")
        if device_id == "broken":
            raise DeviceError("device id 'broken' is malformed")
        return None
