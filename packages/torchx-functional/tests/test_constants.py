"""Constant tensors of a graph are buffers of the Functional, written to specs as data."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

import torchx
import torchx.layers as L
from torchx.core import SpecError
from torchx.functional import Functional, Placeholder


def relative_position_index(window: int) -> torch.Tensor:
    """Swin's relative position index of a window, as Swin computes it."""
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
    relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    relative[:, :, 0] += window - 1
    relative[:, :, 1] += window - 1
    relative[:, :, 0] *= 2 * window - 1
    return relative.sum(-1)


def swin_bias(window: int = 7, heads: int = 3) -> Functional:
    """Swin's relative position bias added to attention scores."""
    scores = Placeholder((None, heads, window * window, window * window))
    table = L.Parameter(((2 * window - 1) ** 2, heads), init="zeros")(scores)
    index = torch.tensor(relative_position_index(window).flatten().tolist())
    bias = table[index].view(window * window, window * window, heads).permute(2, 0, 1)
    causal = torch.ones((window * window, window * window)).tril()
    return Functional(scores, (scores + bias) * causal)


def test_constants_are_buffers_and_the_code_has_no_literals() -> None:
    """Today x.new_tensor(list) put thousands of literals in the generated
    source, rebuilt every forward, and could not be written to a spec."""
    model = swin_bias()
    assert [name for name, _ in model.named_buffers()] == ["constant", "constant_1"]
    assert list(model.state_dict()) == ["parameter"]  # non-persistent constants
    assert len(model.code) < 2000 and "2400" not in model.code  # no index literals
    x = torch.randn(2, 3, 49, 49)
    bias = model.parameter[relative_position_index(7).flatten()].view(49, 49, 3).permute(2, 0, 1)
    assert torch.equal(model(x), (x + bias) * torch.ones(49, 49).tril())


def test_new_tensor_of_data_is_a_constant_in_the_inputs_dtype() -> None:
    x = Placeholder((None, 4))
    model = Functional(x, x * x.new_tensor([1, 2, 3, 4]))
    assert "new_tensor" not in model.code and model.constant.dtype == torch.float32
    assert torch.equal(model(torch.ones(2, 4)), torch.tensor([[1.0, 2, 3, 4]] * 2))


def test_to_moves_the_constants() -> None:
    model = swin_bias().to(torch.float64)
    assert model.constant_1.dtype == torch.float64 and model.constant.dtype == torch.int64
    assert model(torch.randn(1, 3, 49, 49, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.parametrize("form", ["json", "yaml"], ids=["json", "yaml"])
def test_constants_round_trip_through_specs_as_data(form: str) -> None:
    model = swin_bias()
    spec = torchx.to_spec(model)
    constant = next(node["constant"] for node in spec["nodes"] if "constant" in node)
    assert constant["dtype"] == "int64" and constant["shape"] == [2401] and not constant["persistent"]
    text = json.dumps(spec) if form == "json" else yaml.safe_dump(spec)
    again = L.Layer.from_spec(json.loads(text) if form == "json" else yaml.safe_load(text))
    again.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 49, 49)
    assert torch.equal(again(x), model(x))
    assert torch.equal(again.constant, model.constant)


def test_a_named_buffer_chooses_its_name_and_persistence() -> None:
    x = Placeholder((None, 7))
    mask = L.Buffer(torch.ones(7, 7).tril(), name="mask", persistent=True)
    model = Functional(x, x @ mask)
    assert list(model.state_dict()) == ["mask"] and "self.mask" in model.code
    again = L.Layer.from_spec(json.loads(json.dumps(torchx.to_spec(model))))
    assert list(again.state_dict()) == ["mask"] and torch.equal(again.mask, model.mask)


def test_a_constant_too_large_for_a_spec_is_refused_with_a_fix() -> None:
    x = Placeholder((None, 1001, 1000))
    model = Functional(x, x + torch.zeros(1001, 1000))
    with pytest.raises(SpecError, match=r"at most 1,000,000 real values.*persistent buffer"):
        torchx.to_spec(model)


def test_a_graph_with_constants_compiles_and_exports() -> None:
    model = swin_bias()
    x = torch.randn(2, 3, 49, 49)
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    assert torch.equal(compiled(x), model(x))
    exported = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert torch.equal(exported.module()(torch.ones(3, 3, 49, 49)), model(torch.ones(3, 3, 49, 49)))
