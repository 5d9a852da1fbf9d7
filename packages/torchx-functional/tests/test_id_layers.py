"""Layers of ids (embeddings) recorded on placeholders: ids of one dtype, long
or int, give the weights' dtype without a meta run; any other dtype is judged
by one, and refused where torch refuses it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from case_ids import case_id

import torchx.layers as L
from torchx.core import DtypeError
from torchx.core import _leaf as leaf_internals


def _no_meta_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("a meta copy ran")


@pytest.mark.parametrize("ids", [torch.long, torch.int], ids=case_id)
@pytest.mark.parametrize("weights", [torch.float32, torch.float64], ids=case_id)
def test_ids_give_the_weights_dtype_without_a_meta_run(
    ids: torch.dtype, weights: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leaf_internals, "_run_meta_copy", _no_meta_run)
    tokens = L.Placeholder((None, 7), dtype=ids)
    for layer in (L.Embedding(10, 4, dtype=weights), L.EmbeddingBag(10, 4, dtype=weights)):
        output = layer(tokens)
        assert output.node.meta.dtype == weights
        assert layer.weight.dtype == weights


def _refused_on_meta(ids: torch.dtype) -> bool:
    """Whether torch's meta embedding refuses ids of this dtype (torch 2.9's takes any)."""
    try:
        F.embedding(torch.zeros(3, dtype=ids, device="meta"), torch.empty(10, 4, device="meta"))
    except (RuntimeError, IndexError):
        return True
    return False


@pytest.mark.parametrize("ids", [torch.int16, torch.float32, torch.bool], ids=case_id)
def test_ids_of_another_dtype_are_judged_by_a_meta_run(ids: torch.dtype) -> None:
    """Refused with a DtypeError naming the layer where torch's meta run refuses them."""
    tokens = L.Placeholder((None, 7), dtype=ids)
    if _refused_on_meta(ids):
        with pytest.raises(DtypeError, match="Embedding"):
            L.Embedding(10, 4)(tokens)
    else:
        assert L.Embedding(10, 4)(tokens).node.meta.dtype == torch.float32
