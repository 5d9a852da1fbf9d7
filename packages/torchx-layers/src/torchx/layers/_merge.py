"""Merge layers: combine several inputs into one.

Each takes the inputs as separate arguments (``L.Add()(a, b, c)``) or as one
list or tuple (``L.Add()([a, b, c])``). Element-wise merges broadcast as torch
does; a shape mismatch is a ShapeError when the layer is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, ClassVar, cast

import torch
from torch import nn

from torchx.core import LeafLayer

__all__ = ["Add", "Average", "Concat", "Maximum", "Minimum", "Multiply", "Subtract"]


_COMBINED = (torch.Tensor, torch.fx.Proxy)
"""What a merge combines: tensors, and the proxies ``torch.fx.symbolic_trace``
passes in their place (a Proxy subclass, as other tracers use, included)."""


def _tensors(inputs: tuple[torch.Tensor | Sequence[torch.Tensor], ...]) -> list[torch.Tensor]:
    values = list(inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else list(inputs)
    # While fx traces, a Proxy stands for the tensor it records.
    tensors = cast("list[torch.Tensor]", [value for value in values if isinstance(value, _COMBINED)])
    if len(tensors) != len(values):
        raise TypeError(
            "merge layers combine tensors only, got " + ", ".join(type(v).__name__ for v in values)
        )
    return tensors


@dataclass(frozen=True)
class _Fold:
    """How a merge folds its inputs: a binary op, and how many inputs it takes."""

    combine: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    arity: int | None = None
    """Exactly this many inputs; ``None``: two or more."""
    mean: bool = False
    """Divide the fold by the number of inputs."""


_FOLDS = {
    "add": _Fold(torch.add),
    "subtract": _Fold(torch.sub, arity=2),
    "multiply": _Fold(torch.mul),
    "average": _Fold(torch.add, mean=True),
    "maximum": _Fold(torch.maximum),
    "minimum": _Fold(torch.minimum),
}


class MergeModule(nn.Module):
    """Folds its inputs with one element-wise op: ``"add"``, ``"subtract"`` (of
    exactly two), ``"multiply"``, ``"average"``, ``"maximum"`` or ``"minimum"``."""

    def __init__(self, op: str) -> None:
        super().__init__()
        if op not in _FOLDS:
            raise ValueError(f"MergeModule: op {op!r} is not one of {', '.join(_FOLDS)}")
        self.op = op

    def forward(self, *inputs: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        fold = _FOLDS[self.op]
        if len(inputs) == 2:  # the common case, without building a list: a residual's a + b
            first, second = inputs
            if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
                combined = fold.combine(first, second)
                return combined / 2 if fold.mean else combined
        tensors = _tensors(inputs)
        if len(tensors) < (fold.arity or 2) or (fold.arity is not None and len(tensors) != fold.arity):
            count = f"exactly {fold.arity}" if fold.arity else "at least 2"
            raise ValueError(f"{self.op.capitalize()} takes {count} tensors, got {len(tensors)}")
        combined = reduce(fold.combine, tensors)
        return combined / len(tensors) if fold.mean else combined

    def extra_repr(self) -> str:
        return f"op={self.op!r}"


class ConcatModule(nn.Module):
    """``torch.cat(inputs, dim)``."""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, *inputs: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.cat(_tensors(inputs), dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Merge(LeafLayer):
    """A merge layer: builds ``MergeModule`` with its class's ``op``."""

    native_class = MergeModule

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)

    @classmethod
    def shape_fix(cls, module: nn.Module, inputs: tuple[Any, ...]) -> str | None:
        return (
            "give the inputs the same shape (or shapes that broadcast: each dim equal, or 1 in one of them)"
        )


class Add(_Merge):
    """Sums two or more inputs."""

    native_arguments: ClassVar = {"op": "add"}


class Subtract(_Merge):
    """Subtracts the second input from the first."""

    native_arguments: ClassVar = {"op": "subtract"}


class Multiply(_Merge):
    """Multiplies two or more inputs element-wise."""

    native_arguments: ClassVar = {"op": "multiply"}


class Average(_Merge):
    """Averages two or more inputs element-wise."""

    native_arguments: ClassVar = {"op": "average"}


class Maximum(_Merge):
    """The element-wise maximum of two or more inputs."""

    native_arguments: ClassVar = {"op": "maximum"}


class Minimum(_Merge):
    """The element-wise minimum of two or more inputs."""

    native_arguments: ClassVar = {"op": "minimum"}


class Concat(LeafLayer):
    """Concatenates its inputs along ``dim`` (default 1: channels / features)."""

    native_class = ConcatModule

    def __init__(self, dim: int = 1, *, name: str | None = None) -> None:
        super().__init__(dim=dim, name=name)

    @classmethod
    def shape_fix(cls, module: nn.Module, inputs: tuple[Any, ...]) -> str | None:
        if not isinstance(module, ConcatModule):
            return None
        return f"give the inputs the same number of dims and the same size in every dim but dim {module.dim}"
