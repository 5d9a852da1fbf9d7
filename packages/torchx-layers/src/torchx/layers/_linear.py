"""Linear layers: ``Linear``, ``Bilinear`` and ``Identity``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn

from torchx.core import FromInput, FromState, LeafLayer
from torchx.plugin import PositiveInt, Shape

__all__ = ["Bilinear", "Identity", "Linear"]


class Linear(LeafLayer):
    """``nn.Linear`` with ``in_features`` read off the input's last dim.

    Args:
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: ``True``.
        in_features: inferred from the input; given, it is checked against it.

    Shape:
        - Input: ``(*, H_in)``; ``H_in`` becomes ``in_features``.
        - Output: ``(*, out_features)``.

    Examples::

        >>> layer = L.Linear(20)
        >>> layer(torch.zeros(16, 10)).shape
        torch.Size([16, 20])
    """

    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1, state=FromState("weight", 1))}
    input_layout = "(*, in_features)"

    def __init__(
        self,
        out_features: PositiveInt,
        *,
        bias: bool = True,
        in_features: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            out_features=out_features,
            bias=bias,
            in_features=in_features,
            device=device,
            dtype=dtype,
            name=name,
        )

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        return (*input_shapes[0][:-1], self.arguments["out_features"])

    @classmethod
    def tensor_elements(cls, arguments: Mapping[str, Any]) -> int:
        out = arguments["out_features"]
        return int(out * arguments["in_features"] + (out if arguments.get("bias", True) else 0))


class Bilinear(LeafLayer):
    """``nn.Bilinear`` with ``in1_features`` and ``in2_features`` read off its two inputs.

    Shape:
        - Inputs: ``(*, H_in1)`` and ``(*, H_in2)``.
        - Output: ``(*, out_features)``.
    """

    native_class = nn.Bilinear
    inferred_arguments: ClassVar = {
        "in1_features": FromInput(dim=-1, input=0, state=FromState("weight", 1)),
        "in2_features": FromInput(dim=-1, input=1, state=FromState("weight", 2)),
    }
    input_layout = "(*, in1_features), (*, in2_features)"

    def __init__(
        self,
        out_features: PositiveInt,
        *,
        bias: bool = True,
        in1_features: PositiveInt | None = None,
        in2_features: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            out_features=out_features,
            bias=bias,
            in1_features=in1_features,
            in2_features=in2_features,
            device=device,
            dtype=dtype,
            name=name,
        )


class Identity(LeafLayer):
    """``nn.Identity``: returns its input unchanged."""

    native_class = nn.Identity
    same_shape = True

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        return {}
