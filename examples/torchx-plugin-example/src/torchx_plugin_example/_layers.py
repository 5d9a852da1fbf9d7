"""The example's layers: two leaf layers around plain torch modules, and a container."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

import torchx.layers as L
from torchx.plugin import Container, FromInput, FromState, Graph, LeafLayer, PositiveInt, is_symbolic

__all__ = ["LearnedSwish", "ResidualBlock", "SqueezeExcite", "SqueezeExciteModule", "Swish"]


# -- a leaf layer: declare the native module and which argument the input gives ---


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


class Swish(LeafLayer):
    """A TorchX layer around ``LearnedSwish``: ``features`` is the input's last dim."""

    native_class = LearnedSwish
    inferred_arguments: ClassVar = {"features": FromInput(dim=-1, state=FromState("beta", 0))}
    input_layout = "(*, features)"
    same_shape = True

    def __init__(self, *, features: PositiveInt | None = None, name: str | None = None) -> None:
        super().__init__(features=features, name=name)


class SqueezeExciteModule(nn.Module):
    """Squeeze-and-excitation (Hu et al., 2018): rescale each channel by a gate
    computed from the global average of all channels."""

    def __init__(
        self,
        channels: int,
        reduction: int = 4,
        device: torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        hidden = max(1, channels // reduction)
        self.reduce = nn.Conv2d(channels, hidden, 1, device=device, dtype=dtype)
        self.expand = nn.Conv2d(hidden, channels, 1, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.expand(torch.relu(self.reduce(x.mean((2, 3), keepdim=True)))))
        return x * gate


class SqueezeExcite(LeafLayer):
    """Squeeze-and-excitation with ``channels`` read off dim 1 of ``(N, C, H, W)`` input."""

    native_class = SqueezeExciteModule
    inferred_arguments: ClassVar = {
        "channels": FromInput(dim=1, ranks=(4,), state=FromState("reduce.weight", 1))
    }
    input_layout = "(N, C, H, W)"
    same_shape = True

    def __init__(
        self,
        *,
        reduction: PositiveInt = 4,
        channels: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(reduction=reduction, channels=channels, device=device, dtype=dtype, name=name)


# -- a container: children, its own forward, and how to draw it -------------------


class ResidualBlock(Container):
    """``x + body(x)``, where ``body`` is the layers given, in sequence.

    The body must give back the input's shape (a clear ShapeError says so
    otherwise). Its sizes are inferred like any ``L.Sequential``'s.
    """

    def __init__(self, *layers: nn.Module, name: str | None = None) -> None:
        super().__init__(name=name)
        if not layers:
            raise TypeError("ResidualBlock needs at least one layer")
        self.body = L.Sequential(*layers)

    def forward(self, x: Any) -> Any:
        if type(x) is not torch.Tensor and is_symbolic(x):
            return x.__torchx_call__(self, (x,), {})
        out = self.body(x)
        if out.shape != x.shape:
            raise self.shape_error(
                f"its body maps {tuple(x.shape)} to {tuple(out.shape)}; a residual adds them, so they must be equal",
                fix="end the body with a layer that gives back the input's shape",
            )
        return x + out

    def draw_graph(self, graph: Graph, inputs: list[str]) -> list[str]:
        shape = graph.next_output(self)
        with graph.cluster("ResidualBlock"):
            body = graph.chain("body", self.body, list(self.body), inputs)
            return [graph.node("add", shape, "op", [*inputs, *body])]

    def spec_layers(self) -> list[nn.Module]:
        return list(self.body)
