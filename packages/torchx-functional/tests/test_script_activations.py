"""Every activation of torchx.layers scripts (torch.jit.script) in a graph, and a
plain torch one recorded in a graph too: a module called on placeholders holds
its recording hook where TorchScript does not look (nn.Tanh, nn.Sigmoid,
nn.Identity failed with 'Unsupported annotation collections.abc.Callable | None')."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchx.layers as L
from torchx.functional import Functional, Placeholder
from torchx.layers import _activation

ACTIVATIONS = sorted({*_activation.__all__, "Identity"})


def make(name: str) -> nn.Module:
    """A TorchX activation layer of that name, with the arguments it needs."""
    if name == "Threshold":
        return L.Threshold(0.1, 20.0)
    if name in ("GLU", "LogSoftmax", "Softmax", "Softmin"):
        return getattr(L, name)(dim=-1)  # type: ignore[no-any-return]
    return getattr(L, name)()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ACTIVATIONS, ids=ACTIVATIONS)
def test_an_activation_scripts_in_a_graph(name: str) -> None:
    torch.manual_seed(0)
    x = Placeholder((None, 2, 4, 8))
    shared = make(name)  # called twice: one module at two nodes
    graph = Functional(x, [shared(L.Linear(8)(x)), shared(x)]).eval()
    data = torch.randn(3, 2, 4, 8)
    torch.testing.assert_close(torch.jit.script(graph)(data), graph(data), rtol=0, atol=0)


def test_a_plain_torch_activation_recorded_in_a_graph_scripts() -> None:
    x = Placeholder((None, 8))
    graph = Functional(x, nn.Tanh()(nn.Sigmoid()(nn.Identity()(x))))
    data = torch.randn(2, 8)
    torch.testing.assert_close(torch.jit.script(graph)(data), torch.tanh(torch.sigmoid(data)))
