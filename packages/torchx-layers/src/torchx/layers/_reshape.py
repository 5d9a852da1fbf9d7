"""Reshaping: ``Flatten`` and ``Unflatten`` (torch's), ``Reshape`` and ``Permute``.

``Flatten`` and ``Reshape`` keep the batch dim (dim 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from torchx.core import ArgumentError, LeafLayer
from torchx.plugin import Shape

__all__ = ["Flatten", "Permute", "Reshape", "Unflatten", "View"]


class ReshapeModule(nn.Module):
    """Reshapes every sample to ``shape``, keeping the batch dim: ``(N, *shape)``."""

    def __init__(self, shape: Sequence[int]) -> None:
        super().__init__()
        self.shape = tuple(shape)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input.reshape((input.shape[0], *self.shape))

    def extra_repr(self) -> str:
        return f"shape={self.shape}"


class PermuteModule(nn.Module):
    """``input.permute(*dims)``."""

    def __init__(self, dims: Sequence[int]) -> None:
        super().__init__()
        self.dims = tuple(dims)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input.permute(self.dims)

    def extra_repr(self) -> str:
        return f"dims={self.dims}"


class Flatten(LeafLayer):
    """``nn.Flatten``: by default flattens all dims but the batch, ``(N, *) -> (N, prod(*))``."""

    native_class = nn.Flatten

    def __init__(self, start_dim: int = 1, end_dim: int = -1, *, name: str | None = None) -> None:
        super().__init__(start_dim=start_dim, end_dim=end_dim, name=name)

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        shape = input_shapes[0]
        if not shape:
            return None
        start, end = (dim % len(shape) for dim in (self.arguments["start_dim"], self.arguments["end_dim"]))
        middle = shape[start : end + 1]
        size = None if None in middle else math.prod(dim for dim in middle if dim is not None)
        return (*shape[:start], size, *shape[end + 1 :])


class Unflatten(LeafLayer):
    """``nn.Unflatten``: expands ``dim`` into ``unflattened_size``."""

    native_class = nn.Unflatten

    def __init__(self, dim: int, unflattened_size: tuple[int, ...], *, name: str | None = None) -> None:
        super().__init__(dim=dim, unflattened_size=tuple(unflattened_size), name=name)


class Reshape(LeafLayer):
    """Reshapes each sample to ``shape`` (the batch dim is kept; one entry may be -1).

    Also registered as ``View``. Uses ``Tensor.reshape``, so non-contiguous
    inputs work.

    Shape:
        - Input: ``(N, *)``.
        - Output: ``(N, *shape)``.
    """

    native_class = ReshapeModule

    def __init__(self, shape: tuple[int, ...], *, name: str | None = None) -> None:
        shape = tuple(shape)
        if sum(dim == -1 for dim in shape) > 1 or any(dim == 0 or dim < -1 for dim in shape):
            raise ArgumentError(f"Reshape: shape must hold positive sizes and at most one -1, got {shape}")
        super().__init__(shape=shape, name=name)

    @classmethod
    def shape_fix(cls, module: nn.Module, inputs: tuple[Any, ...]) -> str | None:
        per_sample = math.prod(inputs[0].shape[1:])
        return (
            f"give Reshape a shape of {per_sample} elements, as many as each sample of the input holds "
            f"(for example ({per_sample},), or -1 for one dim), or change the input"
        )


View = Reshape
"""``View`` is ``Reshape`` (which also handles non-contiguous inputs)."""


class Permute(LeafLayer):
    """Permutes dims as ``Tensor.permute(dims)`` (dims count the batch dim as 0)."""

    native_class = PermuteModule

    def __init__(self, dims: tuple[int, ...], *, name: str | None = None) -> None:
        super().__init__(dims=tuple(dims), name=name)
