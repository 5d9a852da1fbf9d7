"""Linear layers: ``Linear``, ``Bilinear`` and ``Identity``."""

from __future__ import annotations

from typing import Any, ClassVar

from torch import nn

from torchx.core import FromInput, Layer
from torchx.core.shapes import Shape

__all__ = ["Bilinear", "Identity", "Linear"]


class Linear(Layer):
    """``nn.Linear`` with ``in_features`` read off the input's last dim.

    Args:
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: ``True``.

    Shape:
        - Input: ``(*, H_in)``; ``H_in`` becomes ``in_features``.
        - Output: ``(*, out_features)``.

    Examples::

        >>> layer = L.Linear(20)
        >>> layer(torch.zeros(16, 10)).shape
        torch.Size([16, 20])
    """

    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1)}
    input_layout = "(*, in_features)"
    positive_arguments = ("out_features",)

    def __init__(self, out_features: int, bias: bool = True) -> None:
        super().__init__(out_features=out_features, bias=bias)

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        return (*input_shapes[0][:-1], self._torchx_arguments["out_features"])


class Bilinear(Layer):
    """``nn.Bilinear`` with ``in1_features`` and ``in2_features`` read off its two inputs.

    Shape:
        - Inputs: ``(*, H_in1)`` and ``(*, H_in2)``.
        - Output: ``(*, out_features)``.
    """

    native_class = nn.Bilinear
    inferred_arguments: ClassVar = {
        "in1_features": FromInput(dim=-1, input=0),
        "in2_features": FromInput(dim=-1, input=1),
    }
    input_layout = "(*, in1_features), (*, in2_features)"
    positive_arguments = ("out_features",)

    def __init__(self, out_features: int, bias: bool = True) -> None:
        super().__init__(out_features=out_features, bias=bias)


class Identity(Layer):
    """``nn.Identity``: returns its input unchanged."""

    native_class = nn.Identity
    same_shape = True

    def __init__(self) -> None:
        super().__init__()

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        return {}
