"""What used to convert into a silently different model: layouts, dtypes and frozen layers.

Each case is a Keras model saved by Keras 3 (torch backend) whose conversion once ran without a word
and computed something else; now it matches Keras, or it is refused with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from keras_files import with_config
from keras_parity import keras, keras_outputs, layers, torch_outputs

import torchx
import torchx.keras
from torchx.core import SpecError, from_spec


def saved(model: Any, tmp_path: Path) -> Path:
    path = tmp_path / f"{model.name}.keras"
    model.save(path)
    return path


# -- layouts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(lambda: [layers.Flatten(data_format="channels_first")], id="flatten-of-the-input"),
        pytest.param(
            lambda: [layers.Conv2D(4, 3), layers.Flatten(data_format="channels_first")],
            id="flatten-of-a-conv",
        ),
        pytest.param(
            lambda: [layers.Permute((2, 1, 3)), layers.Flatten(data_format="channels_first")],
            id="flatten-of-a-permute",
        ),
    ],
)
def test_flatten_channels_first_flattens_as_keras_does(converted, body: Any) -> None:
    # Before: data_format was ignored, so the Dense read its features in another order (off by up to 4.9).
    converted(keras.Sequential([keras.Input((3, 8, 8)), *body(), layers.Dense(5)], name="flat_cf"))


def test_a_layer_with_a_data_format_it_cannot_take_is_refused(tmp_path: Path) -> None:
    model = keras.Sequential([keras.Input((4, 6, 6)), layers.SpatialDropout2D(0.5), layers.Flatten()])
    model.layers[0].data_format = "channels_first"  # SpatialDropout2D: read from the config, never guessed
    with pytest.raises(SpecError, match=r"SpatialDropout2D.*data_format='channels_first' is not supported"):
        torchx.keras.load(saved(model, tmp_path))


# -- dtypes ---------------------------------------------------------------------------------------


def test_a_float16_input_feeding_float32_layers_is_cast_as_keras_casts_it(tmp_path: Path) -> None:
    # Before: the whole model was built in float16 (kernels rounded, output float16, off by ~0.009).
    model = keras.Sequential([keras.Input((16,), dtype="float16"), layers.Dense(8), layers.Dense(3)])
    converted = torchx.keras.load(saved(model, tmp_path)).eval()
    x = np.random.default_rng(0).standard_normal((4, 16)).astype("float16")
    assert {p.dtype for p in converted.parameters()} == {torch.float32}
    assert converted(torch.from_numpy(x)).dtype == torch.float32
    np.testing.assert_allclose(torch_outputs(converted, x)[0], keras_outputs(model, x)[0], atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_a_layer_policy_keeps_its_variables_and_computation_in_its_dtype(tmp_path: Path, dtype: str) -> None:
    model = keras.Sequential([keras.Input((16,)), layers.Dense(8, dtype=dtype), layers.Dense(3)])
    x = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    converted = torchx.keras.load(saved(model, tmp_path)).eval()  # bfloat16 weights read as bfloat16
    torch_dtype = getattr(torch, dtype)
    assert converted.get_submodule(model.layers[0].name).weight.dtype == torch_dtype
    assert converted.get_submodule(model.layers[1].name).weight.dtype == torch.float32
    expected = keras_outputs(model, x)[0]
    tolerance = {"float16": 1e-2, "bfloat16": 5e-2, "float64": 1e-5}[dtype]
    np.testing.assert_allclose(torch_outputs(converted, x)[0], expected, atol=tolerance)


def test_a_float16_embedding_keeps_its_table_in_float16(tmp_path: Path) -> None:
    model = keras.Sequential([keras.Input((5,), dtype="int32"), layers.Embedding(10, 4, dtype="float16")])
    converted = torchx.keras.load(saved(model, tmp_path)).eval()
    ids = np.array([[1, 2, 3, 4, 9]], dtype="int32")
    (out,) = torch_outputs(converted, ids)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, keras_outputs(model, ids)[0])


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_a_mixed_precision_policy_is_refused_with_the_reason(tmp_path: Path, policy: str) -> None:
    # Before: read as float32, so the converted Dense returned float32 where Keras returns float16 (off by 0.047).
    model = keras.Sequential([keras.Input((16,)), layers.Dense(16, dtype=policy, name="mixed")])
    with pytest.raises(SpecError, match=rf'Dense "mixed".*{policy}.*mixed precision.*torch.autocast'):
        torchx.keras.load(saved(model, tmp_path))


def test_a_policy_it_does_not_know_is_refused(tmp_path: Path) -> None:
    path = saved(keras.Sequential([keras.Input((4,)), layers.Dense(2, name="d")]), tmp_path)

    def quantized(config: dict[str, Any]) -> None:
        config["config"]["layers"][1]["config"]["dtype"]["config"]["name"] = "int8_from_float32"

    with pytest.raises(SpecError, match=r"dtype policy 'int8_from_float32' is not supported"):
        torchx.keras.load(with_config(path, quantized))


# -- frozen layers --------------------------------------------------------------------------------


def frozen_model() -> Any:
    """A Dense and a BatchNormalization frozen, as a fine-tuning user freezes a base, and a trained head."""
    inputs = keras.Input((16,))
    base = layers.Dense(8, name="base")
    norm = layers.BatchNormalization(name="norm")
    head = layers.Dense(3, name="head")
    model = keras.Model(inputs, head(norm(base(inputs))), name="frozen")
    generator = np.random.default_rng(2)
    norm.moving_mean.assign(generator.standard_normal(8).astype("float32"))
    norm.moving_variance.assign(generator.uniform(0.5, 2.0, 8).astype("float32"))
    base.trainable = norm.trainable = False
    return model


def test_frozen_layers_stay_frozen(converted) -> None:
    # Before: every parameter had requires_grad=True ("frozen 0"); the fixture compares trainable counts.
    model = converted(frozen_model())
    frozen = sorted(name for name, p in model.named_parameters() if not p.requires_grad)
    assert frozen == ["base.bias", "base.weight", "norm.bias", "norm.weight"]
    assert "frozen 152" in str(model.summary())


def test_a_frozen_batch_norm_uses_its_moving_statistics_in_training_as_keras_does(tmp_path: Path) -> None:
    # Before: it normalized with the batch's statistics in training mode and updated them (off by 1.03).
    model = frozen_model()
    converted = torchx.keras.load(saved(model, tmp_path)).train()
    norm = converted.get_submodule("norm")
    before = norm.running_mean.clone()
    x = np.random.default_rng(3).standard_normal((6, 16)).astype("float32")
    expected = np.asarray(model(x, training=True).detach())
    with torch.no_grad():
        got = converted(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert torch.equal(norm.running_mean, before)


def test_a_frozen_nested_model_freezes_its_layers(converted) -> None:
    inner = keras.Sequential([keras.Input((6,)), layers.Dense(5), layers.BatchNormalization()], name="inner")
    inner.trainable = False
    inputs = keras.Input((6,))
    model = keras.Model(inputs, layers.Dense(2)(inner(inputs)), name="outer")
    result = converted(model)  # the fixture checks the trainable count against Keras's
    assert not any(p.requires_grad for p in result.get_submodule("inner").parameters())


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_frozen_layers_survive_a_spec_round_trip(tmp_path: Path, kind: str) -> None:
    converted = torchx.keras.load(saved(frozen_model(), tmp_path))
    spec = converted.to_spec()
    text = json.dumps(spec) if kind == "json" else yaml.safe_dump(spec)
    read = from_spec(json.loads(text) if kind == "json" else yaml.safe_load(text))
    torchx.build(read, (None, 16))
    read.load_state_dict(converted.state_dict())
    assert {n: p.requires_grad for n, p in read.named_parameters()} == {
        n: p.requires_grad for n, p in converted.named_parameters()
    }
    x = torch.randn(5, 16)
    read.train()
    converted.train()
    torch.testing.assert_close(read(x), converted(x), rtol=0, atol=0)
