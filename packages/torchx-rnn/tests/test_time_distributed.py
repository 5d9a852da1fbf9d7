"""TimeDistributed: folding time into batch, any inner module, lengths, errors, specs."""

from __future__ import annotations

import pytest
import torch
from case_ids import case_id
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import PluginManager, ShapeError
from torchx.core.testing import StaticDeviceBackend
from torchx.rnn import LSTM, TimeDistributed


def test_applies_the_same_layers_to_every_step() -> None:
    layer = TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(10))
    frames = torch.randn(4, 16, 3, 16, 16)
    out = layer(frames)
    assert out.shape == (4, 16, 10)
    assert layer.layers[0].in_channels == 3 and layer.layers[3].in_features == 8 * 14 * 14
    for step in (0, 7, 15):
        assert torch.allclose(out[:, step], layer.layers(frames[:, step]), atol=1e-6)


@pytest.mark.parametrize(
    "inner",
    [
        pytest.param(lambda: nn.Linear(5, 3), id="nn.Linear"),
        pytest.param(lambda: L.Sequential(L.Linear(4), L.ReLU()), id="Sequential"),
        pytest.param(lambda: L.Linear(3), id="Linear"),
    ],
)
def test_any_inner_module(inner: object) -> None:
    out = TimeDistributed(inner())(torch.randn(2, 6, 5))  # type: ignore[operator]
    assert out.shape[:2] == (2, 6)


def test_inner_functional_and_nesting_with_an_lstm() -> None:
    functional = pytest.importorskip("torchx.functional", reason="torchx-functional is not installed")
    Functional, Placeholder = functional.Functional, functional.Placeholder

    x = Placeholder((None, 5))
    inner = Functional(inputs=x, outputs=L.Linear(3)(x) * 2)
    model = L.Sequential(TimeDistributed(inner), LSTM(4, return_sequences=False), L.Linear(1))
    assert model(torch.randn(2, 6, 5)).shape == (2, 1)


def test_lengths_zero_padded_steps() -> None:
    out = TimeDistributed(L.Linear(3))(torch.randn(2, 5, 4), lengths=torch.tensor([5, 2]))
    assert torch.equal(out[1, 2:], torch.zeros(3, 3)) and out[0].abs().sum() > 0


def test_two_dimensional_input_names_the_layout() -> None:
    with pytest.raises(
        ShapeError,
        match=r"^TimeDistributed: expected input of shape \(batch, time, \.\.\.\), at least 3-d, got \(2, 5\)",
    ):
        TimeDistributed(L.Linear(3))(torch.randn(2, 5))


def test_inner_errors_carry_the_path() -> None:
    with pytest.raises(ShapeError, match=r"^TimeDistributed Sequential\[0\] Conv2d"):
        TimeDistributed(L.Conv2d(3, 3))(torch.randn(2, 5, 4))


def test_batchnorm_normalises_over_batch_and_time() -> None:
    layer = TimeDistributed(L.BatchNorm1d())
    x = torch.randn(3, 7, 4) * 5 + 2
    out = layer(x)
    flat = out.reshape(21, 4)
    assert torch.allclose(flat.mean(0), torch.zeros(4), atol=1e-5)


def test_spec_round_trip(fresh_plugins: PluginManager) -> None:
    layer = TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(10))
    spec = layer.to_spec()
    again = L.Layer.from_spec(spec)
    assert again.to_spec() == spec
    frames = torch.randn(2, 3, 3, 8, 8)
    layer(frames)
    again(frames)
    again.load_state_dict(layer.state_dict())
    assert torch.allclose(again(frames), layer(frames))


def test_recurrent_layers_and_time_distributed_in_graphs(fresh_plugins: PluginManager) -> None:
    functional = pytest.importorskip("torchx.functional", reason="torchx-functional is not installed")
    x = functional.Placeholder((None, 10, 8))
    frames = functional.Placeholder((None, 5, 3, 8, 8))
    state = L.GetRNNState("concat")(LSTM(16, return_state=True)(x))
    last = L.GRU(6, return_sequences=False)(TimeDistributed(L.Conv2d(4, 3), L.Flatten(), L.Linear(8))(frames))
    model = functional.Functional(inputs=[x, frames], outputs=[state, last])
    a, b = torch.randn(2, 10, 8), torch.randn(2, 5, 3, 8, 8)
    out_state, out_last = model(a, b)
    assert out_state.shape == (2, 32) and out_last.shape == (2, 6)
    again = L.Layer.from_spec(model.to_spec())
    again.load_state_dict(model.state_dict())
    assert all(torch.allclose(p, q) for p, q in zip(again(a, b), model(a, b), strict=True))


def test_padded_steps_are_zero_even_when_they_hold_inf() -> None:
    x = torch.randn(2, 5, 4)
    x[0, 3:] = float("inf")
    out = TimeDistributed(L.Linear(3))(x, lengths=[3, 5])
    assert torch.equal(out[0, 3:], torch.zeros(2, 3)) and torch.isfinite(out).all()


def test_inner_layers_returning_tuples_are_a_clear_error() -> None:
    with pytest.raises(ShapeError, match=r"returned a tuple, but TimeDistributed unfolds one tensor"):
        TimeDistributed(LSTM(5, return_state=True))(torch.randn(4, 10, 6, 8))


def test_time_distributed_is_an_nnx_module_placed_by_its_scope(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"void": torch.device("meta")}), "static")
    model = L.TimeDistributed(L.Linear(3))
    model(torch.zeros(2, 5, 4))
    assert isinstance(model, nnx.Module)
    with torchx.device_scope("void"):
        assert model(torch.zeros(2, 5, 4)).is_meta


def test_time_distributed_draws_its_layers_in_a_box() -> None:
    pytest.importorskip("graphviz", reason="needs graphviz: pip install graphviz (in the test extra)")
    from torchx.core._graph import model_graph

    model = L.Sequential(TimeDistributed(L.Linear(8), L.ReLU()), LSTM(4, return_sequences=False))
    graph = model_graph(model, (None, 5, 3))
    [sequential] = graph.root.clusters
    [time_distributed] = sequential.clusters
    assert time_distributed.label == "TimeDistributed"
    inside = [graph.nodes[node].label for node in time_distributed.nodes]
    assert inside == ["Linear", "ReLU"]
    assert graph.nodes[time_distributed.nodes[0]].detail == "(None, 8)"  # a folded (batch * time) slice


def test_a_changed_feature_size_names_the_layer_inside() -> None:
    layer = TimeDistributed(L.Linear(4))
    layer(torch.zeros(2, 5, 3))
    with pytest.raises(
        ShapeError,
        match=r"^TimeDistributed Sequential\[0\] Linear: got input \(10, 6\).*in_features=6 \(built with 3\)",
    ):
        layer(torch.zeros(2, 5, 6))


def test_torch_fx_and_torchscript_take_a_built_time_distributed() -> None:
    layer = torchx.build(TimeDistributed(L.Conv2d(4, 3), L.ReLU(), L.Flatten(), L.Linear(5)), (2, 6, 3, 8, 8))
    x = torch.randn(2, 6, 3, 8, 8)
    traced = torch.fx.symbolic_trace(layer, concrete_args={"lengths": None})
    assert torch.equal(traced(x), layer(x))
    scripted = torch.jit.script(layer)
    lengths = torch.tensor([3, 6])
    assert torch.equal(scripted(x, lengths), layer(x, lengths))
    assert list(scripted.state_dict()) == list(layer.state_dict())


@pytest.mark.parametrize(
    ("lengths", "match"),
    [
        (torch.tensor([5, 2, 1]), r"lengths has shape \(3,\), but the batch has 2 samples"),
        (torch.tensor([[5, 2]]), r"lengths has shape \(1, 2\)"),
        (torch.tensor([6, 2]), r"lengths must lie in \[0, 5\]"),
        (torch.tensor([-1, 2]), r"lengths must lie in \[0, 5\]"),
    ],
    ids=case_id,
)
def test_lengths_are_checked_as_the_recurrent_layers_check_them(lengths: torch.Tensor, match: str) -> None:
    with pytest.raises(ShapeError, match=rf"^TimeDistributed: {match}"):
        TimeDistributed(L.Linear(3))(torch.randn(2, 5, 4), lengths=lengths)


def test_a_length_of_zero_zeroes_every_step_of_that_sample() -> None:
    x = torch.randn(2, 5, 4)
    out = TimeDistributed(L.Linear(3))(x, lengths=torch.tensor([0, 5]))
    assert torch.equal(out[0], torch.zeros(5, 3)) and not torch.equal(out[1], torch.zeros(5, 3))
