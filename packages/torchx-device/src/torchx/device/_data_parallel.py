"""``torchx.DataParallel``: ``nn.DataParallel`` that builds lazy TorchX layers first."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from torchx.core import DeviceWarning, build
from torchx.plugin import unbuilt_layers

__all__ = ["DataParallel", "wrap_in_data_parallel"]

_no_gpu_warned = threading.Event()


class DataParallel(nn.DataParallel):  # type: ignore[type-arg]
    """``nn.DataParallel`` for models with lazy TorchX layers.

    torch's DataParallel replicates the module on every call; replicating
    unbuilt layers would build a separate, differently initialised copy on
    each GPU and leave the original unbuilt. So the first call builds the
    module's layers from its (positional) inputs on the first GPU, abstractly
    on the meta device, before anything is replicated. With no GPU it runs the
    module unreplicated, and warns once per process.

    Arguments as for ``nn.DataParallel``; ``state_dict`` keys have its
    ``module.`` prefix.
    """

    def __init__(
        self,
        module: nn.Module,
        device_ids: Sequence[int | torch.device] | None = None,
        output_device: int | torch.device | None = None,
        dim: int = 0,
    ) -> None:
        super().__init__(module, device_ids, output_device, dim)
        self._torchx_ready = not unbuilt_layers(module)
        if not self.device_ids and not _no_gpu_warned.is_set():
            _no_gpu_warned.set()
            warnings.warn(
                "torchx.DataParallel: no GPU is available, so the module runs unreplicated on the CPU",
                DeviceWarning,
                stacklevel=2,
            )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Build the module's layers on the first call, then run it as ``nn.DataParallel`` does."""
        if not self._torchx_ready:
            device = self.src_device_obj if self.device_ids else None
            build(self.module, *inputs, device=device)
            self._torchx_ready = True
        return super().forward(*inputs, **kwargs)


def wrap_in_data_parallel(
    module: nn.Module, inputs: tuple[Any, ...], *, device_ids: tuple[int, ...]
) -> nn.Module:
    """The wrapper of a data-parallel placement (inputs: unused, DataParallel builds itself)."""
    return DataParallel(module, device_ids=list(device_ids))
