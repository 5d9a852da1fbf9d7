"""Model graphs: nodes with shapes, chains and clusters, DOT without Graphviz, clear errors."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import torchx.layers as L
from torchx.core import MissingPackageError
from torchx.core._graph import model_graph

graphviz = pytest.importorskip("graphviz", reason="needs graphviz: pip install graphviz (in the test extra)")


def labels(graph: object) -> list[tuple[str, str]]:
    return [(node.label, node.detail) for node in graph.nodes.values()]  # type: ignore[attr-defined]


def test_a_sequential_is_a_chain_in_a_box_with_every_shape() -> None:
    model = L.Sequential(L.Conv2d(8, 3), L.ReLU(), L.Sequential(L.Flatten(), L.Linear(10)), nn.Tanh())
    graph = model_graph(model, (None, 3, 8, 8))
    assert not model.is_built  # drawn from a meta copy
    assert labels(graph) == [
        ("input 0", "(None, 3, 8, 8)"),
        ("Conv2d", "(None, 8, 6, 6)"),
        ("ReLU", "(None, 8, 6, 6)"),
        ("Flatten", "(None, 288)"),
        ("Linear", "(None, 10)"),
        ("Tanh", "(None, 10)"),
        ("output", ""),
    ]
    ids = list(graph.nodes)
    assert graph.edges == list(itertools.pairwise(ids))
    [outer] = graph.root.clusters
    assert outer.label == "Sequential" and [inner.label for inner in outer.clusters] == ["Sequential"]


def test_a_shared_layer_shows_each_call() -> None:
    shared = L.Linear(4)
    model = L.Sequential(shared, L.ReLU(), shared)
    graph = model_graph(model, (2, 4))
    assert [detail for label, detail in labels(graph) if label == "Linear"] == ["(2, 4)", "(2, 4)"]


def test_dot_needs_no_graphviz_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on PATH
    graph = model_graph(L.Sequential(L.Linear(3)), (2, 4))
    source = graph.render(tmp_path / "m.dot").read_text(encoding="utf-8")
    assert "Linear" in source and "(2, 3)" in source
    with pytest.raises(MissingPackageError, match=r"needs Graphviz's 'dot' program.*apt install graphviz"):
        graph.render(tmp_path / "m.svg")


def test_without_the_graphviz_package_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    graph = model_graph(L.Sequential(L.Linear(3)), (2, 4))
    with pytest.raises(MissingPackageError, match=r"pip install 'torchx-core\[plot\]'"):
        graph.to_dot()


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    from torchx.core import TorchXError

    with pytest.raises(TorchXError, match=r"written as \.dot, \.gv, \.svg, \.png, \.pdf"):
        model_graph(L.Linear(3), torch.zeros(2, 4)).render(tmp_path / "m.jpg")
