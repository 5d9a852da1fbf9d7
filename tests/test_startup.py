"""With every distribution installed, importing them all and ``torchx --help``
(every plugin loaded, Keras's and Optuna's among them) import nothing heavy,
nor do the transformer examples, defined and run: see ``tests/startup.py``."""

from __future__ import annotations

from pathlib import Path

from startup import HELP, heavy_imports

EXAMPLES = Path(__file__).parents[1] / "examples"

DISTRIBUTIONS = ("layers", "functional", "rnn", "device", "keras", "tune")


def test_importing_every_distribution_imports_nothing_heavy() -> None:
    assert heavy_imports("\n".join(f"import torchx.{package}" for package in DISTRIBUTIONS)) == []


def test_the_torchx_command_with_every_plugin_imports_nothing_heavy() -> None:
    assert heavy_imports(HELP) == []


def test_defining_and_running_the_transformer_examples_imports_nothing_heavy() -> None:
    """Their recordings run on meta: embeddings' tables, ``torch.arange`` of
    the sequence, rotary products, a tied head's ``F.linear``, whose torch
    meta kernels import its compiler or sympy, answer from MetaFormulas."""
    code = (
        f"import sys\nsys.path.insert(0, {str(EXAMPLES)!r})\nimport torch, bert, gpt2, llama\n"
        "ids = torch.randint(0, 100, (2, 7))\n"
        "llama.llama(**llama.TINY)(ids)\n"
        "gpt2.gpt2(**gpt2.SMALL)(ids)\n"
        "bert.bert(**bert.SMALL)(ids, torch.ones_like(ids), torch.zeros_like(ids))\n"
    )
    assert heavy_imports(code) == []


def test_defining_the_vision_examples_imports_nothing_heavy() -> None:
    """Their pooling answers its shape from its window (torch's meta max
    pooling imports sympy through ``torch._check``)."""
    code = (
        f"import sys\nsys.path.insert(0, {str(EXAMPLES)!r})\nimport torch, vision_models\n"
        "for name in ('resnet18', 'densenet121', 'mobilenet_v2', 'mobilenet_v3_small'):\n"
        "    model = vision_models.MODELS[name][0]()\n"
        "model.eval()(torch.randn(1, 3, 224, 224))\n"
    )
    assert heavy_imports(code) == []


def test_building_models_from_shapes_imports_nothing_heavy() -> None:
    """A build's meta runs answer from formulas: built TorchX layers from their
    layer's, torch's activations, dropout and recurrent layers from
    MetaFormulas, where torch's meta kernels would import its compiler (a
    second of the first build)."""
    code = """
import torch, torch.nn.functional as F
from torch import nn
import torchx, torchx.layers as L

def cnn():
    return L.Sequential(
        L.Conv2d(8, 3), L.BatchNorm2d(), L.ReLU(), L.MaxPool2d(2), L.Flatten(), L.Dropout(0.1), L.Linear(10)
    )

class Activations(nn.Module):
    def forward(self, x):
        return F.gelu(F.leaky_relu(F.relu(x), 0.1)) * 2

model = torchx.build(cnn(), (None, 3, 32, 32))
torchx.build(model, (None, 3, 32, 32))  # built: checked on meta
torchx.build(L.Sequential(L.Linear(8), nn.ReLU(), nn.Dropout(0.1), Activations(), L.Linear(2)), (None, 4))
x = L.Placeholder((None, 3, None, None))
h = F.dropout(F.silu(L.Conv2d(8, 3)(x)), 0.1).relu()
graph = L.Functional(inputs=x, outputs=F.hardswish(h))
torchx.infer_shapes(graph, (2, 3, 16, 16))
torchx.build(L.Sequential(graph, L.Flatten(), L.Linear(10)), (None, 3, 12, 12))
clips = L.Sequential(L.TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten()), L.LSTM(16, return_sequences=False))
torchx.build(clips, (None, 5, 3, 8, 8))
torchx.build(L.Sequential(L.TransformerEncoderLayer(4, dim_feedforward=32, batch_first=True)), (None, 7, 16))
"""
    assert heavy_imports(code) == []
