"""torchx-keras: converted models against Keras 3 (torch backend) and hand-written torch; conversion time.

Each model is built in Keras, saved to a temporary ``.keras`` file, converted
with ``torchx.keras.load`` and timed in inference (``torch.no_grad()``, eval
mode, Keras's ``model(x, training=False)``) against the Keras model and a
hand-written torch module. The hand-written modules take Keras's layout
(channels last) and permute once at the input, as the converted model does,
then run channels-first; their weights are copied from the Keras model, and
all three outputs are checked equal before timing. A model whose conversion
raises ``SpecError`` (a layer the converter does not support yet) is skipped
with a notice.

This module is ``bench_keras``, not ``keras``: a ``benchmarks/keras.py`` would
shadow the ``keras`` package for the runner (``benchmarks/`` is first on
``sys.path``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import zipfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _timing import Result, interleaved_medians
from torch import nn

# -- hand-written torch models (Keras layout in, one permute, channels-first inside) --


class HandSeedCnn(nn.Module):
    """``examples/seed_models.native_seed_cnn`` taking channels-last images (one permute at the input)."""

    def __init__(self, eps: float) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(3, 20, kernel_size=5, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(20, 30, kernel_size=7),
            nn.BatchNorm2d(30, eps=eps),
            nn.ReLU(),
            nn.Conv2d(30, 40, kernel_size=3),
            nn.BatchNorm2d(40, eps=eps),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(1960, 80),
            nn.ReLU(),
            nn.Linear(80, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x.permute(0, 3, 1, 2))


class HandDiamond(nn.Module):
    """Two Dense(relu) branches of one input, added, then a Dense."""

    def __init__(self, features: int, width: int, classes: int) -> None:
        super().__init__()
        self.branch_a, self.branch_b = nn.Linear(features, width), nn.Linear(features, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.branch_a(x)) + torch.relu(self.branch_b(x)))


class HandSequence(nn.Module):
    """TimeDistributed(Dense) (a Linear on the last axis), LSTM (last output), Dense."""

    def __init__(self, features: int, frame: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.frame = nn.Linear(features, frame)
        self.lstm = nn.LSTM(frame, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.lstm(self.frame(x))
        return self.head(output[:, -1])


# -- weights: Keras arrays into the hand-written modules ------------------------------


def _set(parameter: torch.Tensor, array: np.ndarray[Any, Any]) -> None:
    parameter.copy_(torch.from_numpy(np.ascontiguousarray(array)))


def _weights(layer: Any) -> list[np.ndarray[Any, Any]]:
    return [np.asarray(weight) for weight in layer.get_weights()]


def _dense(module: nn.Linear, layer: Any) -> None:
    kernel, bias = _weights(layer)
    _set(module.weight, kernel.T)
    _set(module.bias, bias)


def load_seed_cnn(hand: HandSeedCnn, model: Any) -> None:
    weighted = [layer for layer in model.layers if layer.get_weights()]
    modules = [module for module in hand.layers if list(module.parameters())]
    for module, layer in zip(modules, weighted, strict=True):
        arrays = _weights(layer)
        if isinstance(module, nn.Conv2d):
            _set(module.weight, arrays[0].transpose(3, 2, 0, 1))
            _set(module.bias, arrays[1])
        elif isinstance(module, nn.BatchNorm2d):
            for target, array in zip(
                (module.weight, module.bias, module.running_mean, module.running_var), arrays, strict=True
            ):
                _set(target, array)
        elif module.in_features == 1960:  # after Flatten: Keras's rows are (h, w, c), torch's (c, h, w)
            kernel = arrays[0].reshape(7, 7, 40, -1).transpose(2, 0, 1, 3).reshape(1960, -1)
            _set(module.weight, kernel.T)
            _set(module.bias, arrays[1])
        else:
            _dense(module, layer)


def load_diamond(hand: HandDiamond, model: Any) -> None:
    _dense(hand.branch_a, model.get_layer("branch_a"))
    _dense(hand.branch_b, model.get_layer("branch_b"))
    _dense(hand.head, model.get_layer("head"))


def load_sequence(hand: HandSequence, model: Any) -> None:
    _dense(hand.frame, model.get_layer("frame").layer)
    kernel, recurrent, bias = _weights(model.get_layer("lstm"))  # gates i, f, c, o: torch's i, f, g, o
    _set(hand.lstm.weight_ih_l0, kernel.T)
    _set(hand.lstm.weight_hh_l0, recurrent.T)
    _set(hand.lstm.bias_ih_l0, bias)
    hand.lstm.bias_hh_l0.zero_()
    _dense(hand.head, model.get_layer("head"))


# -- the Keras models -------------------------------------------------------------------


def keras_seed_cnn(keras: Any) -> Any:
    """The seed CNN, channels last; torch's ``padding=1`` is a ZeroPadding2D before a valid Conv2D."""
    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            layers.ZeroPadding2D(1),
            layers.Conv2D(20, 5, strides=2, activation="relu"),
            layers.Conv2D(30, 7),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.Conv2D(40, 3),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.Flatten(),
            layers.Dense(80, activation="relu"),
            layers.Dense(10),
        ],
        name="seed_cnn",
    )


def keras_diamond(keras: Any, features: int, width: int, classes: int) -> Any:
    layers = keras.layers
    x = keras.Input((features,))
    a = layers.Dense(width, activation="relu", name="branch_a")(x)
    b = layers.Dense(width, activation="relu", name="branch_b")(x)
    out = layers.Dense(classes, name="head")(layers.Add()([a, b]))
    return keras.Model(x, out, name="diamond")


def keras_sequence(keras: Any, steps: int, features: int, frame: int, hidden: int, classes: int) -> Any:
    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((steps, features)),
            layers.TimeDistributed(layers.Dense(frame), name="frame"),
            layers.LSTM(hidden, name="lstm"),
            layers.Dense(classes, name="head"),
        ],
        name="sequence",
    )


def _randomize_batch_norms(model: Any, seed: int = 0) -> None:
    """Moving statistics away from (0, 1), so the checks see them used."""
    generator = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.__class__.__name__ == "BatchNormalization":
            gamma, beta, mean, var = _weights(layer)
            layer.set_weights(
                [
                    generator.uniform(0.5, 1.5, gamma.shape).astype("float32"),
                    generator.normal(0, 0.1, beta.shape).astype("float32"),
                    generator.normal(0, 0.1, mean.shape).astype("float32"),
                    generator.uniform(0.5, 1.5, var.shape).astype("float32"),
                ]
            )


# -- the benchmark ----------------------------------------------------------------------------


def _keras() -> Any:
    """Keras 3 on the torch backend, or None (with the reason printed)."""
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "torch"
    try:
        import keras
    except ImportError:
        print("keras: keras is not installed; skipped")
        return None
    try:
        import torchx.keras  # noqa: F401
    except ImportError:
        print("keras: torchx-keras is not installed; skipped")
        return None
    if keras.backend.backend() != "torch":
        print(
            f"keras: keras runs on {keras.backend.backend()!r}, not torch (set KERAS_BACKEND=torch); skipped"
        )
        return None
    torch.set_num_threads(1)  # as the runner set it, whatever importing keras did
    return keras


def _convert(model: Any, folder: Path) -> nn.Module | None:
    import torchx.keras
    from torchx.plugin import SpecError

    path = folder / f"{model.name}.keras"
    model.save(path)
    try:
        return torchx.keras.load(path).eval()
    except SpecError as error:
        print(f"keras: {model.name} skipped, it does not convert yet: {str(error).splitlines()[0]}")
        return None


def _compare(
    name: str, model: Any, converted: nn.Module, hand: nn.Module, x: torch.Tensor, *,
    rounds: int, per_round: int, keras_bound: float, hand_bound: float | None,
) -> list[Result]:  # fmt: skip
    def run_keras() -> object:
        return model(x, training=False)

    with torch.no_grad():
        want = np.asarray(run_keras().detach().cpu())
        for label, module in (("converted", converted), ("hand-written", hand)):
            got = module(x).numpy()
            assert got.shape == want.shape, (name, label, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4, err_msg=f"{name}: {label} vs keras")
        ours, theirs, handmade = interleaved_medians(
            partial(converted, x),
            run_keras,
            partial(hand, x),
            rounds=rounds,
            per_round=per_round,
            collect_each_round=False,
        )
    print(
        f"keras: {name}: converted {theirs / ours:6.1f}x faster than Keras "
        f"(bound >= {1 / keras_bound:.0f}x){'  ok' if theirs / ours >= 1 / keras_bound else '  OVER BOUND'}"
    )
    return [
        Result(f"keras: {name}: converted vs Keras", ours, theirs, keras_bound),
        Result(f"keras: {name}: converted vs hand-written", ours, handmade, hand_bound),
    ]


def bench_keras(quick: bool) -> list[Result]:
    keras = _keras()
    if keras is None:
        return []
    import torchx.keras

    rounds = 21 if quick else 101
    results: list[Result] = []
    keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)

        model = keras_seed_cnn(keras)
        _randomize_batch_norms(model)
        converted = _convert(model, folder)
        if converted is not None:
            hand = HandSeedCnn(eps=1e-3).eval()
            with torch.no_grad():
                load_seed_cnn(hand, model)
            x = torch.randn(8, 32, 32, 3)
            results += _compare("seed CNN, batch 8", model, converted, hand, x, rounds=rounds,
                                per_round=3, keras_bound=1 / 3, hand_bound=1.02)  # fmt: skip

        features, width, classes = 256, 512, 10
        model = keras_diamond(keras, features, width, classes)
        converted = _convert(model, folder)
        if converted is not None:
            hand = HandDiamond(features, width, classes).eval()
            with torch.no_grad():
                load_diamond(hand, model)
            x = torch.randn(32, features)
            results += _compare("diamond, batch 32", model, converted, hand, x, rounds=rounds,
                                per_round=10, keras_bound=1 / 3, hand_bound=1.02)  # fmt: skip

        steps, features, frame, hidden = 50, 32, 64, 64
        model = keras_sequence(keras, steps, features, frame, hidden, classes)
        converted = _convert(model, folder)
        if converted is not None:
            hand = HandSequence(features, frame, hidden, classes).eval()
            with torch.no_grad():
                load_sequence(hand, model)
            x = torch.randn(8, steps, features)
            results += _compare("TD+LSTM, batch 8", model, converted, hand, x, rounds=rounds,
                                per_round=2, keras_bound=1 / 10, hand_bound=None)  # fmt: skip

        resnet = keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
        path = folder / "resnet50.keras"
        resnet.save(path)
        del resnet
        loads = []
        for _ in range(1 if quick else 2):
            start = time.perf_counter()
            torchx.keras.load(path)
            loads.append(time.perf_counter() - start)
        chains = {
            (count, order): _chain_archive(
                folder / f"chain-{count}-{order}.keras", count, order == "reversed"
            )
            for count in (1000, 2000)
            for order in ("in order", "reversed")
        }
        seconds = dict(
            zip(chains, interleaved_medians(*(partial(torchx.keras.load, path) for path in chains.values()),
                                            rounds=5 if quick else 9, per_round=1), strict=True)
        )  # fmt: skip
    best = min(loads)
    print(f"keras: convert ResNet50 (224x224, 1000 classes): {best:.2f} s, best of {len(loads)} "
          f"(bound 5 s){'  ok' if best < 5 else '  OVER BOUND'}")  # fmt: skip
    results.append(Result("keras: ResNet50 conversion, seconds vs 5 s", best, 5.0, 1.0, unit="s"))
    for (count, order), time_s in seconds.items():
        print(f"keras: convert a {count:,}-layer Activation chain listed {order}: {time_s:.2f} s")
    results.append(Result("keras: 2,000-layer chain, reversed vs in order", seconds[(2000, "reversed")],
                          seconds[(2000, "in order")], 1.5, unit="s"))  # fmt: skip
    results.append(Result("keras: 2,000 vs 1,000-layer chain (linear: ~2x)", seconds[(2000, "in order")],
                          seconds[(1000, "in order")], 2.5, unit="s"))  # fmt: skip
    return results


def _chain_archive(path: Path, count: int, reverse: bool) -> Path:
    """A functional config of ``count`` ReLU Activation layers, one after the other, listed in order or
    reversed (as a hand-written file may list them: Keras itself cannot build a chain this deep)."""

    def tensor(layer: str) -> dict[str, Any]:
        return {"class_name": "__keras_tensor__", "config": {"keras_history": [layer, 0, 0]}}

    names = [f"relu_{index}" for index in range(count)]
    chain = [
        {"class_name": "Activation", "name": name, "config": {"name": name, "activation": "relu"},
         "inbound_nodes": [{"args": [tensor(source)]}]}
        for name, source in zip(names, ["x", *names], strict=False)
    ]  # fmt: skip
    entry = {"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_shape": [None, 8]}}
    config = {"name": "chain", "layers": [entry, *(chain[::-1] if reverse else chain)],
              "input_layers": ["x", 0, 0], "output_layers": [names[-1], 0, 0]}  # fmt: skip
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": "Functional", "config": config}))
    return path
