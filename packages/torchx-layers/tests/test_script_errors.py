"""torch.jit.script of a Sequential holding a module TorchScript cannot compile (a
Lambda) raises torch's own error, noted with the module's place in the model and a fix
(torch's message names the class and its source line, not where it is)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchx
import torchx.layers as L

FIX = (
    "a Lambda calls a Python callable, which TorchScript cannot compile; put a Layer subclass or an "
    "nn.Module with a typed forward in its place, or use torch.compile or torch.export, which run "
    "Python callables"
)


def scripting_notes(model: nn.Module) -> list[str]:
    """The notes of torch's NotSupportedError from ``torch.jit.script(model)``."""
    with pytest.raises(torch.jit.frontend.NotSupportedError, match="variable number of arguments") as caught:
        torch.jit.script(model)
    return list(getattr(caught.value, "__notes__", []))


def test_a_lambda_in_a_sequential_is_named_by_its_place() -> None:
    model = L.Sequential(L.Linear(4), L.ReLU(), L.Lambda(lambda x: x * 2))
    torchx.build(model, (None, 3))
    assert scripting_notes(model) == [
        f"raised in Sequential[2] Lambda(test_a_lambda_in_a_sequential_is_named_by_its_place.<locals>"
        f".<lambda>): {FIX}"
    ]


def test_a_lambda_in_a_nested_sequential_is_named_by_its_path() -> None:
    def halve(x: torch.Tensor) -> torch.Tensor:
        return x / 2

    model = L.Sequential(L.Linear(4), L.Sequential(L.ReLU(), L.Lambda(halve)))
    torchx.build(model, (None, 3))
    assert scripting_notes(model) == [
        f"raised in Sequential[1][1] Lambda(test_a_lambda_in_a_nested_sequential_is_named_by_its_path"
        f".<locals>.halve): {FIX}"
    ]


def test_a_sequential_without_a_lambda_still_scripts() -> None:
    torch.manual_seed(0)
    model = L.Sequential(L.Linear(4), L.Sequential(L.ReLU(), L.Linear(2)))
    torchx.build(model, (None, 3))
    data = torch.randn(5, 3)
    assert torch.equal(torch.jit.script(model)(data), model(data))
