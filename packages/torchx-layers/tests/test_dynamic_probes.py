"""A length that varies with a dynamic (None) dim stays dynamic through strided
layers, so what reads it later is refused rather than built for one size."""

from __future__ import annotations

import re

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import ShapeError


def test_a_linear_after_a_strided_conv_over_a_dynamic_length_is_refused() -> None:
    """Today the probes (61, 67) both gave 6 windows of stride 10: Flatten gave a
    static 24 and the Linear was built for it, failing at every other length."""
    model = L.Sequential(L.Conv1d(4, kernel_size=10, stride=10), L.Flatten(), L.Linear(3))
    with pytest.raises(
        ShapeError, match=re.escape("Sequential[2] Linear: in_features would come from a dynamic")
    ):
        torchx.build(model, (None, 4, None))
    assert not torchx.is_built(model)
    built = torchx.build(model, (None, 4, 60))
    assert built(torch.zeros(2, 4, 60)).shape == (2, 3)


@pytest.mark.parametrize(
    ("layer", "shape", "expected"),
    [
        (L.Conv1d(4, kernel_size=10, stride=10), (None, 4, None), (None, 4, None)),
        (L.AvgPool1d(12), (None, 2, None), (None, 2, None)),
        (L.MaxPool2d(20), (None, 1, None, 40), (None, 1, None, 2)),
    ],
    ids=["conv-stride-10", "avgpool-12", "maxpool-20"],
)
def test_a_strided_length_of_a_dynamic_dim_is_dynamic(
    layer: torch.nn.Module, shape: tuple[int | None, ...], expected: tuple[int | None, ...]
) -> None:
    assert torchx.infer_shapes(L.Sequential(layer), shape) == expected
