"""Graphs nested twice per level, and a count of the work defining graphs takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import torchx.layers as L
from torchx.functional import Functional, Placeholder


def nested_twice(
    depth: int, inner_batch: int | None = None, wrap: Callable[[Functional], nn.Module] | None = None
) -> Functional:
    """A Linear graph, then ``depth`` graphs each calling the previous one twice
    (a forward runs the Linear 2**depth times); with ``wrap``, each calls
    ``wrap(previous)`` twice (``L.Sequential``: a container holding it)."""
    x = Placeholder((inner_batch, 4))
    model = Functional(inputs=x, outputs=L.Linear(4)(x))
    for _ in range(depth):
        x = Placeholder((None, 4))
        called = model if wrap is None else wrap(model)
        model = Functional(inputs=x, outputs=called(called(x)))
    return model


def in_sequential(building: bool) -> Callable[[Functional], nn.Module]:
    """A ``wrap`` for :func:`nested_twice`: ``L.Sequential(graph)``, or one with a
    new Linear after the graph (``building``: its first call builds it in place)."""

    def wrap(graph: Functional) -> nn.Module:
        return L.Sequential(graph, L.Linear(4)) if building else L.Sequential(graph)

    return wrap


class GraphWork:
    """Counts, while defining graphs, the runs of every Linear's forward (meta
    runs included) and the runs of each Functional's steps for shapes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.linear_runs = 0
        self.graph_runs = 0
        linear_forward, meta_forward = nn.Linear.forward, Functional._meta_forward

        def count_linear(module: nn.Linear, x: torch.Tensor) -> torch.Tensor:
            self.linear_runs += 1
            return linear_forward(module, x)

        def count_graph(model: Functional) -> Any:
            forward = meta_forward(model)

            def run(*args: Any) -> Any:
                self.graph_runs += 1
                return forward(*args)

            return run

        monkeypatch.setattr(nn.Linear, "forward", count_linear)
        monkeypatch.setattr(Functional, "_meta_forward", count_graph)
