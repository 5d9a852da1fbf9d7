"""The memory a layer's build would allocate, checked before anything is allocated.

A native constructor allocates its parameters at once, and on an
overcommitting OS an allocation larger than the free memory succeeds, after
which the process is killed when initialisation touches the pages. So before
a layer builds on a real device TorchX bounds what it will allocate from its
integer arguments (given, inferred and the native defaults). Only when that
bound exceeds what the device has is the exact need measured, by running the
native constructor on meta. A need larger than the available memory raises
:class:`~torchx.core.errors.AllocationError` instead of allocating.

The bound is cheap (a product of a few ints), so ordinary layers pay nearly
nothing; the meta measurement runs only for layers big enough that their real
initialisation costs far more.
"""

from __future__ import annotations

import inspect
import math
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchx.core.errors import AllocationError, format_call
from torchx.core.scope import current_scope

if TYPE_CHECKING:
    from torchx.core.layer import Layer

__all__ = [
    "allocation_bound",
    "available_memory",
    "check_allocation",
    "format_bytes",
    "measured_need",
    "weight_bytes",
]

SIZE_FACTOR = 32
"""How far the parameter count of a ``torch.nn`` module may exceed the product
of its sizes times the largest size: an LSTM's 4 gates x 2 directions x (input
+ hidden) weights, say. A test checks the bound against every registered family."""

UNCHECKED_BYTES = 1 << 30
"""Builds whose bound is below this are never checked (not even the free memory
is read): an allocator refuses a smaller request cleanly, or it fits."""


@dataclass(frozen=True)
class _SizeArguments:
    """What a native constructor's signature says about its size arguments."""

    defaults: tuple[tuple[str, Any], ...]
    """Defaults that are sizes (ints or lists of ints), as ``(name, default)``."""
    repeats: Mapping[str, int]
    """Arguments whose scalar stands for several sizes: ``kernel_size: int |
    tuple[int, int, int]`` counts a scalar 3 times."""


_SIZE_ARGUMENTS: dict[type, _SizeArguments] = {}


def _size_arguments(native: type[nn.Module]) -> _SizeArguments:
    found = _SIZE_ARGUMENTS.get(native)
    if found is None:
        try:
            parameters = list(inspect.signature(native.__init__).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        found = _SIZE_ARGUMENTS[native] = _SizeArguments(
            tuple(
                (p.name, p.default)
                for p in parameters
                if p.default is not p.empty and _sizes_in(p.default, [])
            ),
            {p.name: length for p in parameters if (length := _tuple_length(p.annotation)) > 1},
        )
    return found


def _tuple_length(annotation: Any) -> int:
    """N for an annotation such as ``int | tuple[int, ..., int]`` (N ints), else 1."""
    for option in typing.get_args(annotation):
        if typing.get_origin(option) is tuple and Ellipsis not in typing.get_args(option):
            return len(typing.get_args(option))
    return 1


def _sizes_in(value: Any, found: list[int], repeat: int = 1) -> list[int]:
    """The ints of ``value`` (an int, counted ``repeat`` times, or a list/tuple of
    ints) above 1, into ``found``."""
    if type(value) is int:
        if value > 1:
            found.extend([value] * repeat)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if type(item) is int and item > 1:
                found.append(item)
    return found


def allocation_bound(native: type[nn.Module], arguments: Mapping[str, Any], itemsize: int) -> int:
    """An upper bound, in bytes, on what ``native(**arguments)`` allocates with
    parameters of ``itemsize`` bytes (buffers are assumed no wider)."""
    known = _size_arguments(native)
    sizes: list[int] = []
    repeats = known.repeats
    for name, value in arguments.items():
        if type(value) is int:  # the common case, inline
            if value > 1:
                sizes.extend([value] * repeats.get(name, 1))
        elif isinstance(value, (list, tuple)):
            _sizes_in(value, sizes)
    for name, default in known.defaults:
        if name not in arguments:
            _sizes_in(default, sizes, repeats.get(name, 1))
    if not sizes:
        return SIZE_FACTOR * itemsize
    return SIZE_FACTOR * itemsize * math.prod(sizes) * max(sizes)


def measured_need(native: type[nn.Module], arguments: Mapping[str, Any], takes_device: bool) -> int:
    """The bytes of parameters and buffers ``native(**arguments)`` allocates,
    measured by constructing it on meta (nothing is allocated)."""
    if takes_device:
        module = native(**{**arguments, "device": "meta"})
    else:
        with torch.device("meta"):
            module = native(**arguments)
    return weight_bytes(module)


def weight_bytes(module: nn.Module) -> int:
    """The bytes of ``module``'s parameters and buffers (on any device, meta included)."""
    return sum(tensor.numel() * tensor.element_size() for tensor in (*module.parameters(), *module.buffers()))


def available_memory(device: torch.device) -> int | None:
    """Bytes that ``device`` can still give, or None where unknown or unlimited (meta)."""
    if device.type == "cpu":
        return _available_host_memory()
    if device.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + cached)
    return None


def _available_host_memory() -> int | None:
    """MemAvailable of /proc/meminfo, capped by a cgroup (v2) memory limit."""
    available: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except OSError:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    limit = _cgroup_headroom()
    if limit is not None:
        available = limit if available is None else min(available, limit)
    return available


def _cgroup_headroom() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as file:
            limit = file.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as file:
            current = int(file.read().strip())
    except (OSError, ValueError):
        return None
    return max(int(limit) - current, 0)


def check_allocation(
    layer: Layer,
    native: type[nn.Module],
    arguments: Mapping[str, Any],
    device: torch.device | None,
    takes_device: bool,
) -> None:
    """Raise AllocationError if building ``native(**arguments)`` on ``device``
    (None: wherever its constructor allocates by default) needs more memory
    than the device has. Cheap for ordinary layers: a few multiplications."""
    dtype = arguments.get("dtype") or torch.get_default_dtype()
    bound = allocation_bound(native, arguments, max(dtype.itemsize, 4))  # half models keep float buffers
    if bound < UNCHECKED_BYTES:
        return
    device = _construction_device(device)
    available = available_memory(device)
    if available is None or bound <= available:
        return
    need: int | None
    try:
        need = measured_need(native, arguments, takes_device)
    except RuntimeError as error:
        if "overflow" not in str(error).lower():
            raise
        need = None  # torch cannot even describe tensors that large
    if need is not None and need <= available:
        return
    raise AllocationError(
        layer.layer_label(),
        f"building {format_call(native, arguments)} would allocate "
        f"{'more than 2**63 bytes' if need is None else format_bytes(need)} of parameters "
        f"and buffers on {device}, which has {format_bytes(available)} available",
        fix="make the layer smaller, or build it abstractly: torchx.build(model, input_shape, device='meta')",
        source=layer,
    )


def _construction_device(device: torch.device | None) -> torch.device:
    """Where a native constructor given ``device`` (None: not passed) allocates."""
    if device is not None:
        return torch.device(device)
    scope = current_scope()
    return torch.get_default_device() if scope is None else scope.device


def format_bytes(count: int) -> str:
    """``count`` bytes in binary units: ``3.6 TiB``."""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} PiB"
