"""Every non-recurrent converter against Keras's own outputs, in small models with random weights."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from keras_parity import keras, random_inputs

from torchx.keras._convert_core import ACTIVATIONS
from torchx.plugin import Layer, SpecError

K = keras.layers
Build = Callable[[], Any]


def randomize(model: Any, seed: int = 1) -> Any:
    """Every variable random (zero biases, unit scales and zero slopes would hide a misplaced weight)."""
    generator = np.random.default_rng(seed)
    for variable in model.weights:
        value = generator.standard_normal(tuple(variable.shape)).astype("float32") * 0.5
        if "variance" in variable.path:
            value = np.abs(value) + 0.5
        variable.assign(value)
    return model


def chain(shape: tuple[int | None, ...], *layers: Any, dtype: str = "float32") -> Any:
    """A functional model: ``layers`` applied in turn to an input of ``shape``."""
    inputs = keras.Input(shape, dtype=dtype)
    x = inputs
    for layer in layers:
        x = layer(x)
    return randomize(keras.Model(inputs, x))


def case(name: str, build: Build) -> Any:
    return pytest.param(build, id=name)


# -- Dense and activations -------------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", [*sorted(ACTIVATIONS), "softmax", "log_softmax"])
def test_dense_activation(converted, activation: str) -> None:
    model = converted(chain((6,), K.Dense(5, activation=activation)))
    # The activation is a function in the graph: the spec names it, and reading it back gives the same model.
    restored = Layer.from_spec(model.to_spec())
    restored.load_state_dict(model.state_dict())
    inputs = torch.randn(3, 6)
    with torch.no_grad():
        torch.testing.assert_close(restored.eval()(inputs), model(inputs), rtol=0, atol=0)


DENSE_AND_ACTIVATION_LAYERS = [
    case("dense-rank3", lambda: chain((4, 6), K.Dense(3))),
    case("dense-no-bias", lambda: chain((6,), K.Dense(3, use_bias=False))),
    case("activation-layer", lambda: chain((6,), K.Activation("tanh"))),
    case("relu-max-value-6", lambda: chain((6,), K.ReLU(max_value=6.0))),
    case("relu-max-value-0.5", lambda: chain((6,), K.ReLU(max_value=0.5))),
    case("relu-negative-slope", lambda: chain((6,), K.ReLU(negative_slope=0.1))),
    case("leaky-relu", lambda: chain((6,), K.LeakyReLU(negative_slope=0.25))),
    case("prelu-dense", lambda: chain((6,), K.PReLU())),
    case("prelu-image-shared", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.PReLU(shared_axes=[1, 2]))),
    case("prelu-image-all-shared", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.PReLU(shared_axes=[1, 2, 3]))),
    case("elu", lambda: chain((6,), K.ELU(alpha=0.7))),
    case("softmax-last", lambda: chain((6,), K.Softmax())),
    case("softmax-axis1-image", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Softmax(axis=1))),
    case("softmax-channels-image", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Softmax(axis=-1))),
]


@pytest.mark.parametrize("build", DENSE_AND_ACTIVATION_LAYERS)
def test_dense_and_activation_layers(converted, build: Build) -> None:
    converted(build())


# -- convolutions --------------------------------------------------------------------------------------------------

CONVOLUTIONS = [
    case("conv1d-valid", lambda: chain((9, 3), K.Conv1D(4, 3))),
    case("conv1d-same", lambda: chain((9, 3), K.Conv1D(4, 3, padding="same"))),
    case("conv1d-same-even-kernel", lambda: chain((9, 3), K.Conv1D(4, 4, padding="same"))),
    case("conv1d-same-stride2-odd", lambda: chain((9, 3), K.Conv1D(4, 3, strides=2, padding="same"))),
    case("conv1d-same-stride2-even", lambda: chain((10, 3), K.Conv1D(4, 3, strides=2, padding="same"))),
    case("conv1d-causal", lambda: chain((9, 3), K.Conv1D(4, 3, padding="causal"))),
    case("conv1d-causal-dilated", lambda: chain((12, 3), K.Conv1D(4, 3, padding="causal", dilation_rate=2))),
    case("conv2d-valid", lambda: chain((7, 8, 3), K.Conv2D(4, (3, 2)))),
    case("conv2d-same", lambda: chain((7, 8, 3), K.Conv2D(4, 3, padding="same"))),
    case("conv2d-same-stride2-odd", lambda: chain((7, 7, 3), K.Conv2D(4, 3, strides=2, padding="same"))),
    case("conv2d-same-stride2-even", lambda: chain((8, 8, 3), K.Conv2D(4, 3, strides=2, padding="same"))),
    case("conv2d-same-stride2-kernel4", lambda: chain((8, 7, 3), K.Conv2D(4, 4, strides=2, padding="same"))),
    case("conv2d-valid-stride2", lambda: chain((8, 7, 3), K.Conv2D(4, 3, strides=2))),
    case("conv2d-dilated", lambda: chain((9, 9, 3), K.Conv2D(4, 3, dilation_rate=2))),
    case("conv2d-dilated-same", lambda: chain((9, 9, 3), K.Conv2D(4, 3, dilation_rate=2, padding="same"))),
    case("conv2d-groups", lambda: chain((6, 6, 4), K.Conv2D(6, 3, groups=2))),
    case("conv2d-no-bias-relu", lambda: chain((6, 6, 3), K.Conv2D(4, 3, use_bias=False, activation="relu"))),
    case("conv2d-softmax", lambda: chain((6, 6, 3), K.Conv2D(4, 3, activation="softmax"))),
    case("conv3d-valid", lambda: chain((5, 6, 5, 2), K.Conv3D(3, 2))),
    case("conv3d-same", lambda: chain((5, 6, 5, 2), K.Conv3D(3, 3, padding="same"))),
    case("conv3d-same-stride2", lambda: chain((5, 6, 5, 2), K.Conv3D(3, 3, strides=2, padding="same"))),
    case("depthwise-conv2d", lambda: chain((7, 7, 3), K.DepthwiseConv2D(3))),
    case("depthwise-conv2d-multiplier2", lambda: chain((7, 7, 3), K.DepthwiseConv2D(3, depth_multiplier=2))),
    case("depthwise-conv2d-same-stride2", lambda: chain((8, 8, 3), K.DepthwiseConv2D(3, 2, padding="same"))),
    case("separable-conv2d", lambda: chain((7, 7, 3), K.SeparableConv2D(5, 3))),
    case("separable-conv2d-multiplier2-same", lambda: chain((7, 7, 3), K.SeparableConv2D(5, 3, padding="same", depth_multiplier=2))),
    case("conv2d-same-dynamic-size", lambda: chain((None, None, 3), K.Conv2D(4, 4, padding="same"), K.GlobalMaxPooling2D())),
    case("depthwise-conv1d", lambda: chain((9, 3), K.DepthwiseConv1D(3, depth_multiplier=2, padding="same"))),
    case("separable-conv1d", lambda: chain((9, 3), K.SeparableConv1D(5, 3, strides=2, padding="same"))),
    case("conv2d-transpose-same-output-padding", lambda: chain((5, 5, 3), K.Conv2DTranspose(4, 3, 2, padding="same", output_padding=1))),
    case("conv2d-transpose-valid-output-padding", lambda: chain((5, 5, 3), K.Conv2DTranspose(4, 3, 2, output_padding=1))),
    case("conv2d-transpose-dilated", lambda: chain((5, 5, 3), K.Conv2DTranspose(4, 3, padding="same", dilation_rate=2))),
    case("conv3d-transpose-same-stride2", lambda: chain((3, 4, 3, 2), K.Conv3DTranspose(3, 3, 2, padding="same"))),
    case("conv-chain", lambda: chain((8, 8, 3), K.Conv2D(4, 3, padding="same"), K.Conv2D(2, 3), K.Dense(3))),
]  # fmt: skip


@pytest.mark.parametrize("build", CONVOLUTIONS)
def test_convolutions(converted, build: Build) -> None:
    converted(build())


TRANSPOSED = [
    pytest.param(rank, kernel, stride, padding, id=f"conv{rank}d-transpose-{padding}-k{kernel}-s{stride}")
    for rank in (1, 2)
    for padding in ("valid", "same")
    for stride in (1, 2)
    for kernel in (2, 3, 4)
]


def _transposed(rank: int, kernel: int, stride: int, padding: str) -> Any:
    layer = (K.Conv1DTranspose, K.Conv2DTranspose)[rank - 1](4, kernel, strides=stride, padding=padding)
    return chain((5,) * rank + (3,), layer)


@pytest.mark.parametrize(("rank", "kernel", "stride", "padding"), TRANSPOSED)
def test_conv_transpose(converted, rank: int, kernel: int, stride: int, padding: str) -> None:
    converted(_transposed(rank, kernel, stride, padding))


def test_conv_transpose_refusal(tmp_path: Path) -> None:
    """An output_padding that adds past the stride is one torch's ConvTranspose cannot give."""
    import torchx.keras

    model = chain(
        (5, 3), K.Conv1DTranspose(4, 3, strides=2, padding="valid", output_padding=1, dilation_rate=1)
    )
    model.save(tmp_path / "ok.keras")
    torchx.keras.load(tmp_path / "ok.keras")  # converts
    # Keras itself refuses output_padding >= stride, so no file can hold one; the converter's check is then
    # reached only through a hand-edited config.
    archive = torchx.keras.read_archive(tmp_path / "ok.keras")
    archive.config["config"]["layers"][1]["config"]["output_padding"] = [3]
    with pytest.raises(SpecError, match=r"which torch's ConvTranspose cannot"):
        torchx.keras.convert(archive)


# -- pools ---------------------------------------------------------------------------------------------------------

POOLS = [
    case("maxpool1d-valid", lambda: chain((9, 3), K.MaxPooling1D(2))),
    case("maxpool1d-same-odd", lambda: chain((9, 3), K.MaxPooling1D(2, padding="same"))),
    case("maxpool2d-valid", lambda: chain((7, 8, 3), K.MaxPooling2D(2))),
    case("maxpool2d-valid-stride1", lambda: chain((7, 8, 3), K.MaxPooling2D(3, strides=1))),
    case("maxpool2d-same-odd", lambda: chain((7, 7, 3), K.MaxPooling2D(3, strides=2, padding="same"))),
    case("maxpool2d-same-even", lambda: chain((8, 8, 3), K.MaxPooling2D(3, strides=2, padding="same"))),
    case("maxpool3d-valid", lambda: chain((4, 5, 4, 2), K.MaxPooling3D(2))),
    case("maxpool3d-same", lambda: chain((5, 5, 4, 2), K.MaxPooling3D(2, padding="same"))),
    case("avgpool1d-valid", lambda: chain((9, 3), K.AveragePooling1D(3))),
    case("avgpool1d-same", lambda: chain((9, 3), K.AveragePooling1D(3, strides=1, padding="same"))),
    case("avgpool2d-valid", lambda: chain((7, 8, 3), K.AveragePooling2D(2))),
    case("avgpool2d-same-stride1", lambda: chain((7, 8, 3), K.AveragePooling2D(3, strides=1, padding="same"))),
    case("avgpool2d-same-even-input", lambda: chain((8, 8, 3), K.AveragePooling2D(2, padding="same"))),
    case("avgpool2d-same-uneven-stride2", lambda: chain((7, 7, 3), K.AveragePooling2D(2, padding="same"))),
    case("avgpool3d-same-uneven", lambda: chain((5, 4, 5, 2), K.AveragePooling3D(2, padding="same"))),
    case("avgpool3d-valid", lambda: chain((4, 5, 4, 2), K.AveragePooling3D(2))),
    case("avgpool3d-same", lambda: chain((5, 5, 5, 2), K.AveragePooling3D(3, strides=1, padding="same"))),
    case("global-avg-1d", lambda: chain((9, 3), K.GlobalAveragePooling1D())),
    case("global-avg-1d-keepdims", lambda: chain((9, 3), K.GlobalAveragePooling1D(keepdims=True))),
    case("global-avg-2d", lambda: chain((5, 6, 3), K.GlobalAveragePooling2D())),
    case("global-avg-2d-keepdims", lambda: chain((5, 6, 3), K.GlobalAveragePooling2D(keepdims=True))),
    case("global-max-2d", lambda: chain((5, 6, 3), K.GlobalMaxPooling2D())),
    case("global-max-2d-keepdims", lambda: chain((5, 6, 3), K.GlobalMaxPooling2D(keepdims=True))),
    case("global-avg-3d-keepdims", lambda: chain((3, 4, 3, 2), K.GlobalAveragePooling3D(keepdims=True))),
    case("global-max-3d", lambda: chain((3, 4, 3, 2), K.GlobalMaxPooling3D())),
    case("global-max-1d-keepdims-dense", lambda: chain((9, 3), K.GlobalMaxPooling1D(keepdims=True), K.Dense(2))),
]  # fmt: skip


@pytest.mark.parametrize("build", POOLS)
def test_pools(converted, build: Build) -> None:
    converted(build())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_an_uneven_same_max_pool_pads_with_minus_inf_and_runs_in_half_precision(
    converted, dtype: torch.dtype
) -> None:
    """float32's lowest value overflows float16 and bfloat16 (torch refused the pad); -inf is in every float dtype."""
    model = converted(chain((9, 3), K.MaxPooling1D(2, padding="same")))  # padded (0, 1) before the pool
    pad = next(layer for layer in model.to_spec()["modules"].values() if layer["type"] == "ConstantPad1d")
    assert pad["args"]["value"] == {"float": "-inf"}
    x = torch.randn(3, 9, 3)
    with torch.no_grad():
        expected = model(x).to(dtype)  # a max selects: rounding first gives the same
        assert torch.equal(model.to(dtype)(x.to(dtype)), expected)


def _tf_same_average(
    x: np.ndarray[Any, Any], size: tuple[int, ...], strides: tuple[int, ...]
) -> np.ndarray[Any, Any]:
    """TensorFlow's (and JAX's) ``same`` average pool, channels last: the mean of each window's real values."""
    spatial = x.shape[1:-1]
    outs = [-(-length // stride) for length, stride in zip(spatial, strides, strict=True)]
    befores = [
        max((out - 1) * s + k - n, 0) // 2 for out, s, k, n in zip(outs, strides, size, spatial, strict=True)
    ]
    result = np.zeros((x.shape[0], *outs, x.shape[-1]), dtype=np.float64)
    for index in np.ndindex(*outs):
        window = tuple(
            slice(max(i * s - b, 0), min(i * s - b + k, n))
            for i, s, b, k, n in zip(index, strides, befores, size, spatial, strict=True)
        )
        result[(slice(None), *index)] = x[(slice(None), *window)].mean(axis=tuple(range(1, len(spatial) + 1)))
    return result


@pytest.mark.parametrize(("shape", "size", "strides"), [
    pytest.param((8, 7, 3), (4, 4), (3, 3), id="avgpool2d-k4-s3"),
    pytest.param((7, 3), (4,), (1,), id="avgpool1d-k4-s1"),
    pytest.param((7, 8, 3), (2, 3), (1, 2), id="avgpool2d-mixed"),
    pytest.param((5, 6, 5, 2), (3, 2, 2), (2, 1, 2), id="avgpool3d-mixed"),
])  # fmt: skip
def test_uneven_same_average_pool(
    tmp_path: Path, shape: tuple[int, ...], size: tuple[int, ...], strides: tuple[int, ...]
) -> None:
    """An unevenly padded ``same`` average is over the real values, as TensorFlow and JAX define it.

    Keras's torch backend pads such windows by replicating the edge instead (its even ``same`` padding
    averages over real values), so the reference here is TensorFlow's definition, computed in numpy.
    """
    import torchx.keras

    pool = (K.AveragePooling1D, K.AveragePooling2D, K.AveragePooling3D)[len(size) - 1](
        size, strides, padding="same"
    )
    model = chain(shape, pool)
    model.save(tmp_path / "pool.keras")
    converted = torchx.keras.load(tmp_path / "pool.keras").eval()
    x = random_inputs(model)
    with torch.no_grad():
        got = converted(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, _tf_same_average(x, size, strides), rtol=0, atol=1e-5)


# -- norms and dropouts --------------------------------------------------------------------------------------------

NORMS = [
    case("batchnorm-after-conv", lambda: chain((6, 6, 3), K.Conv2D(4, 3), K.BatchNormalization(momentum=0.9, epsilon=1e-2))),
    case("batchnorm-after-dense", lambda: chain((6,), K.Dense(4), K.BatchNormalization(momentum=0.8, epsilon=1e-4))),
    case("batchnorm-1d-sequence", lambda: chain((7, 3), K.Conv1D(4, 3), K.BatchNormalization())),
    case("batchnorm-axis1", lambda: chain((4, 5, 6), K.BatchNormalization(axis=1))),
    case("batchnorm-no-affine", lambda: chain((6, 6, 3), K.BatchNormalization(center=False, scale=False))),
    case("layernorm", lambda: chain((5, 6), K.LayerNormalization(epsilon=1e-4))),
    case("layernorm-image-after-conv", lambda: chain((6, 6, 3), K.Conv2D(4, 3), K.LayerNormalization())),
    case("layernorm-two-axes", lambda: chain((5, 6), K.LayerNormalization(axis=[1, 2]))),
    case("layernorm-no-center", lambda: chain((5, 6), K.LayerNormalization(center=False))),
    case("rmsnormalization", lambda: chain((5, 6), K.RMSNormalization(epsilon=1e-4))),
    case("rmsnormalization-two-axes", lambda: chain((5, 6), K.RMSNormalization(axis=[1, 2]))),
    case("groupnorm", lambda: chain((5, 5, 4), K.GroupNormalization(groups=2))),
    case("groupnorm-after-conv", lambda: chain((6, 6, 3), K.Conv2D(6, 3), K.GroupNormalization(groups=3, epsilon=1e-5))),
    case("dropout", lambda: chain((6,), K.Dense(4), K.Dropout(0.5))),
    case("spatial-dropout2d", lambda: chain((6, 6, 3), K.Conv2D(4, 3), K.SpatialDropout2D(0.5), K.Dense(2))),
    case("spatial-dropout1d", lambda: chain((6, 3), K.Conv1D(4, 3), K.SpatialDropout1D(0.5), K.Dense(2))),
    case("alpha-dropout", lambda: chain((6,), K.Dense(4), K.AlphaDropout(0.5))),
]  # fmt: skip


@pytest.mark.parametrize("build", NORMS)
def test_norms_and_dropouts(converted, build: Build) -> None:
    converted(build())


def test_layernorm_rms_scaling_refused(tmp_path: Path) -> None:
    """Keras's deprecated rms_scaling divides by the variance, which no torch norm does."""
    import torchx.keras

    with pytest.warns(UserWarning, match="deprecated"):
        model = chain((5, 6), K.LayerNormalization(rms_scaling=True))
    model.save(tmp_path / "rms.keras")
    with pytest.raises(SpecError, match=r"keras\.layers\.RMSNormalization"):
        torchx.keras.load(tmp_path / "rms.keras")


@pytest.mark.parametrize(("keras_momentum", "after"), [
    pytest.param(0.9, "conv", id="conv-momentum0.9"), pytest.param(0.75, "dense", id="dense-momentum0.75"),
])  # fmt: skip
def test_batchnorm_momentum(converted, keras_momentum: float, after: str) -> None:
    first = K.Conv2D(4, 3) if after == "conv" else K.Dense(4)
    model = chain(
        (6, 6, 3) if after == "conv" else (6,), first, K.BatchNormalization(momentum=keras_momentum)
    )
    result = converted(model)
    (norm,) = [
        module for module in result.modules() if isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
    ]
    assert norm.momentum == pytest.approx(1 - keras_momentum)
    assert norm.eps == pytest.approx(1e-3)


# -- reshaping -----------------------------------------------------------------------------------------------------

RESHAPING = [
    case("flatten-dense", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten(), K.Dense(3))),
    case("flatten-dropout-dense", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten(), K.Dropout(0.3), K.Dense(3))),
    case("flatten-output", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten())),
    case("flatten-keras-order", lambda: chain((4, 5), K.Flatten(), K.Dense(3))),
    case("flatten-conv1d-dense", lambda: chain((7, 3), K.Conv1D(4, 3), K.Flatten(), K.Dense(3))),
    case("flatten-activation-output", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten(), K.Activation("relu"))),
    case("flatten-reshape", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten(), K.Reshape((4, 9)))),
    case("flatten-twice-dense", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Flatten(), K.Dense(3), K.Dense(2))),
    case("reshape", lambda: chain((12,), K.Reshape((3, 4)))),
    case("reshape-after-conv", lambda: chain((5, 5, 3), K.Conv2D(4, 3), K.Reshape((9, 4)), K.Dense(2))),
    case("permute", lambda: chain((3, 4, 5), K.Permute((3, 1, 2)))),
    case("permute-after-conv-dense", lambda: chain((5, 6, 3), K.Conv2D(4, 3), K.Permute((3, 2, 1)), K.Dense(2))),
    case("permute-conv", lambda: chain((5, 6, 3), K.Permute((2, 1, 3)), K.Conv2D(4, 3))),
    case("repeat-vector", lambda: chain((4,), K.RepeatVector(3))),
    case("zero-padding1d", lambda: chain((6, 3), K.ZeroPadding1D((1, 2)))),
    case("zero-padding2d", lambda: chain((5, 6, 3), K.ZeroPadding2D(((1, 2), (0, 3))))),
    case("zero-padding2d-int", lambda: chain((5, 6, 3), K.ZeroPadding2D(1))),
    case("zero-padding3d", lambda: chain((3, 4, 3, 2), K.ZeroPadding3D(((1, 0), (0, 2), (1, 1))))),
    case("cropping1d", lambda: chain((8, 3), K.Cropping1D((1, 2)))),
    case("cropping2d", lambda: chain((7, 8, 3), K.Cropping2D(((1, 2), (0, 3))))),
    case("cropping3d", lambda: chain((5, 6, 5, 2), K.Cropping3D(((1, 0), (2, 1), (0, 2))))),
    case("upsampling1d", lambda: chain((5, 3), K.UpSampling1D(3))),
    case("upsampling2d-nearest", lambda: chain((4, 5, 3), K.UpSampling2D((2, 3)))),
    case("upsampling2d-bilinear", lambda: chain((4, 5, 3), K.UpSampling2D(2, interpolation="bilinear"))),
    case("upsampling3d", lambda: chain((3, 2, 3, 2), K.UpSampling3D((2, 1, 2)))),
]  # fmt: skip


@pytest.mark.parametrize("build", RESHAPING)
def test_reshaping(converted, build: Build) -> None:
    converted(build())


def test_embedding(converted) -> None:
    model = chain((5,), K.Embedding(11, 4), K.Flatten(), K.Dense(2), dtype="int32")
    tokens = np.random.default_rng(0).integers(0, 11, size=(3, 5)).astype("int32")
    converted(model, tokens)


# -- merges --------------------------------------------------------------------------------------------------------


def _merge(kind: str, image: bool, axis: int = -1) -> Any:
    shape = (5, 5, 3) if image else (6,)
    a, b = keras.Input(shape), keras.Input(shape)
    if image:  # one branch channels-first (after a conv), the other as Keras stores it
        left, right = K.Conv2D(3, 1)(a), b
    else:
        left, right = K.Dense(6)(a), b
    merged = (
        K.Concatenate(axis=axis)([left, right])
        if kind == "Concatenate"
        else getattr(K, kind)()([left, right])
    )
    return randomize(keras.Model([a, b], merged))


MERGES = [
    *(pytest.param(kind, False, -1, id=f"{kind.lower()}-dense") for kind in
      ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate")),
    pytest.param("Add", True, -1, id="add-image"),
    pytest.param("Concatenate", True, -1, id="concatenate-image-channels"),
    pytest.param("Concatenate", True, 1, id="concatenate-image-axis1"),
    pytest.param("Concatenate", True, 3, id="concatenate-image-axis3"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "image", "axis"), MERGES)
def test_merges(converted, kind: str, image: bool, axis: int) -> None:
    converted(_merge(kind, image, axis))


def test_concatenate_flattened_with_dense(converted) -> None:
    a, b = keras.Input((5, 5, 3)), keras.Input((4,))
    joined = K.Concatenate()([K.Flatten()(K.Conv2D(2, 3)(a)), K.Dense(3)(b)])
    converted(randomize(keras.Model([a, b], K.Dense(2)(joined))))


def test_three_way_add(converted) -> None:
    inputs = [keras.Input((4,)) for _ in range(3)]
    converted(randomize(keras.Model(inputs, K.Add()(inputs))))


# -- models --------------------------------------------------------------------------------------------------------


def _sequential() -> Any:
    model = keras.Sequential([keras.Input((6, 6, 2)), K.Conv2D(3, 3), K.ReLU(), K.Flatten(), K.Dense(4)])
    return randomize(model)


def _two_in_two_out(as_dict: bool) -> Any:
    a, b = keras.Input((6,), name="a"), keras.Input((5, 5, 2), name="b")
    image = K.GlobalAveragePooling2D()(K.Conv2D(4, 3)(b))
    joined = K.Concatenate()([K.Dense(4)(a), image])
    first, second = K.Dense(2, name="first")(joined), K.Dense(3, activation="sigmoid", name="second")(image)
    if as_dict:
        return randomize(keras.Model({"a": a, "b": b}, {"first": first, "second": second}))
    return randomize(keras.Model([a, b], [first, second]))


def _shared() -> Any:
    a, b = keras.Input((5, 5, 2)), keras.Input((5, 5, 2))
    conv, dense = K.Conv2D(3, 3), K.Dense(2)
    left, right = K.Flatten()(conv(a)), K.Flatten()(conv(b))
    return randomize(keras.Model([a, b], K.Add()([dense(left), dense(right)])))


def _nested_sequential() -> Any:
    inner = keras.Sequential([keras.Input((5, 5, 2)), K.Conv2D(3, 3), K.BatchNormalization()], name="inner")
    inputs = keras.Input((5, 5, 2))
    return randomize(keras.Model(inputs, K.Dense(2)(inner(K.Conv2D(2, 1)(inputs)))))


def _nested_functional() -> Any:
    x = keras.Input((6,))
    inner = keras.Model(x, [K.Dense(3)(x), K.Dense(2, activation="tanh")(x)], name="inner")
    inputs = keras.Input((6,))
    first, second = inner(K.Dense(6)(inputs))
    return randomize(keras.Model(inputs, K.Concatenate()([first, second])))


def _nested_functional_as_outputs() -> Any:
    x = keras.Input((4,))
    inner = keras.Model(x, K.Dense(3)(x), name="inner")
    first, second = keras.Input((4,)), keras.Input((4,))
    return randomize(keras.Model([first, second], [inner(first), inner(second)]))


def _nested_sequential_as_outputs() -> Any:
    inner = keras.Sequential([keras.Input((4,)), K.Dense(3)], name="inner")
    inputs = keras.Input((4,))
    return randomize(keras.Model(inputs, [inner(inputs), inner(K.Dense(4)(inputs))]))


MODELS = [
    case("sequential", _sequential),
    case("two-in-two-out-lists", lambda: _two_in_two_out(False)),
    case("two-in-two-out-dicts", lambda: _two_in_two_out(True)),
    case("shared-layer-twice", _shared),
    case("nested-sequential", _nested_sequential),
    case("nested-functional", _nested_functional),
    case("shared-nested-functional-as-outputs", _nested_functional_as_outputs),
    case("shared-nested-sequential-as-outputs", _nested_sequential_as_outputs),
]


@pytest.mark.parametrize("build", MODELS)
def test_models(converted, build: Build) -> None:
    model = build()
    converted(model, random_inputs(model))


# -- a ZeroPadding before a valid convolution is the convolution's own padding ---------------------------------


def test_zero_padding_before_a_valid_conv_is_folded_into_it(converted) -> None:
    model = converted(chain((9, 9, 3), K.ZeroPadding2D(2), K.Conv2D(4, 5, strides=2), K.DepthwiseConv2D(3)))
    modules = list(model.children())
    assert [module.padding for module in modules if isinstance(module, torch.nn.Conv2d)] == [(2, 2), (0, 0)]
    assert not any(isinstance(module, torch.nn.ZeroPad2d) for module in modules)


def test_uneven_zero_padding_or_a_second_reader_keeps_the_padding(converted) -> None:
    inputs = keras.Input((8, 8, 3))
    padded = K.ZeroPadding2D(((0, 1), (0, 1)))(inputs)
    uneven = K.Conv2D(4, 3, strides=2)(padded)
    even = K.ZeroPadding2D(1)(inputs)
    both = K.Add()([K.Conv2D(3, 3, padding="same")(even), even])
    model = converted(keras.Model(inputs, [uneven, both]))
    pads = [module for module in model.children() if isinstance(module, torch.nn.ZeroPad2d)]
    assert sorted(pad.padding for pad in pads) == [(0, 1, 0, 1), (1, 1, 1, 1)]
