"""Mistakes that ``mypy --strict`` must catch.

Each mistake carries ``# type: ignore[<code>]`` for the error it must raise.
The typecheck env runs mypy with ``warn_unused_ignores``, so a mistake that
mypy no longer catches (a façade name typed as ``object`` or ``Any`` again, a
signature loosened) leaves its ignore unused, and the check fails; an error
of another kind is not ignored, and fails it too. Checked by ``tox -e
typecheck``; never run.
"""

from __future__ import annotations

import torch

import torchx
import torchx.layers as L
from torchx.functional import Placeholder


def layers() -> None:
    # the README's own examples of torch-style calls: the inferred size is not an argument
    L.BatchNorm2d(64)  # type: ignore[call-arg]
    L.Conv2d(3, 8, 3)  # type: ignore[call-arg]
    L.Linear("20")  # type: ignore[arg-type]
    L.Lienar(20)  # type: ignore[operator]  # a misspelt name: only a plugin could provide it
    L.Sequential(L.Linear(8), "relu")  # type: ignore[arg-type]


def names_of_other_distributions() -> None:
    L.LSTM(64, bidirectional="yes")  # type: ignore[arg-type]
    L.GRU(hidden_size=32, return_state=1.5)  # type: ignore[arg-type]
    L.TimeDistributed(L.Linear(8), lengths=None)  # type: ignore[call-arg]
    L.GetRNNState("hidden")  # type: ignore[arg-type]
    L.Placeholder(8)  # type: ignore[arg-type]
    L.Placeholder((None, 8), dtype="float32")  # type: ignore[arg-type]
    L.Functional(inputs=L.Placeholder((None, 8)), outputs=None, name=3)  # type: ignore[arg-type]
    print(L.Functional(L.Placeholder((None, 8))).code)  # type: ignore[call-arg]


def placeholders() -> None:
    x = L.Placeholder((None, 8))
    tensor: torch.Tensor = x * 2 + x  # type: ignore[assignment]  # a placeholder is not a tensor
    first: Placeholder = x[:, 0]
    batch = x.shape[0] + 1  # a dynamic dim's size: arithmetic on it is a size of the graph
    print(tensor, first, batch, x.name.upper())  # type: ignore[union-attr]  # an input may have no name
    model = L.Functional(inputs=x, outputs=x * 2)
    model.code()  # type: ignore[operator]  # the source is a str


def devices_and_helpers() -> None:
    torchx.device_scope(3, dtype="bfloat16")  # type: ignore[arg-type]
    model = torchx.build(L.Sequential(L.Linear(2)), (None, 8))
    model.soft_update(model, tau="0.5")  # type: ignore[arg-type]
    count: str = model.num_parameters()  # type: ignore[assignment]
    print(count)
