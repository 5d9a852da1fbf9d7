"""The mode is a value of the graph: dropout written as functions follows
``model.train()`` and ``model.eval()`` as ``nn.Dropout`` does.

On the main of issue 39 ``F.dropout(x, p)`` and ``dropout_p=p`` were recorded
as constants: a graph dropped activations and attention weights in eval mode
too, where a module written ``dropout_p=p if self.training else 0.0`` does not.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
import yaml
from torch import nn

import torchx.layers as L
from torchx.core import PluginManager, SpecError
from torchx.functional import Functional, Placeholder


class Attention(nn.Module):
    """What timm and Hugging Face write: attention dropout in train mode only."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = x.view(b, t, 2, 4).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q, dropout_p=self.p if self.training else 0.0)
        return F.dropout(y.transpose(1, 2).reshape(b, t, 8), 0.3, training=self.training)


def _graph(p: float) -> Functional:
    x = Placeholder((None, None, 8), name="x")
    b, t, _ = x.shape
    q = x.view(b, t, 2, 4).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, q, q, dropout_p=p)
    return Functional(inputs=x, outputs=F.dropout(y.transpose(1, 2).reshape(b, t, 8), 0.3))


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_dropout_functions_follow_the_models_mode(train: bool) -> None:
    graph, module = _graph(0.4), Attention(0.4)
    graph.train(train), module.train(train)
    for length in (1, 5, 130):
        x = torch.randn(3, length, 8)
        torch.manual_seed(0)
        expected = module(x)
        torch.manual_seed(0)
        assert torch.equal(graph(x), expected)
    assert "dropout_p=(0.4 if self.training else 0.0)" in graph.code
    assert "training=self.training" in graph.code


def test_two_eval_calls_agree_and_two_train_calls_do_not() -> None:
    graph, x = _graph(0.4), torch.randn(2, 6, 8)
    graph.eval()
    assert torch.equal(graph(x), graph(x))
    graph.train()
    assert not torch.equal(graph(x), graph(x))


def test_dropout_written_off_or_always_on_is_kept_as_written() -> None:
    x = Placeholder((None, 8), name="x")
    off = Functional(inputs=x, outputs=F.dropout(x, 0.5, training=False) + F.alpha_dropout(x, 0.5))
    always = Functional(inputs=x, outputs=torch.dropout(x, 0.5, True))  # Monte Carlo dropout
    value = torch.randn(4, 8)
    off.train(), always.eval()
    assert torch.equal(off(value), value + value)
    torch.manual_seed(1)
    expected = torch.dropout(value, 0.5, True)
    torch.manual_seed(1)
    assert torch.equal(always(value), expected)


def test_dropout_in_eval_returns_its_input_so_nothing_is_computed_into_it() -> None:
    """In eval mode ``F.dropout(x, p)`` is ``x`` itself: a sum is not computed into it, nor into the caller's input."""
    x, y = Placeholder((None, 8), name="x"), Placeholder((None, 8), name="y")
    graph = Functional(inputs=[x, y], outputs=F.dropout(L.Linear(8)(x), 0.5) + y).eval()
    first, second = torch.randn(4, 8), torch.randn(4, 8)
    kept = second.clone()
    graph(first, second)
    assert torch.equal(second, kept)
    assert "add_" not in graph.code


def test_the_spec_writes_the_mode_and_reads_it_back(fresh_plugins: PluginManager) -> None:
    graph = _graph(0.25)
    spec = graph.to_spec()
    written = json.dumps(spec)
    assert (
        '"dropout_p": {"by_mode": [0.25, 0.0]}' in written
        and '"training": {"by_mode": [true, false]}' in written
    )
    for read in (json.loads(json.dumps(spec)), yaml.safe_load(yaml.safe_dump(spec, sort_keys=False))):
        rebuilt = L.Layer.from_spec(read)
        assert isinstance(rebuilt, Functional) and rebuilt.to_spec() == spec
        rebuilt.eval(), graph.eval()
        x = torch.randn(2, 7, 8)
        assert torch.equal(rebuilt(x), graph(x))


@pytest.mark.parametrize(
    "content",
    [[0.1], [0.1, "x"], [True, 0.0], "p", [0.1, 0.0, 0.0]],
    ids=["one_value", "a_string", "a_bool_and_a_number", "not_a_list", "three_values"],
)
def test_a_spec_whose_mode_value_is_malformed_is_refused(
    fresh_plugins: PluginManager, content: object
) -> None:
    spec = json.loads(json.dumps(_graph(0.25).to_spec()))
    for node in spec["nodes"]:
        if "dropout_p" in node.get("kwargs", {}):
            node["kwargs"]["dropout_p"] = {"by_mode": content}
    with pytest.raises(SpecError, match=r"by_mode is \[value in training, value in eval\]"):
        L.Layer.from_spec(spec)


def test_a_scripted_graph_follows_the_mode_too() -> None:
    graph = _graph(0.4).eval()
    scripted = torch.jit.script(graph)
    x = torch.randn(2, 6, 8)
    assert torch.equal(scripted(x), graph(x))
    scripted.train()
    assert not torch.equal(scripted(x), scripted(x))
