"""The example third-party plugin package (examples/torchx-swish), pip-installed by tox."""

from __future__ import annotations

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import PluginManager

torchx_swish = pytest.importorskip("torchx_swish", reason="examples/torchx-swish is not installed")


def test_an_installed_plugin_adds_its_layer_to_the_facade_and_specs(fresh_plugins: PluginManager) -> None:
    assert L.Swish is torchx_swish.Swish
    assert "torchx-swish" in fresh_plugins.plugin_names()
    model = L.Sequential(L.Linear(6), L.Swish(), L.Linear(2))
    assert model(torch.zeros(3, 4)).shape == (3, 2)
    assert model[1].beta.shape == (6,)
    spec = model.to_spec()
    assert spec["layers"][1] == {"type": "Swish"}
    again = L.Layer.from_spec({**spec, "layers": [spec["layers"][0], {"type": "learnedswish"}]})
    assert isinstance(torchx.build(again, (3, 4))[1], torchx_swish.LearnedSwish)
