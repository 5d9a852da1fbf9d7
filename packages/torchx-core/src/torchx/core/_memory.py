"""The memory a layer's build would allocate, checked before anything is allocated.

A native constructor allocates its parameters at once, and on an
overcommitting OS an allocation larger than the free memory succeeds, after
which the process is killed when initialisation touches the pages. So before
a layer builds on a real device TorchX bounds what it will allocate from its
integer arguments (given, inferred and the native defaults). Only when that
bound exceeds what the device has is the exact need measured, by running the
native constructor on meta. A need larger than the available memory raises
:class:`~torchx.core.AllocationError` instead of allocating.

The bound is cheap (a product of a few ints), so ordinary layers pay nearly
nothing; the meta measurement runs only for layers big enough that their real
initialisation costs far more.

Inside a build transaction (:func:`allocation_budget`: a container's first
call, ``torchx.build``, a load), the check is of the whole build. Once what
its layers hold (measured, where their bounds add up) and the next layer's
bound reach ``UNCHECKED_BYTES``, a transaction that knows its inputs rehearses
the rest of the build on a meta copy and compares the sum with the free
memory, before allocating any more; one that does not adds each layer's need
to what the layers before it allocated. Either way ten thousand layers of a
few MiB each are refused as surely as one layer of their total.
"""

from __future__ import annotations

import contextvars
import math
import os
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from torchx.core._arguments import signature_of
from torchx.core._errors import AllocationError, format_call
from torchx.core._pending import construct_on_meta
from torchx.core._scope import scope_device
from torchx.core._tree import by_class, submodules

if TYPE_CHECKING:
    from torchx.core._layer import Layer
    from torchx.core._leaf import LeafLayer

__all__ = [
    "BuildNeed",
    "Rehearsal",
    "allocation_budget",
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


@by_class
def _size_arguments(native: type[nn.Module]) -> _SizeArguments:
    try:
        parameters = list(signature_of(native).values())
    except (TypeError, ValueError):
        parameters = []
    return _SizeArguments(
        tuple(
            (p.name, p.default) for p in parameters if p.default is not p.empty and _sizes_in(p.default, [])
        ),
        {p.name: length for p in parameters if (length := _tuple_length(p.annotation)) > 1},
    )


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


def _bound(layer: LeafLayer, native: type[nn.Module], arguments: Mapping[str, Any]) -> int:
    """What ``native(**arguments)`` allocates for ``layer`` at most: its family's
    count of elements at 8 bytes each (a long buffer's) or wider, else :func:`allocation_bound`."""
    dtype = arguments.get("dtype") or torch.get_default_dtype()
    elements = layer.tensor_elements(arguments)
    if elements is not None:
        return elements * max(dtype.itemsize, 8)
    return allocation_bound(native, arguments, max(dtype.itemsize, 4))  # half models keep float buffers


def measured_need(native: type[nn.Module], arguments: Mapping[str, Any], takes_device: bool) -> int:
    """The bytes of parameters and buffers ``native(**arguments)`` allocates,
    measured by constructing it on meta (nothing is allocated)."""
    return weight_bytes(construct_on_meta(native, arguments, takes_device))


def weight_bytes(module: nn.Module) -> int:
    """The bytes of ``module``'s parameters and buffers, shared ones once (on
    any device, meta included; an unbuilt layer's pending tensors count
    nothing). Read straight from the modules' stores: a build measures every
    layer it builds."""
    total, seen = 0, set()
    for sub in submodules(module) if module._modules else (module,):
        stores: tuple[dict[str, Any], ...] = (sub._parameters, sub._buffers)
        for store in stores:
            for tensor in dict.values(store):
                if tensor is not None and id(tensor) not in seen and not is_lazy(tensor):
                    seen.add(id(tensor))
                    total += tensor.numel() * tensor.element_size()
    return total


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
    """MemAvailable of /proc/meminfo, capped by a cgroup (v2 or v1) memory limit."""
    available: int | None = None
    try:
        meminfo = _read_text("/proc/meminfo")
        start = meminfo.index("MemAvailable:") + len("MemAvailable:")
        available = int(meminfo[start : meminfo.index("kB", start)]) * 1024
    except (OSError, ValueError):
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    limit = _cgroup_headroom()
    if limit is not None:
        available = limit if available is None else min(available, limit)
    return available


def _read_text(path: str | Path) -> str:
    """A small file's text, read in one system call (a few microseconds, where
    ``Path.read_text`` takes tens: a layer built alone reads the memory files)."""
    handle = os.open(path, os.O_RDONLY)
    try:
        return os.read(handle, 1 << 16).decode("ascii")
    finally:
        os.close(handle)


_NO_LIMIT = 1 << 60
"""cgroup v1 writes "no limit" as a huge page-aligned number."""

_CGROUP_FILES: dict[tuple[Path, Path], tuple[Path, Path] | None] = {}
"""The memory limit and usage files of this process's cgroup, by (mount, membership
file), found once (None: none): the search reads up to nine files."""


def _cgroup_headroom(
    root: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")
) -> int | None:
    """What this process's memory cgroup (v2, or v1) still allows, or None
    where no limit is set or none can be read."""
    key = (root, membership)
    for search in (key not in _CGROUP_FILES, True):
        if search:
            _CGROUP_FILES[key] = _cgroup_files(root, membership)
        files = _CGROUP_FILES[key]
        if files is None:
            return None
        try:
            limit = _read_text(files[0]).strip()
            if limit == "max" or int(limit) >= _NO_LIMIT:
                return None
            return max(int(limit) - int(_read_text(files[1]).strip()), 0)
        except (OSError, ValueError):
            continue  # moved to another cgroup, or it is gone: search again
    return None


def _cgroup_files(root: Path, membership: Path) -> tuple[Path, Path] | None:
    """The limit and usage files of the first place (v2, then v1, each as
    seen from the host and from inside a container) that has a readable limit."""
    v2, v1 = "/", "/"
    try:
        for line in _read_text(membership).splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if hierarchy == "0" and controllers == "":
                v2 = path
            elif "memory" in controllers.split(","):
                v1 = path
    except (OSError, ValueError):
        pass
    places = [
        (root / v2.lstrip("/"), "memory.max", "memory.current"),
        (root, "memory.max", "memory.current"),  # a container sees its own cgroup as the root
        (root / "memory" / v1.lstrip("/"), "memory.limit_in_bytes", "memory.usage_in_bytes"),
        (root / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ]
    for folder, limit_name, usage_name in places:
        try:
            limit = _read_text(folder / limit_name).strip()
            if limit != "max":
                int(limit)
        except (OSError, ValueError):
            continue
        return folder / limit_name, folder / usage_name
    return None


@dataclass
class _Budget:
    """What one build transaction allocates on one device."""

    available: int | None = None
    """The device's available memory when the transaction first needed it
    (read once: a later reading would count the transaction's own layers twice)."""
    read: bool = False
    measured: int = 0
    """Bytes of the layers measured: exactly, on meta before their build or by their tensors after it."""
    bounded: int = 0
    """Bytes promised by the bounds of the layers not measured (an overestimate)."""
    unmeasured: list[tuple[nn.Module, Any]] = field(default_factory=list)
    """The layers bounded, each with its key in :data:`_NEEDS`."""
    rehearsed: bool = False
    cleared: bool = False
    """Whether a rehearsal found that the whole build fits: no more checks."""

    def available_on(self, device: torch.device) -> int | None:
        """The device's available memory, read the first time it is asked for."""
        if not self.read:
            self.available, self.read = available_memory(device), True
        return self.available

    def promised(self) -> int:
        return self.measured + self.bounded

    def tighten(self) -> None:
        """Replace the bounds of the layers built so far by what they hold (each
        is measured once, and kept in :data:`_NEEDS` for its arguments)."""
        for layer, key in self.unmeasured:
            need = weight_bytes(layer)
            self.measured += need
            if key is not None and need:  # 0: it did not build
                if len(_NEEDS) >= _NEEDS_LIMIT:
                    _NEEDS.clear()
                _NEEDS[key] = need
        self.bounded, self.unmeasured = 0, []

    def add(self, layer: nn.Module, need: int, exact: bool, key: Any) -> None:
        """Count ``layer``'s build: ``need`` bytes, ``exact`` or a bound (then
        measured later, and kept under ``key``)."""
        if exact:
            self.measured += need
        else:
            self.bounded += need
            self.unmeasured.append((layer, key))


_NEEDS: dict[Any, int] = {}
"""The bytes each native constructor allocated, by its class, arguments and
torch's default dtype, measured after a build: a layer built again with the
same arguments (the blocks of a ResNet) counts exactly, not by its loose bound."""
_NEEDS_LIMIT = 4096


def _need_key(native: type[nn.Module], arguments: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of ``native(**arguments)`` in :data:`_NEEDS` (unhashable for some arguments)."""
    return (native, torch.get_default_dtype(), *arguments.items())


def _known_need(key: tuple[Any, ...]) -> tuple[int | None, tuple[Any, ...] | None]:
    """The exact need kept under ``key``, and ``key``, or None for an unhashable one."""
    try:
        return _NEEDS.get(key), key
    except TypeError:
        return None, None


@dataclass(frozen=True)
class BuildNeed:
    """What a build allocates: in all, and in its largest layer."""

    total: int
    largest_path: str
    """The largest layer's path in the model (``""``: the model itself)."""
    largest_type: str
    largest: int


@dataclass(frozen=True)
class Rehearsal:
    """How a build transaction finds, before allocating, what the rest of it will allocate."""

    model: str
    """The model's label, for the error."""
    need: Callable[[], BuildNeed]
    """What the rest of the build allocates (measured by building a meta copy)."""


class _TooLarge(Exception):
    """Raised where a rehearsal finds the build too large; the transaction turns
    it into an AllocationError of the whole model (no container on the way
    adds its path: the error is not about the layer that was building)."""

    def __init__(self, need: BuildNeed, device: torch.device, available: int) -> None:
        super().__init__("the build does not fit in memory")
        self.need, self.device, self.available = need, device, available


@dataclass
class _Transaction:
    rehearsal: Rehearsal | None
    budgets: dict[torch.device, _Budget] = field(default_factory=dict)


_transaction: contextvars.ContextVar[_Transaction | None] = contextvars.ContextVar(
    "torchx_allocation_transaction", default=None
)


@contextmanager
def allocation_budget(rehearsal: Rehearsal | None = None) -> Iterator[None]:
    """Inside the block (a build transaction), every layer's build is checked
    together with the builds before it in the block; nested blocks join the
    outermost. ``rehearsal``: how to measure the whole build first."""
    if _transaction.get() is not None:
        yield
        return
    transaction = _Transaction(rehearsal)
    token = _transaction.set(transaction)
    try:
        yield
        for budget in transaction.budgets.values():
            budget.tighten()  # what the layers built hold: the next build of their arguments counts it
    except _TooLarge as found:
        assert rehearsal is not None
        need = found.need
        largest = f"{need.largest_type} at {need.largest_path!r}" if need.largest_path else need.largest_type
        raise AllocationError(
            rehearsal.model,
            f"building it would allocate {format_bytes(need.total)} of parameters and buffers on "
            f"{found.device}, which has {format_bytes(found.available)} available (measured on a meta "
            f"copy, before allocating); the largest layer is the {largest}, with {format_bytes(need.largest)}",
            fix="make the model smaller, or build it abstractly: torchx.build(model, input_shape, device='meta')",
        ) from None
    finally:
        _transaction.reset(token)


def check_allocation(
    layer: LeafLayer,
    native: type[nn.Module],
    arguments: Mapping[str, Any],
    device: torch.device | None,
    takes_device: bool,
) -> None:
    """Raise AllocationError if building ``native(**arguments)`` on ``device``
    (None: wherever its constructor allocates by default), on top of what the
    build transaction allocated before it, needs more memory than the device
    has. Cheap for ordinary layers: a few multiplications and additions, or
    one look-up for arguments built before."""
    transaction = _transaction.get()
    if transaction is None and _bound(layer, native, arguments) < UNCHECKED_BYTES:
        return  # a layer built on its own, below what is worth checking (the bound is above its need)
    known, key = _known_need(_need_key(native, arguments))
    exact = known is not None
    need = known if known is not None else _bound(layer, native, arguments)
    where = device if type(device) is torch.device else _construction_device(device)
    if transaction is None:  # a layer built on its own
        if need >= UNCHECKED_BYTES:
            _check(layer, native, arguments, where, takes_device, need, exact, key, _Budget())
        return
    if where.type == "meta":
        return  # allocates nothing (a rehearsal's own build, among others)
    budget = transaction.budgets.get(where)
    if budget is None:
        budget = transaction.budgets[where] = _Budget()
    if exact and not budget.cleared and budget.measured + budget.bounded + need < UNCHECKED_BYTES:
        budget.measured += need  # the common case, inline
        return
    if budget.cleared:
        if not exact:
            budget.unmeasured.append((layer, key))  # measured at the end, for the next build
        return
    if budget.promised() + need >= UNCHECKED_BYTES:
        budget.tighten()  # bounds are loose: first see what the layers built so far hold
    if budget.promised() + need < UNCHECKED_BYTES:
        budget.add(layer, need, exact, key)
        return
    if transaction.rehearsal is not None and not budget.rehearsed:
        _rehearse(layer, transaction.rehearsal, where, budget)
        if budget.cleared:
            return
    _check(layer, native, arguments, where, takes_device, need, exact, key, budget)


def _rehearse(layer: Layer, rehearsal: Rehearsal, device: torch.device, budget: _Budget) -> None:
    """Measure the rest of the build on a meta copy: refuse it now if it does
    not fit, else clear it of further checks. A rehearsal that cannot run
    leaves the layer-by-layer checks in charge."""
    budget.rehearsed = True
    token = _transaction.set(None)  # the rehearsal is a build of its own
    try:
        need = rehearsal.need()
    except Exception:  # noqa: BLE001 - the real build reports its own errors
        return
    finally:
        _transaction.reset(token)
    available = budget.available_on(device)
    if available is not None and need.total > available:
        raise _TooLarge(need, device, available)
    budget.cleared = True


def _check(
    layer: Layer,
    native: type[nn.Module],
    arguments: Mapping[str, Any],
    device: torch.device,
    takes_device: bool,
    bound: int,
    exact: bool,
    key: Any,
    budget: _Budget,
) -> None:
    """Check one layer's build (``bound`` bytes, or ``exact``ly that) against
    the device's memory less what ``budget`` holds already; on success the
    layer joins the budget."""
    available = budget.available_on(device)
    if available is None or budget.promised() + bound <= available:
        budget.add(layer, bound, exact, key)
        return
    budget.tighten()
    need: int | None
    try:
        need = bound if exact else measured_need(native, arguments, takes_device)
    except RuntimeError as error:
        if "overflow" not in str(error).lower():
            raise
        need = None  # torch cannot even describe tensors that large
    if need is not None and budget.measured + need <= available:
        budget.add(layer, need, True, key)
        if key is not None and not exact:
            _NEEDS[key] = need
        return
    before = budget.measured
    earlier = f", on top of the {format_bytes(before)} this build allocated before it," if before else ""
    raise AllocationError(
        layer.layer_label(),
        f"building {format_call(native, arguments)} would allocate "
        f"{'more than 2**63 bytes' if need is None else format_bytes(need)} of parameters "
        f"and buffers{earlier} on {device}, which has {format_bytes(available)} available",
        fix="make the model smaller, or build it abstractly: torchx.build(model, input_shape, device='meta')",
        source=layer,
    )


def _construction_device(device: torch.device | None) -> torch.device:
    """Where a native constructor given ``device`` (None: not passed) allocates."""
    return scope_device() if device is None else torch.device(device)


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
