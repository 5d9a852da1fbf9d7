"""Checkpoint: a Sequential whose activations are recomputed in backward."""

from __future__ import annotations

import torch
from torch import nn

import torchx.layers as L


class Counting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(6, 6)
        self.runs = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.runs += 1
        return torch.tanh(self.linear(x))


def test_the_block_runs_again_in_backward_and_gradients_equal_the_plain_run() -> None:
    torch.manual_seed(0)
    block = Counting()
    checkpointed, plain = L.Checkpoint(block, L.Linear(2)), L.Sequential(block, L.Linear(2))
    data = torch.randn(4, 6)
    checkpointed(data)
    plain(data)
    plain.load_state_dict(checkpointed.state_dict())
    block.runs = 0
    checkpointed(data).sum().backward()
    assert block.runs == 2
    grads = [parameter.grad.clone() for parameter in checkpointed.parameters()]  # type: ignore[union-attr]
    checkpointed.zero_grad(set_to_none=True)
    plain.zero_grad(set_to_none=True)
    block.runs = 0
    plain(data).sum().backward()
    assert block.runs == 1
    assert all(torch.allclose(g, p.grad) for g, p in zip(grads, plain.parameters(), strict=True))  # type: ignore[arg-type]


def test_without_gradients_it_is_a_plain_sequential_with_its_keys_and_spec() -> None:
    block = Counting()
    model = L.Checkpoint(block, L.Linear(2, name="head"))
    with torch.no_grad():
        model(torch.randn(4, 6))
    assert list(model.state_dict()) == ["0.linear.weight", "0.linear.bias", "head.weight", "head.bias"]
    spec = L.Checkpoint(L.Linear(3), L.ReLU()).to_spec()
    assert spec["type"] == "Checkpoint" and isinstance(L.Layer.from_spec(spec), L.Checkpoint)
