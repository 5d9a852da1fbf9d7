"""A dynamic dim shows as None in the messages of graph ops, never as the size it was probed at."""

from __future__ import annotations

import pytest
import torch

import torchx.layers as L
from torchx.core import ShapeError


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
