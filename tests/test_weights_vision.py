"""torchx.load_weights with torchvision-layout checkpoints: hand-written ResNet-18, MobileNetV2 and
MobileNetV3-Small (examples/vision_models.py) as sources, into TorchX models with and without names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from vision_helpers import assert_same_outputs

import torchx
from torchx.core._specs import from_spec, to_spec

# isort: split
import vision_models  # examples/ is on the path now (vision_helpers put it there)

IMAGE = (2, 3, 224, 224)  # the size the models are defined on: a Functional checks static dims


def source_of(name: str) -> nn.Module:
    """The hand-written model, as if holding pretrained weights (and running statistics)."""
    torch.manual_seed(1)
    reference = vision_models.MODELS[name][1]()
    for module in reference.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return reference.eval()


def spec_of(name: str, **changes: Any) -> dict[str, Any]:
    """The named TorchX model's spec: architectures are data, so a grey input
    (``channels=1``) or another head (``classes=10``) is one value each."""
    spec = to_spec(vision_models.MODELS[name][0]())
    if "channels" in changes:
        spec["inputs"]["shape"][1] = changes["channels"]
    if "classes" in changes:
        head = spec["outputs"]["node"]
        module = next(node["module"] for node in spec["nodes"] if node["name"] == head)
        spec["modules"][module]["args"]["out_features"] = changes["classes"]
    return spec


def without_names(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with no ``name=`` given: its state-dict keys are TorchX's own (``conv2d_3.weight``)."""
    rename = {key: key.replace(".", "_") for key in spec["modules"]}
    spec["modules"] = {
        rename[key]: {field: value for field, value in entry.items() if field != "name"}
        for key, entry in spec["modules"].items()
    }
    for node in spec["nodes"]:
        if "module" in node:
            node["module"] = rename[node["module"]]
    return spec


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_small"])
def test_by_name_into_a_model_with_torchvisions_names(name: str) -> None:
    source = source_of(name)
    model = from_spec(spec_of(name))
    report = torchx.load_weights(model, source)
    assert report.ok and report.match == "name" and len(report.loaded) == len(source.state_dict())
    assert_same_outputs(model, source, torch.randn(IMAGE))


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_small"])
def test_by_position_into_a_model_without_names(name: str, tmp_path: Path) -> None:
    source = source_of(name)
    torch.save(source.state_dict(), tmp_path / f"{name}.pth")
    model = from_spec(without_names(spec_of(name)))
    assert not set(model.state_dict()) & set(source.state_dict())
    report = torchx.load_weights(model, tmp_path / f"{name}.pth")
    assert report.ok and report.match == "position"
    first = report.loaded[0]
    assert (first.target, first.source) == (
        "conv2d.weight",
        "conv1.weight" if name == "resnet18" else "features.0.0.weight",
    )
    assert_same_outputs(model, source, torch.randn(IMAGE))


def test_a_grey_stem_and_a_ten_class_head_from_an_rgb_imagenet_checkpoint(tmp_path: Path) -> None:
    source = source_of("resnet18")
    torch.save(source.state_dict(), tmp_path / "resnet18.pth")
    model = torchx.build(from_spec(spec_of("resnet18", channels=1, classes=10)), (None, 1, 224, 224))
    head = model.fc.weight.detach().clone()
    with pytest.raises(torchx.WeightMismatchError, match=r"adapt=\('stem',\).*adapt=\('head',\)"):
        torchx.load_weights(model, tmp_path / "resnet18.pth")
    report = torchx.load_weights(model, tmp_path / "resnet18.pth", adapt=("stem", "head"))
    assert report.ok
    assert [entry.target for entry in report.adapted] == ["conv1.weight"]
    assert [entry.target for entry in report.fresh] == ["fc.weight", "fc.bias"]
    assert torch.equal(model.fc.weight, head)
    grey = torch.randn(IMAGE[0], 1, *IMAGE[2:])
    # With the source's first ten classes in the head, the grey model computes
    # what the RGB model computes on the grey image repeated as RGB.
    model.eval()
    with torch.no_grad():
        model.fc.weight.copy_(source.fc.weight[:10])
        model.fc.bias.copy_(source.fc.bias[:10])
        torch.testing.assert_close(model(grey), source(grey.expand(-1, 3, -1, -1))[:, :10])


def test_a_truncated_checkpoint_is_a_clear_error_and_the_model_is_untouched(tmp_path: Path) -> None:
    source = source_of("mobilenet_v2")
    state = source.state_dict()
    torch.save(dict(list(state.items())[: len(state) // 2]), tmp_path / "half.pth")
    model = torchx.build(from_spec(spec_of("mobilenet_v2")), (None, 3, 224, 224))
    before = {key: tensor.clone() for key, tensor in model.state_dict().items()}
    with pytest.raises(torchx.WeightMismatchError) as caught:
        torchx.load_weights(model, tmp_path / "half.pth")
    assert len(caught.value.report.missing) == len(state) - len(state) // 2
    assert "would load (nothing was changed)" in str(caught.value)
    assert all(torch.equal(model.state_dict()[key], tensor) for key, tensor in before.items())
