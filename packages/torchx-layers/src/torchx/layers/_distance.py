"""Distances between two inputs: ``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from torch import nn

from torchx.core import LeafLayer

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(LeafLayer):
    """``nn.CosineSimilarity`` of two inputs along ``dim``; call it as ``layer(a, b)``."""

    native_class = nn.CosineSimilarity

    def __init__(self, dim: int = 1, eps: float = 1e-8, *, name: str | None = None) -> None:
        super().__init__(dim=dim, eps=eps, name=name)


class PairwiseDistance(LeafLayer):
    """``nn.PairwiseDistance`` between two inputs; call it as ``layer(a, b)``."""

    native_class = nn.PairwiseDistance

    def __init__(
        self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False, *, name: str | None = None
    ) -> None:
        super().__init__(p=p, eps=eps, keepdim=keepdim, name=name)
