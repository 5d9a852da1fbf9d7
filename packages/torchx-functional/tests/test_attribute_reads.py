"""A graph reads a parameter of a layer it holds (tied weights), as torch.fx's get_attr."""

from __future__ import annotations

import copy
import io
import json
import pickle

import pytest
import torch
import torch.nn.functional as F
import yaml

import torchx
import torchx.layers as L
from torchx.core import TorchXError
from torchx.functional import Functional, Placeholder


def tied_lm(transpose: bool = False) -> Functional:
    """A GPT-2 style toy LM: token embedding, one block, a head tied to the embedding."""
    ids = Placeholder((None, None), dtype=torch.long)
    wte = L.Embedding(50, 8)
    h = L.LayerNorm()(torch.tanh(L.Linear(8)(wte(ids))))
    logits = h @ wte.weight.T if transpose else F.linear(h, wte.weight)
    return Functional(ids, logits)


IDS = torch.randint(0, 50, (2, 5), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("transpose", [False, True], ids=["F.linear", "matmul_T"])
def test_a_tied_head_reads_the_embedding_weight(transpose: bool) -> None:
    """Today F.linear(h, wte.weight) was refused with an accept_placeholders fix that
    does not apply, and h @ wte.weight.T as a mix of placeholders and a real tensor."""
    model = tied_lm(transpose)
    assert "self.embedding.weight" in model.code
    weights = list(model.parameters())
    assert sum(p.numel() for p in weights) == 50 * 8 + (8 * 8 + 8) + (8 + 8)  # one weight tensor
    assert list(model.state_dict()) == [
        "embedding.weight", "linear.weight", "linear.bias", "layer_norm.weight", "layer_norm.bias",
    ]  # fmt: skip
    out = model(IDS)
    assert out.shape == (2, 5, 50)
    out.square().sum().backward()
    grad = model.embedding.weight.grad
    assert grad is not None
    rows = torch.zeros(50, dtype=torch.bool)
    rows[IDS.flatten()] = True
    assert bool((grad[~rows] != 0).any())  # the head's use reaches rows no id embedded


def test_the_tie_survives_json_and_yaml_specs_deepcopy_and_pickle() -> None:
    model = tied_lm()
    spec = torchx.to_spec(model)  # one tensor under one name: core's untied check passes
    assert {"name": "weight", "attribute": "embedding.weight"} in spec["nodes"]
    copies = [
        L.Layer.from_spec(json.loads(json.dumps(spec))),
        L.Layer.from_spec(yaml.safe_load(yaml.safe_dump(spec))),
        copy.deepcopy(model),
        pickle.loads(pickle.dumps(model)),
    ]
    for twin in copies:
        twin.load_state_dict(model.state_dict())
        assert torch.equal(twin(IDS), model(IDS))
        assert sum(p.numel() for p in twin.parameters()) == sum(p.numel() for p in model.parameters())
        with torch.no_grad():
            twin.embedding.weight.zero_()
        assert torch.equal(twin(IDS), torch.zeros(2, 5, 50))  # the head sees the embedding's change


def test_a_checkpoint_holds_the_tied_weight_once(tmp_path: object) -> None:
    model = tied_lm()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert sum(key.endswith("weight") and state[key].shape == (50, 8) for key in state) == 1
    twin = tied_lm()
    twin.load_state_dict(state)
    assert torch.equal(twin(IDS), model(IDS))


def test_reading_a_layer_the_graph_does_not_call_says_what_to_do() -> None:
    h = Placeholder((None, 8))
    outside = L.Embedding(50, 8)
    outside(torch.zeros(1, dtype=torch.long))  # built, never called in the graph
    y = F.linear(h, outside.weight)
    with pytest.raises(
        TorchXError, match=r"call the layer on a placeholder in the graph .* pass the tensor as an input"
    ):
        Functional(h, y)


def test_reading_an_unbuilt_layer_says_to_call_it_first() -> None:
    h = Placeholder((None, 8))
    with pytest.raises(TorchXError, match=r"not built yet.*call the layer on a placeholder first"):
        F.linear(h, L.Embedding(50, 8).weight)


def test_a_tensor_computed_from_a_parameter_outside_the_graph_is_refused() -> None:
    ids = Placeholder((None,), dtype=torch.long)
    wte = L.Embedding(50, 8)
    h = wte(ids)
    with pytest.raises(TorchXError, match=r"computed from a parameter outside the graph"):
        F.linear(h, wte.weight * 2)
