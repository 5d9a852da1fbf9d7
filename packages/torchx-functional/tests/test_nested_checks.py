"""Checking a built graph that calls a nested graph twice per level works each graph out once per input shape."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

import torchx
import torchx.layers as L
from torchx.functional import accept_placeholders


class CountingLinear(nn.Linear):
    calls: ClassVar[int] = 0

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        type(self).calls += 1
        return super().forward(input)


def nested_twice(depth: int) -> L.Functional:
    x = L.Placeholder((None, 4))
    model = L.Functional(inputs=x, outputs=accept_placeholders(CountingLinear(4, 4))(x))
    for _ in range(depth):
        x = L.Placeholder((None, 4))
        model = L.Functional(inputs=x, outputs=model(model(x)))
    return model


def test_a_build_of_a_built_nested_graph_checks_it_without_running_every_call() -> None:
    model = nested_twice(12)  # a run calls the linear layer 4,096 times
    CountingLinear.calls = 0
    assert torchx.build(model, (None, 4)) is model
    assert CountingLinear.calls <= 4  # once per probe, not 2**12 times per probe
    CountingLinear.calls = 0
    assert model(torch.ones(2, 4)).shape == (2, 4)
    assert CountingLinear.calls == 2**12  # the model itself still runs every call


def test_the_check_still_refuses_a_size_the_model_was_not_built_for() -> None:
    model = nested_twice(3)
    try:
        torchx.build(model, (None, 5))
    except torchx.ShapeError as error:
        assert "5" in str(error)
    else:
        raise AssertionError("a build for 5 features of a model built for 4 was not refused")
