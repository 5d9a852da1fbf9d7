"""Embeddings: ``Embedding`` and ``EmbeddingBag`` (their sizes are the vocabulary's, not the input's)."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import PositiveFloat, PositiveInt

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(LeafLayer):
    """``nn.Embedding``, built on the input's device with the default float dtype."""

    native_class = nn.Embedding
    integer_input = True

    def __init__(
        self,
        num_embeddings: PositiveInt,
        embedding_dim: PositiveInt,
        padding_idx: int | None = None,
        max_norm: PositiveFloat | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            num_embeddings=num_embeddings,
            embedding_dim=embedding_dim,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
            device=device,
            dtype=dtype,
            name=name,
        )


class EmbeddingBag(LeafLayer):
    """``nn.EmbeddingBag``."""

    native_class = nn.EmbeddingBag
    integer_input = True

    def __init__(
        self,
        num_embeddings: PositiveInt,
        embedding_dim: PositiveInt,
        max_norm: PositiveFloat | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: Literal["sum", "mean", "max"] = "mean",
        sparse: bool = False,
        *,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            num_embeddings=num_embeddings,
            embedding_dim=embedding_dim,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
            device=device,
            dtype=dtype,
            name=name,
        )
