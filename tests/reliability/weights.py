"""A small built model, and snapshots of its state, for the tests that check no weight is lost."""

from __future__ import annotations

import torch
from torch import nn

import torchx
import torchx.layers as L


def small_model() -> L.Sequential:
    """A built model of conv, norm and linear layers (with buffers: BatchNorm's statistics)."""
    return torchx.build(
        L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5)), (2, 3, 8, 8)
    )


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.state_dict().items()}


def unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> bool:
    """Whether ``model``'s state has the keys and values of ``before``."""
    now = model.state_dict()
    return list(now) == list(before) and all(torch.equal(now[name], before[name]) for name in before)
