"""Mistakes that ``mypy --strict`` and pyright (basic and strict) must catch.

Each mistake carries ``# type: ignore[<code>]`` for the error mypy must raise
and ``# pyright: ignore[<rule>]`` for pyright's. The typecheck env runs mypy
with ``warn_unused_ignores`` and pyright with ``reportUnnecessaryTypeIgnoreComment``
and without ``enableTypeIgnoreComments`` (pyrightconfig.json: each checker reads
only its own comments), so a mistake that either no longer catches (a leaf
layer typed ``Any`` again, a façade name typed as ``object`` or ``Any``, a
signature loosened) leaves its ignore unused, and the check fails; an error of
another kind is not ignored, and fails it too. Checked by ``tox -e
typecheck``; never run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import torchx
import torchx.layers as L
from torchx.functional import Placeholder


def layers() -> None:
    # the README's own examples of torch-style calls: the inferred size is not an argument
    L.BatchNorm2d(64)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    L.Conv2d(3, 8, 3)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    L.Linear("20")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Lienar(20)  # type: ignore[operator]  # pyright: ignore[reportCallIssue]  # a misspelt name: only a plugin could provide it
    L.Sequential(L.Linear(8), "relu")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def calls_an_editor_flags() -> None:
    # what VS Code (Pylance runs pyright) underlines as it is typed: a leaf layer is
    # typed by its class, and its call checked against its __init__
    L.Linear("twenty")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Conv2d(8, kernel_size="x")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Dropout(p="half")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Linear(20, bogus=1)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    L.Embedding(100)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]  # num_embeddings is not inferred
    L.LayerNorm(eps="small")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    conv: L.Conv2d = L.Linear(20)  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    make: Callable[[str], L.Linear] = L.Linear  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    print(conv, make)


def specs(spec: dict[str, Any]) -> None:
    # a spec reads back as a Layer: which one, only the spec says (or expect=)
    linear: L.Linear = torchx.core.from_spec(spec)  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    sequential: L.Linear = torchx.core.from_spec(spec, expect=L.Sequential)  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    print(linear, sequential)


def names_of_other_distributions() -> None:
    L.LSTM(64, bidirectional="yes")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.GRU(hidden_size=32, return_state=1.5)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.TimeDistributed(L.Linear(8), lengths=None)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    L.GetRNNState("hidden")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Placeholder(8)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Placeholder((None, 8), dtype="float32")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    L.Functional(inputs=L.Placeholder((None, 8)), outputs=None, name=3)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    print(L.Functional(L.Placeholder((None, 8))).code)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def placeholders() -> None:
    x = L.Placeholder((None, 8))
    tensor: torch.Tensor = x * 2 + x  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]  # a placeholder is not a tensor
    first: Placeholder = x[:, 0]
    batch = x.shape[0] + 1  # a dynamic dim's size: arithmetic on it is a size of the graph
    print(tensor, first, batch, x.name.upper())  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]  # an input may have no name
    model = L.Functional(inputs=x, outputs=x * 2)
    model.code()  # type: ignore[operator]  # pyright: ignore[reportCallIssue]  # the source is a str


def devices_and_helpers() -> None:
    torchx.device_scope(3, dtype="bfloat16")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    model = torchx.build(L.Sequential(L.Linear(2)), (None, 8))
    model.soft_update(model, tau="0.5")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    count: str = model.num_parameters()  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    print(count)
