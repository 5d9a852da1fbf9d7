"""``Checkpoint``: layers whose activations are recomputed in backward instead of kept."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from torchx.layers._sequential import Sequential

__all__ = ["Checkpoint"]


class Checkpoint(Sequential):
    """``Sequential`` layers under activation checkpointing: a training forward
    keeps only the block's input, and backward runs the block again to get
    what it needs (``torch.utils.checkpoint``, non-reentrant). Less memory
    for one more forward of the block.

    Without gradients (``torch.no_grad()``, inference) it is a plain
    ``Sequential``: nothing is kept either way. Its children, state-dict keys
    and spec are a ``Sequential``'s. In a graph, call it on placeholders like
    any layer: the generated forward checkpoints it.

    Examples::

        >>> block = L.Checkpoint(L.Linear(64), L.ReLU(), L.Linear(64))
        >>> block(torch.randn(8, 64, requires_grad=True)).shape
        torch.Size([8, 64])
    """

    def forward(self, input: Any) -> Any:
        if torch.is_grad_enabled() and type(input) is torch.Tensor and (self._torchx_ready or self.is_built):
            return checkpoint(super().forward, input, use_reentrant=False)
        return super().forward(input)  # placeholders, a build, or no gradients
