"""A layer never reads a constructor argument off a dynamic (None) dim, and a
dim that varies with a dynamic one is never recorded static."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import ShapeError, SpecError, from_spec
from torchx.core._shapes import DYNAMIC_PROBES
from torchx.functional import Functional, Placeholder

DYNAMIC_ARGUMENTS: list[tuple[Callable[[], Any], tuple[int | None, ...], str]] = [
    (lambda: L.Linear(4), (None, None), "in_features would come from the last dim of its input (None, None)"),
    (
        lambda: L.Conv1d(4, 3),
        (None, None, 10),
        "in_channels would come from dim 1 of its input (None, None, 10)",
    ),
    (lambda: L.BatchNorm1d(), (None, None), "num_features would come from dim 1 of its input (None, None)"),
    (lambda: L.LayerNorm(), (None, 5, None), "normalized_shape would come from dynamic (None) dims"),
    (
        lambda: L.TransformerEncoderLayer(nhead=1, dim_feedforward=8),
        (None, 5, None),
        "d_model would come from the last dim of its input (None, 5, None)",
    ),
    (lambda: L.Sequential(L.ReLU(), L.Linear(4)), (None, None), "Sequential[1] Linear: in_features"),
]


@pytest.mark.parametrize(
    ("make", "shape", "message"),
    DYNAMIC_ARGUMENTS,
    ids=["linear", "conv1d", "batchnorm", "layernorm", "transformer", "nested"],
)
def test_an_argument_read_off_a_dynamic_dim_is_refused_at_definition(
    make: Callable[[], Any], shape: tuple[int | None, ...], message: str
) -> None:
    """Today ``L.Linear(4)(Placeholder((None, None)))`` built ``nn.Linear(61, 4)``
    without a word, and the model failed at run time at every other size."""
    layer = make()
    with pytest.raises(ShapeError, match=re.escape(message)) as info:
        layer(Placeholder(shape))
    text = str(info.value)
    assert "a dynamic (None) dim" in text or "dynamic (None) dims" in text
    assert "fix: make that dim static: give the model input a size there instead of None" in text
    assert all(str(size) not in text for size in DYNAMIC_PROBES)
    assert not torchx.is_built(layer)


def test_a_given_argument_on_a_dynamic_dim_is_refused_too() -> None:
    """A layer has one size: ``in_features=8`` says the data is 8 wide, which the
    placeholder must then say too (a graph's static dims are checked at run time)."""
    with pytest.raises(ShapeError) as info:
        L.Linear(4, in_features=8)(Placeholder((None, None)))
    assert (
        "Linear: in_features=8 was given, but in_features would come from the last dim of its input"
        in str(info.value)
    )
    assert "fix: give the model input 8 there instead of None" in str(info.value)
    assert "61" not in str(info.value)
    x = Placeholder((None, 8))
    assert Functional(x, L.Linear(4, in_features=8)(x))(torch.ones(2, 8)).shape == (2, 4)


@pytest.mark.parametrize("size", DYNAMIC_PROBES, ids=["first-probe", "second-probe"])
def test_a_static_dim_equal_to_a_probe_size_is_read(size: int) -> None:
    x = Placeholder((None, 3, size))
    model = Functional(x, L.Linear(4)(x))
    assert model.linear.in_features == size and model(torch.ones(2, 3, size)).shape == (2, 3, 4)


def test_a_spec_whose_input_makes_an_argument_dynamic_is_refused() -> None:
    x = Placeholder((None, 8))
    spec = Functional(x, L.Linear(4)(x)).to_spec()
    spec["inputs"]["shape"] = [None, None]
    with pytest.raises(
        SpecError, match="in_features would come from the last dim of its input \\(None, None\\)"
    ):
        from_spec(spec)


STRIDED: list[tuple[Callable[[], Any], tuple[int | None, ...], tuple[int | None, ...]]] = [
    (lambda: L.Conv1d(4, kernel_size=10, stride=10), (None, 4, None), (None, 4, None)),
    (lambda: L.AvgPool1d(12), (None, 2, None), (None, 2, None)),
    (lambda: L.MaxPool2d(20), (None, 1, None, 40), (None, 1, None, 2)),
]


@pytest.mark.parametrize(
    ("make", "shape", "expected"), STRIDED, ids=["conv-stride-10", "avgpool-12", "maxpool-20"]
)
def test_a_strided_length_of_a_dynamic_dim_is_dynamic(
    make: Callable[[], Any], shape: tuple[int | None, ...], expected: tuple[int | None, ...]
) -> None:
    """Today ``Conv1d(4, kernel_size=10, stride=10)`` on ``(None, 4, None)`` was
    recorded ``(None, 4, 6)``: both probes (61 and 67) give 6 windows."""
    x = Placeholder(shape)
    y = make()(x)
    assert y.shape == expected


def test_a_mean_over_a_strided_dynamic_dim_divides_by_its_length() -> None:
    """Today ``y.shape[2]`` of the strided conv was the constant 6: the mean was wrong at every other length."""
    x = Placeholder((None, 4, None))
    y = L.Conv1d(4, kernel_size=10, stride=10)(x)
    model = Functional(x, y.sum(2) / y.shape[2])
    for length in (30, 200):
        data = torch.randn(2, 4, length)
        with torch.no_grad():
            torch.testing.assert_close(model(data), model.conv1d(data).mean(2))
