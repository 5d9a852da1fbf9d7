"""``torchx.nn.Module``: an ``nn.Module`` that goes to the device scope it is called in."""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn

from torchx.core.helpers import ModuleHelpers
from torchx.core.scope import OPEN_SCOPES, DeviceScope, current_scope

__all__ = ["Module"]

_module_call = nn.Module.__call__
_PLACED = "_torchx_placed"
"""Instance key: the ``(device, dtype)`` the module was last placed at by a scope."""
_WRAPPER = "_torchx_wrapper"
"""Instance key: ``(placement, wrapper)`` for the parallel placement last used."""
_REPLICA = object()
"""``_PLACED`` of a DataParallel replica: it lives where torch put it, never moved."""
_PLACE_LOCK = threading.Lock()


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

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if OPEN_SCOPES.count and not torch.compiler.is_compiling():
            scope = current_scope()
            if scope is not None:
                return _call_in_scope(self, scope, args, kwargs)
        return _module_call(self, *args, **kwargs)

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        """``.to()``, ``.cuda()``... forget where a scope placed the module."""
        self.__dict__.pop(_PLACED, None)
        self.__dict__.pop(_WRAPPER, None)
        return super()._apply(fn, recurse)  # type: ignore[no-untyped-call]

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (nn.Module, torch.Tensor)):
            self.__dict__.pop(_PLACED, None)  # a new submodule or tensor may be elsewhere
        super().__setattr__(name, value)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop(_PLACED, None)
        state.pop(_WRAPPER, None)
        return state

    def _replicate_for_data_parallel(self) -> Any:
        replica = super()._replicate_for_data_parallel()  # type: ignore[no-untyped-call]
        replica.__dict__[_PLACED] = _REPLICA
        replica.__dict__.pop(_WRAPPER, None)
        return replica


def _call_in_scope(
    module: nn.Module, scope: DeviceScope, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Call ``module`` in ``scope``: place it there first, and run it through
    the placement's parallel wrapper when there is one."""
    state = module.__dict__
    placed = state.get(_PLACED)
    if placed is _REPLICA:
        return _module_call(module, *args, **kwargs)
    target = scope.target
    if placed != target:
        device, dtype = target
        with _PLACE_LOCK:
            module.to(device) if dtype is None else module.to(device=device, dtype=dtype)
            state[_PLACED] = target
    placement = scope.placement
    if placement.wrap is None:
        return _module_call(module, *args, **kwargs)
    wrapped = state.get(_WRAPPER)
    if wrapped is None or wrapped[0] != placement:
        wrapped = (placement, placement.wrap(module, args))
        state[_PLACED] = target  # the wrapper moved the module to the placement's device
        state[_WRAPPER] = wrapped
    with scope.inner():
        return wrapped[1](*args, **kwargs)
