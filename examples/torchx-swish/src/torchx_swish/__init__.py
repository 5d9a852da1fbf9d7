"""An example third-party TorchX plugin: ``Swish`` with a learned slope per feature.

Installing this distribution makes ``torchx.layers.Swish`` and the spec type
``"Swish"`` available, through the ``torchx.plugins`` entry point, the same way
torchx-layers registers its own layers.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from torchx.core import FromInput, Layer

__all__ = ["LearnedSwish", "Swish"]


class LearnedSwish(nn.Module):
    """``x * sigmoid(beta * x)`` with one learned ``beta`` per feature (last dim)."""

    def __init__(
        self, features: int, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.features = features
        self.beta = nn.Parameter(torch.empty(features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)

    def extra_repr(self) -> str:
        return f"features={self.features}"


class Swish(Layer):
    """A TorchX layer around ``LearnedSwish``: ``features`` is the input's last dim."""

    native_class = LearnedSwish
    inferred_arguments: ClassVar = {"features": FromInput(dim=-1)}
    input_layout = "(*, features)"
    same_shape = True

    def __init__(self) -> None:
        super().__init__()
