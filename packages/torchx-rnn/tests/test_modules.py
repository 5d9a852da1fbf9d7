"""A built recurrent layer is torch's own class; what TorchX adds to its call goes where the module goes."""

from __future__ import annotations

import copy
import pickle
import warnings
from typing import Any

import pytest
import torch
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import ShapeError, TypedShape
from torchx.plugin import build_need
from torchx.rnn import GRU, LSTM, RNN

X = torch.randn(4, 5, 3)
LENGTHS = torch.tensor([5, 2, 4, 1])


@pytest.mark.parametrize(("layer_class", "native"), [(LSTM, nn.LSTM), (GRU, nn.GRU), (RNN, nn.RNN)])
def test_a_built_layer_is_torchs_class_and_still_returns_what_it_selects(
    layer_class: type[LSTM], native: type[nn.RNNBase]
) -> None:
    layer = torchx.build(layer_class(6, return_sequences=False, bidirectional=True), (None, 5, 3))
    assert type(layer) is native and layer.batch_first
    assert layer(X).shape == (4, 12)
    assert isinstance(layer.forward(X), tuple)  # forward is torch's own; the call adds the selection
    assert torchx.to_spec(layer)["args"] == {
        "hidden_size": 6,
        "bidirectional": True,
        "return_sequences": False,
    }


def test_torch_fx_takes_built_recurrent_layers_as_leaves() -> None:
    model = torchx.build(L.Sequential(L.LSTM(8), L.Linear(3)), (None, 5, 3))
    traced = torch.fx.symbolic_trace(model)
    assert [node.op for node in traced.graph.nodes] == ["placeholder", "call_module", "call_module", "output"]
    assert torch.equal(traced(X), model(X))


class _Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn, self.head = GRU(5, return_sequences=False), L.Linear(2)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> Any:
        return self.head(self.rnn(x, lengths=lengths))


def test_a_traced_call_with_lengths_selects_each_samples_last_step() -> None:
    model = torchx.build(_Tagger(), (None, 5, 3), LENGTHS)
    traced = torch.fx.symbolic_trace(model)
    assert torch.equal(traced(X, LENGTHS), model(X, LENGTHS))
    for index, length in enumerate(LENGTHS.tolist()):
        alone = model.head(model.rnn(X[index : index + 1, :length]))
        assert torch.allclose(traced(X, LENGTHS)[index], alone[0], atol=1e-6)


def _quantized(model: nn.Module, kinds: set[type[nn.Module]]) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notices for eager-mode quantization
        return torch.ao.quantization.quantize_dynamic(model, kinds)


@pytest.mark.filterwarnings("ignore:.*quantize_per_tensor.*:UserWarning")
def test_dynamic_quantization_swaps_recurrent_layers_and_keeps_their_selection() -> None:
    model = torchx.build(L.Sequential(L.LSTM(8, return_sequences=False, bidirectional=True), L.Linear(3)), X)
    quantized = _quantized(model, {nn.LSTM, nn.Linear})
    assert [type(module) for module in quantized] == [
        torch.ao.nn.quantized.dynamic.LSTM,
        torch.ao.nn.quantized.dynamic.Linear,
    ]
    assert torch.allclose(quantized(X), model(X), atol=0.05)
    states = torchx.build(L.Sequential(L.GRU(8, return_state=True), L.GetRNNState()), X)
    quantized = _quantized(states, {nn.GRU})
    assert type(quantized[0]) is torch.ao.nn.quantized.dynamic.GRU
    assert torch.allclose(quantized(X), states(X), atol=0.05)


def test_copies_and_pickles_keep_the_selection_and_script_on_their_own_weights() -> None:
    layer = torchx.build(LSTM(6, return_sequences=False, return_state=True), X)
    for again in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert type(again) is nn.LSTM
        output, (h, c) = again(X)
        assert output.shape == (4, 6) and h.shape == c.shape == (1, 4, 6)
        assert torch.equal(output, layer(X)[0])
        scripted = torch.jit.script(again)
        assert scripted.rnn.weight_ih_l0.data_ptr() == again.weight_ih_l0.data_ptr()
        assert torch.equal(scripted(X)[0], output)


def test_a_layer_built_again_after_a_failed_build_scripts() -> None:
    model = L.Sequential(L.LSTM(4), L.Conv2d(3, 3))
    with pytest.raises(ShapeError, match=r"Sequential\[1\] Conv2d"):
        model(X)  # the LSTM builds, the Conv2d refuses: the LSTM is unbuilt again
    assert isinstance(model[0], LSTM)
    lstm = torchx.build(model[0], X)
    assert torch.equal(torch.jit.script(lstm)(X), lstm(X))


def test_your_hooks_see_the_call_as_the_layer_takes_it() -> None:
    layer = LSTM(4, return_sequences=False)
    seen: list[tuple[int, ...]] = []
    layer.register_forward_hook(lambda module, args, output: seen.append(tuple(output.shape)))
    layer(X)
    layer(X, lengths=LENGTHS)
    assert seen == [(4, 4), (4, 4)]


def test_lengths_beside_a_packed_sequence_are_ignored_as_before() -> None:
    layer = LSTM(4, return_sequences=False)
    packed = nn.utils.rnn.pack_padded_sequence(X, LENGTHS, batch_first=True, enforce_sorted=False)
    assert torch.equal(layer(packed, lengths=LENGTHS), layer(packed))


def test_recurrent_layers_take_lengths_in_graphs() -> None:
    functional = pytest.importorskip("torchx.functional", reason="torchx-functional is not installed")
    x = functional.Placeholder((None, 5, 3))
    lengths = functional.Placeholder((None,), dtype=torch.int64, name="lengths")
    lstm = L.LSTM(4, return_state=True)
    output, (h, _) = lstm(x, lengths=lengths)
    model = functional.Functional(inputs=[x, lengths], outputs=[output, h])
    got_output, got_h = model(X, LENGTHS)
    expected_output, (expected_h, _) = lstm(X, lengths=LENGTHS)
    assert torch.equal(got_output, expected_output) and torch.equal(got_h, expected_h)
    assert torch.equal(got_output[1, 2:], torch.zeros(3, 4))


def test_graphs_holding_recurrent_layers_trace_and_script() -> None:
    functional = pytest.importorskip("torchx.functional", reason="torchx-functional is not installed")
    x = functional.Placeholder((None, 5, 3))
    lstm = L.LSTM(4, return_sequences=False, bidirectional=True)
    model = functional.Functional(inputs=x, outputs=L.Linear(2)(lstm(x)))
    traced = torch.fx.symbolic_trace(model)
    assert [node.op for node in traced.graph.nodes if node.target == "lstm"] == ["call_module"]
    assert torch.equal(traced(X), model(X))
    assert torch.equal(torch.jit.script(model)(X), model(X))


def test_meta_copies_without_observers_keep_the_output_selection() -> None:
    # Meta copies made without hooks (build rehearsals, memory checks) used to drop the selection too, so
    # the Linear after an LSTM(return_sequences=False) met (output, state) and the rehearsal failed.
    model = L.Sequential(L.LSTM(8, return_sequences=False), L.Linear(3))
    need = build_need(model, TypedShape((None, 5, 4), torch.float32))
    built = torchx.build(L.Sequential(L.LSTM(8, return_sequences=False), L.Linear(3)), (None, 5, 4))
    assert need.total == sum(p.numel() * p.element_size() for p in built.parameters())
