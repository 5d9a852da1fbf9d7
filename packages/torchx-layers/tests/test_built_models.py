"""The issue's cases with torch's own layers: a build checks what was built, and goes where it is asked."""

from __future__ import annotations

import pytest
import torch
from torch.nn.parameter import is_lazy

import torchx
import torchx.layers as L


def test_building_a_sequential_built_for_8_features_for_9_names_both_sizes() -> None:
    model = torchx.build(L.Sequential(L.Linear(4), L.ReLU(), L.Linear(2)), (None, 8))
    with pytest.raises(
        torchx.ShapeError, match=r"Sequential\[0\] Linear.*\(None, 9\).*in_features=9 \(built with 8\)"
    ):
        torchx.build(model, (None, 9))
    assert torchx.build(model, (None, 8)) is model


def test_a_built_model_built_again_on_meta_goes_to_meta() -> None:
    model = torchx.build(L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d()), (None, 3, 8, 8))
    torchx.build(model, (None, 3, 8, 8), device="meta")
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} == {"meta"}


def test_an_unbuilt_linear_loads_another_unbuilt_linears_state_and_stays_unbuilt() -> None:
    model = L.Linear(5)
    model.load_state_dict(L.Linear(5).state_dict())
    assert isinstance(model, L.Linear) and all(is_lazy(p) for p in model.parameters())
    assert torchx.build(model, torch.zeros(2, 3)).weight.shape == (5, 3)
