"""Whole Keras applications (random weights, no download) convert and match Keras."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from keras_parity import keras

SHAPE = (64, 64, 3)
"""Small inputs keep the run short; every application here accepts 64x64 with weights=None."""


def randomize_batch_norms(model: Any, seed: int = 0) -> Any:
    """Random moving statistics, scales and offsets, so that every BatchNormalization is actually tested."""
    generator = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            channels = tuple(layer.moving_mean.shape)
            layer.moving_mean.assign(generator.normal(0.0, 0.1, channels).astype("float32"))
            layer.moving_variance.assign(generator.uniform(0.5, 1.5, channels).astype("float32"))
            layer.gamma.assign(generator.uniform(0.8, 1.2, channels).astype("float32"))
            layer.beta.assign(generator.normal(0.0, 0.1, channels).astype("float32"))
    return model


APPLICATIONS: list[Any] = [
    pytest.param(lambda: keras.applications.ResNet50, id="resnet50"),
    pytest.param(lambda: keras.applications.MobileNetV2, id="mobilenetv2"),
    pytest.param(lambda: keras.applications.DenseNet121, id="densenet121"),
]


@pytest.mark.parametrize("application", APPLICATIONS)
def test_application(converted, application: Callable[[], Any]) -> None:
    # classifier_activation=None: the logits are compared, which a softmax would flatten towards 1/classes.
    model = application()(weights=None, input_shape=SHAPE, classes=10, classifier_activation=None)
    randomize_batch_norms(model)
    inputs = np.random.default_rng(1).standard_normal((2, *SHAPE)).astype("float32")
    converted(model, inputs)
