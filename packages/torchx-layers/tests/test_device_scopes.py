"""L.Sequential is a torchx.nn.Module: it goes to the device scope it is called in."""

from __future__ import annotations

import torch

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import PluginManager
from torchx.core.testing import StaticDeviceBackend


def test_a_sequential_is_an_nnx_module_placed_by_its_scope(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"void": torch.device("meta")}), "static")
    model = torchx.build(L.Sequential(L.Linear(8), L.ReLU(), L.Sequential(L.Linear(2))), (None, 4))
    assert isinstance(model, nnx.Module)
    with torchx.device_scope("void"):
        out = model(torch.zeros(3, 4))
    assert out.is_meta and out.shape == (3, 2)
    assert all(p.is_meta for p in model.parameters())


def test_an_unbuilt_sequential_builds_in_the_scope(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"void": torch.device("meta")}), "static")
    model = L.Sequential(L.Conv2d(4, 3), L.Flatten(), L.Linear(2))
    with torchx.device_scope("void"):
        assert model(torch.zeros(2, 3, 8, 8)).shape == (2, 2)
    assert model[0].weight.is_meta


def test_containers_have_the_module_helpers_and_built_leaves_none() -> None:
    model = torchx.build(L.Sequential(L.Linear(8), L.ReLU(), L.Linear(2)), (None, 4))
    target = model.clone()
    target.soft_update(model, tau=0.5)
    assert target.num_parameters() == 4 * 8 + 8 + 8 * 2 + 2
    assert nnx.freeze(model[0]) is model[0]
    assert model.num_parameters(trainable_only=True) == 8 * 2 + 2
    assert not hasattr(model[0], "freeze")  # a built leaf is exactly nn.Linear: nothing of TorchX shadows it
    assert torchx.build(L.PReLU(), (None, 3)).num_parameters == 1  # torch's own attribute
