"""The seed README's models, and two more, written in Python with TorchX.

Each also lives in ``examples/`` as a YAML spec (``seed_cnn.yaml``,
``seed_diamond.yaml``, ``sequence_model.yaml``, ``transformer_classifier.yaml``);
the tests check that ``model.to_spec()`` of each equals its file.

    python examples/seed_models.py        # builds each and prints its output shape
"""

from __future__ import annotations

import torch
from torch import nn

import torchx
import torchx.layers as L

__all__ = [
    "MODELS",
    "native_seed_cnn",
    "seed_cnn",
    "seed_diamond",
    "sequence_model",
    "transformer_classifier",
]


def seed_cnn() -> L.Sequential:
    """The seed's CNN for 10-way classification of 3x32x32 images."""
    return L.Sequential(
        L.Conv2d(20, kernel_size=5, stride=2, padding=1),
        L.ReLU(),
        L.Conv2d(30, kernel_size=7),
        L.BatchNorm2d(),
        L.ReLU(),
        L.Conv2d(40, kernel_size=3),
        L.BatchNorm2d(),
        L.ReLU(),
        L.Flatten(),
        L.Linear(80),
        L.ReLU(),
        L.Linear(10),
    )


def native_seed_cnn() -> nn.Sequential:
    """The same CNN written in plain PyTorch: every size the TorchX one infers, by hand."""
    return nn.Sequential(
        nn.Conv2d(3, 20, kernel_size=5, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(20, 30, kernel_size=7),
        nn.BatchNorm2d(30),
        nn.ReLU(),
        nn.Conv2d(30, 40, kernel_size=3),
        nn.BatchNorm2d(40),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(1960, 80),
        nn.ReLU(),
        nn.Linear(80, 10),
    )


def seed_diamond() -> L.Functional:
    """The seed's diamond: one stem, two convolution branches multiplied, two FCs."""
    image = L.Placeholder((None, 3, 32, 32), name="image")
    stem = L.Conv2d(10, kernel_size=5, stride=2)(image)
    branch1 = L.Conv2d(30, kernel_size=7, padding=2)(stem)
    branch2 = L.Conv2d(30, kernel_size=5, padding=1)(stem)
    features = (branch1 * branch2).flatten()
    return L.Functional(inputs=image, outputs=L.Linear(10)(L.Linear(80)(features)))


def sequence_model() -> L.Sequential:
    """Video clips (batch, time, 3, 16, 16) to 10 classes: a CNN per frame, then an LSTM."""
    return L.Sequential(
        L.TimeDistributed(L.Conv2d(8, kernel_size=3), L.ReLU(), L.Flatten(), L.Linear(32)),
        L.LSTM(64, bidirectional=True, return_sequences=False),
        L.Linear(10),
    )


def transformer_classifier() -> L.Sequential:
    """Token ids (batch, 32) to 4 classes: embeddings, two encoder layers, mean pooling."""
    return L.Sequential(
        L.Embedding(1000, 64),
        L.TransformerEncoderLayer(nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True),
        L.TransformerEncoderLayer(nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True),
        L.Permute((0, 2, 1)),
        L.AdaptiveAvgPool1d(1),
        L.Flatten(),
        L.Linear(4),
    )


MODELS = {
    "seed_cnn": (seed_cnn, torch.randn(8, 3, 32, 32)),
    "seed_diamond": (seed_diamond, torch.randn(8, 3, 32, 32)),
    "sequence_model": (sequence_model, torch.randn(4, 16, 3, 16, 16)),
    "transformer_classifier": (transformer_classifier, torch.randint(0, 1000, (8, 32))),
}
"""Each model's function and an example input."""


if __name__ == "__main__":
    for name, (make, example) in MODELS.items():
        model = make()
        print(f"{name}: input {tuple(example.shape)} -> output {tuple(model(example).shape)}")
        assert torchx.infer_shapes(make(), example) == tuple(model(example).shape)
