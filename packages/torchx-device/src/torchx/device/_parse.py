"""The standard device ids, parsed once into validated Placements."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

import torch

from torchx.core import DeviceError, DeviceUnavailableError, Placement
from torchx.device import _inventory as inventory
from torchx.device._data_parallel import wrap_in_data_parallel
from torchx.device._distributed import distributed_placement

__all__ = ["parse", "parse_or_none"]

FORMS = (
    "an int >= 0 (GPU n), -1 or 'cpu' (the CPU), 'cuda' (the current GPU), 'cuda:<n>' or 'gpu:<n>', "
    "a list of GPU indices or 'cuda:all' (data parallel), 'ddp' (a torchrun process), or a torch.device"
)
"""The ids :func:`parse` accepts, for error messages."""

_ANYWHERE = ("cpu", "meta")
"""Device types every machine has, one of each."""

_GPU_PREFIX = re.compile(r"^(cuda|gpu)(?::(.*))?$")


def parse(device_id: object) -> Placement:
    """The Placement for one of TorchX's standard device ids (see ``FORMS``).

    :raises DeviceError: ``device_id`` is not a standard id, or is malformed.
    :raises DeviceUnavailableError: it names a device this machine lacks.
    """
    placement = parse_or_none(device_id)
    if placement is None:
        raise DeviceError(f"device id {device_id!r} is not a device id; use {FORMS}")
    return placement


def parse_or_none(device_id: object) -> Placement | None:
    """Like :func:`parse`, but None for ids of no standard form (other
    backends may take those); malformed ids of a standard form still raise."""
    if isinstance(device_id, bool):
        raise DeviceError(f"device id {device_id!r}: a bool is not a device id; use {FORMS}")
    if isinstance(device_id, int):
        return _from_int(device_id)
    if isinstance(device_id, torch.device):
        return _single(device_id, device_id)
    if isinstance(device_id, (list, tuple)):
        return _data_parallel(device_id, device_id)
    if isinstance(device_id, str):
        return _from_str(device_id)
    return None


def _from_int(index: int) -> Placement:
    if index == -1:
        return Placement(torch.device("cpu"))
    if index < 0:
        raise DeviceError(
            f"device id {index}: negative ids other than -1 (the CPU) mean nothing; use {FORMS}"
        )
    return _single(torch.device("cuda", index), index)


def _from_str(text: str) -> Placement | None:
    name = text.strip().lower()
    if name == "ddp":
        return distributed_placement()
    match = _GPU_PREFIX.match(name)
    if match is None:
        try:
            device = torch.device(name)
        except RuntimeError:
            return None  # not a torch device type: perhaps another backend's
        return _single(device, text)
    index = match.group(2)
    if index is None:
        return _single(torch.device("cuda"), text)
    if index == "all":
        count = inventory.device_count("cuda")
        if count == 0:
            raise DeviceUnavailableError(f"device id {text!r}: this machine has no GPU ({_available()})")
        return _data_parallel(range(count), text)
    if not index.isdigit():
        raise DeviceError(f"device id {text!r}: the GPU index must be an int >= 0 or 'all', got {index!r}")
    return _single(torch.device("cuda", int(index)), text)


def _data_parallel(indices: Sequence[object], device_id: object) -> Placement:
    ids = list(indices)
    if not ids:
        raise DeviceError(
            f"device id {device_id!r}: an empty list names no GPU; list the GPU indices, or use -1"
        )
    gpus: list[int] = []
    bad: list[object] = []
    for index in ids:
        if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
            gpus.append(index)
        else:
            bad.append(index)
    if bad:
        raise DeviceError(
            f"device id {device_id!r}: a data-parallel list holds GPU indices (ints >= 0), not {bad}"
        )
    repeated = sorted({index for index in gpus if gpus.count(index) > 1})
    if repeated:
        raise DeviceError(
            f"device id {device_id!r}: GPU {repeated} listed more than once; list each GPU once"
        )
    for index in gpus:
        _present(torch.device("cuda", index), device_id)
    wrap = partial(wrap_in_data_parallel, device_ids=tuple(gpus))
    return Placement(torch.device("cuda", gpus[0]), "data_parallel", tuple(gpus), wrap)


def _single(device: torch.device, device_id: object) -> Placement:
    """The placement of one device; ``"cuda"`` without an index means the GPU
    current when the scope is made, so it is not remembered."""
    return Placement(_present(device, device_id), cache=device.index is not None or device.type in _ANYWHERE)


def _present(device: torch.device, device_id: object) -> torch.device:
    """``device`` with its index filled in, after checking this machine has it."""
    if device.type in _ANYWHERE:
        return device
    count = inventory.device_count(device.type)
    index = (
        device.index if device.index is not None else (inventory.current_index(device.type) if count else 0)
    )
    if index >= count:
        has = (
            f"only {count} {device.type} device{'' if count == 1 else 's'}"
            if count
            else f"no {device.type} device"
        )
        raise DeviceUnavailableError(
            f"device id {device_id!r} names {device.type}:{index}, but this machine has {has} ({_available()})"
        )
    return torch.device(device.type, index)


def _available() -> str:
    return f"available: {', '.join(inventory.available_devices())}"
