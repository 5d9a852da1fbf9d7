"""Converters of Keras's core layers: Dense, activations, dropouts, reshaping, merging, Embedding."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import torchx.layers as L
from torchx.keras._layer import KerasLayer, assign, converts
from torchx.keras._values import Flattened, Value

if TYPE_CHECKING:
    from torchx.keras._model import GraphBuilder

__all__ = ["ACTIVATIONS", "activate"]

ACTIVATIONS: dict[str, Callable[[Any], Any] | None] = {
    "linear": None,
    "relu": torch.relu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "elu": F.elu,
    "selu": F.selu,
    "softplus": F.softplus,
    "softsign": F.softsign,
    "silu": F.silu,
    "swish": F.silu,
    "gelu": F.gelu,
    "mish": F.mish,
    "hard_sigmoid": F.hardsigmoid,
    "hard_silu": F.hardswish,
    "hard_swish": F.hardswish,
    "leaky_relu": partial(F.leaky_relu, negative_slope=0.2),
    "log_sigmoid": F.logsigmoid,
    "exponential": torch.exp,
}
"""Keras activation name -> the torch function (``softmax`` and ``log_softmax`` take their axis from the tensor).

An activation is a function in the graph, not a module: as in Keras, it is part of its layer, and a
built model calls it as hand-written torch would (``F.gelu(x)``), without a module call's overhead."""

_ALONG_AXIS: dict[str, Callable[[Any, int], Any]] = {
    "softmax": lambda x, dim: x.softmax(dim),
    "log_softmax": lambda x, dim: F.log_softmax(x, dim=dim),
}


def activate(layer: KerasLayer, value: Value, name: str | None) -> Value:
    """``value`` through the Keras activation ``name`` (a function recorded in the graph)."""
    name = name or "linear"
    if name in _ALONG_AXIS:
        return value.with_tensor(_ALONG_AXIS[name](value.tensor, value.stored_axis(-1)))
    if name not in ACTIVATIONS:
        known = ", ".join(sorted([*ACTIVATIONS, *_ALONG_AXIS]))
        raise layer.error(f"the activation {name!r} is not supported (supported: {known})")
    function = ACTIVATIONS[name]
    return value if function is None else value.with_tensor(function(value.tensor))


@converts("Dense", becomes="Linear (its activation: a function in the graph)")
def dense(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    (value,) = inputs
    units = layer.integer("units")
    use_bias = bool(layer.get("use_bias", True))
    # The first call fixes the order the kernel's rows are in; a shared Dense gets that order on every call.
    flattened = layer.state.setdefault("flattened", value.flattened)
    if value.flattened != flattened:
        raise layer.error(
            "is shared between a Flatten of a channels-first tensor and another input: not supported"
        )
    if flattened is None:
        value = graph.layouts.keras(value)

    def load(module: nn.Module) -> None:
        arrays = layer.arrays(2 if use_bias else 1)
        kernel = arrays[0]
        if flattened is not None:  # the features arrive in the stored (channels-first) order
            features = int(np.prod(flattened.shape))
            if kernel.ndim != 2 or kernel.shape[0] != features:
                raise layer.error(
                    f"the weights file's kernel has shape {kernel.shape}, but {features} features arrive: "
                    "the weights do not belong to this config"
                )
            kernel = kernel[flattened.keras_index()]
        assign(layer, module, weight=kernel.T)
        if use_bias:
            assign(layer, module, bias=arrays[1])

    out = layer.apply(lambda: L.Linear(units, bias=use_bias, name=layer.module_name), value.tensor, load=load)
    return activate(layer, Value(out, tuple(range(value.rank))), layer.get("activation"))


@converts(
    "Activation", "ReLU", "LeakyReLU", "ELU", "Softmax", "PReLU",
    becomes="Activation: the function in the graph; the others: ReLU, ReLU6, Hardtanh, LeakyReLU, ELU, "
    "Softmax (axis translated), PReLU",
)  # fmt: skip
def activation_layer(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    (value,) = inputs
    kind = layer.class_name
    if kind == "Activation":
        return activate(layer, value, layer.get("activation"))
    if kind == "Softmax":
        if isinstance(layer.get("axis"), list) and len(layer.get("axis")) != 1:
            raise layer.error(f"axis={layer.get('axis')!r}: softmax over several axes is not supported")
        dim = value.stored_axis(layer.axis(value.rank))
        return value.with_tensor(
            layer.apply(lambda: L.Softmax(dim=dim, name=layer.module_name), value.tensor)
        )
    if kind == "PReLU":
        return _prelu(layer, value, graph)
    make = _relu_family(layer)
    return value.with_tensor(layer.apply(make, value.tensor))


def _relu_family(layer: KerasLayer) -> Callable[[], nn.Module]:
    name = layer.module_name
    if layer.class_name == "LeakyReLU":
        slope = float(layer.get("negative_slope", layer.get("alpha", 0.3)))
        return lambda: L.LeakyReLU(slope, name=name)
    if layer.class_name == "ELU":
        alpha = float(layer.get("alpha", 1.0))
        return lambda: L.ELU(alpha, name=name)
    max_value = layer.get("max_value")
    slope = float(layer.get("negative_slope", 0.0) or 0.0)
    threshold = float(layer.get("threshold", 0.0) or 0.0)
    if threshold != 0.0:
        raise layer.error(f"threshold={threshold} has no torch equivalent: only threshold=0 is supported")
    if slope and max_value is not None:
        raise layer.error("negative_slope together with max_value has no torch equivalent: use one of them")
    if slope:
        return lambda: L.LeakyReLU(slope, name=name)
    if max_value is None:
        return lambda: L.ReLU(name=name)
    if float(max_value) == 6.0:
        return lambda: L.ReLU6(name=name)
    return lambda: L.Hardtanh(0.0, float(max_value), name=name)


def _prelu(layer: KerasLayer, value: Value, graph: GraphBuilder) -> Value:
    """PReLU: one slope per channel (Keras ``shared_axes`` = every axis but the channels), or one in all."""
    shared = layer.get("shared_axes") or []
    shared = [shared] if isinstance(shared, int) else list(shared)
    rank = value.rank
    if sorted(shared) == list(range(1, rank)):
        count = 1
    elif (rank == 2 and not shared) or sorted(shared) == list(range(1, rank - 1)):
        count = int(value.keras_shape[-1] or 0)
        value = graph.layouts.axis_first(value)
    else:
        raise layer.error(
            f"shared_axes={shared or None} on a rank-{rank} input gives a slope per position, which torch's PReLU "
            f"does not have: share every axis but the channels (shared_axes={list(range(1, rank - 1))})"
        )

    def load(module: nn.Module) -> None:
        (alpha,) = layer.arrays(1)
        assign(
            layer, module, weight=np.asarray(alpha).reshape(-1)
        )  # (1, ..., C) or (1, ..., 1): shape-checked

    out = layer.apply(lambda: L.PReLU(num_parameters=count, name=layer.module_name), value.tensor, load=load)
    return value.with_tensor(out)


@converts(
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "AlphaDropout",
    becomes="Dropout, Dropout1d/2d/3d (channels first), AlphaDropout; the identity in inference",
)  # fmt: skip
def dropout(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    (value,) = inputs
    rate = float(layer.get("rate", 0.0))
    name = layer.module_name
    if layer.class_name.startswith("SpatialDropout"):
        dims = layer.class_name[-2]
        value = graph.layouts.axis_first(value)
        make: Callable[[], nn.Module] = lambda: getattr(L, f"Dropout{dims}d")(rate, name=name)  # noqa: E731
    elif layer.class_name == "AlphaDropout":
        make = lambda: L.AlphaDropout(rate, name=name)  # noqa: E731
    else:
        if layer.get("noise_shape") is not None:
            raise layer.error("noise_shape is not supported: use SpatialDropout for dropping whole channels")
        make = lambda: L.Dropout(rate, name=name)  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor))


@converts(
    "Flatten",
    becomes="Flatten (channels-first features: the next Dense's kernel rows are reordered; "
    "data_format='channels_first': the channels flattened last, as Keras does)",
)
def flatten(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    (value,) = inputs
    if (
        layer.require("data_format", ("channels_last", "channels_first")) == "channels_first"
        and value.rank > 2
    ):
        # Keras moves the channels (axis 1) last before flattening: a relabelling of the axes.
        value = _moved_axes(graph, value, (*range(2, value.rank), 1))
    out = layer.apply(lambda: L.Flatten(name=layer.module_name), value.tensor)
    if value.rank <= 2:
        return value.with_tensor(out)
    if value.in_keras_order:
        return Value(out, (0, 1))
    stored = tuple(int(dim) for dim in value.tensor.shape[1:])
    return Value(out, (0, 1), Flattened(stored, tuple(axis - 1 for axis in value.order[1:])))


@converts("Reshape", becomes="Reshape")
def reshape(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    value = graph.layouts.keras(inputs[0])
    target = tuple(int(dim) for dim in layer.get("target_shape"))
    out = layer.apply(lambda: L.Reshape(target, name=layer.module_name), value.tensor)
    return Value(out, tuple(range(len(target) + 1)))


@converts("Permute", becomes="Permute")
def permute(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    (value,) = inputs
    dims = tuple(int(dim) for dim in layer.get("dims"))
    if sorted(dims) != list(range(1, value.rank)):
        raise layer.error(f"dims={list(dims)} is not a permutation of 1..{value.rank - 1}")
    return _moved_axes(graph, value, dims)


def _moved_axes(graph: GraphBuilder, value: Value, dims: tuple[int, ...]) -> Value:
    """``value`` with its Keras axes permuted (output axis ``d`` is input axis ``dims[d-1]``): a
    relabelling of the stored order, no data moves."""
    if value.flattened is not None:
        value = graph.layouts.keras(value)
    relabel = {source: target for target, source in enumerate((0, *dims))}
    return Value(value.tensor, tuple(relabel[axis] for axis in value.order))


@converts("RepeatVector", becomes="unsqueeze + expand")
def repeat_vector(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    value = graph.layouts.keras(inputs[0])
    times = layer.integer("n")
    return Value(value.tensor.unsqueeze(1).expand(-1, times, -1), (0, 1, 2))


_MERGES: dict[str, Callable[..., Any]] = {
    "Add": L.Add, "Subtract": L.Subtract, "Multiply": L.Multiply, "Average": L.Average,
    "Maximum": L.Maximum, "Minimum": L.Minimum,
}  # fmt: skip


@converts(
    *_MERGES,
    "Concatenate",
    becomes="Add, Subtract, Multiply, Average, Maximum, Minimum, Concat (axis translated)",
)
def merge(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    if len(inputs) < 2:
        raise layer.error(f"merges at least 2 tensors, got {len(inputs)}")
    first = inputs[0] if inputs[0].flattened is None else graph.layouts.keras(inputs[0])
    values = [graph.layouts.to_order(value, first.order) for value in inputs]
    tensors = [value.tensor for value in values]
    if layer.class_name == "Concatenate":
        dim = first.stored_axis(layer.axis(first.rank))
        return first.with_tensor(layer.apply(lambda: L.Concat(dim, name=layer.module_name), *tensors))
    make = _MERGES[layer.class_name]
    return first.with_tensor(layer.apply(lambda: make(name=layer.module_name), *tensors))


@converts("Embedding", becomes="Embedding")
def embedding(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    value = graph.layouts.keras(inputs[0])
    if layer.get("mask_zero"):
        raise layer.error(
            "mask_zero=True is not supported (masks are not converted): pass lengths to the RNN"
        )
    count, size = layer.integer("input_dim"), layer.integer("output_dim")
    tensor = value.tensor
    if tensor.dtype.is_floating_point:  # Keras casts the indices (towards zero), and so does .long()
        tensor = tensor.long()

    def load(module: nn.Module) -> None:
        (table,) = layer.arrays(1)
        assign(layer, module, weight=table)

    dtype = layer.dtype  # its input is integer ids: the table's dtype comes from the policy alone
    make = lambda: L.Embedding(count, size, dtype=dtype, name=layer.module_name)  # noqa: E731
    out = layer.apply(make, tensor, load=load)
    return Value(out, tuple(range(value.rank + 1)))
