"""The seed README's CNN, as TorchX layers and as the torch model it stands for (shared by the tests)."""

from __future__ import annotations

from torch import nn

import torchx.layers as L


def seed_cnn() -> L.Sequential:
    return L.Sequential(
        L.Conv2d(20, kernel_size=5, stride=2, padding=1), L.ReLU(),
        L.Conv2d(30, kernel_size=7), L.BatchNorm2d(), L.ReLU(),
        L.Conv2d(40, kernel_size=3), L.BatchNorm2d(), L.ReLU(),
        L.Flatten(), L.Linear(80), L.ReLU(), L.Linear(10),
    )  # fmt: skip


def native_seed_cnn() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 20, kernel_size=5, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(20, 30, kernel_size=7), nn.BatchNorm2d(30), nn.ReLU(),
        nn.Conv2d(30, 40, kernel_size=3), nn.BatchNorm2d(40), nn.ReLU(),
        nn.Flatten(), nn.Linear(1960, 80), nn.ReLU(), nn.Linear(80, 10),
    )  # fmt: skip
