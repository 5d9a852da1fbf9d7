from __future__ import annotations

from keras_parity import keras


def test_a_small_cnn_converts(converted) -> None:
    K = keras.layers
    inputs = keras.Input((8, 8, 3))
    x = K.Conv2D(4, 3, padding="same", strides=2, activation="relu")(inputs)
    x = K.BatchNormalization()(x)
    x = K.Flatten()(K.MaxPooling2D()(x))
    converted(keras.Model(inputs, K.Dense(5, activation="softmax")(K.Dropout(0.5)(x))))
