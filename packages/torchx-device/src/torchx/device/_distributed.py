"""Distributed data parallel: processes launched by ``torchrun``, one device each."""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from torchx.core import DeviceError, DeviceUnavailableError, Placement, TorchXError, build
from torchx.device import _inventory as inventory
from torchx.nn import release_parallel_wrappers
from torchx.plugin import InputLike, unbuilt_layers

__all__ = [
    "DistributedDataParallel",
    "destroy_distributed",
    "distributed_placement",
    "init_distributed",
    "launched_by_torchrun",
    "local_device",
]

_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched_by_torchrun() -> bool:
    """Whether this process has the environment ``torchrun`` gives its workers."""
    return all(name in os.environ for name in _TORCHRUN_VARIABLES)


def local_device() -> torch.device:
    """This process's device: ``cuda:LOCAL_RANK`` when there are GPUs, else the CPU."""
    count = inventory.device_count("cuda")
    if count == 0:
        return torch.device("cpu")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if local_rank >= count:
        raise DeviceUnavailableError(
            f"LOCAL_RANK={local_rank}, but this machine has {count} GPU{'' if count == 1 else 's'}: "
            "start at most one process per GPU (torchrun --nproc-per-node)"
        )
    return torch.device("cuda", local_rank)


def _require_process_group(what: str) -> None:
    if not (dist.is_available() and dist.is_initialized()):
        raise DeviceError(
            f"{what} needs torch.distributed: run this in a process launched by torchrun and call "
            "torchx.device.init_distributed() (or torch.distributed.init_process_group) first"
        )


def init_distributed(backend: str | None = None, **kwargs: Any) -> None:
    """Join the ``torchrun`` job this process belongs to (once; later calls do nothing).

    Uses NCCL when there are GPUs (and makes ``cuda:LOCAL_RANK`` the current
    GPU), Gloo otherwise; ``kwargs`` go to ``torch.distributed.init_process_group``.
    """
    if not dist.is_available():
        raise DeviceError("this build of torch has no torch.distributed")
    if dist.is_initialized():
        return
    device = local_device()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend or ("nccl" if device.type == "cuda" else "gloo"), **kwargs)


def destroy_distributed() -> None:
    """Leave the job joined by :func:`init_distributed` (nothing if none was joined).

    Waits for every process, drops the DDP wrappers made for ``"ddp"`` scopes
    (a wrapper outliving its process group can abort the interpreter at exit
    with gloo), collects them, then destroys the process group.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    release_parallel_wrappers()
    gc.collect()
    dist.destroy_process_group()


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """``torch.nn.parallel.DistributedDataParallel`` for models with lazy TorchX layers.

    Puts ``module`` on this process's device (:func:`local_device`, unless
    ``device`` says otherwise) and builds its unbuilt layers from ``inputs``
    (shapes or tensors, as for :func:`torchx.build`) before torch's DDP starts,
    because DDP broadcasts the parameters when it is made. Every other
    argument is torch's; ``device_ids`` defaults to this process's GPU.

    Examples::

        torchx.device.init_distributed()
        model = torchx.DistributedDataParallel(L.Sequential(L.Linear(64), L.ReLU(), L.Linear(1)),
                                               inputs=[(None, 16)])
    """

    def __init__(
        self,
        module: nn.Module,
        *args: Any,
        inputs: Sequence[InputLike] = (),
        device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        _require_process_group("DistributedDataParallel")
        target = torch.device(device) if device is not None else local_device()
        if unbuilt_layers(module):
            if not inputs:
                raise TorchXError(
                    f"DistributedDataParallel: {type(module).__name__} has unbuilt layers, and DDP must "
                    "see every parameter when it starts: pass inputs=[input_shape, ...] "
                    "(for example inputs=[(None, 3, 32, 32)]), or torchx.build(model, ...) first"
                )
            build(module, *inputs, device=target)
        module.to(target)
        if target.type == "cuda" and not args:
            kwargs.setdefault("device_ids", [target.index])
        super().__init__(module, *args, **kwargs)


def distributed_placement() -> Placement:
    """The placement of the ``"ddp"`` id: this process's device, DDP-wrapped.

    Joins the torchrun job first when the process was launched by torchrun
    and has not joined yet.
    """
    if dist.is_available() and not dist.is_initialized() and launched_by_torchrun():
        init_distributed()
    _require_process_group("device id 'ddp'")
    return Placement(local_device(), "distributed", wrap=_wrap_in_distributed)


def _wrap_in_distributed(module: nn.Module, inputs: tuple[Any, ...]) -> nn.Module:
    if not inputs and unbuilt_layers(module):
        raise TorchXError(
            f"{type(module).__name__} has unbuilt layers, and its first call in the 'ddp' scope passes no "
            "positional inputs to build them from: torchx.build(model, input_shape) before that call"
        )
    return DistributedDataParallel(module, inputs=inputs)
