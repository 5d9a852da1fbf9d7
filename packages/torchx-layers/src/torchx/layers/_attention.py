"""Attention: ``MultiheadAttention`` and the Transformer encoder/decoder layers.

``embed_dim`` / ``d_model`` is read off the last dim of the first input. As in
torch, inputs are ``(L, N, E)`` unless ``batch_first=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import torch
from torch import nn

from torchx.core import FromInput, FromState, LeafLayer
from torchx.plugin import DropoutRate, PositiveFloat, PositiveInt

__all__ = ["MultiheadAttention", "TransformerDecoderLayer", "TransformerEncoderLayer"]

Activation = Literal["relu", "gelu"] | Callable[[torch.Tensor], torch.Tensor]


class MultiheadAttention(LeafLayer):
    """``nn.MultiheadAttention`` with ``embed_dim`` from the query and ``kdim`` /
    ``vdim`` from the key and value.

    Call it as ``layer(query, key, value, ...)`` like the native module. When
    the key or value size differs from the query's, its projection weights are
    ``q/k/v_proj_weight`` instead of ``in_proj_weight``; give ``kdim=`` and
    ``vdim=`` to show those before the first input.
    """

    native_class = nn.MultiheadAttention
    inferred_arguments: ClassVar = {
        "embed_dim": FromInput(dim=-1, input=0, state=FromState("out_proj.weight", 0)),
        "kdim": FromInput(dim=-1, input=1, state=FromState(("k_proj_weight", "in_proj_weight"), 1)),
        "vdim": FromInput(dim=-1, input=2, state=FromState(("v_proj_weight", "in_proj_weight"), 1)),
    }
    input_layout = "query (L, N, E), key (S, N, E_k), value (S, N, E_v)"

    def __init__(
        self,
        num_heads: PositiveInt,
        *,
        dropout: DropoutRate = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: PositiveInt | None = None,
        vdim: PositiveInt | None = None,
        batch_first: bool = False,
        embed_dim: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            num_heads=num_heads,
            dropout=dropout,
            bias=bias,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
            kdim=kdim,
            vdim=vdim,
            batch_first=batch_first,
            embed_dim=embed_dim,
            device=device,
            dtype=dtype,
            name=name,
        )

    def stand_in_arguments(self) -> dict[str, Any]:
        # Key and value sizes not given are taken to be the query's (one in_proj_weight);
        # given ones, to differ from it (q_proj_weight, k_proj_weight, v_proj_weight).
        stand_ins = super().stand_in_arguments()
        given = {self.arguments[name] for name in ("kdim", "vdim")} - {None}
        if "embed_dim" in stand_ins and stand_ins["embed_dim"] in given:
            stand_ins["embed_dim"] *= max(given) + 1
        embed_dim = self.arguments["embed_dim"] or stand_ins.get("embed_dim")
        return {**stand_ins, **{name: embed_dim for name in ("kdim", "vdim") if name in stand_ins}}


class _TransformerLayer(LeafLayer):
    inferred_arguments: ClassVar = {
        "d_model": FromInput(dim=-1, ranks=(2, 3), state=FromState("linear1.weight", 1))
    }
    input_layout = "(S, N, d_model), or (N, S, d_model) with batch_first=True"

    def __init__(
        self,
        nhead: PositiveInt,
        *,
        dim_feedforward: PositiveInt = 2048,
        dropout: DropoutRate = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: PositiveFloat = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        d_model: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
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
            d_model=d_model,
            device=device,
            dtype=dtype,
            name=name,
        )


class TransformerEncoderLayer(_TransformerLayer):
    """``nn.TransformerEncoderLayer`` with ``d_model`` read off ``src``'s last dim."""

    native_class = nn.TransformerEncoderLayer
    same_shape = True  # a decoder layer's output too, but its memory is checked by the meta run only


class TransformerDecoderLayer(_TransformerLayer):
    """``nn.TransformerDecoderLayer`` with ``d_model`` read off ``tgt``'s last dim;
    call it as ``layer(tgt, memory, ...)``."""

    native_class = nn.TransformerDecoderLayer
