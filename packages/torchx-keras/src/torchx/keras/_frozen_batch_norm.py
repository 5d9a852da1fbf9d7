"""``FrozenBatchNorm``: Keras's BatchNormalization with ``trainable=False``, which torch has no module for.

Keras normalizes a frozen BatchNormalization with its moving statistics even
in training mode, and never updates them (so fine-tuning a model on a frozen
base leaves the base as it was). torch's ``BatchNorm`` uses the batch's
statistics whenever the module is in training mode. The native module here
always normalizes with its running statistics; its state dict is a
BatchNorm's (``weight``, ``bias``, ``running_mean``, ``running_var``,
``num_batches_tracked``), so its weights load into a BatchNorm and back.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from torchx.plugin import FromInput, FromState, LeafLayer, PositiveFloat, PositiveInt

__all__ = ["FrozenBatchNorm", "FrozenBatchNormModule"]


class FrozenBatchNormModule(nn.modules.batchnorm._BatchNorm):
    """A BatchNorm over dim 1 of ``(N, C, *)`` input (rank 2 to 5) that normalizes with its running
    statistics in training and inference alike, and never updates them."""

    def __init__(
        self, num_features: int, eps: float = 1e-5, affine: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(num_features, eps, momentum=None, affine=affine, device=device, dtype=dtype)

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if not 2 <= input.dim() <= 5:
            raise ValueError(f"expected a 2D to 5D input (N, C, *), got {input.dim()}D input")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        return F.batch_norm(
            input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
        )

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, affine={self.affine}"


class FrozenBatchNorm(LeafLayer):
    """A BatchNorm fixed to its running statistics (Keras's frozen BatchNormalization), with
    ``num_features`` read off dim 1 of ``(N, C, *)``. See :class:`FrozenBatchNormModule`."""

    native_class = FrozenBatchNormModule
    inferred_arguments: ClassVar = {
        "num_features": FromInput(dim=1, ranks=(2, 3, 4, 5), state=FromState(("weight", "running_mean"), 0))
    }
    input_layout = "(N, C, *)"

    def __init__(
        self,
        *,
        eps: PositiveFloat = 1e-5,
        affine: bool = True,
        num_features: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            eps=eps, affine=affine, num_features=num_features, device=device, dtype=dtype, name=name
        )
