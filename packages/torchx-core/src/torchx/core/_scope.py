"""Device scopes: ``with torchx.device_scope(id):`` puts new tensors on a device.

Inside a scope, torch's tensor constructors (``torch.zeros``, ``torch.randn``,
``torch.arange``, ``torch.tensor``... the set torch's own ``with
torch.device(...)`` covers) create on the scope's device, and in its dtype when
one is given, unless the call names its own; ``torchx.nn.Module``\\s move
themselves there when called. ``*_like`` functions and ``Tensor.new_*``
methods follow their input tensor, as in torch (so optimizer state made with
``zeros_like(param)`` stays with its parameter).

The scope in force is a ``ContextVar``: each thread and each asyncio task has
its own. Constructors are redirected by a ``TorchFunctionMode`` that is pushed
onto torch's (thread-local) mode stack only while a scope that changes
something is open in the thread; a scope that changes nothing (``"cpu"`` with
torch's defaults) pushes nothing, so code inside it runs at full speed.

Device ids are resolved by device-backend plugins (``torchx_resolve_device``);
torchx-device provides the standard ones.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import torch
from torch._C import (
    _get_function_stack_at,
    _len_torch_function_stack,
    _pop_torch_function_stack,
    _push_on_torch_function_stack,
)
from torch.overrides import TorchFunctionMode

from torchx.core._errors import ArgumentError, DeviceError, DeviceUnavailableError, DeviceWarning, TorchXError
from torchx.core._placement import Placement
from torchx.core._plugins import current_plugins

__all__ = [
    "DeviceScope",
    "current_scope",
    "default_device",
    "device_scope",
    "resolve_device",
    "scope_device",
]

_CONSTRUCTORS = frozenset(
    {
        torch.arange, torch.as_tensor, torch.asarray, torch.bartlett_window, torch.blackman_window,
        torch.empty, torch.empty_permuted, torch.empty_strided, torch.eye, torch.fft.fftfreq,
        torch.fft.rfftfreq, torch.full, torch.hamming_window, torch.hann_window, torch.kaiser_window,
        torch.linspace, torch.logspace, torch.ones, torch.rand, torch.randint, torch.randn,
        torch.randperm, torch.range, torch.scalar_tensor, torch.tensor, torch.tril_indices,
        torch.triu_indices, torch.zeros,
    }
)  # fmt: skip
"""The constructors a scope redirects: those of torch's own device context
(``torch.utils._device``) but the sparse, nested and quantized ones, which
torch.compile cannot trace through a mode."""

_FLOATING = frozenset(
    {
        torch.bartlett_window, torch.blackman_window, torch.empty, torch.empty_permuted,
        torch.empty_strided, torch.eye, torch.fft.fftfreq, torch.fft.rfftfreq, torch.hamming_window,
        torch.hann_window, torch.kaiser_window, torch.linspace, torch.logspace, torch.ones, torch.rand,
        torch.randn, torch.zeros,
    }
)  # fmt: skip
"""Constructors whose result has torch's default floating dtype unless told otherwise."""

_DTYPE_FROM_DATA = frozenset(
    {torch.arange, torch.as_tensor, torch.asarray, torch.full, torch.range, torch.scalar_tensor, torch.tensor}
)
"""Constructors whose dtype follows their data: a scope's dtype replaces the
default floating dtype only (``torch.tensor([1, 2])`` stays int64)."""


class ScopeFrame:
    """One opening of a scope: the scope, the frame outside it, the thread that
    opened it, whether that pushed the constructor mode, and whether it is
    still open.

    A frame counts only in its own thread and while open: a context copied
    into another thread (``asyncio.to_thread``) or kept by a task that
    outlives the ``with`` block sees no scope there, just as its constructors
    see no mode.
    """

    __slots__ = ("open", "outer", "pushed", "scope", "thread")

    def __init__(self, scope: DeviceScope, outer: ScopeFrame | None, pushed: bool) -> None:
        self.scope = scope
        self.outer = outer
        self.pushed = pushed
        self.thread = threading.get_ident()
        self.open = True

    def live(self) -> ScopeFrame | None:
        """This frame, or the nearest outer one, that counts in the calling thread."""
        frame: ScopeFrame | None = self
        here = threading.get_ident()
        while frame is not None and not (frame.open and frame.thread == here):
            frame = frame.outer
        return frame


ACTIVE: ContextVar[ScopeFrame | None] = ContextVar("torchx_device_scope", default=None)
"""The innermost open scope's frame in this context (thread or asyncio task)."""


OPEN_SCOPES: list[DeviceScope] = []
"""Every scope open anywhere in the process (list appends and pops are atomic).

``torchx.nn.Module.__call__`` tests it first: when it is empty (the common
case) the scope lookup is skipped entirely, and torch.compile can trace a
list where it cannot trace a ``ContextVar``.

Scopes take no lock, so ``os.fork()`` needs nothing here. In a child of a
fork, this list may still hold scopes of threads the child does not have:
they only cost ``Module.__call__`` its fast path (the ContextVar still
decides), and they cannot be told from the forking thread's own open scopes.
"""


class _ConstructorMode(TorchFunctionMode):
    """Gives constructors the device (and dtype) of the scope in force.

    Eager code asks the ContextVar, which is right per asyncio task; code that
    torch.compile (dynamo) traces reads ``innermost``, the innermost scope opened in
    this thread, because a ContextVar cannot be traced.
    """

    def __init__(self) -> None:
        super().__init__()
        self.innermost: DeviceScope | None = None

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        if func in _CONSTRUCTORS:
            scope = self.innermost if torch.compiler.is_dynamo_compiling() else current_scope()
            if scope is not None:
                return scope.construct(func, args, kwargs)
        if kwargs:
            return func(*args, **kwargs)
        return func(*args)


_CPU = torch.device("cpu")


def default_device() -> torch.device:
    """``torch.get_default_device()``, without its walk of the function-mode
    stack when that stack is empty (``torch.set_default_device`` pushes a mode)."""
    return torch.get_default_device() if _len_torch_function_stack() else _CPU


def scope_device() -> torch.device:
    """Where tensors are created now: the device scope's device, else torch's default."""
    scope = current_scope()
    return default_device() if scope is None else scope.device


def _depth_of(mode: object) -> int | None:
    """Where ``mode`` is on this thread's torch-function mode stack (0 at the
    bottom), or None when it is not there."""
    for index in range(_len_torch_function_stack() - 1, -1, -1):
        if _get_function_stack_at(index) is mode:
            return index
    return None


def _remove_at(index: int) -> None:
    """Take the mode at ``index`` off this thread's mode stack; the modes above
    it are popped and pushed back in their order, which touches nothing but
    the stack (no mode's ``__enter__`` or ``__exit__`` runs)."""
    above = [_pop_torch_function_stack() for _ in range(_len_torch_function_stack() - 1 - index)]
    _pop_torch_function_stack()
    for other in reversed(above):
        _push_on_torch_function_stack(other)


class _ThreadState(threading.local):
    """This thread's constructor mode, the open scopes that pushed it, in
    opening order (the mode is on torch's stack while there are any), and the
    modes that were beneath it when it was pushed.

    The mode stack is the thread's, shared by every asyncio task running in
    it, so the mode need not be on top when its last scope closes: another
    task may have entered ``torch.device("meta")`` meanwhile, and popping the
    top would take that task's mode away (its "meta" layers would then
    allocate for real). So the mode is pushed and removed exactly, wherever it
    is on the stack.

    One case is torch's doing: ``torch.device``'s exit pops whatever is on top
    (as does ``TorchFunctionMode.__exit__``), so a task leaving
    ``torch.device`` entered before another task's scope opened takes
    TorchX's mode off and leaves its own mode there, which nobody would ever
    pop again. TorchX repairs that at its next scope opening or last closing
    in the thread: it takes off the topmost mode that was beneath its own when
    it pushed it (the mode whose exit took TorchX's, whenever each task leaves
    its modes innermost first), then pushes its own again if a scope is open.
    That keeps the stack's count right, and the stack ends as it began.
    """

    def __init__(self) -> None:
        self.mode = _ConstructorMode()
        self.scopes: list[DeviceScope] = []
        self.beneath: list[object] = []

    def push(self) -> None:
        """Put the mode on the stack, unless it is there already."""
        depth = _len_torch_function_stack()
        if depth == 0:  # the common case, made cheap
            self.beneath = []
        else:
            if _depth_of(self.mode) is not None:
                return
            if self.scopes:  # it was pushed, and someone else's exit popped it
                self._remove_orphan()
            self.beneath = [_get_function_stack_at(index) for index in range(_len_torch_function_stack())]
        _push_on_torch_function_stack(self.mode)

    def pop(self) -> None:
        """Take the mode off the stack (the last scope that pushed it has closed)."""
        depth = _len_torch_function_stack()
        if depth and _get_function_stack_at(depth - 1) is self.mode:  # the common case, made cheap
            _pop_torch_function_stack()
            self.beneath = []
            return
        index = _depth_of(self.mode)
        if index is None:  # someone else's exit popped it
            self._remove_orphan()
        else:
            _remove_at(index)
        self.beneath = []

    def _remove_orphan(self) -> None:
        """Take off the mode left behind by the exit that popped ours instead:
        the topmost one still on the stack that was beneath ours."""
        for index in range(_len_torch_function_stack() - 1, -1, -1):
            mode = _get_function_stack_at(index)
            if any(mode is beneath for beneath in self.beneath):
                _remove_at(index)
                return


_thread = _ThreadState()


class DeviceScope:
    """A device (and optional dtype) to create tensors on and run modules on.

    Made by :func:`device_scope`; use it with ``with``. Reusable, re-entrant,
    and safe to share between threads. An inner scope replaces the outer one
    (device and dtype) until it closes.
    """

    __slots__ = ("_inner", "device_id", "dtype", "placement")

    def __init__(self, device_id: object, placement: Placement, dtype: torch.dtype | None = None) -> None:
        self.device_id = device_id
        """The id as given to :func:`device_scope`."""
        self.placement = placement
        """The resolved, validated placement."""
        self.dtype = dtype
        """The floating dtype for constructors, or None for torch's default."""
        self._inner: DeviceScope | None = None

    @property
    def device(self) -> torch.device:
        """Where constructors create: the placement's device."""
        return self.placement.device

    @property
    def target(self) -> tuple[torch.device, torch.dtype | None]:
        """Where a module called in this scope goes: ``(device, dtype)``."""
        return (self.placement.device, self.dtype)

    def inner(self) -> DeviceScope:
        """This scope without its parallel wrapping: the scope a wrapped module's
        own forward runs in (so that it does not wrap itself again)."""
        if self._inner is None:
            self._inner = DeviceScope(self.device_id, Placement(self.placement.device), self.dtype)
        return self._inner

    def _changes_constructors(self) -> bool:
        if not self.placement.on_cpu or (self.dtype is not None and self.dtype != torch.get_default_dtype()):
            return True
        # Another mode (torch.device(...), set_default_device, an outer scope)
        # may be redirecting constructors: then "cpu" must be said explicitly.
        return bool(_len_torch_function_stack())

    def __enter__(self) -> DeviceScope:
        pushed = self._changes_constructors()
        if pushed:
            state = _thread
            state.push()
            state.scopes.append(self)
            state.mode.innermost = self
        ACTIVE.set(ScopeFrame(self, ACTIVE.get(), pushed))
        OPEN_SCOPES.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        frame = ACTIVE.get()
        if frame is None or frame.scope is not self or not frame.open:
            opened_here = frame is not None and frame.live() is not None
            problem = "closed while another scope was innermost: close scopes innermost first"
            raise TorchXError(f"{self!r} {problem if opened_here else 'is not open in this thread or task'}")
        frame.open = False
        ACTIVE.set(frame.outer)
        OPEN_SCOPES.remove(self)
        if frame.pushed:
            scopes = _thread.scopes
            del scopes[len(scopes) - 1 - scopes[::-1].index(self)]
            _thread.mode.innermost = scopes[-1] if scopes else None
            if not scopes:
                _thread.pop()

    def construct(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None
    ) -> Any:
        """Call constructor ``func`` with this scope's device and dtype filled in
        where the call leaves them unset."""
        given = dict(kwargs) if kwargs else {}
        if given.get("device") is None:
            given["device"] = self.placement.device
        dtype = self.dtype
        if dtype is None or given.get("dtype") is not None:
            return func(*args, **given)
        if func in _FLOATING:
            given["dtype"] = dtype
            return func(*args, **given)
        result = func(*args, **given)
        data = args[0] if args else given.get("data", given.get("obj"))
        from_data = func in _DTYPE_FROM_DATA and not hasattr(
            data, "dtype"
        )  # tensors, numpy arrays keep theirs
        if from_data and result.dtype == torch.get_default_dtype():
            given["dtype"] = dtype
            return func(*args, **given)
        return result

    def __repr__(self) -> str:
        dtype = "" if self.dtype is None else f", dtype={self.dtype}"
        return f"DeviceScope({self.device_id!r} -> {self.placement}{dtype})"


def current_scope() -> DeviceScope | None:
    """The innermost device scope open in this thread or task, or None."""
    frame = ACTIVE.get()
    live = None if frame is None else frame.live()
    return None if live is None else live.scope


def resolve_device(device_id: object) -> Placement:
    """``device_id`` resolved and validated by the installed device backends.

    :raises DeviceError: no backend accepts the id, or the one whose form it
        has finds it malformed.
    :raises DeviceUnavailableError: the id names a device that is not present.
    """
    manager = current_plugins()
    placement = manager.resolve_device(device_id)
    if placement is not None:
        return placement
    backends = manager.device_backends()
    if not backends:
        raise DeviceError(
            f"device id {device_id!r}: no device backend is installed; run: pip install torchx-device"
        )
    raise DeviceError(
        f"device id {device_id!r} is not one that any installed device backend accepts "
        f"(asked: {', '.join(backends)}); see torchx.device_scope for the ids TorchX accepts"
    )


def device_scope(
    device_id: object, dtype: torch.dtype | None = None, *, fallback: object | None = None
) -> DeviceScope:
    """A scope that creates tensors on ``device_id``'s device (and in ``dtype``).

    With torchx-device installed, ``device_id`` is one of:

    - an ``int >= 0``: GPU *n*; ``-1``: the CPU;
    - ``"cuda:<n>"``, or its alias ``"gpu:<n>"``; ``"cuda"``: the current GPU;
      ``"cpu"``; any other ``torch.device`` string, or a ``torch.device``;
    - a list of GPU indices (``[0, 3, 5]``): data parallel over them, the first
      being where constructors create; ``"cuda:all"``: every GPU;
    - ``"ddp"``: this process's device in a ``torchrun`` job, modules wrapped
      in ``DistributedDataParallel``.

    Plugins may accept more. Ids are validated against the devices present:
    an absent device raises :class:`~torchx.core.DeviceUnavailableError`,
    unless ``fallback`` (another id, such as ``"cpu"``) is given, which is
    then used with a :class:`~torchx.core.DeviceWarning`.

    :param dtype: a floating dtype for constructors that would otherwise use
        torch's default floating dtype, and for modules called in the scope.

    Examples::

        >>> with torchx.device_scope("cuda:1"):
        ...     torch.zeros(3).device
        device(type='cuda', index=1)
    """
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ArgumentError(
            f"device_scope: dtype must be a floating torch.dtype (torch.float32, torch.bfloat16, ...), "
            f"got {dtype!r}"
        )
    try:
        placement = resolve_device(device_id)
    except DeviceUnavailableError as error:
        if fallback is None:
            raise
        placement = resolve_device(fallback)
        warnings.warn(f"{error}; using {fallback!r} instead, as fallback= asks", DeviceWarning, stacklevel=2)
    return DeviceScope(device_id, placement, dtype)
