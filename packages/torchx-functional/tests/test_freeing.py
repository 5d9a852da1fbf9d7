"""What a graph leaves behind: a definition no one holds any more is freed by
reference counting, not later by the garbage collector (which would keep its
layers' weights alive until it runs, and costs time in every define loop)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
import torch

import torchx.layers as L
from torchx.functional import Functional, Placeholder
from torchx.functional._functional import ModuleGroup


@pytest.fixture
def no_garbage_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_definition_with_dynamic_sizes_is_freed_when_dropped(no_garbage_collector: None) -> None:
    x = Placeholder((None, None, 8))
    b, t, _ = x.shape
    layer = L.Linear(8)
    y = layer(x.view(b, t, 2, 4).reshape(b, t, 8)[:, : t - 1])
    assert x.shape[1] is t  # one size per dim while it is held
    node, layer_ref = weakref.ref(x.node), weakref.ref(layer)
    del x, b, t, y, layer
    assert node() is None and layer_ref() is None


def test_a_size_dropped_and_read_again_reads_the_same_node(no_garbage_collector: None) -> None:
    x = Placeholder((None, None, 8))
    y = x.view(x.shape[0], x.shape[1], 2, 4)  # each read is dropped at once
    z = y.reshape(x.shape[0], x.shape[1], 8)
    model = Functional(x, z)
    assert model.code.count(".size(1)") == 1, model.code
    assert torch.equal(model(torch.arange(48.0).view(2, 3, 8)), torch.arange(48.0).view(2, 3, 8))


def test_a_group_of_named_layers_is_freed_when_dropped(no_garbage_collector: None) -> None:
    group = ModuleGroup()
    group._modules["dense"] = torch.nn.Linear(2, 2)
    assert group.dense is group._modules["dense"]  # mirrored as an attribute
    freed = weakref.ref(group)
    del group
    assert freed() is None


def test_what_a_layer_is_given_is_not_kept_by_torchx_caches() -> None:
    # Layouts and formulas are cached by the layer's arguments: data only, never a function or tensor.
    def double(value: torch.Tensor) -> torch.Tensor:
        return value * 2

    function = weakref.ref(double)
    layer = L.Lambda(double)
    assert layer(Placeholder((None, 3))).shape == (None, 3)
    assert L.Lambda(double)(torch.ones(2, 3)).shape == (2, 3)
    del layer, double
    gc.collect()
    assert function() is None
