"""Merge layers: combine several inputs into one.

Each takes the inputs as separate arguments (``L.Add()(a, b, c)``) or as one
list or tuple (``L.Add()([a, b, c])``). Element-wise merges broadcast as torch
does; a shape mismatch is a ShapeError when the layer is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce

import torch
from torch import nn

from torchx.core import Layer

__all__ = ["Add", "Average", "Concat", "Maximum", "Minimum", "Multiply", "Subtract"]


def _tensors(inputs: tuple[torch.Tensor | Sequence[torch.Tensor], ...]) -> list[torch.Tensor]:
    values = list(inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else list(inputs)
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    if len(tensors) != len(values):
        raise TypeError(
            "merge layers combine tensors only, got " + ", ".join(type(v).__name__ for v in values)
        )
    return tensors


class MergeModule(nn.Module):
    """Folds its inputs with a binary torch op; ``arity`` fixes the input count."""

    combine: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = staticmethod(torch.add)
    arity: int | None = None

    def forward(self, *inputs: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        tensors = _tensors(inputs)
        needed = self.arity or 2
        if len(tensors) < needed or (self.arity is not None and len(tensors) != self.arity):
            count = f"exactly {self.arity}" if self.arity else "at least 2"
            raise ValueError(f"{type(self).__name__} takes {count} tensors, got {len(tensors)}")
        return self.finish(reduce(self.combine, tensors), len(tensors))

    def finish(self, combined: torch.Tensor, count: int) -> torch.Tensor:
        return combined


class AddModule(MergeModule):
    """Sums its inputs."""


class SubtractModule(MergeModule):
    """``a - b`` of exactly two inputs."""

    combine = staticmethod(torch.sub)
    arity = 2


class MultiplyModule(MergeModule):
    """Multiplies its inputs element-wise."""

    combine = staticmethod(torch.mul)


class AverageModule(MergeModule):
    """The element-wise mean of its inputs."""

    def finish(self, combined: torch.Tensor, count: int) -> torch.Tensor:
        return combined / count


class MaximumModule(MergeModule):
    """The element-wise maximum of its inputs."""

    combine = staticmethod(torch.maximum)


class MinimumModule(MergeModule):
    """The element-wise minimum of its inputs."""

    combine = staticmethod(torch.minimum)


class ConcatModule(nn.Module):
    """``torch.cat(inputs, dim)``."""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, *inputs: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.cat(_tensors(inputs), dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Merge(Layer):
    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)


class Add(_Merge):
    """Sums two or more inputs."""

    native_class = AddModule


class Subtract(_Merge):
    """Subtracts the second input from the first."""

    native_class = SubtractModule


class Multiply(_Merge):
    """Multiplies two or more inputs element-wise."""

    native_class = MultiplyModule


class Average(_Merge):
    """Averages two or more inputs element-wise."""

    native_class = AverageModule


class Maximum(_Merge):
    """The element-wise maximum of two or more inputs."""

    native_class = MaximumModule


class Minimum(_Merge):
    """The element-wise minimum of two or more inputs."""

    native_class = MinimumModule


class Concat(Layer):
    """Concatenates its inputs along ``dim`` (default 1: channels / features)."""

    native_class = ConcatModule

    def __init__(self, dim: int = 1, *, name: str | None = None) -> None:
        super().__init__(dim=dim, name=name)
