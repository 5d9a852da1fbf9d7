"""torch.jit.script of a graph holding a Lambda raises torch's own error, noted with
the Lambda's place in the graph (its layer name, or its path inside a named layer)."""

from __future__ import annotations

import pytest
import torch

import torchx.layers as L


def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_a_lambda_in_a_graph_is_named_by_its_layer_name() -> None:
    x = L.Placeholder((None, 3))
    model = L.Functional(x, L.Lambda(double, name="twice")(L.Linear(4, name="proj")(x)))
    with pytest.raises(torch.jit.frontend.NotSupportedError) as caught:
        torch.jit.script(model)
    (note,) = caught.value.__notes__
    assert note.startswith("raised in Functional.twice Lambda(double): a Lambda calls a Python callable")


def test_a_lambda_inside_a_named_sequential_of_a_graph_is_named_by_its_path() -> None:
    x = L.Placeholder((None, 3))
    model = L.Functional(x, L.Sequential(L.ReLU(), L.Lambda(double), name="tail")(L.Linear(4)(x)))
    with pytest.raises(torch.jit.frontend.NotSupportedError) as caught:
        torch.jit.script(model)
    assert caught.value.__notes__[0].startswith("raised in Functional.tail[1] Lambda(double)")
    assert "use torch.compile or torch.export" in caught.value.__notes__[0]
