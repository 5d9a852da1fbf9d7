"""The helpers of :mod:`torchx.nn` as methods: the base of ``torchx.nn.Module``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

import torch
from torch import nn

from torchx.core._checkpoint import load_checkpoint, save_checkpoint
from torchx.core._helpers import (
    clip_grad_norm,
    clip_grad_value,
    clone,
    freeze,
    hard_update,
    module_device,
    module_dtype,
    num_parameters,
    soft_update,
    unfreeze,
)

__all__ = ["ModuleHelpers"]

_H = TypeVar("_H", bound="ModuleHelpers")
_T = TypeVar("_T")


class _Derived(Generic[_T]):
    """A read-only attribute computed from the module, which an instance
    attribute of the same name overrides: a subclass (or a native module)
    that sets ``self.device = ...`` itself, as much torch code does, keeps
    its own value."""

    def __init__(self, compute: Callable[[nn.Module], _T], doc: str) -> None:
        self._compute = compute
        self.__doc__ = doc

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> _Derived[_T]: ...

    @overload
    def __get__(self, instance: nn.Module, owner: type[Any]) -> _T: ...

    def __get__(self, instance: nn.Module | None, owner: type[Any]) -> _T | _Derived[_T]:
        return self if instance is None else self._compute(instance)


class ModuleHelpers(nn.Module):
    """The helpers of :mod:`torchx.nn` (its functions) as methods, as the seed's
    ``torchx.nn.Module`` offers them (``model.clip_grad_value(1.0)``,
    ``target.soft_update(online, tau)``): a base of ``torchx.nn.Module``, and
    so of every container. Leaf layers have none (once built, they are their
    native modules); the functions take any module. A subclass's own
    attribute of a helper's name (``self.device = ...``) wins.
    """

    def clip_grad_value(self, clip_value: float) -> None:
        """Clamp every gradient to ``[-clip_value, clip_value]``, in place."""
        clip_grad_value(self, clip_value)

    def clip_grad_norm(
        self, max_norm: float, norm_type: float = 2.0, *, error_if_nonfinite: bool = False
    ) -> torch.Tensor:
        """Clip the norm of all gradients together to ``max_norm``; returns the norm before."""
        return clip_grad_norm(self, max_norm, norm_type, error_if_nonfinite=error_if_nonfinite)

    def soft_update(self, source: nn.Module, tau: float, *, include_buffers: bool = False) -> None:
        """``self = (1 - tau) * self + tau * source`` over all parameters (see :func:`soft_update`)."""
        soft_update(self, source, tau, include_buffers=include_buffers)

    def hard_update(self, source: nn.Module) -> None:
        """Copy every parameter and buffer of ``source`` into this module."""
        hard_update(self, source)

    copy_from = hard_update

    def freeze(self: _H) -> _H:
        """Stop gradients for every parameter; returns this module."""
        return freeze(self)

    def unfreeze(self: _H) -> _H:
        """Let every parameter take gradients again; returns this module."""
        return unfreeze(self)

    def clone(self: _H, device: torch.device | str | int | None = None) -> _H:
        """A deep copy, moved to ``device`` when one is given."""
        return clone(self, device)

    def num_parameters(self, trainable_only: bool = False) -> int:
        """How many parameter elements this module has (with ``trainable_only``: that train)."""
        return num_parameters(self, trainable_only)

    device = _Derived(
        module_device, "The one device of all parameters and buffers (torch's default when none)."
    )
    dtype = _Derived(
        module_dtype, "The one floating dtype of all parameters and buffers (torch's default when none)."
    )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a checkpoint: the state dict and, for TorchX layers, the spec."""
        save_checkpoint(self, path)

    def load(self: _H, path: str | os.PathLike[str]) -> _H:
        """Load a checkpoint written by :meth:`save` into this module; returns it.

        Nothing changes unless the whole checkpoint fits (see
        :func:`torchx.core._checkpoint.load_checkpoint`).
        """
        return load_checkpoint(self, path)
