"""Normalisations on meta tensors, answered from their formula.

torch computes ``batch_norm`` and ``layer_norm`` on the meta device through
its Python decompositions: 0.7 to 1.3 ms a call where a convolution takes
0.02 ms, so the norms dominate a build's meta forward (a free check of a
digits CNN: 40% of it). Their output is a fresh tensor shaped, strided and
typed as the input, which :class:`MetaFormulas` makes directly, for the
inputs whose answer is certain: dense (contiguous or channels-last) inputs,
parameters of the sizes the input needs, one dtype throughout. Any other
call runs as torch runs it, so its errors stay torch's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["MetaFormulas"]


def _dense(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is meta and laid out as ``empty_like`` lays out its copy."""
    if not tensor.is_meta:
        return False
    if tensor.is_contiguous():
        return True
    return (tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last)) or (
        tensor.dim() == 5 and tensor.is_contiguous(memory_format=torch.channels_last_3d)
    )


def _fits(tensor: Any, dtype: torch.dtype, shape: Sequence[int]) -> bool:
    """Whether an optional parameter is absent, or a meta tensor of ``shape`` and ``dtype``."""
    return tensor is None or (
        isinstance(tensor, torch.Tensor)
        and tensor.is_meta
        and tensor.dtype == dtype
        and tuple(tensor.shape) == tuple(shape)
    )


def _batch_norm(
    input: Any,
    running_mean: Any = None,
    running_var: Any = None,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> torch.Tensor | None:
    if not isinstance(input, torch.Tensor) or input.dim() < 2 or not _dense(input):
        return None
    channels = (input.shape[1],)
    if not all(_fits(tensor, input.dtype, channels) for tensor in (running_mean, running_var, weight, bias)):
        return None
    if training and math.prod(input.shape) // input.shape[1] <= 1:
        return None  # torch refuses one value per channel in training
    if not training and (running_mean is None or running_var is None):
        return None
    return torch.empty_like(input)


def _layer_norm(
    input: Any, normalized_shape: Sequence[int], weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> torch.Tensor | None:
    if not isinstance(input, torch.Tensor) or not input.is_meta or not input.is_contiguous():
        return None
    shape = tuple(normalized_shape) if isinstance(normalized_shape, Sequence) else (normalized_shape,)
    if not shape or tuple(input.shape[-len(shape) :]) != shape or input.dim() < len(shape):
        return None
    if not all(_fits(tensor, input.dtype, shape) for tensor in (weight, bias)):
        return None
    return torch.empty_like(input)


_FORMULAS: dict[Callable[..., Any], Callable[..., torch.Tensor | None]] = {
    F.batch_norm: _batch_norm,
    F.layer_norm: _layer_norm,
}


class MetaFormulas(TorchFunctionMode):
    """Inside the block, ``F.batch_norm`` and ``F.layer_norm`` on meta
    tensors answer from their formula where it is certain (see the module's
    docstring); everything else runs as it would."""

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        formula = _FORMULAS.get(func)
        if formula is not None:
            output = formula(*args, **kwargs)
            if output is not None:
                return output
        return func(*args, **kwargs)
