"""The Layer protocol: lazy build, native parity, hooks, modes, errors."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from toy_layers import Attention, Dense, Norm

import torchx
from torchx.core import ArgumentError, Layer, ShapeError, TorchXError


def test_builds_on_first_call_and_becomes_the_native_module() -> None:
    layer = Dense(20)
    assert not layer.is_built
    assert list(layer.parameters()) == []
    out = layer(torch.zeros(16, 10))
    assert out.shape == (16, 20)
    assert layer.is_built
    assert isinstance(layer, nn.Linear) and isinstance(layer, Dense)
    assert layer.native_module() is layer
    assert (layer.in_features, layer.out_features) == (10, 20)
    assert list(layer.state_dict()) == ["weight", "bias"]


def test_native_module_before_build_says_how_to_build() -> None:
    with pytest.raises(TorchXError, match=r"not built yet.*torchx\.build"):
        Dense(3).native_module()


@pytest.mark.parametrize(
    ("make_layer", "make_native", "example"),
    [
        (lambda: Dense(7), lambda: nn.Linear(5, 7), torch.zeros(2, 5)),
        (lambda: Norm(), lambda: nn.BatchNorm1d(6), torch.zeros(4, 6)),
        (lambda: Attention(2), lambda: nn.MultiheadAttention(8, 2), torch.zeros(3, 2, 8)),
    ],
)
def test_same_seed_gives_bit_identical_weights(make_layer, make_native, example) -> None:
    torch.manual_seed(1234)
    native = make_native()
    torch.manual_seed(1234)
    layer = make_layer()
    inputs = (example,) * (3 if isinstance(native, nn.MultiheadAttention) else 1)
    torchx.build(layer, *inputs)  # no forward: running statistics stay as constructed
    assert layer.state_dict().keys() == native.state_dict().keys()
    for key, value in native.state_dict().items():
        assert torch.equal(layer.state_dict()[key], value), key


def test_builds_on_the_input_dtype() -> None:
    layer = Dense(3)
    layer(torch.zeros(2, 4, dtype=torch.float64))
    assert layer.weight.dtype == torch.float64


def test_hooks_and_eval_mode_set_before_the_build_survive_it() -> None:
    layer = Attention(2)
    calls: list[str] = []
    handle = layer.register_forward_hook(lambda module, args, output: calls.append("hook"))
    layer.eval()
    x = torch.zeros(3, 2, 8)
    layer(x, x, x)
    assert calls == ["hook"]
    assert not layer.training and not layer.out_proj.training
    handle.remove()
    layer(x, x, x)
    assert calls == ["hook"]


def test_a_built_layer_refuses_a_changed_input_size_with_a_shape_error() -> None:
    layer = Dense(4)
    layer(torch.zeros(2, 3))
    with pytest.raises(ShapeError, match=r"Dense: got input \(2, 5\).*in_features=5 \(built with 3\)"):
        layer(torch.zeros(2, 5))
    assert layer.in_features == 3


def test_unrelated_runtime_errors_pass_through_unchanged() -> None:
    layer = Dense(4)
    layer(torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match=r"dtype|type") as info:
        layer(torch.zeros(2, 3, dtype=torch.float64))
    assert not isinstance(info.value, ShapeError)


def test_wrong_rank_names_layer_layout_and_fix() -> None:
    with pytest.raises(ShapeError) as info:
        Norm()(torch.zeros(4))
    message = str(info.value)
    assert "Norm: expected input of shape (N, C) or (N, C, L) (2-d or 3-d), got (4,) (1-d)" in message
    assert "fix:" in message
    with pytest.raises(ShapeError, match=r"Dense: expected input .* got \(\) \(0-d\)"):
        Dense(2)(torch.tensor(1.0))


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_non_positive_sizes_are_refused_at_construction(size: object) -> None:
    with pytest.raises(ArgumentError, match="Dense: out_features must be a positive int"):
        Dense(size)  # type: ignore[arg-type]


def test_failed_native_construction_leaves_the_layer_unbuilt() -> None:
    layer = Attention(3)  # embed_dim 8 is not divisible by 3 heads
    with pytest.raises(ShapeError, match="cannot build MultiheadAttention"):
        layer(torch.zeros(3, 2, 8), torch.zeros(3, 2, 8), torch.zeros(3, 2, 8))
    assert not layer.is_built and type(layer) is Attention
    assert list(layer.parameters()) == []


def test_deepcopy_of_built_and_unbuilt_layers() -> None:
    unbuilt = copy.deepcopy(Dense(2))
    assert not unbuilt.is_built
    layer = Dense(2)
    layer(torch.zeros(1, 3))
    twin = copy.deepcopy(layer)
    assert twin.is_built and torch.equal(twin.weight, layer.weight)
    assert twin.weight is not layer.weight


def test_unbuilt_repr_shows_given_arguments() -> None:
    assert repr(Dense(5, bias=False)) == "Dense(out_features=5, bias=False, not built)"
    layer = Dense(5)
    layer(torch.zeros(1, 2))
    assert repr(layer) == "Dense(in_features=2, out_features=5, bias=True)"


def test_layer_subclass_without_native_must_define_forward() -> None:
    class Bare(Layer):
        pass

    with pytest.raises(NotImplementedError, match="Bare must override forward"):
        Bare()(torch.zeros(1))


def test_placement_asked_of_an_unbuilt_layer_applies_when_it_builds() -> None:
    layer = Dense(3).double()
    torchx.build(layer, (2, 4))
    assert layer.weight.dtype == torch.float64
    half = Dense(3).to(torch.float16)
    half(torch.zeros(2, 4, dtype=torch.float16))
    assert half.weight.dtype == torch.float16
    meta = Dense(3).to("meta")
    meta(torch.zeros(2, 4, device="meta"))
    assert meta.weight.is_meta
    built = Dense(3)
    built(torch.zeros(1, 2))
    assert built.double().weight.dtype == torch.float64


def test_an_unbuilt_layer_has_exactly_the_module_state_of_nn_module() -> None:
    first, second = Dense(2), Dense(3)
    expected = set(nn.Module().__dict__) | {"_torchx_arguments"}
    assert set(first.__dict__) == expected
    for key, value in first.__dict__.items():
        if isinstance(value, (dict, set)) and key != "_torchx_arguments":
            assert value is not second.__dict__[key], key
    first.register_forward_pre_hook(lambda module, args: None)
    assert not second._forward_pre_hooks
