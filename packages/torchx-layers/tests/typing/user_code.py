"""User-style code that must pass ``mypy --strict``: the typed-library promise."""

from __future__ import annotations

import torch
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import DeviceError, ShapeError, SpecError
from torchx.functional import Placeholder


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
    optimizer.step()  # pyright: ignore[reportUnknownMemberType]  # torch's SGD.step is unannotated
    return float(loss)


class Policy(nnx.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden: torch.Tensor = self.fc1(x)
        out: torch.Tensor = self.fc2(hidden)
        return out


def target_network(online: Policy, path: str) -> Policy:
    target = online.clone().freeze()
    target.soft_update(online, tau=0.005)
    online.clip_grad_value(1.0)
    norm: torch.Tensor = online.clip_grad_norm(5.0)
    count: int = target.num_parameters(trainable_only=True)
    device: torch.device = target.device
    online.save(path)
    print(norm, count, device)
    return target.load(path)


def on_device(model: nn.Module) -> torch.Tensor:
    try:
        with torchx.device_scope("cuda:0", dtype=torch.bfloat16, fallback="cpu") as scope:
            print(scope.device, scope.placement.kind, torchx.current_scope())
            out: torch.Tensor = model(torch.zeros(4, 10))
            return out
    except DeviceError as error:
        raise SystemExit(str(error)) from error


def parallel(model: nn.Module) -> nn.Module:
    return torchx.DataParallel(model, device_ids=[0, 1])


def attention_heads(x: Placeholder, heads: int) -> Placeholder:
    # a dynamic batch and sequence: their sizes go wherever an int does, as torch's SymInt
    b, t, width = x.shape
    q = L.Linear(width)(x).view(b, t, heads, width // heads).transpose(1, 2)
    positions = torch.arange(t)
    mask = torch.ones((t, t), dtype=torch.bool).tril()  # torch reads sizes given one by one as ints only
    scores: Placeholder = (q @ q.transpose(-2, -1)).masked_fill(~mask, float("-inf")) + positions
    return scores


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
