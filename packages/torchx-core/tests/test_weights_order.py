"""load_weights where the model's state dict and the source's list the same tensors in other orders.

A TorchX graph's state dict follows call order: a BERT-style embeddings block that
computes the position embeddings first lists them before the word embeddings, which
Hugging Face registers first. Two embeddings of one shape then pair by position into
each other's places; the names say so, and the load refuses.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import torchx
from torchx.core import WeightMismatchError

VOCAB = POSITIONS = 16  # word and position tables of one shape: positions alone cannot tell them apart
WIDTH = 8


class HuggingFaceEmbeddings(nn.Module):
    """BertEmbeddings' tensors in its registration order."""

    def __init__(self) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, WIDTH)
        self.position_embeddings = nn.Embedding(POSITIONS, WIDTH)
        self.token_type_embeddings = nn.Embedding(2, WIDTH)
        self.LayerNorm = nn.LayerNorm(WIDTH)


class HuggingFaceBert(nn.Module):
    """Its keys under ``embeddings.``, as BertModel's state dict has them."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embeddings = HuggingFaceEmbeddings()
        nn.init.normal_(self.embeddings.LayerNorm.weight)


class CallOrder(nn.Module):
    """The same tensors under the model's names, in a TorchX graph's call order."""

    def __init__(self) -> None:
        super().__init__()
        self.position_embeddings = nn.Embedding(POSITIONS, WIDTH)
        self.word_embeddings = nn.Embedding(VOCAB, WIDTH)
        self.token_type_embeddings = nn.Embedding(2, WIDTH)
        self.LayerNorm = nn.LayerNorm(WIDTH)


def graph_embeddings() -> nn.Module:
    """The block as a TorchX graph that computes the positions first."""
    pytest.importorskip("torchx.functional")
    import torchx.layers as L

    ids = L.Placeholder((None, None), dtype=torch.long, name="ids")
    types = L.Placeholder((None, None), dtype=torch.long, name="types")
    positions = L.Embedding(POSITIONS, WIDTH, name="position_embeddings")(torch.arange(ids.shape[1]))
    words = L.Embedding(VOCAB, WIDTH, name="word_embeddings")(ids)
    token_types = L.Embedding(2, WIDTH, name="token_type_embeddings")(types)
    out = L.LayerNorm(name="LayerNorm")(words + positions + token_types)
    return L.Functional(inputs={"ids": ids, "types": types}, outputs=out)


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def equal_states(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


@pytest.mark.parametrize("make", [CallOrder, graph_embeddings], ids=["call-order", "torchx-graph"])
def test_auto_does_not_pair_tables_of_one_shape_in_another_order(make: type[nn.Module]) -> None:
    source, model = HuggingFaceBert(), make()
    before = snapshot(model)
    # Before: the structures agree shape by shape, so auto paired by position and loaded the
    # word table into position_embeddings and the position table into word_embeddings.
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, source)
    assert equal_states(snapshot(model), before)
    message = str(caught.value)
    assert "with the prefix 'embeddings.' for ''" in message
    assert "{key.removeprefix('embeddings.'): tensor for key, tensor in state.items()}, by name" in message
    renamed = {key.removeprefix("embeddings."): tensor for key, tensor in source.state_dict().items()}
    report = torchx.load_weights(model, renamed)
    assert report.match == "name" and report.ok
    assert torch.equal(model.state_dict()["word_embeddings.weight"], source.embeddings.word_embeddings.weight)


@pytest.mark.parametrize("make", [CallOrder, graph_embeddings], ids=["call-order", "torchx-graph"])
def test_position_refuses_the_pairs_the_names_give_to_other_places(make: type[nn.Module]) -> None:
    source, model = HuggingFaceBert(), make()
    before = snapshot(model)
    report = torchx.load_weights(model, source, match="position", strict=False)
    assert [(entry.target, entry.note) for entry in report.mismatched] == [
        (
            "position_embeddings.weight",
            "by its name, embeddings.word_embeddings.weight belongs in word_embeddings.weight",
        ),
        (
            "word_embeddings.weight",
            "by its name, embeddings.position_embeddings.weight belongs in position_embeddings.weight",
        ),
    ]
    after = model.state_dict()
    for key in ("position_embeddings.weight", "word_embeddings.weight"):
        assert torch.equal(after[key], before[key]), key
    assert torch.equal(after["token_type_embeddings.weight"], source.embeddings.token_type_embeddings.weight)
    assert torch.equal(after["LayerNorm.weight"], source.embeddings.LayerNorm.weight)


def test_the_same_names_in_another_order_pair_by_name() -> None:
    source = HuggingFaceEmbeddings()
    model = CallOrder()
    report = torchx.load_weights(model, source)
    assert report.match == "name" and report.ok
    assert equal_states(model.state_dict(), source.state_dict())
    with pytest.raises(
        WeightMismatchError, match=re.escape("by its name, word_embeddings.weight belongs in")
    ):
        torchx.load_weights(CallOrder(), source, match="position")
