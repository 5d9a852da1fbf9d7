"""Leaf layers and containers: two base classes, and what the container base owns."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from toy_layers import Dense, Norm

import torchx
import torchx.nn as nnx
from torchx.core import (
    Container,
    Layer,
    LayerRegistry,
    LeafLayer,
    NotBuiltError,
    SpecError,
    from_spec,
    to_spec,
)
from torchx.core._graph import Graph


class Repeat(Container):
    """``times`` passes through the given layers, in order (a container with an argument)."""

    def __init__(self, *layers: nn.Module, times: int = 1, name: str | None = None) -> None:
        super().__init__(times=times, name=name)
        self.body = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.arguments["times"]):
            for layer in self.body:
                x = layer(x)
        return x

    def spec_layers(self) -> list[nn.Module]:
        return list(self.body)


@pytest.fixture
def repeat_registry(registry: LayerRegistry) -> LayerRegistry:
    registry.register(Repeat)
    return registry


def test_a_layer_is_a_leaf_or_a_container_and_says_so_when_it_is_neither() -> None:
    assert issubclass(LeafLayer, Layer) and issubclass(Container, Layer)
    assert issubclass(Container, nnx.Module) and not issubclass(LeafLayer, nnx.Module)
    with pytest.raises(TypeError, match=r"subclasses Layer directly: subclass torchx\.core\.LeafLayer"):

        class Neither(Layer):
            pass


def test_a_container_is_built_when_every_leaf_inside_is() -> None:
    model = Repeat(Dense(8), Norm())
    assert not model.is_built
    with pytest.raises(NotBuiltError, match="Repeat is not built"):
        model.__prepare_scriptable__()
    model(torch.zeros(2, 8))
    assert model.is_built and model.__prepare_scriptable__() is model


def test_a_container_spec_holds_its_arguments_and_its_layers(repeat_registry: LayerRegistry) -> None:
    model = Repeat(Dense(8), Norm(), times=2, name="block")
    spec = to_spec(model, registry=repeat_registry)
    assert spec == {
        "format_version": 1,
        "type": "Repeat",
        "name": "block",
        "args": {"times": 2},
        "layers": [{"type": "Dense", "args": {"out_features": 8}}, {"type": "Norm"}],
    }
    again = from_spec(spec, registry=repeat_registry)
    assert isinstance(again, Repeat) and again.arguments == {"times": 2}
    assert to_spec(again, registry=repeat_registry) == spec
    assert to_spec(Repeat(Dense(8)), registry=repeat_registry)["layers"] == [
        {"type": "Dense", "args": {"out_features": 8}}
    ]


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        ({"layers": {"a": {"type": "Norm"}}}, "$.layers", "expected a list of layers"),
        (
            {"layer": []},
            "$.layer",
            "unknown key (did you mean 'layers'?); a Repeat spec has only 'type', 'name', 'args' and 'layers'",
        ),
        ({"args": {"times": "two"}}, "$.args.times", "expected an int"),
        ({"layers": [{"type": "Nope"}]}, "$.layers[0].type", "unknown layer type 'Nope'"),
    ],
    ids=["layers-not-a-list", "unknown-key", "bad-argument", "bad-child"],
)
def test_a_bad_container_spec_says_where(
    repeat_registry: LayerRegistry, fields: dict[str, Any], where: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        from_spec({"type": "Repeat", **fields}, registry=repeat_registry)
    assert caught.value.where == where and message in caught.value.problem


def test_a_container_draws_its_layers_in_a_chain() -> None:
    model = Repeat(Dense(8), Norm())
    graph = Graph()
    outputs = model.draw_graph(graph, [graph.node("x", "(2, 8)", "input", [])])
    captions = [line for line in graph.to_dot().splitlines() if "label=" in line]
    assert (
        len(outputs) == 1
        and any("Dense" in line for line in captions)
        and any("Norm" in line for line in captions)
    )


def test_loading_a_state_dict_builds_the_unbuilt_leaves_of_a_container() -> None:
    source = Repeat(Dense(8), Norm())
    source(torch.zeros(2, 5))
    target = Repeat(Dense(8), Norm())
    target.load_state_dict(source.state_dict())
    assert target.is_built
    assert torch.equal(target.body[0].weight, source.body[0].weight)


def test_a_leaf_family_passes_its_native_arguments() -> None:
    class Scaled(nn.Module):
        def __init__(self, features: int, mode: str) -> None:
            super().__init__()
            self.mode = mode
            self.weight = nn.Parameter(torch.ones(features))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.weight if self.mode == "times" else x + self.weight

    class Times(LeafLayer):
        native_class = Scaled
        native_arguments = {"mode": "times"}  # noqa: RUF012 - a class declaration
        inferred_arguments = {"features": torchx.core.FromInput(dim=-1)}  # noqa: RUF012

        def __init__(self, *, name: str | None = None) -> None:
            super().__init__(name=name)

    layer = Times()
    layer(torch.ones(2, 3))
    assert type(layer) is Scaled and layer.mode == "times"
    with pytest.raises(
        TypeError, match=r"native argument 'mood' is not a parameter of .*Scaled.*did you mean 'mode'"
    ):

        class Typo(LeafLayer):
            native_class = Scaled
            native_arguments = {"mood": "times"}  # noqa: RUF012
