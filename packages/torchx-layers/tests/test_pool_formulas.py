"""Max and average pooling answer their output shape from their window
exactly as torch's run does, and leave to the run (None) what torch refuses
or what the formula does not cover (ceil mode, indices, unbatched input)."""

from __future__ import annotations

import itertools

import torch

import torchx.layers as L
from torchx.core import TorchXError

POOLS = (L.MaxPool1d, L.MaxPool2d, L.MaxPool3d, L.AvgPool1d, L.AvgPool2d, L.AvgPool3d)


def _torch_shape(layer: L.Layer, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The output shape of ``layer``'s native module for a meta input, or None where torch refuses it."""
    native = type(layer).native_class(**layer.arguments)  # type: ignore[misc]
    try:
        output = native(torch.empty(shape, device="meta"))
    except (RuntimeError, ValueError):
        return None
    return tuple((output[0] if isinstance(output, tuple) else output).shape)


def test_pooling_formulas_agree_with_torch() -> None:
    answered = differ = 0
    mismatches = []
    for pool, kernel, stride, padding, extra in itertools.product(
        POOLS, (1, 2, 3), (None, 1, 2), (0, 1, 2), ({}, {"ceil_mode": True}, {"dilation": 2})
    ):
        dims = pool.spatial_dims
        if "dilation" in extra and not pool.__name__.startswith("Max"):
            continue
        try:
            layer = pool(kernel, stride, padding, **extra)
        except TorchXError:
            continue
        for size in (1, 2, 5, 8):
            for shape in ((2, 3, *(size,) * dims), (3, *(size,) * dims)):
                formula = layer.infer_output_shape(shape)
                expected = _torch_shape(layer, shape)
                if formula is not None:
                    answered += 1
                    if formula != expected:
                        differ += 1
                        mismatches.append((layer, shape, formula, expected))
    assert not mismatches, mismatches[:5]
    assert answered > 300 and differ == 0


def test_a_dynamic_size_stays_dynamic() -> None:
    assert L.MaxPool2d(3, stride=2, padding=1).infer_output_shape((None, 64, None, 112)) == (
        None,
        64,
        None,
        56,
    )
