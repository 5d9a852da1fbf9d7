"""``torchx.nn.Module``: an ``nn.Module`` that goes to the device scope it is called in."""

from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from torchx.core._module_helpers import ModuleHelpers
from torchx.core._scope import ACTIVE, OPEN_SCOPES, DeviceScope, ScopeFrame
from torchx.core._shapes import InputLike, inferring_shapes
from torchx.core._summary import Summary, summarize

__all__ = ["Module", "release_parallel_wrappers"]

_module_call = nn.Module.__call__
_is_compiling = torch.compiler.is_dynamo_compiling
_active_frame = ACTIVE.get

_FRAME = "_torchx_frame"
"""Instance key: the scope opening the module was last called in, when it
needed nothing more there (placed, no wrapper): the fast path's one comparison."""
_PLACED = "_torchx_placed"
"""Instance key: the ``(device, dtype)`` the module was last placed at by a scope,
or ``_REPLICA``."""
_WRAPPER = "_torchx_wrapper"
"""Instance key: ``(placement, wrapper)`` for the parallel placement last used."""
_PLACEMENT = (_FRAME, _PLACED)
_CACHES = (*_PLACEMENT, _WRAPPER)
_REPLICA = object()
"""``_PLACED`` of a DataParallel replica: it lives where torch put it, never moved."""
_PLACE_LOCK = threading.Lock()
"""Held while a scope moves a module to its target (one move at a time)."""
_WRAPPED: weakref.WeakSet[nn.Module] = weakref.WeakSet()
"""Modules holding a parallel wrapper made for a scope (see release_parallel_wrappers)."""


def _fresh_place_lock() -> None:
    global _PLACE_LOCK
    _PLACE_LOCK = threading.Lock()


# In a child of os.fork(), a lock that no vanished thread holds. What it guards
# needs no repair: a move cut off halfway leaves some tensors moved and the
# module's placement unrecorded (``_PLACED`` is written after the move), so the
# child's next call in a scope moves the rest. (Had the forking thread held it,
# its ``with`` block releases the old lock object: harmless.)
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_fresh_place_lock)


class Module(ModuleHelpers):
    """``nn.Module``, plus device scopes and training helpers.

    Use it exactly like ``nn.Module``. When called inside a
    ``torchx.device_scope``, it first moves its parameters and buffers to the
    scope's device (and dtype, when the scope has one), once: later calls in
    the same placement cost one cached comparison. In a data-parallel or
    distributed scope, the call runs through ``torchx.DataParallel`` or
    ``DistributedDataParallel`` (made once, on the first call). Outside any
    scope, calling it costs what calling an ``nn.Module`` costs.

    The helpers (``clip_grad_value``, ``clip_grad_norm``, ``soft_update``,
    ``hard_update``, ``freeze``, ``clone``, ``num_parameters``, ``device``,
    ``dtype``, ``save``, ``load``) are those of :mod:`torchx.nn`'s functions.

    A subclass that defines its own ``__call__`` opts out of scopes.

    Examples::

        >>> class MLP(nnx.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(10, 20)
        ...     def forward(self, x):
        ...         return self.fc(x)
        >>> with torchx.device_scope(0):
        ...     y = MLP()(torch.zeros(4, 10))   # the model moves to cuda:0
    """

    def summary(
        self,
        *inputs: InputLike,
        depth: int | None = None,
        columns: Sequence[str] | None = None,
        dtype: torch.dtype | None = None,
    ) -> Summary:
        """A torchinfo-style summary for ``inputs`` (shapes, with ``None`` for a
        dynamic batch, or tensors): each module's output shape, parameters and
        mult-adds, and the totals; print it for the table. The model is left
        as it is (the summary runs on a meta copy).

        :param depth: the deepest level of modules shown (None: all; 1: the children).
        :param columns: from :data:`torchx.core._summary.COLUMNS`: ``"output_size"``,
            ``"num_params"``, ``"trainable"``, ``"frozen"``, ``"params_percent"``,
            ``"mult_adds"`` (torchinfo's names). Default: output size, parameters, frozen.
        """
        found = summarize(self, *inputs, dtype=dtype)
        chosen = found.columns if columns is None else tuple(columns)
        return dataclasses.replace(found, depth=depth, columns=chosen)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The tail is nn.Module.__call__ (``_wrapped_call_impl``) inlined: one
        # Python frame less, so that outside scopes a call costs what it costs
        # on an nn.Module.
        if not _is_compiling() and OPEN_SCOPES:
            frame = _active_frame()
            if frame is not None and (not frame.open or self.__dict__.get(_FRAME) is not frame):
                return _call_in_scope(self, frame, args, kwargs)
        if self._compiled_call_impl is None:
            return self._call_impl(*args, **kwargs)  # type: ignore[no-untyped-call]
        return self._compiled_call_impl(*args, **kwargs)

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        """``.to()``, ``.cuda()``... forget where a scope placed the module."""
        _forget_placement(self)
        return super()._apply(fn, recurse)  # type: ignore[no-untyped-call]

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (nn.Module, nn.Parameter)):
            _forget_placement(self)  # a new submodule or parameter may be elsewhere
        elif isinstance(value, torch.Tensor) and name in self._buffers:
            _forget_placement(self, _PLACEMENT)
        super().__setattr__(name, value)

    def register_buffer(self, name: str, tensor: torch.Tensor | None, persistent: bool = True) -> None:
        _forget_placement(self, _PLACEMENT)
        super().register_buffer(name, tensor, persistent)

    def register_parameter(self, name: str, param: nn.Parameter | None) -> None:
        _forget_placement(self)
        super().register_parameter(name, param)

    def add_module(self, name: str, module: nn.Module | None) -> None:
        _forget_placement(self)
        super().add_module(name, module)

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = super().__getstate__()  # type: ignore[no-untyped-call]
        for key in _CACHES:
            state.pop(key, None)
        return state

    def _replicate_for_data_parallel(self) -> Any:
        replica = super()._replicate_for_data_parallel()  # type: ignore[no-untyped-call]
        _forget_placement(replica)
        replica.__dict__[_PLACED] = _REPLICA
        return replica


def _forget_placement(module: nn.Module, keys: tuple[str, ...] = _CACHES) -> None:
    for key in keys:
        module.__dict__.pop(key, None)


def release_parallel_wrappers() -> None:
    """Drop every parallel wrapper made for a scope (the next call in a parallel
    scope makes a new one). ``torchx.device.destroy_distributed`` calls this:
    a DDP wrapper must not outlive its process group."""
    for module in list(_WRAPPED):
        _forget_placement(module)
    _WRAPPED.clear()


def _call_in_scope(
    module: nn.Module, frame: ScopeFrame, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A call of ``module`` that the fast path could not settle: the first in
    this scope opening, any through a parallel wrapper, or one from a context
    whose scope frame does not count here (see ``ScopeFrame``). Place the
    module at the scope's target, then run it. Replicas, and calls made by
    shape inference (on stand-in tensors), run where they are."""
    live = frame.live()
    state = module.__dict__
    placed = state.get(_PLACED)
    if live is None or placed is _REPLICA or inferring_shapes():
        return _module_call(module, *args, **kwargs)
    scope: DeviceScope = live.scope
    if placed != scope.target:
        device, dtype = scope.target
        with _PLACE_LOCK:
            module.to(device) if dtype is None else module.to(device=device, dtype=dtype)
    placement = scope.placement
    if placement.wrap is None:
        state[_PLACED] = scope.target
        if live is frame:
            state[_FRAME] = frame
        return _module_call(module, *args, **kwargs)
    wrapped = state.get(_WRAPPER)
    if wrapped is None or wrapped[0] != placement:
        wrapped = (placement, placement.wrap(module, args))  # it may move the module: to placement.device
        state[_WRAPPER] = wrapped
        _WRAPPED.add(module)
    state[_PLACED] = scope.target
    with scope.inner():
        return wrapped[1](*args, **kwargs)
