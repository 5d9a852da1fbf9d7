"""The examples: every YAML spec is its Python model, every spec builds, the training example learns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from vision_helpers import EXAMPLES, assert_same_outputs, torchvision_keys

import torchx
from torchx.cli import main
from torchx.core._specs import parse_spec

# isort: split
import seed_models  # examples/ is on the path now (vision_helpers put it there)
import vision_models

SPECS = {
    "seed_cnn": "8,3,32,32",
    "seed_diamond": "None,3,32,32",
    "sequence_model": "None,16,3,16,16",
    "transformer_classifier": "None,32:int64",
    "digits_cnn": "None,1,8,8",
}


@pytest.mark.parametrize("name", list(seed_models.MODELS))
def test_each_yaml_spec_is_its_python_model(name: str) -> None:
    make, example = seed_models.MODELS[name]
    document = parse_spec((EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))
    assert document == make().to_spec()
    model = torchx.load_spec(EXAMPLES / f"{name}.yaml")
    assert model(example).shape == make()(example).shape


@pytest.mark.parametrize(("name", "shape"), list(SPECS.items()))
def test_each_spec_validates_and_summarises(
    capsys: pytest.CaptureFixture[str], name: str, shape: str
) -> None:
    spec = str(EXAMPLES / f"{name}.yaml")
    assert main(["validate", spec, "--input", shape]) == 0
    assert main(["summary", spec, "--input", shape]) == 0
    assert "total parameters" in capsys.readouterr().out


def test_the_python_models_script_runs() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / "seed_models.py")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "transformer_classifier: input (8, 32) -> output (8, 4)" in done.stdout


def test_the_digits_example_reaches_95_percent_and_reloads(tmp_path: Path) -> None:
    # How long it takes is a benchmark's question (benchmarks/bench_examples.py), not a test's.
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "train_digits.py"), "--checkpoint", str(tmp_path / "digits.pt")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    held_out = float(re.search(r"held-out accuracy (\d\.\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    reloaded = float(re.search(r"reloaded from .*: held-out accuracy (\d\.\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert held_out >= 0.95 and reloaded == held_out
    assert torch.load(tmp_path / "digits.pt", weights_only=True)["spec"]["type"] == "Sequential"


def test_the_native_seed_cnn_is_the_torchx_one_written_by_hand() -> None:
    torchx_model = torchx.build(seed_models.seed_cnn(), (2, 3, 32, 32))
    native = seed_models.native_seed_cnn()
    shapes = [tuple(t.shape) for t in native.state_dict().values()]
    assert [tuple(t.shape) for t in torchx_model.state_dict().values()] == shapes
    torchx_model.load_state_dict(native.state_dict())
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(torchx_model.eval()(x), native.eval()(x), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_named_resnets_have_exactly_torchvisions_state_dict_keys(name: str) -> None:
    """The key lists in tests/data are torchvision's (its module structure, written out)."""
    make, _, _ = vision_models.MODELS[name]
    assert list(make().state_dict()) == torchvision_keys(name)


# ViT-B/16 takes 224x224 images only: tests/test_zoo.py compares it, from its spec.
@pytest.mark.parametrize("name", [name for name in vision_models.MODELS if name != "vit_b_16"])
def test_vision_models_match_torchvision_counts_and_the_hand_written_models(name: str) -> None:
    make, native, parameters = vision_models.MODELS[name]
    model, reference = make(), native()
    assert vision_models.parameter_count(model) == vision_models.parameter_count(reference) == parameters
    model.load_state_dict(reference.state_dict(), strict=True)  # a torchvision-layout checkpoint
    assert_same_outputs(model, reference, torch.randn(2, 3, 224, 224))  # the size it is defined on


def test_vit_b_16_needs_no_custom_layer_and_has_torchvisions_parameter_count() -> None:
    with torchx.device_scope("meta"):  # 330 MB of weights, defined without allocating them
        model = vision_models.vit_b_16()
    assert vision_models.parameter_count(model) == 86_567_656


def test_a_small_vision_transformer_trains_its_class_token_and_position_embedding() -> None:
    model = vision_models.vision_transformer(
        image=32, patch=8, layers=2, heads=2, hidden=16, mlp=32, classes=3
    )
    logits = model(torch.randn(4, 3, 32, 32))
    assert logits.shape == (4, 3)
    logits.sum().backward()
    token, position = model.class_token, model.encoder.pos_embedding  # torchvision's parameters
    assert token.shape == (1, 1, 16) and position.shape == (1, 17, 16)
    assert {"class_token", "encoder.pos_embedding"} <= set(model.state_dict())
    assert token.grad is not None and position.grad is not None
    assert token.grad.abs().sum() > 0
