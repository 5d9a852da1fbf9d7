"""Keras's sequence layers convert with Keras's outputs: recurrent layers, Bidirectional, TimeDistributed, attention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from keras_parity import keras, random_inputs, torch_outputs

import torchx.keras
from torchx.plugin import Layer, SpecError

K = keras.layers
KINDS = {"rnn": K.SimpleRNN, "lstm": K.LSTM, "gru": K.GRU}
OPTIONS = {
    "sequences": {"return_sequences": True},
    "last": {"return_sequences": False},
    "state": {"return_state": True},
    "sequences-state": {"return_sequences": True, "return_state": True},
    "backwards": {"go_backwards": True},
    "backwards-sequences": {"go_backwards": True, "return_sequences": True},
    "no-bias": {"use_bias": False, "return_sequences": True},
}


def sequence_model(layer: Any, steps: int | None = 5, features: int = 4) -> Any:
    """A model of one layer on ``(batch, steps, features)``; a layer returning states gives several outputs."""
    inputs = keras.Input((steps, features))
    return keras.Model(inputs, layer(inputs))


def cases(kinds: dict[str, Any], extra: dict[str, Any] | None = None) -> list[Any]:
    """Every kind with every option of OPTIONS, named ``kind-option``."""
    return [
        pytest.param(kind, {**option, **(extra or {})}, id=f"{name}-{option_name}")
        for name, kind in kinds.items()
        for option_name, option in OPTIONS.items()
    ]


@pytest.mark.parametrize(("kind", "options"), cases(KINDS))
def test_a_recurrent_layer_converts(converted, kind, options) -> None:
    converted(sequence_model(kind(3, **options)))


@pytest.mark.parametrize("options", [pytest.param(o, id=name) for name, o in OPTIONS.items()])
def test_a_gru_with_the_reset_gate_before_converts(converted, options) -> None:
    model = converted(sequence_model(K.GRU(3, reset_after=False, **options)))
    assert any(type(module).__name__ == "GRUResetBeforeModule" for module in model.modules())


@pytest.mark.parametrize(
    "steps",
    [pytest.param(1, id="one-step"), pytest.param(2, id="two-steps"), pytest.param(11, id="eleven-steps")],
)
@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in [*KINDS, "gru-reset-before"]])
def test_sequences_of_any_length_convert(converted, name, steps) -> None:
    layer = (
        K.GRU(4, reset_after=False, return_sequences=True) if name == "gru-reset-before" else KINDS[name](4)
    )
    converted(sequence_model(layer, steps=steps))


def test_a_sequence_of_dynamic_length_converts(converted) -> None:
    model = sequence_model(K.LSTM(3, return_sequences=True), steps=None)
    converted(model, np.random.default_rng(1).standard_normal((2, 7, 4)).astype("float32"))


def test_a_relu_simple_rnn_converts(converted) -> None:
    converted(sequence_model(K.SimpleRNN(3, activation="relu", return_sequences=True)))


def test_keras_single_bias_is_loaded_into_bias_ih_and_bias_hh_stays_frozen_at_zero(converted) -> None:
    model = converted(sequence_model(K.LSTM(3)))
    biases = {name: p for name, p in model.named_parameters() if "bias_hh" in name}
    assert biases and all(not p.requires_grad and not p.any() for p in biases.values())


MERGES = [pytest.param(mode, id=str(mode).lower()) for mode in ("concat", "sum", "mul", "ave", None)]
SEQUENCES = [pytest.param(True, id="sequences"), pytest.param(False, id="last")]


@pytest.mark.parametrize("sequences", SEQUENCES)
@pytest.mark.parametrize("merge_mode", MERGES)
def test_a_bidirectional_lstm_converts_to_one_module(converted, merge_mode, sequences) -> None:
    model = converted(
        sequence_model(K.Bidirectional(K.LSTM(3, return_sequences=sequences), merge_mode=merge_mode))
    )
    assert sum(isinstance(module, torch.nn.LSTM) for module in model.modules()) == 1


@pytest.mark.parametrize(
    "layer",
    [
        pytest.param(lambda: K.GRU(3, return_sequences=True), id="gru"),
        pytest.param(lambda: K.SimpleRNN(3, return_sequences=True), id="rnn"),
        pytest.param(lambda: K.LSTM(3, return_state=True), id="lstm-state"),
        pytest.param(lambda: K.GRU(3, return_sequences=True, return_state=True), id="gru-sequences-state"),
    ],
)
@pytest.mark.parametrize("merge_mode", MERGES)
def test_bidirectional_layers_convert(converted, layer, merge_mode) -> None:
    converted(sequence_model(K.Bidirectional(layer(), merge_mode=merge_mode)))


@pytest.mark.parametrize("sequences", SEQUENCES)
@pytest.mark.parametrize("merge_mode", MERGES)
def test_a_bidirectional_gru_with_the_reset_gate_before_converts_as_two_layers(
    converted, merge_mode, sequences
) -> None:
    layer = K.GRU(3, reset_after=False, return_sequences=sequences)
    converted(sequence_model(K.Bidirectional(layer, merge_mode=merge_mode)))


def test_a_bidirectional_with_a_different_backward_layer_converts_as_two_layers(converted) -> None:
    backward = K.LSTM(2, go_backwards=True, return_sequences=True, use_bias=False)
    layer = K.Bidirectional(K.LSTM(3, return_sequences=True), backward_layer=backward)
    model = converted(sequence_model(layer))
    assert sum(isinstance(module, torch.nn.LSTM) for module in model.modules()) == 2


def test_time_distributed_dense_converts(converted) -> None:
    converted(sequence_model(K.TimeDistributed(K.Dense(5, activation="tanh"))))


def test_time_distributed_conv2d_on_channels_last_frames_converts(converted) -> None:
    inputs = keras.Input((4, 6, 6, 3))
    x = K.TimeDistributed(K.Conv2D(5, 3, padding="same", strides=2, activation="relu"))(inputs)
    converted(keras.Model(inputs, K.TimeDistributed(K.Flatten())(x)))


def test_time_distributed_lstm_over_sequences_of_sequences_converts(converted) -> None:
    inputs = keras.Input((3, 5, 4))
    converted(keras.Model(inputs, K.TimeDistributed(K.LSTM(2, go_backwards=True))(inputs)))


@pytest.mark.parametrize("use_bias", [pytest.param(True, id="bias"), pytest.param(False, id="no-bias")])
def test_self_attention_converts(converted, use_bias) -> None:
    inputs = keras.Input((5, 8))
    converted(keras.Model(inputs, K.MultiHeadAttention(2, 4, use_bias=use_bias)(inputs, inputs)))


def recurrent_stack() -> Any:
    inputs = keras.Input((6, 4))
    x = K.Bidirectional(K.LSTM(3, return_sequences=True))(inputs)
    return keras.Model(inputs, K.GRU(2, reset_after=False, go_backwards=True)(x))


def frames_and_attention() -> Any:
    inputs = keras.Input((3, 4, 4, 2))
    x = K.TimeDistributed(K.Conv2D(2, 3, padding="same"))(inputs)
    x = K.Reshape((3, 32))(x)
    return keras.Model(inputs, K.MultiHeadAttention(4, 8)(x, x))


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(recurrent_stack, id="lstm-and-gru-reset-before"),
        pytest.param(frames_and_attention, id="frames"),
    ],
)
def test_a_converted_model_writes_a_spec_and_reads_it_back(converted, build) -> None:
    keras_model = build()
    model = converted(keras_model)
    again = Layer.from_spec(model.to_spec())
    again.load_state_dict(model.state_dict())
    sample = random_inputs(keras_model, seed=2)
    for want, got in zip(torch_outputs(model, sample), torch_outputs(again.eval(), sample), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


# -- refusals -----------------------------------------------------------------


def load_saved(model: Any, tmp_path: Path) -> Any:
    path = tmp_path / "model.keras"
    model.save(path)
    return torchx.keras.load(path)


@pytest.mark.parametrize(
    ("layer", "match"),
    [
        pytest.param(
            lambda: K.LSTM(3, activation="relu"), "activation='relu' is not supported", id="lstm-relu"
        ),
        pytest.param(lambda: K.SimpleRNN(3, activation="sigmoid"), "activation='sigmoid'", id="rnn-sigmoid"),
        pytest.param(
            lambda: K.GRU(3, recurrent_activation="hard_sigmoid"),
            "recurrent_activation='hard_sigmoid'",
            id="gru-hard-sigmoid",
        ),
        pytest.param(lambda: K.LSTM(3, dropout=0.2), "dropout=0.2 is not supported.*training", id="dropout"),
        pytest.param(
            lambda: K.GRU(3, recurrent_dropout=0.1), "recurrent_dropout=0.1", id="recurrent-dropout"
        ),
        pytest.param(
            lambda: K.Bidirectional(K.LSTM(3, dropout=0.5)),
            r"\.layer.*dropout=0.5",
            id="bidirectional-dropout",
        ),
        pytest.param(
            lambda: K.Bidirectional(K.LSTM(3, go_backwards=True), backward_layer=K.LSTM(3)),
            "forward layer goes backwards",
            id="bidirectional-backwards",
        ),
    ],
)
def test_recurrent_options_torch_cannot_reproduce_are_refused(tmp_path, layer, match) -> None:
    with pytest.raises(SpecError, match=match):
        load_saved(sequence_model(layer()), tmp_path)


def test_a_stateful_layer_is_refused(tmp_path) -> None:
    inputs = keras.Input(batch_shape=(2, 5, 4))
    with pytest.raises(SpecError, match="stateful=True"):
        load_saved(keras.Model(inputs, K.LSTM(3, stateful=True)(inputs)), tmp_path)


def test_an_initial_state_is_refused(tmp_path) -> None:
    inputs, state = keras.Input((5, 4)), keras.Input((3,))
    with pytest.raises(SpecError, match="initial state"):
        load_saved(keras.Model([inputs, state], K.GRU(3)(inputs, initial_state=[state])), tmp_path)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(
            lambda x, y: K.MultiHeadAttention(2, 4)(x, y), "only self-attention", id="cross-attention"
        ),
        pytest.param(
            lambda x, y: K.MultiHeadAttention(2, 3)(x, x), "num_heads \\* key_dim = 6", id="key-dim"
        ),
        pytest.param(
            lambda x, y: K.MultiHeadAttention(2, 4, value_dim=2)(x, x), "value_dim = 2", id="value-dim"
        ),
        pytest.param(
            lambda x, y: K.MultiHeadAttention(2, 4, output_shape=(3,))(x, x),
            "output_shape",
            id="output-shape",
        ),
        pytest.param(
            lambda x, y: K.MultiHeadAttention(2, 4)(x, x, use_causal_mask=True),
            "use_causal_mask",
            id="causal",
        ),
    ],
)
def test_attention_torch_cannot_reproduce_is_refused(tmp_path, call, match) -> None:
    x, y = keras.Input((5, 8)), keras.Input((7, 8))
    with pytest.raises(SpecError, match=match):
        load_saved(keras.Model([x, y], call(x, y)), tmp_path)
