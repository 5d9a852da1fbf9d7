"""Hypothesis strategies: random valid TorchX models, written as spec documents,
with the input shape they take; and corruptions of such documents.

A model is drawn one layer at a time, from the families that fit the current
shape (vectors, images, 1-d sequences, time series), so every drawn model is
valid; the shape is tracked by hand, which also checks TorchX's inference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

Spec = dict[str, Any]


@dataclass(frozen=True)
class Model:
    """A Sequential spec and the input shape (batch first) it is drawn for."""

    spec: Spec
    input_shape: tuple[int, ...]


def _layer(type_name: str, **args: Any) -> Spec:
    return {"type": type_name, "args": args} if args else {"type": type_name}


ACTIVATIONS = st.sampled_from(
    [
        _layer("ReLU"),
        _layer("GELU"),
        _layer("Tanh"),
        _layer("Sigmoid"),
        _layer("SiLU"),
        _layer("Mish"),
        _layer("ELU", alpha=0.5),
        _layer("LeakyReLU", negative_slope=0.2),
        _layer("Softplus", beta=2.0),
        _layer("Hardtanh", min_val=-2.0, max_val=2.0),
        _layer("PReLU"),
        _layer("Dropout", p=0.25),
    ]
)
SIZES = st.integers(1, 12)


@st.composite
def _vector_layer(draw: st.DrawFn, features: int) -> tuple[Spec, int]:
    kind = draw(st.sampled_from(["Linear", "activation", "LayerNorm", "BatchNorm1d"]))
    if kind == "Linear":
        out = draw(SIZES)
        return _layer("Linear", out_features=out, bias=draw(st.booleans())), out
    if kind == "activation":
        return draw(ACTIVATIONS), features
    return _layer(kind), features


@st.composite
def _spatial_layer(draw: st.DrawFn, dims: int, channels: int, size: int) -> tuple[Spec, int, int]:
    """One layer on ``(N, channels, size, ...)`` with ``dims`` spatial dims."""
    kinds = ["Conv", "activation", "BatchNorm"]
    if size >= 4:
        kinds.append("Pool")
    kind = draw(st.sampled_from(kinds))
    if kind == "Conv":
        kernel = draw(st.sampled_from([1, 3]).filter(lambda k: k <= size))
        stride = draw(st.sampled_from([1, 2]))
        padding = draw(st.sampled_from([0, kernel // 2]))
        out = draw(SIZES)
        spec = _layer(f"Conv{dims}d", out_channels=out, kernel_size=kernel, stride=stride, padding=padding)
        return spec, out, (size + 2 * padding - kernel) // stride + 1
    if kind == "Pool":
        pool = draw(st.sampled_from(["MaxPool", "AvgPool"]))
        return _layer(f"{pool}{dims}d", kernel_size=2), channels, size // 2
    if kind == "BatchNorm":
        return _layer(f"BatchNorm{dims}d"), channels, size
    return draw(ACTIVATIONS), channels, size


@st.composite
def _recurrent_layers(draw: st.DrawFn) -> tuple[list[Spec], int]:
    """A recurrent block on ``(N, T, F)`` (F inferred); ends on a ``(N, H)`` output."""
    layers: list[Spec] = []
    for _ in range(draw(st.integers(0, 1))):
        out = draw(SIZES)
        layers.append(
            {"type": "TimeDistributed", "layers": [_layer("Linear", out_features=out), _layer("Tanh")]}
        )
    cell = draw(st.sampled_from(["LSTM", "GRU"]))
    hidden = draw(SIZES)
    bidirectional = draw(st.booleans())
    layers.append(
        _layer(cell, hidden_size=hidden, num_layers=draw(st.integers(1, 2)), bidirectional=bidirectional,
               return_sequences=False)
    )  # fmt: skip
    return layers, hidden * (2 if bidirectional else 1)


@st.composite
def models(draw: st.DrawFn, max_layers: int = 6) -> Model:
    """A valid Sequential spec, with a batch-first input shape for it."""
    batch = draw(st.integers(2, 3))  # BatchNorm trains on batches of two or more
    start = draw(st.sampled_from(["vector", "image", "sequence", "series"]))
    layers: list[Spec] = []
    if start == "vector":
        features = draw(SIZES)
        shape: tuple[int, ...] = (batch, features)
    elif start == "series":
        features, steps = draw(SIZES), draw(st.integers(1, 5))
        shape = (batch, steps, features)
        block, features = draw(_recurrent_layers())
        layers += block
    else:
        dims = 2 if start == "image" else 1
        channels, size = draw(st.integers(1, 4)), draw(st.integers(1, 9))
        shape = (batch, channels, *([size] * dims))
        for _ in range(draw(st.integers(1, max_layers // 2))):
            layer, channels, size = draw(_spatial_layer(dims, channels, size))
            layers.append(layer)
        layers.append(_layer("Flatten"))
        features = channels * size**dims
    for _ in range(draw(st.integers(0 if layers else 1, max_layers - len(layers) // 2))):
        layer, features = draw(_vector_layer(features))
        layers.append(layer)
    return Model({"format_version": 1, "type": "Sequential", "layers": layers}, shape)


# -- corruption ------------------------------------------------------------------

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 10**12, 2**63, 2**64, math.nan, math.inf, -math.inf, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["", "Linear", "os.system", "__import__", "subprocess.Popen", "Lineär", "ЛИНЕЙНЫЙ", "😀"]
    ),
    st.lists(st.integers(-3, 10**6), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
HUGE_SIZES = st.sampled_from([10**6, 10**9, 10**12, 2**62, 2**63 - 1])


def _paths(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) to a value inside ``document``, down to 40 steps."""
    found = [path]
    if len(path) >= 40:
        return found
    if isinstance(document, dict):
        for key, value in document.items():
            found += _paths(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += _paths(value, (*path, index))
    return found


def _replace(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {**document, head: _replace(document[head], rest, value)}
    copy = list(document)
    copy[head] = _replace(document[head], rest, value)
    return copy


def _nest(layer: Spec, depth: int) -> Spec:
    for _ in range(depth):
        layer = {"type": "Sequential", "layers": [layer]}
    return layer


@st.composite
def corrupted(draw: st.DrawFn, model: Model) -> Any:
    """``model``'s spec with one to three random corruptions."""
    document: Any = model.spec
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["junk", "huge", "drop", "extra", "type", "key", "nest", "wrap"]))
        target = _get(document, path)
        if how == "junk":
            document = _replace(document, path, draw(JUNK))
        elif how == "huge" and isinstance(target, dict) and isinstance(target.get("args"), dict):
            args = target["args"]
            name = draw(st.sampled_from(sorted(args))) if args else "out_features"
            document = _replace(document, path, {**target, "args": {**args, name: draw(HUGE_SIZES)}})
        elif how == "drop" and isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target, key=str)))
            document = _replace(document, path, {k: v for k, v in target.items() if k != key})
        elif how == "extra" and isinstance(target, dict):
            document = _replace(document, path, {**target, draw(st.text(max_size=8)): draw(JUNK)})
        elif how == "type" and isinstance(target, dict):
            document = _replace(document, path, {**target, "type": draw(JUNK)})
        elif how == "key" and isinstance(target, dict):
            key = draw(st.one_of(st.integers(), st.none(), st.booleans(), st.floats(allow_nan=True)))
            document = _replace(document, path, {**target, key: draw(JUNK)})
        elif how == "nest" and isinstance(target, dict) and "type" in target:
            document = _replace(document, path, _nest(target, draw(st.sampled_from([10, 70, 10_000]))))
        elif how == "wrap":
            document = _replace(document, path, [target])
    return document


def _get(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document
