"""What devices this machine has: the one place torchx-device asks torch."""

from __future__ import annotations

import torch

__all__ = ["available_devices", "current_index", "device_count"]

_ALWAYS_PRESENT = ("cpu", "meta")


def device_count(device_type: str) -> int:
    """How many devices of ``device_type`` (``"cuda"``, ``"xpu"``, ``"mps"``...) are usable."""
    if device_type in _ALWAYS_PRESENT:
        return 1
    backend = getattr(torch, device_type, None)
    count = getattr(backend, "device_count", None)
    if count is None:
        return 0
    is_available = getattr(backend, "is_available", None)
    if is_available is not None and not is_available():
        return 0
    return int(count())


def current_index(device_type: str) -> int:
    """The index of the current device of ``device_type`` (``torch.cuda.current_device()``)."""
    current = getattr(getattr(torch, device_type, None), "current_device", None)
    return int(current()) if current is not None else 0


def available_devices() -> list[str]:
    """Every usable device: ``["cpu", "cuda:0", "cuda:1"]``."""
    found = ["cpu"]
    for device_type in ("cuda", "xpu", "mps", "mtia"):
        found += [f"{device_type}:{index}" for index in range(device_count(device_type))]
    return found
