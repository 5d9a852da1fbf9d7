"""load_weights from a source holding one tensor under two keys (a tied head): loaded once, the second key tied."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import torchx
from torchx.core import WeightMismatchError


def tied_source() -> nn.ModuleDict:
    torch.manual_seed(0)
    source = nn.ModuleDict({"wte": nn.Embedding(10, 4), "lm_head": nn.Linear(4, 10, bias=False)})
    source["lm_head"].weight = source["wte"].weight
    return source


def test_the_second_key_of_a_tied_tensor_is_tied_not_unexpected() -> None:
    model = nn.ModuleDict({"wte": nn.Embedding(10, 4)})  # a model whose head reads wte.weight
    report = torchx.load_weights(model, tied_source())
    assert report.ok and [entry.source for entry in report.tied] == ["lm_head.weight"]
    assert report.tied[0].note == "the same tensor as wte.weight, loaded into wte.weight"
    assert torch.equal(model["wte"].weight, tied_source()["wte"].weight)


def test_a_tied_state_dict_saved_with_torch_save_keeps_the_tie(tmp_path: Path) -> None:
    path = tmp_path / "tied.pt"
    torch.save(tied_source().state_dict(), path)
    report = torchx.load_weights(nn.ModuleDict({"wte": nn.Embedding(10, 4)}), path)
    assert [entry.source for entry in report.tied] == ["lm_head.weight"]


def test_an_equal_but_separate_tensor_is_still_unexpected() -> None:
    source = tied_source()
    source["lm_head"].weight = nn.Parameter(source["wte"].weight.detach().clone())
    with pytest.raises(WeightMismatchError, match="1 unexpected"):
        torchx.load_weights(nn.ModuleDict({"wte": nn.Embedding(10, 4)}), source)
