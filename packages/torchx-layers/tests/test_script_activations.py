"""Every activation of torchx.layers scripts (torch.jit.script), built alone and
in a Sequential, and gives the outputs it gives in Python (in a graph: see
torchx-functional's test_script_activations.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchx
import torchx.layers as L
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
def test_an_activation_scripts_alone_and_in_a_sequential(name: str) -> None:
    torch.manual_seed(0)
    data = torch.randn(3, 2, 4, 8)
    alone = make(name).eval()
    torchx.build(alone, (None, 2, 4, 8))
    sequential = L.Sequential(L.Linear(8), make(name)).eval()
    torchx.build(sequential, (None, 2, 4, 8))
    for model in (alone, sequential):
        torch.testing.assert_close(torch.jit.script(model)(data), model(data), rtol=0, atol=0)
