"""Training helpers for any ``nn.Module``.

Each helper is a function of a module (``soft_update(target, source, tau)``),
usable on plain torch modules;
:class:`~torchx.core.ModuleHelpers` offers the same as methods
(``target.soft_update(source, tau)``) on ``torchx.nn.Module`` and on every
TorchX container.
"""

from __future__ import annotations

import copy
import itertools
from typing import TYPE_CHECKING, TypeVar

import torch
from torch import nn

from torchx.core._errors import NotBuiltError, ShapeError, TorchXError
from torchx.core._leaf import unbuilt_layers

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "clip_grad_norm",
    "clip_grad_value",
    "clone",
    "freeze",
    "hard_update",
    "module_device",
    "module_dtype",
    "num_parameters",
    "require_built",
    "soft_update",
    "unfreeze",
]

_M = TypeVar("_M", bound=nn.Module)


def require_built(module: nn.Module, action: str) -> None:
    """Raise unless every TorchX layer in ``module`` is built (their parameters exist)."""
    pending = unbuilt_layers(module)
    if pending:
        names = ", ".join(sorted({layer.layer_label() for layer in pending}))
        raise NotBuiltError(
            f"{action}: {type(module).__name__} has {len(pending)} unbuilt layer(s) ({names}), whose "
            "parameters do not exist yet; build it first: call it on an input, or "
            "torchx.build(model, input_shape)"
        )


def clip_grad_value(module: nn.Module, clip_value: float) -> None:
    """Clamp every gradient of ``module`` to ``[-clip_value, clip_value]``, in place
    (nothing to do before the first backward)."""
    with_gradients = [p for p in module.parameters() if p.grad is not None]
    if with_gradients:  # torch's foreach kernel refuses an empty list
        torch.nn.utils.clip_grad_value_(with_gradients, clip_value)


def clip_grad_norm(
    module: nn.Module, max_norm: float, norm_type: float = 2.0, *, error_if_nonfinite: bool = False
) -> torch.Tensor:
    """Scale ``module``'s gradients so that their norm, taken over all of them
    together, is at most ``max_norm``; returns that norm before clipping (as
    ``torch.nn.utils.clip_grad_norm_``)."""
    return torch.nn.utils.clip_grad_norm_(
        module.parameters(), max_norm, norm_type, error_if_nonfinite=error_if_nonfinite
    )


def _paired_tensors(
    target: nn.Module, source: nn.Module, action: str, *, buffers: bool
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``target``'s and ``source``'s parameters (and buffers), in matching order,
    after checking that both have the same names, shapes and dtypes."""
    require_built(target, action)
    require_built(source, action)

    def named(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        yield from module.named_parameters()
        if buffers:
            yield from module.named_buffers()

    targets: list[torch.Tensor] = []
    sources: list[torch.Tensor] = []
    fix = f"{action} needs two models of one architecture (for example, a copy made with model.clone())"
    for mine, theirs in itertools.zip_longest(named(target), named(source)):
        if mine is None or theirs is None or mine[0] != theirs[0]:
            have = f"{mine[0]!r}" if mine else "nothing more"
            other = f"{theirs[0]!r}" if theirs else "nothing more"
            raise ShapeError(action, f"the target has {have} where the source has {other}", fix)
        name, tensor = mine
        other_tensor = theirs[1]
        if tensor.shape != other_tensor.shape or tensor.dtype != other_tensor.dtype:
            raise ShapeError(
                action,
                f"{name!r} is {tuple(tensor.shape)} {tensor.dtype} in the target but "
                f"{tuple(other_tensor.shape)} {other_tensor.dtype} in the source",
                fix,
            )
        targets.append(tensor)
        sources.append(other_tensor)
    return targets, sources


def soft_update(target: nn.Module, source: nn.Module, tau: float, *, include_buffers: bool = False) -> None:
    """Polyak-average ``source`` into ``target``: ``target = (1 - tau) * target + tau * source``.

    One fused ``torch._foreach_lerp_`` over all parameters (no Python loop per
    parameter). With ``include_buffers``, floating buffers are averaged too and
    the others (BatchNorm's ``num_batches_tracked``) copied.

    :raises ValueError: ``tau`` is not in ``[0, 1]``.
    :raises ShapeError: the two models' parameters differ; names the first.
    """
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0.0 <= tau <= 1.0:
        raise ValueError(f"soft_update: tau must be a number in [0, 1], got {tau!r}")
    targets, sources = _paired_tensors(target, source, "soft_update", buffers=include_buffers)
    floating = [index for index, tensor in enumerate(targets) if tensor.is_floating_point()]
    others = [index for index, tensor in enumerate(targets) if not tensor.is_floating_point()]
    with torch.no_grad():
        if floating:
            torch._foreach_lerp_([targets[i] for i in floating], [sources[i] for i in floating], float(tau))
        if others:
            torch._foreach_copy_([targets[i] for i in others], [sources[i] for i in others])


def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy every parameter and buffer of ``source`` into ``target`` (one fused copy).

    :raises ShapeError: the two models' tensors differ; names the first.
    """
    targets, sources = _paired_tensors(target, source, "hard_update", buffers=True)
    with torch.no_grad():
        torch._foreach_copy_(targets, sources)


def freeze(module: _M) -> _M:
    """Stop gradients for every parameter of ``module``; returns ``module``."""
    return module.requires_grad_(False)


def unfreeze(module: _M) -> _M:
    """Let every parameter of ``module`` take gradients again; returns ``module``."""
    return module.requires_grad_(True)


def clone(module: _M, device: torch.device | str | int | None = None) -> _M:
    """A deep copy of ``module`` (parameters, buffers, hooks, unbuilt layers),
    moved to ``device`` when one is given."""
    copied = copy.deepcopy(module)
    return copied if device is None else copied.to(torch.device(device))


def num_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """How many parameter elements ``module`` has (shared ones once); with
    ``trainable_only``, only those that take gradients."""
    require_built(module, "num_parameters")
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def module_device(module: nn.Module) -> torch.device:
    """The device of all of ``module``'s parameters and buffers; torch's default
    device when it holds none (yet).

    :raises TorchXError: they are spread over several devices.
    """
    devices = {tensor.device for tensor in itertools.chain(module.parameters(), module.buffers())}
    if len(devices) > 1:
        listed = ", ".join(sorted(str(device) for device in devices))
        raise TorchXError(
            f"{type(module).__name__} has tensors on several devices ({listed}), so no one device"
        )
    return devices.pop() if devices else torch.get_default_device()


def module_dtype(module: nn.Module) -> torch.dtype:
    """The floating dtype of all of ``module``'s floating parameters and buffers;
    torch's default dtype when it holds none (yet).

    :raises TorchXError: they have several floating dtypes.
    """
    tensors = itertools.chain(module.parameters(), module.buffers())
    dtypes = {tensor.dtype for tensor in tensors if tensor.is_floating_point()}
    if len(dtypes) > 1:
        listed = ", ".join(sorted(str(dtype) for dtype in dtypes))
        raise TorchXError(f"{type(module).__name__} has floating tensors of several dtypes ({listed})")
    return dtypes.pop() if dtypes else torch.get_default_dtype()
