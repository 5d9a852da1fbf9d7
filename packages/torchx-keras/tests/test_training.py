"""One SGD step in Keras and one in torch on the converted model land on the same weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from keras_parity import keras

import torchx.keras

K = keras.layers


def small_cnn() -> Any:
    model = keras.Sequential([
        keras.Input((8, 8, 3)), K.Conv2D(4, 3, padding="same", activation="relu"),
        K.BatchNormalization(momentum=0.9), K.MaxPooling2D(), K.Flatten(), K.Dense(5),
    ])  # fmt: skip
    generator = np.random.default_rng(0)
    for variable in model.weights:  # nothing left at its initial zeros or ones
        value = generator.standard_normal(tuple(variable.shape)).astype("float32") * 0.3
        variable.assign(np.abs(value) + 0.5 if "variance" in variable.path else value)
    return model


def convert(model: Any, path: Path) -> torch.nn.Module:
    model.save(path)
    return torchx.keras.load(path)


States = tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor], Any]
BATCH, VALUES_PER_CHANNEL = 6, 6 * 8 * 8


@pytest.fixture
def stepped(tmp_path: Path) -> States:
    """The converted model's state after a torch SGD step, the state Keras's step converts to, and the first."""
    model = small_cnn()
    torch_model = convert(model, tmp_path / "before.keras").train()
    first = {name: tensor.clone() for name, tensor in torch_model.state_dict().items()}
    generator = np.random.default_rng(1)
    x = generator.standard_normal((BATCH, 8, 8, 3)).astype("float32")
    y = generator.standard_normal((BATCH, 5)).astype("float32")

    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    model.train_on_batch(x, y)

    optimizer = torch.optim.SGD(torch_model.parameters(), lr=0.1)
    optimizer.zero_grad()
    torch.nn.MSELoss()(torch_model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    optimizer.step()
    # Keras's trained variables through the converter's mapping (proven by test_layers): its own layout, moved.
    keras_state = convert(model, tmp_path / "after.keras").state_dict()
    return torch_model.state_dict(), keras_state, first, model


def test_one_sgd_step_matches_keras(stepped: States) -> None:
    torch_state, keras_state, *_ = stepped
    assert torch_state.keys() == keras_state.keys()
    parameters = [
        name
        for name in torch_state
        if not name.endswith(("running_mean", "running_var", "num_batches_tracked"))
    ]
    assert len(parameters) == 6  # conv kernel and bias, BN scale and offset, dense kernel and bias
    for name in parameters:
        torch.testing.assert_close(torch_state[name], keras_state[name], rtol=0, atol=1e-5, msg=name)


def test_stepped_weights_in_keras_layout(stepped: States) -> None:
    """The same, read straight off the Keras variables: the conv kernel moved back to (h, w, in, out)."""
    torch_state, _, _, model = stepped
    conv, norm, _, _, dense = model.layers
    expected = {
        "weight": conv.kernel, "bias": conv.bias, "gamma": norm.gamma, "beta": norm.beta, "dense_bias": dense.bias,
    }  # fmt: skip
    got = {
        "weight": torch_state[f"{conv.name}.weight"].permute(2, 3, 1, 0), "bias": torch_state[f"{conv.name}.bias"],
        "gamma": torch_state[f"{norm.name}.weight"], "beta": torch_state[f"{norm.name}.bias"],
        "dense_bias": torch_state[f"{dense.name}.bias"],
    }  # fmt: skip
    for key, variable in expected.items():
        want = torch.as_tensor(np.asarray(keras.ops.convert_to_numpy(variable)))
        torch.testing.assert_close(got[key], want, rtol=0, atol=1e-5, msg=key)


def test_batch_norm_moving_mean_matches_keras(stepped: States) -> None:
    """torch's momentum is 1 - Keras's, so the moving mean takes the same step."""
    torch_state, keras_state, *_ = stepped
    (name,) = [name for name in torch_state if name.endswith("running_mean")]
    torch.testing.assert_close(torch_state[name], keras_state[name], rtol=0, atol=1e-5)


def test_batch_norm_moving_variance_differs_by_bessel(
    stepped: States,
) -> None:
    """Keras moves its variance towards the batch's biased variance, torch towards the unbiased one.

    A converted model trained further in torch drifts from Keras's moving variance by that factor
    (n / (n - 1), n = the values per channel in a batch); inference with the converted statistics is exact.
    """
    torch_state, keras_state, first, _ = stepped
    (name,) = [name for name in torch_state if name.endswith("running_var")]
    keep = 0.9  # Keras's momentum: the share of the old moving variance kept
    biased = (keras_state[name] - keep * first[name]) / (1 - keep)
    unbiased = biased * VALUES_PER_CHANNEL / (VALUES_PER_CHANNEL - 1)
    torch.testing.assert_close(
        torch_state[name], keep * first[name] + (1 - keep) * unbiased, rtol=0, atol=1e-5
    )
    assert not torch.allclose(torch_state[name], keras_state[name], rtol=0, atol=1e-5)
