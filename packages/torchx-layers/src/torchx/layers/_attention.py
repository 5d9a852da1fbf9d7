"""Attention: ``MultiheadAttention`` and the Transformer encoder/decoder layers.

``embed_dim`` / ``d_model`` is read off the last dim of the first input. As in
torch, inputs are ``(L, N, E)`` unless ``batch_first=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import nn

from torchx.core import FromInput, Layer

__all__ = ["MultiheadAttention", "TransformerDecoderLayer", "TransformerEncoderLayer"]

Activation = str | Callable[[torch.Tensor], torch.Tensor]


class MultiheadAttention(Layer):
    """``nn.MultiheadAttention`` with ``embed_dim`` from the query, ``kdim``/``vdim``
    from the key and value (set only when they differ from ``embed_dim``).

    Call it as ``layer(query, key, value, ...)`` like the native module.
    """

    native_class = nn.MultiheadAttention
    input_layout = "query (L, N, E), key (S, N, E_k), value (S, N, E_v)"
    positive_arguments = ("num_heads",)

    def __init__(
        self,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        batch_first: bool = False,
    ) -> None:
        super().__init__(
            num_heads=num_heads,
            dropout=dropout,
            bias=bias,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
            batch_first=batch_first,
        )

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        embed_dim, kdim, vdim = (FromInput(dim=-1, input=index).read(self, inputs) for index in range(3))
        inferred = {"embed_dim": embed_dim}
        if (kdim, vdim) != (embed_dim, embed_dim):
            inferred.update(kdim=kdim, vdim=vdim)
        return inferred


class _TransformerLayer(Layer):
    inferred_arguments: ClassVar = {"d_model": FromInput(dim=-1)}
    input_layout = "(S, N, d_model), or (N, S, d_model) with batch_first=True"
    positive_arguments = ("nhead", "dim_feedforward")

    def __init__(
        self,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__(
            nhead=nhead,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
        )


class TransformerEncoderLayer(_TransformerLayer):
    """``nn.TransformerEncoderLayer`` with ``d_model`` read off ``src``'s last dim."""

    native_class = nn.TransformerEncoderLayer


class TransformerDecoderLayer(_TransformerLayer):
    """``nn.TransformerDecoderLayer`` with ``d_model`` read off ``tgt``'s last dim;
    call it as ``layer(tgt, memory, ...)``."""

    native_class = nn.TransformerDecoderLayer
