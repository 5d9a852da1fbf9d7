"""Embeddings: ``Embedding`` and ``EmbeddingBag`` (their sizes are the vocabulary's, not the input's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch
from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import ExtendedFloat, PositiveFloat, PositiveInt, Shape

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(LeafLayer):
    """``nn.Embedding``, built on the input's device with the default float dtype."""

    native_class = nn.Embedding
    integer_input = True
    output_dtype_of = "weight"

    def __init__(
        self,
        num_embeddings: PositiveInt,
        embedding_dim: PositiveInt,
        padding_idx: int | None = None,
        max_norm: PositiveFloat | None = None,
        norm_type: ExtendedFloat = 2.0,
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

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        return (*input_shapes[0], self.arguments["embedding_dim"]) if len(input_shapes) == 1 else None

    @classmethod
    def tensor_elements(cls, arguments: Mapping[str, Any]) -> int:
        return int(arguments["num_embeddings"] * arguments["embedding_dim"])

    @classmethod
    def failure_hint(cls, module: nn.Module, inputs: tuple[Any, ...], error: Exception) -> str | None:
        ids = inputs[0] if inputs else None
        if (
            not isinstance(error, IndexError)
            or not isinstance(module, nn.Embedding)
            or not isinstance(ids, torch.Tensor)
            or ids.is_meta
            or not ids.numel()
        ):
            return None
        count, low, high = module.num_embeddings, int(ids.min()), int(ids.max())
        fix = f"or give it num_embeddings >= {high + 1}" if high >= count else "which must not be negative"
        return (
            f"its ids range over {low} to {high}, and num_embeddings={count} takes ids 0 to {count - 1}"
            f"\n  fix: check the ids (a vocabulary or tokenizer that is not the layer's?), {fix}"
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
        norm_type: ExtendedFloat = 2.0,
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
