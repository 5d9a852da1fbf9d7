"""User-style code that must pass ``mypy --strict``: the typed-library promise."""

from __future__ import annotations

import torch
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import ShapeError, SpecError


def make_model(hidden: int) -> L.Sequential:
    return L.Sequential(
        L.Conv2d(20, kernel_size=5, stride=2, padding=1),
        L.ReLU(),
        L.BatchNorm2d(),
        L.Flatten(),
        L.Linear(hidden),
        nn.ReLU(),
        L.Linear(10, bias=False),
    )


def train_step(model: nn.Module, batch: torch.Tensor) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(batch).square().mean()
    loss.backward()
    optimizer.step()
    return float(loss)


def main() -> None:
    model = torchx.build(make_model(80), (None, 3, 32, 32))
    first = model[0]
    assert isinstance(first, L.Layer)
    native: nn.Module = first.native_module()
    spec: dict[str, object] = model.to_spec()
    again: L.Layer = L.Layer.from_spec(spec)
    shapes = torchx.infer_shapes(again, (8, 3, 32, 32))
    try:
        train_step(model, torch.zeros(8, 3, 32, 32))
    except (ShapeError, SpecError) as error:
        print(error)
    print(native, shapes)
