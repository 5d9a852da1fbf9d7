"""load_weights from Hugging Face's Conv1D layout: (in, out) weights go into nn.Linear transposed, never silently."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from toy_layers import Dense

import torchx
from torchx.core import WeightMismatchError


class Conv1D(nn.Module):
    """Hugging Face's GPT-2 projection: ``x @ weight + bias`` with ``weight`` of shape (in, out)."""

    def __init__(self, out_features: int, in_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


Conv1D.__module__ = "transformers.pytorch_utils"  # where transformers defines it: told apart by its class


class Block(nn.Module):
    """GPT-2's attention projections' layout: a wide one (in -> 3 in) and a square one."""

    def __init__(self, projection: type[nn.Module]) -> None:
        super().__init__()
        self.c_attn = projection(12, 4) if projection is Conv1D else nn.Linear(4, 12)
        self.c_proj = projection(4, 4) if projection is Conv1D else nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.c_attn(x)[..., :4])


@pytest.fixture
def hugging_face_block() -> Block:
    torch.manual_seed(0)
    return Block(Conv1D)


def test_weights_from_a_conv1d_module_are_transposed_into_linear_layers(hugging_face_block: Block) -> None:
    model = Block(nn.Linear)
    report = torchx.load_weights(model, hugging_face_block)
    assert [entry.target for entry in report.adapted] == ["c_attn.weight", "c_proj.weight"]
    assert all("transposed" in entry.note for entry in report.adapted)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(model(x), hugging_face_block(x))


def test_an_unbuilt_model_builds_from_the_transposed_shapes(
    hugging_face_block: Block, toy_layers: None
) -> None:
    model = nn.ModuleDict({"c_attn": Dense(12), "c_proj": Dense(4)})
    torchx.load_weights(model, hugging_face_block)
    assert model.c_attn.weight.shape == (12, 4)
    torch.testing.assert_close(model.c_proj.weight, hugging_face_block.c_proj.weight.t())


def test_a_square_weight_from_a_file_that_stores_others_transposed_is_never_loaded_silently(
    tmp_path: Path, hugging_face_block: Block
) -> None:
    path = tmp_path / "gpt2.pt"
    torch.save(hugging_face_block.state_dict(), path)
    model = Block(nn.Linear)
    before = model.c_proj.weight.detach().clone()
    with pytest.raises(WeightMismatchError) as error:
        torchx.load_weights(model, path)
    assert "c_proj.weight" in str(error.value) and "Conv1D" in str(error.value)
    report = torchx.load_weights(model, path, strict=False)
    assert {entry.target for entry in report.mismatched} == {"c_attn.weight", "c_proj.weight"}
    square = next(entry for entry in report.mismatched if entry.target == "c_proj.weight")
    assert "load from the module" in square.note
    assert torch.equal(model.c_proj.weight, before)  # the square weight was not loaded transposed


def test_square_linear_weights_load_from_files_whose_layout_agrees() -> None:
    torch.manual_seed(0)
    source = Block(nn.Linear)
    model = Block(nn.Linear)
    report = torchx.load_weights(model, source.state_dict())
    assert report.ok and not report.adapted
    assert torch.equal(model.c_proj.weight, source.c_proj.weight)


def test_a_linear_layer_of_the_source_module_is_not_transposed() -> None:
    torch.manual_seed(0)
    source = nn.ModuleDict({"c_attn": Conv1D(12, 4), "c_proj": nn.Linear(4, 4)})
    model = Block(nn.Linear)
    report = torchx.load_weights(model, source)
    assert [entry.target for entry in report.adapted] == ["c_attn.weight"]
    assert torch.equal(model.c_proj.weight, source.c_proj.weight)
