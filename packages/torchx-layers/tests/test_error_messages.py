"""Errors that fit: a dynamic dim shows as None, a fix line fits what failed
(or is left out), a built model's errors name the layer, shapes are ints."""

from __future__ import annotations

import re

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import ShapeError, TypedShape


@pytest.mark.parametrize(
    ("model", "shape", "shown"),
    [
        (
            L.Sequential(L.Reshape((5, 5))),
            (None, 12),
            "shape '[None, 5, 5]' is invalid for input of size None*12",
        ),
        (
            L.Sequential(L.Lambda(lambda x: x.expand(3, 12))),
            (None, 12),
            "existing size (None) at non-singleton dimension 0.  Target sizes: [3, 12].  Tensor sizes: [None, 12]",
        ),
        (L.Sequential(L.Lambda(lambda x: x.view(3, 12))), (None, 12), "invalid for input of size None*12"),
        (L.Sequential(L.Reshape((5, 5))), (None, None, 3), "input of size None*None*3"),
    ],
    ids=["reshape", "expand", "view", "two-dynamic-dims"],
)
def test_a_dynamic_dim_shows_as_none_in_torchs_message(
    model: torch.nn.Module, shape: tuple[int | None, ...], shown: str
) -> None:
    with pytest.raises(ShapeError) as info:
        torchx.build(model, shape)
    assert shown in str(info.value)
    assert "61" not in str(info.value)


def test_a_dynamic_dim_shows_as_none_in_a_merge_of_placeholders() -> None:
    a, b = L.Placeholder((None, 3)), L.Placeholder((None, 4))
    for merge in (lambda: a + b, lambda: L.Add()(a, b)):
        with pytest.raises(ShapeError) as info:
            merge()
        assert "torch.Size([None, 4])" in str(info.value) and "broadcastable to [None, 3]" in str(info.value)
        assert "61" not in str(info.value)
    c = L.Placeholder((5, 4))
    for concat in (lambda: torch.cat([a, c], 1), lambda: L.Concat()(a, c)):
        with pytest.raises(ShapeError, match=r"Expected None in dimension 0 but got 5"):
            concat()


@pytest.mark.parametrize(
    ("shape", "shown"),
    [
        ((None, 8.7), "dim 1 is 8.7 (float)"),
        ((None, 8.0), "dim 1 is 8.0 (float)"),
        ((True, 8), "dim 0 is True (bool)"),
    ],
    ids=["float", "whole-float", "bool"],
)
def test_a_dim_that_is_not_an_int_is_refused_not_truncated(shape: tuple[object, ...], shown: str) -> None:
    model = L.Sequential(L.Linear(3))
    with pytest.raises(ShapeError, match=rf"^input: shape .*: {re.escape(shown)}, not an int") as info:
        torchx.build(model, shape)  # type: ignore[arg-type]
    assert "fix: give dim" in str(info.value)
    assert not model.is_built
    with pytest.raises(ShapeError, match=re.escape(shown)):
        TypedShape(shape, torch.int64)  # type: ignore[arg-type]
