"""The model zoo (examples/zoo): each spec file is torchvision's model, with its
parameter count, its state-dict keys and its outputs, and is what the builders give now."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn
from vision_helpers import EXAMPLES, assert_same_outputs, torchvision_keys

import torchx
from torchx.core._specs import load_spec

# isort: split
import vision_models  # examples/ is on the path now (vision_helpers put it there)
from zoo import generate

ZOO = EXAMPLES / "zoo"
Zoo = tuple[str, nn.Module, nn.Module]


@pytest.fixture(scope="module", params=list(generate.TITLES))
def zoo(request: pytest.FixtureRequest) -> Iterator[Zoo]:
    """A zoo model loaded from its file (built, with real weights: ViT-B/16's
    are 330 MB, so once per module), and its hand-written reference defined on
    the meta device, its weights the model's own (``assign=True``: no copy)."""
    name: str = request.param
    model = load_spec(ZOO / f"{name}.yaml")
    _, native, _ = vision_models.MODELS[name]
    with torch.device("meta"):
        reference = native()
    reference.load_state_dict(model.state_dict(), strict=True, assign=True)
    yield name, model, reference


def test_each_zoo_file_loads_and_has_torchvisions_parameter_count(zoo: Zoo) -> None:
    name, model, _ = zoo
    _, _, published = vision_models.MODELS[name]
    assert torchx.infer_shapes(model, (None, 3, 224, 224)) == (None, 1000)
    assert vision_models.parameter_count(model) == published


def test_each_zoo_model_has_the_state_dict_keys_of_the_model_by_hand(zoo: Zoo) -> None:
    name, model, reference = zoo
    keys = list(model.state_dict())
    assert keys == list(reference.state_dict())
    parameters = [key for key, _ in model.named_parameters()]  # the same names, in the same order
    assert [key for key in keys if key in set(parameters)] == parameters
    assert set(keys) == {*parameters, *(key for key, _ in model.named_buffers())}
    if name.startswith("resnet"):
        assert keys == torchvision_keys(name)


def test_each_zoo_model_computes_what_the_model_by_hand_computes(zoo: Zoo) -> None:
    _, model, reference = zoo
    image = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    assert assert_same_outputs(model, reference, image, atol=1e-5).shape == (2, 1000)


def test_the_stored_files_are_what_the_builders_give_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert generate.main(["--check"]) == 0  # what `python examples/zoo/generate.py --check` runs
    edited = tmp_path / "resnet18.yaml"
    edited.write_text((ZOO / "resnet18.yaml").read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    monkeypatch.setattr(generate, "ZOO_DIR", tmp_path)
    assert generate.stale(["resnet18"]) == ["resnet18"]


def test_the_cli_summarises_a_zoo_file() -> None:
    command = ["summary", str(ZOO / "resnet50.yaml"), "--input", "None,3,224,224"]
    done = subprocess.run(
        [sys.executable, "-m", "torchx.cli", *command], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "layer4" in done.stdout and "total parameters: 25,557,032" in done.stdout
