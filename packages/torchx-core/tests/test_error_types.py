"""A first call that fails for a reason other than the input's sizes keeps torch's
error (with the layer named in a note); builds inside torch.func transforms run
outside them."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import pytest
import torch
from torch import nn
from toy_layers import Attention, Dense

from torchx.core import FromInput, LayerError, LeafLayer, ShapeError
from torchx.core._arguments import PositiveInt, Probability


class Drop(LeafLayer):
    native_class = nn.Dropout
    same_shape = True

    def __init__(self, p: Probability = 0.5) -> None:
        super().__init__(p=p)


class Lookup(LeafLayer):
    native_class = nn.Embedding
    integer_input = True

    def __init__(self, num_embeddings: PositiveInt, embedding_dim: PositiveInt) -> None:
        super().__init__(num_embeddings=num_embeddings, embedding_dim=embedding_dim)


class Recurrent(LeafLayer):
    native_class = nn.LSTM
    native_arguments: ClassVar = {"batch_first": True}
    inferred_arguments: ClassVar = {"input_size": FromInput(dim=-1, ranks=(3,))}

    def __init__(self, hidden_size: PositiveInt) -> None:
        super().__init__(hidden_size=hidden_size)


def raised(call: Callable[[], object]) -> BaseException:
    with pytest.raises(Exception) as info:
        call()
    return info.value


def notes(error: BaseException) -> list[str]:
    return list(getattr(error, "__notes__", []))


def test_vmap_over_an_unbuilt_layer_builds_it_outside_the_transform() -> None:
    x = torch.randn(8, 16)
    layer = Dense(4)
    out = torch.vmap(layer)(x)
    assert type(layer) is nn.Linear and layer.in_features == 16  # built for one sample's shape
    torch.testing.assert_close(out, layer(x))


def test_grad_through_an_unbuilt_layer_builds_it_outside_the_transform() -> None:
    layer = Dense(1)
    grad = torch.func.grad(lambda v: layer(v).sum())(torch.randn(16))
    assert type(layer) is nn.Linear
    torch.testing.assert_close(grad, layer.weight[0].detach())


def test_randomness_refused_by_vmap_keeps_torchs_error_naming_the_layer() -> None:
    x = torch.randn(8, 16)
    native = raised(lambda: torch.vmap(nn.Dropout(0.5))(x))
    error = raised(lambda: torch.vmap(Drop(0.5))(x))
    assert type(error) is type(native) and not isinstance(error, LayerError)
    assert str(error) == str(native)
    assert notes(error) == ["raised in Drop's first call, on input (16,)"]


def test_an_index_out_of_range_keeps_torchs_index_error() -> None:
    error = raised(lambda: Lookup(10, 4)(torch.tensor([3, 12])))
    assert type(error) is IndexError and "index out of range" in str(error)
    assert notes(error) == ["raised in Lookup's first call, on input (2,)"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_an_lstm_under_cpu_autocast_fails_or_works_as_torchs_own(dtype: torch.dtype) -> None:
    """Whether oneDNN runs an LSTM in ``dtype`` depends on the CPU: TorchX does what torch does."""
    x = torch.randn(4, 7, 5)
    torch.manual_seed(0)
    native = nn.LSTM(5, 8, batch_first=True)
    layer = Recurrent(8)
    with torch.autocast("cpu", dtype=dtype):
        try:
            expected = native(x)[0]
        except RuntimeError as native_error:
            error = raised(lambda: layer(x))
            assert type(error) is type(native_error) and str(error) == str(native_error)
            assert notes(error) == ["raised in Recurrent's first call, on input (4, 7, 5)"]
            return
        assert layer(x)[0].dtype == expected.dtype


def test_a_size_the_native_constructor_refuses_stays_a_shape_error() -> None:
    with pytest.raises(ShapeError, match=r"cannot build MultiheadAttention\(.*embed_dim=5.*divisible"):
        Attention(2)(torch.randn(3, 4, 5))
