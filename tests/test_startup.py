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
