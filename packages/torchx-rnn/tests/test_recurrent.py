"""Recurrent layers: parity with torch, output selection, lengths, helpers, bad input."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import torchx
import torchx.layers as L
from torchx.core import ArgumentError, PluginManager, ShapeError, SpecError
from torchx.rnn import GRU, LSTM, RNN, GetRNNOutput, GetRNNState, GRUCell, LSTMCell, RNNCell, TimeDistributed

CASES = [
    pytest.param(
        lambda: RNN(12, num_layers=2, nonlinearity="relu"),
        lambda: nn.RNN(8, 12, 2, nonlinearity="relu", batch_first=True),
        id="RNN",
    ),
    pytest.param(
        lambda: LSTM(12, bidirectional=True, proj_size=5),
        lambda: nn.LSTM(8, 12, bidirectional=True, proj_size=5, batch_first=True),
        id="LSTM",
    ),
    pytest.param(
        lambda: GRU(12, num_layers=2, dropout=0.0, bias=False),
        lambda: nn.GRU(8, 12, 2, bias=False, batch_first=True),
        id="GRU",
    ),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize(("make", "make_native"), CASES)
def test_same_seed_same_weights_keys_and_outputs_as_torch(make: object, make_native: object) -> None:
    x = torch.randn(3, 7, 8)
    torch.manual_seed(1)
    native = make_native()  # type: ignore[operator]
    torch.manual_seed(1)
    layer = torchx.build(make(), x)  # type: ignore[operator]
    assert type(layer) is type(native)
    assert list(layer.state_dict()) == list(native.state_dict())
    assert all(
        torch.equal(a, b)
        for a, b in zip(layer.state_dict().values(), native.state_dict().values(), strict=True)
    )
    assert torch.allclose(layer(x), native(x)[0])
    native.load_state_dict(layer.state_dict())


@pytest.mark.parametrize(
    ("make", "native"),
    [(lambda: RNNCell(6), nn.RNNCell), (lambda: LSTMCell(6), nn.LSTMCell), (lambda: GRUCell(6), nn.GRUCell)],
)
def test_cells_infer_input_size(make: object, native: type) -> None:
    x = torch.randn(5, 4)
    torch.manual_seed(2)
    reference = native(4, 6)
    torch.manual_seed(2)
    out = make()(x)  # type: ignore[operator]
    expected = reference(x)
    assert torch.allclose(
        out[0] if isinstance(out, tuple) else out, expected[0] if isinstance(expected, tuple) else expected
    )


def test_last_step_of_a_bidirectional_layer_is_forward_last_and_backward_first() -> None:
    x = torch.randn(3, 7, 8)
    layer = LSTM(5, bidirectional=True, return_sequences=False)
    last = layer(x)
    full = nn.LSTM.forward(layer, x)[0]
    assert last.shape == (3, 10)
    assert torch.allclose(last[:, :5], full[:, -1, :5]) and torch.allclose(last[:, 5:], full[:, 0, 5:])


def test_return_state_initial_state_and_batch_first_false() -> None:
    layer = LSTM(5, return_state=True, batch_first=False)
    x = torch.randn(7, 3, 8)
    output, (h, c) = layer(x, (torch.zeros(1, 3, 5), torch.zeros(1, 3, 5)))
    assert output.shape == (7, 3, 5) and h.shape == (1, 3, 5) and c.shape == (1, 3, 5)


def test_lengths_give_each_sample_its_own_last_step() -> None:
    layer = GRU(4, return_sequences=False)
    x = torch.randn(3, 6, 2)
    lengths = torch.tensor([6, 2, 4])
    last = layer(x, lengths=lengths)
    for index, length in enumerate(lengths.tolist()):
        expected = layer(x[index : index + 1, :length])  # the same layer on the unpadded sample
        assert torch.allclose(last[index], expected[0], atol=1e-6)
    padded = GRU(4)
    padded(x)
    out = padded(x, lengths=lengths)
    assert torch.equal(out[1, 2:], torch.zeros(4, 4))


def test_packed_sequences_work_as_in_torch() -> None:
    layer = LSTM(4, return_sequences=False)
    x = torch.randn(3, 6, 2)
    packed = pack_padded_sequence(x, torch.tensor([6, 5, 2]), batch_first=True)
    assert layer(packed).shape == (3, 4)
    assert layer.input_size == 2


def test_helpers_chain_recurrent_layers_in_sequential() -> None:
    x = torch.randn(3, 6, 2)
    for mode, width in (("h", 8), ("c", 8), ("concat", 16)):
        model = L.Sequential(LSTM(4, bidirectional=True, return_state=True), GetRNNState(mode))
        assert model(x).shape == (3, width)
    assert L.Sequential(GRU(4, return_state=True), GetRNNOutput(), L.Linear(2))(x).shape == (3, 6, 2)


def test_bad_input() -> None:
    with pytest.raises(ShapeError, match=r"^LSTM: expected input of shape \(batch, time, features\)"):
        LSTM(4)(torch.randn(6, 2))
    model = L.Sequential(LSTM(4))
    model(torch.randn(3, 6, 2))
    with pytest.raises(
        ShapeError, match=r"^Sequential\[0\] LSTM: got input \(3, 6, 5\).*input_size=5 \(built with 2\)"
    ):
        model(torch.randn(3, 6, 5))
    with pytest.raises(RuntimeError, match="input_size"):
        model[0](torch.randn(3, 6, 5))  # a bare built layer raises torch's own error
    with pytest.raises(ArgumentError, match="GetRNNState: mode must be one of 'h', 'c', 'concat'"):
        GetRNNState("x")  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="give the recurrent layer before it return_state=True"):
        L.Sequential(LSTM(4, return_sequences=False), GetRNNState())(torch.randn(3, 6, 2))
    with pytest.raises(ShapeError, match=r"needs an LSTM's \(h, c\) state"):
        L.Sequential(GRU(4, return_state=True), GetRNNState("c"))(torch.randn(3, 6, 2))


def test_specs_round_trip_and_the_facade(fresh_plugins: PluginManager) -> None:
    assert L.LSTM is LSTM and L.TimeDistributed is TimeDistributed
    for layer in (RNN(3, nonlinearity="relu"), LSTM(3, proj_size=2, return_state=True), GRU(3, bidirectional=True),
                  RNNCell(3), LSTMCell(3), GRUCell(3), GetRNNOutput(), GetRNNState("concat")):  # fmt: skip
        spec = layer.to_spec()
        assert L.Layer.from_spec(spec).to_spec() == spec


def test_lengths_may_be_a_list_and_deep_bidirectional_last_steps_are_the_last_layer() -> None:
    x = torch.randn(3, 6, 2)
    layer = LSTM(4, num_layers=2, bidirectional=True, return_sequences=False, batch_first=False)
    last = layer(x.transpose(0, 1))
    full = nn.LSTM.forward(layer, x.transpose(0, 1))[0]
    assert torch.allclose(last[:, :4], full[-1, :, :4]) and torch.allclose(last[:, 4:], full[0, :, 4:])
    assert GRU(4)(x, lengths=[6, 2, 4]).shape == (3, 6, 4)
    assert TimeDistributed(L.Linear(3))(x, lengths=[6, 2, 4])[1, 2:].abs().sum() == 0


def test_lengths_that_do_not_fit_the_batch_are_shape_errors() -> None:
    layer = LSTM(4, return_sequences=False)
    x = torch.randn(4, 10, 8)
    with pytest.raises(ShapeError, match=r"lengths has shape \(2,\), but the batch has 4 samples"):
        layer(x, lengths=[10, 10])
    with pytest.raises(ShapeError, match=r"lengths must lie in \[1, 10\]"):
        layer(x, lengths=[10, 0, 3, 11])


def test_layers_called_with_lengths_build_on_meta() -> None:
    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = LSTM(5)

        def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            return self.rnn(x, lengths=lengths)

    model = torchx.build(Tagger(), (None, None, 8), torch.tensor([3, 10, 5, 1]))
    assert model.rnn.input_size == 8
    assert model(torch.randn(4, 10, 8), torch.tensor([3, 10, 5, 1])).shape == (4, 10, 5)


def test_summarize_shows_nested_recurrent_outputs() -> None:
    model = L.Sequential(L.LSTM(8, return_state=True), L.GetRNNState("h"))
    summary = torchx.summarize(model, (None, 5, 3))
    rows = {row.path: row.output_shape for row in summary.rows}
    assert rows["0"] == ((None, 5, 8), ((1, None, 8), (1, None, 8)))
    assert rows["1"] == (None, 8)
    assert "[(None, 5, 8), [(1, None, 8), (1, None, 8)]]" in str(summary)


@pytest.mark.parametrize(("make_layer", "make_native"), CASES)
def test_a_native_state_dict_builds_the_layer_without_an_input(make_layer, make_native) -> None:
    native, layer = make_native(), make_layer()
    assert [name for name, _ in layer.named_parameters()] == [name for name, _ in native.named_parameters()]
    layer.load_state_dict(native.state_dict())
    x = torch.randn(3, 6, 8)
    assert torch.equal(layer(x), native(x)[0])
    cell = LSTMCell(5)
    cell.load_state_dict(nn.LSTMCell(7, 5).state_dict())
    assert type(cell) is nn.LSTMCell and cell.input_size == 7


def test_torch_style_calls_are_refused_with_the_fix() -> None:
    with pytest.raises(
        ArgumentError, match=r"LSTM infers input_size from its input; drop 16 .*\n  fix: write LSTM\(32\)"
    ):
        LSTM(16, 32)  # type: ignore[misc]
    with pytest.raises(
        ArgumentError, match=r"LSTM infers input_size .*\n  fix: write LSTM\(32, num_layers=2\)"
    ):
        LSTM(16, 32, 2)  # type: ignore[misc]
    with pytest.raises(ArgumentError, match=r"GRU: dropout must be a number in \[0\.0, 1\.0\), got 1\.0"):
        GRU(4, dropout=1.0)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: LSTM(8), id="LSTM"),
        pytest.param(
            lambda: LSTM(8, return_sequences=False, bidirectional=True), id="LSTM-last-bidirectional"
        ),
        pytest.param(lambda: LSTM(8, return_state=True), id="LSTM-state"),
        pytest.param(lambda: GRU(8, return_sequences=False), id="GRU-last"),
        pytest.param(lambda: RNN(8, return_state=True, num_layers=2), id="RNN-state-2-layers"),
    ],
)
def test_built_recurrent_layers_script_where_torchs_do(make) -> None:
    model = torchx.build(L.Sequential(make()), (2, 5, 4)).eval()
    scripted = torch.jit.script(model)
    x = torch.randn(2, 5, 4)
    expected, got = model(x), scripted(x)

    def first(value: object) -> object:
        return value[0] if isinstance(value, tuple) else value

    assert torch.equal(first(got), first(expected))
    assert type(got) is type(expected)


def test_the_signature_offers_torchs_arguments() -> None:
    import inspect

    for layer, native in ((LSTM, nn.LSTM), (GRU, nn.GRU), (RNN, nn.RNN)):
        mine = inspect.signature(layer.__init__).parameters
        for name in layer.torch_positional:
            assert name in mine, (layer.__name__, name)
        documented = set(inspect.signature(layer).parameters) - set(layer.torch_positional)
        assert documented == {"return_sequences", "return_state", "device", "dtype", "name"}, documented
        assert mine["batch_first"].default is True  # the deliberate difference: batches first
        assert native(4, 3).batch_first is False


class _IndexesTheState(nn.Module):
    """Hand-written code that unpacks what a recurrent layer returns: it scripts
    only when the scripted layer's output is typed."""

    def __init__(self, lstm: nn.Module, gru: nn.Module) -> None:
        super().__init__()
        self.lstm, self.gru = lstm, gru

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, c) = self.lstm(x)
        last, state = self.gru(x)
        return out[:, -1] + h[0] + c[0] + last + state[-1]


def test_scripted_recurrent_layers_return_typed_outputs_and_states() -> None:
    lstm = torchx.build(LSTM(6, return_state=True), (2, 5, 4))
    gru = torchx.build(GRU(6, return_sequences=False, return_state=True), (2, 5, 4))
    model = _IndexesTheState(lstm, gru).eval()
    x = torch.randn(2, 5, 4)
    assert torch.allclose(torch.jit.script(model)(x), model(x))


@pytest.mark.parametrize("layer", [RNN, LSTM, GRU], ids=["RNN", "LSTM", "GRU"])
def test_a_spec_cannot_stall_its_loader_with_num_layers(layer: type[L.Layer]) -> None:
    # torch's constructor takes time quadratic in num_layers: a million layers ran for many minutes
    spec = {"type": layer.__name__, "args": {"hidden_size": 11, "num_layers": 1_000_000}}
    with pytest.raises(SpecError, match=r"\$.args.num_layers: expected an int in \[1, 1024\], got 1000000"):
        L.Layer.from_spec(spec)
    assert layer(4, num_layers=1024).arguments["num_layers"] == 1024
