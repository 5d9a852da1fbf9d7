"""Configs edited by hand: refused with their place, or converted in time linear in the file; and legal
Keras that a converter once refused (layers called by keyword, layers named like module attributes)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from keras_files import with_config
from keras_parity import keras, layers

import torchx
import torchx.keras
import torchx.keras._model as keras_model
from torchx.cli import main
from torchx.core import SpecError, from_spec


def saved(model: Any, tmp_path: Path) -> Path:
    path = tmp_path / f"{model.name}.keras"
    model.save(path)
    return path


def layer_config(config: dict[str, Any], index: int) -> dict[str, Any]:
    return config["config"]["layers"][index]["config"]  # type: ignore[no-any-return]


def edited(tmp_path: Path, model: Any, index: int, **values: Any) -> Path:
    """The saved model with ``values`` written into the config of its layer ``index`` (0: the Input)."""
    return with_config(saved(model, tmp_path), lambda config: layer_config(config, index).update(values))


def image_model(*body: Any) -> Any:
    return keras.Sequential([keras.Input((8, 8, 3)), *body], name="image")


# -- numbers that are not sizes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "index", "values", "message"),
    [
        (lambda: keras.Sequential([keras.Input((4,)), layers.RepeatVector(3)]), 1, {"n": math.inf}, "n=inf"),
        (lambda: image_model(layers.Conv2D(4, 3)), 1, {"filters": math.inf}, "filters=inf"),
        (lambda: image_model(layers.Conv2D(4, 3)), 1, {"filters": 0}, "filters=0"),
        (lambda: image_model(layers.Conv2D(4, 3, padding="same")), 1, {"strides": [0, 0]}, r"strides=\[0, 0\]"),
        (lambda: image_model(layers.MaxPooling2D(2, padding="same")), 1, {"strides": 0}, "strides=0"),
        (lambda: image_model(layers.Cropping2D(1)), 1, {"cropping": [[-1, 0], [0, 0]]}, "sizes >= 0"),
        (lambda: image_model(layers.Cropping2D(1)), 1, {"cropping": [[4, 4], [0, 0]]}, "nothing would be left"),
        (lambda: image_model(layers.ZeroPadding2D(1)), 1, {"padding": [[-2, 0], [1, 1]]}, "sizes >= 0"),
        (lambda: image_model(layers.BatchNormalization()), 1, {"axis": 7}, "axis=7 is not an axis"),
        (lambda: image_model(layers.BatchNormalization()), 1, {"axis": [math.inf]}, "axis=inf"),
        (lambda: keras.Sequential([keras.Input((4,)), layers.Dense(2)]), 1, {"units": -3}, "units=-3"),
    ],
    ids=[
        "repeat-inf", "filters-inf", "filters-0", "strides-0-same", "pool-strides-0", "negative-crop",
        "crop-all", "negative-pad", "batchnorm-axis-7", "batchnorm-axis-inf", "negative-units",
    ],
)  # fmt: skip
def test_a_number_that_is_not_a_size_is_refused_with_its_place(
    tmp_path: Path, model: Any, index: int, values: dict[str, Any], message: str
) -> None:
    path = edited(tmp_path, model(), index, **values)
    with pytest.raises(SpecError, match=rf"layers\[{index}\] \(\w+ \"\w+\"\).*{message}"):
        torchx.keras.load(path)


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: OverflowError and ZeroDivisionError tracebacks from `torchx from-keras`.
    for values in ({"filters": math.inf}, {"strides": 0, "padding": "same"}):
        path = edited(tmp_path, image_model(layers.Conv2D(4, 3)), 1, **values)
        assert main(["from-keras", str(path), "-o", str(tmp_path / "out.yaml")]) == 1
        error = capsys.readouterr().err
        assert "Traceback" not in error
        assert error.count("\n") == 1
        assert 'layers[1] (Conv2D "conv2d' in error


def test_a_concatenate_axis_out_of_range_is_refused(tmp_path: Path) -> None:
    inputs = keras.Input((4, 3))
    model = keras.Model(inputs, layers.Concatenate(name="cat")([inputs, inputs]), name="cat")
    path = edited(tmp_path, model, 1, axis=5)
    with pytest.raises(SpecError, match=r'Concatenate "cat".*axis=5 is not an axis of its rank-3 input'):
        torchx.keras.load(path)


# -- sizes checked before allocating ------------------------------------------------------------


def test_an_attention_layer_is_sized_before_it_allocates(tmp_path: Path) -> None:
    # Before: MultiHeadAttention is called with a keyword argument, which skipped the size check: a
    # 999-byte file allocated 300 MiB (key_dim=4096) before its weights were refused.
    inputs = keras.Input((2, 4))
    model = keras.Model(inputs, layers.MultiHeadAttention(1, 4, name="attention")(inputs, inputs), name="mha")

    def huge(config: dict[str, Any]) -> None:
        layer_config(config, 0)["batch_shape"] = [None, 2, 4096]
        layer_config(config, 1).update(key_dim=4096, value_dim=4096)

    with pytest.raises(
        SpecError, match=r'MultiHeadAttention "attention".*makes a torch layer of [\d,]+ bytes'
    ):
        torchx.keras.load(with_config(saved(model, tmp_path), huge))


# -- config order ---------------------------------------------------------------------------------


def activation_chain(count: int) -> Any:
    inputs = keras.Input((3,))
    x = inputs
    for _ in range(count):
        x = layers.Activation("relu")(x)
    return keras.Model(inputs, x, name="chain")


def test_a_config_in_reverse_order_is_resolved_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: one node resolved per pass over the waiting ones (quadratic: 2,000 layers 21 s vs 0.5 s).
    count = 200
    path = saved(activation_chain(count), tmp_path)

    def reverse(config: dict[str, Any]) -> None:
        first, *rest = config["config"]["layers"]
        config["config"]["layers"] = [first, *reversed(rest)]

    reads = 0
    references = keras_model._references

    def counted(value: Any) -> Any:
        nonlocal reads
        reads += 1
        return references(value)

    monkeypatch.setattr(keras_model, "_references", counted)
    ordered, reversed_ = torchx.keras.load(path), torchx.keras.load(with_config(path, reverse))
    assert reads <= 2 * 4 * count  # a few reads per node and order, not one per node per pass
    x = torch.randn(2, 3)
    torch.testing.assert_close(reversed_(x), ordered(x))


def test_a_cycle_in_the_config_is_refused(tmp_path: Path) -> None:
    path = saved(activation_chain(3), tmp_path)

    def cycle(config: dict[str, Any]) -> None:
        first = config["config"]["layers"][1]["inbound_nodes"][0]["args"][0]["config"]
        first["keras_history"] = [config["config"]["layers"][3]["name"], 0, 0]

    with pytest.raises(SpecError, match="form a cycle"):
        torchx.keras.load(with_config(path, cycle))


# -- legal Keras once refused ---------------------------------------------------------------------


def test_layers_called_by_keyword_convert(converted) -> None:
    # Before: "not enough values to unpack" (Dense) and "merges at least 2 tensors, got 0" (Add).
    inputs = keras.Input((5, 4), name="x")
    hidden = layers.Dense(3, name="dense")(inputs=inputs)
    merged = layers.Add(name="add")(inputs=[hidden, hidden])
    recurrent = layers.LSTM(2, name="lstm")(sequences=merged)
    converted(keras.Model(inputs, recurrent, name="keywords"))


NAMES = ["summary", "type", "eval", "training", "inputs", "cuda", "forward", "state_dict"]


def test_layers_named_like_module_attributes_convert(converted, tmp_path: Path) -> None:
    # Before: "'summary' is an attribute of Functional and nn.Module ... rename the layer" (which needs Keras).
    inputs = keras.Input((4,))
    x = inputs
    for name in NAMES:
        x = layers.Dense(4, name=name)(x)
    model = converted(keras.Model(inputs, x, name="attribute_names"))
    assert [key for key in model.state_dict() if key.endswith(".weight")] == [f"{n}_.weight" for n in NAMES]
    assert callable(model.summary) and model.training is False  # the model's own attributes are intact
    read = from_spec(json.loads(json.dumps(model.to_spec())))
    torchx.build(read, (None, 4))
    read.load_state_dict(model.state_dict())
    x = torch.from_numpy(np.ones((2, 4), dtype="float32"))
    torch.testing.assert_close(read.eval()(x), model(x))
