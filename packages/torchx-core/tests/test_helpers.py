"""The training helpers, as torchx.nn functions and as methods, against hand computations."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from toy_layers import Chain, Dense, Norm

import torchx
import torchx.nn as nnx
from torchx.core import ShapeError, TorchXError


class Net(nnx.Module):
    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, hidden)
        self.norm = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def with_gradients(model: nn.Module, scale: float = 10.0) -> nn.Module:
    model(torch.randn(16, 4)).pow(2).sum().mul(scale).backward()
    return model


def test_clip_grad_value_clamps_every_gradient() -> None:
    torch.manual_seed(0)
    model = with_gradients(Net())
    before = [p.grad.clone() for p in model.parameters()]
    model.clip_grad_value(0.05)
    for grad, parameter in zip(before, model.parameters(), strict=True):
        assert torch.equal(parameter.grad, grad.clamp(-0.05, 0.05))


def test_clipping_before_any_backward_does_nothing() -> None:
    model = Net()
    model.clip_grad_value(0.1)
    assert float(model.clip_grad_norm(1.0)) == 0.0
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_uses_the_whole_model_norm(norm_type: float) -> None:
    torch.manual_seed(0)
    model = with_gradients(Net())
    grads = [p.grad.clone() for p in model.parameters()]
    flat = torch.cat([grad.flatten() for grad in grads])
    expected = flat.abs().max() if norm_type == float("inf") else flat.norm(norm_type)
    total = model.clip_grad_norm(0.5, norm_type=norm_type)
    assert torch.allclose(total, expected)
    factor = min(1.0, 0.5 / (float(expected) + 1e-6))
    for grad, parameter in zip(grads, model.parameters(), strict=True):
        assert torch.allclose(parameter.grad, grad * factor, atol=1e-7)


def test_soft_update_is_polyak_averaging() -> None:
    torch.manual_seed(0)
    target, source = Net(), Net()
    expected = {
        name: 0.9 * t + 0.1 * s
        for (name, t), (_, s) in zip(target.named_parameters(), source.named_parameters(), strict=True)
    }
    buffers = {name: b.clone() for name, b in target.named_buffers()}
    target.soft_update(source, tau=0.1)
    for name, parameter in target.named_parameters():
        assert torch.allclose(parameter, expected[name], atol=1e-6), name
    for name, buffer in target.named_buffers():
        assert torch.equal(buffer, buffers[name])  # buffers untouched by default
    assert not any(p.grad_fn is not None for p in target.parameters())


def test_soft_update_with_buffers_averages_floats_and_copies_counters() -> None:
    target, source = Net(), with_gradients(Net())  # source's BatchNorm saw a batch
    target.soft_update(source, tau=0.25, include_buffers=True)
    assert torch.allclose(target.norm.running_mean, 0.25 * source.norm.running_mean)
    assert int(target.norm.num_batches_tracked) == int(source.norm.num_batches_tracked) == 1


def test_soft_update_at_the_ends_of_the_range() -> None:
    target, source = Net(), Net()
    original = [p.clone() for p in target.parameters()]
    target.soft_update(source, tau=0.0)
    assert all(torch.equal(p, q) for p, q in zip(target.parameters(), original, strict=True))
    target.soft_update(source, tau=1.0)
    assert all(torch.equal(p, q) for p, q in zip(target.parameters(), source.parameters(), strict=True))


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_soft_update_refuses_tau_outside_zero_to_one(tau: object) -> None:
    with pytest.raises(ValueError, match=r"tau must be a number in \[0, 1\]"):
        Net().soft_update(Net(), tau=tau)  # type: ignore[arg-type]


def test_soft_update_between_different_models_names_the_first_difference() -> None:
    with pytest.raises(
        ShapeError, match=r"'fc1.weight' is \(8, 4\) torch.float32 in the target but \(6, 4\)"
    ):
        Net(8).soft_update(Net(6), tau=0.5)
    with pytest.raises(ShapeError, match=r"target has 'norm.weight' where the source has 'fc2.weight'"):
        nnx.soft_update(Net(), _without_norm(), tau=0.5)
    with pytest.raises(ShapeError, match=r"model\.clone\(\)"):
        Net().hard_update(nn.Linear(4, 8))


def _without_norm() -> nn.Module:
    model = Net()
    del model.norm
    return model


def test_hard_update_copies_parameters_and_buffers() -> None:
    target, source = Net(), with_gradients(Net())
    target.copy_from(source)
    for (name, a), (_, b) in zip(target.state_dict().items(), source.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert target.fc1.weight.data_ptr() != source.fc1.weight.data_ptr()
    assert nnx.Module.copy_from is nnx.Module.hard_update


def test_freeze_and_unfreeze_return_the_module() -> None:
    model = Net()
    assert model.freeze() is model
    assert not any(p.requires_grad for p in model.parameters())
    assert model.num_parameters(trainable_only=True) == 0
    assert model.unfreeze() is model
    assert all(p.requires_grad for p in model.parameters())


def test_num_parameters_counts_shared_parameters_once() -> None:
    model = Net()
    hand = 4 * 8 + 8 + 8 + 8 + 8 * 2 + 2
    assert model.num_parameters() == hand
    model.fc1.requires_grad_(False)
    assert model.num_parameters(trainable_only=True) == hand - (4 * 8 + 8)
    shared = nn.Linear(3, 3)
    assert nnx.num_parameters(nn.Sequential(shared, shared)) == 12


def test_clone_is_a_deep_independent_copy() -> None:
    model = Net()
    twin = model.clone()
    assert type(twin) is Net
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters(), strict=True))
    with torch.no_grad():
        twin.fc1.weight.add_(1.0)
    assert not torch.equal(model.fc1.weight, twin.fc1.weight)
    assert model.clone(device="meta").fc1.weight.is_meta


def test_device_and_dtype_describe_the_parameters() -> None:
    model = Net()
    assert model.device == torch.device("cpu")
    assert model.dtype == torch.float32
    assert model.double().dtype == torch.float64
    model.fc2.half()
    with pytest.raises(TorchXError, match="several dtypes"):
        _ = model.dtype
    model.fc2.to("meta")
    with pytest.raises(TorchXError, match=r"several devices \(cpu, meta\)"):
        _ = model.device
    assert nnx.Module().device == torch.get_default_device()


def test_layers_have_the_helpers_too() -> None:
    layer = torchx.build(Chain(Dense(8), Norm(), Dense(2)), (None, 4))
    twin = layer.clone()
    assert twin.num_parameters() == layer.num_parameters() == 4 * 8 + 8 + 8 + 8 + 8 * 2 + 2
    twin.soft_update(layer, tau=1.0)
    assert layer.freeze() is layer
    assert layer.device == torch.device("cpu")


def test_helpers_refuse_unbuilt_layers_with_the_fix() -> None:
    with pytest.raises(TorchXError, match=r"num_parameters: Chain has 2 unbuilt layer.*torchx.build"):
        Chain(Dense(8), Dense(2)).num_parameters()
    built = torchx.build(Chain(Dense(8)), (None, 4))
    with pytest.raises(TorchXError, match="soft_update: Chain has 1 unbuilt"):
        built.soft_update(Chain(Dense(8)), tau=0.5)
