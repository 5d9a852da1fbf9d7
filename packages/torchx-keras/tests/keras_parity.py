"""Parity helpers: Keras 3 (torch backend) builds the reference; the converted model must match it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest
import torch

keras = pytest.importorskip("keras", reason="needs Keras 3: pip install keras (in the test extra)")
layers = keras.layers
TOLERANCE = 1e-5


def flat_outputs(result: Any) -> list[Any]:
    """A model's outputs as a list: one, a list or tuple, or a dict's values in order."""
    if isinstance(result, dict):
        return list(result.values())
    return list(result) if isinstance(result, (list, tuple)) else [result]


def keras_outputs(model: Any, inputs: Any) -> list[np.ndarray[Any, Any]]:
    result = model(inputs, training=False)
    flat = flat_outputs(result)
    return [np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value) for value in flat]


def torch_outputs(model: torch.nn.Module, inputs: Any) -> list[np.ndarray[Any, Any]]:
    def tensor(value: np.ndarray[Any, Any]) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(value))

    with torch.no_grad():
        if isinstance(inputs, dict):
            result = model({name: tensor(value) for name, value in inputs.items()})
        elif isinstance(inputs, (list, tuple)):
            result = model(*[tensor(value) for value in inputs])
        else:
            result = model(tensor(inputs))
    return [value.numpy() for value in flat_outputs(result)]


def trainable_count(model: Any) -> int:
    return int(sum(np.prod(weight.shape) for weight in model.trainable_weights))


@pytest.fixture
def converted(tmp_path: Path) -> Callable[..., torch.nn.Module]:
    """Save a Keras model, convert it, check outputs (<= 1e-5) and trainable parameter counts; return it.

    ``inputs`` is one array, a list or a dict of arrays (defaults: random
    floats in the model's input shapes with a batch of 3).
    """
    import torchx.keras

    def convert(model: Any, inputs: Any = None, *, tolerance: float = TOLERANCE) -> torch.nn.Module:
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        result = torchx.keras.load(path).eval()
        if inputs is None:
            inputs = random_inputs(model)
        expected, actual = keras_outputs(model, inputs), torch_outputs(result, inputs)
        assert len(expected) == len(actual)
        for want, got in zip(expected, actual, strict=True):
            assert want.shape == got.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=tolerance)
        assert sum(p.numel() for p in result.parameters() if p.requires_grad) == trainable_count(model)
        return result

    return convert


def random_inputs(model: Any, batch: int = 3, seed: int = 0) -> Any:
    generator = np.random.default_rng(seed)

    def one(tensor: Any) -> np.ndarray[Any, Any]:
        shape = tuple(batch if dim is None else dim for dim in tensor.shape)
        return generator.standard_normal(shape).astype("float32")

    inputs: Sequence[Any] = model.inputs
    structure = getattr(model, "_inputs_struct", None)
    if isinstance(structure, dict):
        return {name: one(tensor) for name, tensor in structure.items()}
    arrays = [one(tensor) for tensor in inputs]
    return arrays[0] if len(arrays) == 1 else arrays
