"""torchx.DataParallel on a machine without GPUs: builds lazy layers, passes through, warns once."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import DeviceWarning


def lazy_model() -> L.Sequential:
    return L.Sequential(L.Linear(8), L.ReLU(), L.Linear(2))


@pytest.mark.usefixtures("no_gpu", "fresh_no_gpu_warning")
def test_without_gpus_it_runs_the_module_unreplicated_and_warns_once() -> None:
    with pytest.warns(DeviceWarning, match="no GPU is available"):
        first = torchx.DataParallel(lazy_model())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = torchx.DataParallel(lazy_model())  # once per process
    for wrapper in (first, second):
        assert wrapper(torch.randn(5, 3)).shape == (5, 2)


@pytest.mark.usefixtures("no_gpu", "fresh_no_gpu_warning")
def test_the_first_call_builds_the_lazy_layers_once() -> None:
    model = lazy_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceWarning)
        wrapper = torchx.DataParallel(model)
    assert isinstance(wrapper, nn.DataParallel)
    x = torch.randn(5, 3)
    torch.manual_seed(0)
    out = wrapper(x)
    assert model.is_built
    assert out.shape == (5, 2)
    weight = model[0].weight
    wrapper(torch.randn(4, 3))
    assert model[0].weight is weight
    assert list(wrapper.state_dict()) == [f"module.{key}" for key in model.state_dict()]
    torch.manual_seed(0)
    native = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    assert torch.equal(native[0].weight, weight)  # built as the native module would be


def test_torchx_data_parallel_is_offered_at_the_top_level() -> None:
    assert torchx.DataParallel is torchx.device.DataParallel
    assert torchx.DistributedDataParallel is torchx.device.DistributedDataParallel


@pytest.mark.usefixtures("no_gpu")
def test_a_data_parallel_scope_falls_back_to_the_cpu_when_asked() -> None:
    class Net(nnx.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x)

    with pytest.warns(DeviceWarning, match=r"\[0, 1\] names cuda:0"):
        scope = torchx.device_scope([0, 1], fallback="cpu")
    with scope:
        assert Net()(torch.zeros(4, 3)).shape == (4, 2)
