"""Small layers declared the way a third party would, for the core tests."""

from __future__ import annotations

from typing import Any, ClassVar

from torch import nn

from torchx.core import Container, FromInput, FromState, Layer, LeafLayer
from torchx.core._arguments import PositiveInt, Probability


class Dense(LeafLayer):
    """A test-local layer around nn.Linear, declared as a third party would."""

    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1, state=FromState("weight", 1))}
    input_layout = "(*, in_features)"

    def __init__(
        self, out_features: PositiveInt, *, bias: bool = True, in_features: PositiveInt | None = None
    ) -> None:
        super().__init__(out_features=out_features, bias=bias, in_features=in_features)

    def infer_output_shape(self, *input_shapes: Any) -> Any:
        return (*input_shapes[0][:-1], self.arguments["out_features"])


class Norm(LeafLayer):
    """BatchNorm1d with inferred features (no output formula: uses the meta run)."""

    native_class = nn.BatchNorm1d
    inferred_arguments: ClassVar = {
        "num_features": FromInput(dim=1, ranks=(2, 3), state=FromState(("weight", "running_mean"), 0))
    }
    input_layout = "(N, C) or (N, C, L)"

    def __init__(self, *, momentum: Probability = 0.1) -> None:
        super().__init__(momentum=momentum)


class Attention(LeafLayer):
    """MultiheadAttention: a native whose constructor initialises a child first."""

    native_class = nn.MultiheadAttention
    inferred_arguments: ClassVar = {"embed_dim": FromInput(dim=-1, state=FromState("out_proj.weight", 0))}

    def __init__(self, num_heads: PositiveInt) -> None:
        super().__init__(num_heads=num_heads)


class Chain(Container):
    """A minimal container: runs its children in order (for spec nesting tests)."""

    def __init__(self, *children: nn.Module) -> None:
        super().__init__()
        for index, child in enumerate(children):
            self.add_module(str(index), child)

    def forward(self, input: Any) -> Any:
        for child in self.children():
            input = child(input)
        return input

    def spec_fields(self, writer: Any) -> dict[str, Any]:
        return {
            "children": [
                writer.layer(child, f"{writer.where}.children[{i}]")
                for i, child in enumerate(self.children())
            ]
        }

    @classmethod
    def from_spec_fields(cls, fields: Any, reader: Any) -> Layer:
        return cls(
            *(
                reader.layer(child, f"{reader.where}.children[{i}]")
                for i, child in enumerate(fields["children"])
            )
        )
