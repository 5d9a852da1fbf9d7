"""``DropPath``, ``LayerNorm2d`` and ``Parameter`` on placeholders (issue 27,
section 4): recorded as nodes, trained, scripted, written to specs. The layers
themselves: torchx-layers' ``test_modern_layers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import torchx
import torchx.layers as L
from torchx.functional import Functional


def convnext_block(channels: int = 8) -> Functional:
    """A ConvNeXt block: depthwise conv, channel norm, pointwise MLP, layer
    scale, stochastic depth on the residual branch."""
    x = L.Placeholder((None, channels, 6, 6))
    h = L.Conv2d(channels, 7, padding=3, groups=channels)(x)
    h = L.LayerNorm2d()(h)
    h = L.Conv2d(4 * channels, 1)(h)
    h = L.GELU()(h)
    h = L.Conv2d(channels, 1)(h)
    h = h * L.Parameter((channels, 1, 1), init="constant", value=1e-6, name="gamma")(h)
    return L.Functional(x, x + L.DropPath(0.25)(h))


def test_drop_path_on_placeholders_records_a_node_that_trains_and_scripts() -> None:
    # today: torchvision's StochasticDepth on a placeholder fails ("Placeholder has no attribute 'device'")
    x = L.Placeholder((None, 6))
    y = L.DropPath(0.5)(x)
    assert y.shape == (None, 6)
    model = L.Functional(x, x + y)
    assert model.to_spec()["modules"]["drop_path"] == {"type": "DropPath", "args": {"p": 0.5}}
    data = torch.randn(20, 6)
    torch.manual_seed(4)
    got = model(data)
    torch.manual_seed(4)
    assert torch.equal(got, data + model.drop_path(data))
    assert got.sub(data).eq(0).all(1).any()  # some samples dropped
    scripted = torch.jit.script(model)
    torch.manual_seed(5)
    expected = model(data)
    torch.manual_seed(5)
    assert torch.equal(scripted(data), expected)
    model.eval()
    assert torch.equal(model(data), data + data)


def test_parameter_anchored_on_an_id_placeholder_is_floating() -> None:
    # today: DtypeError "its weights are floating-point, but its input is torch.int64"
    ids = L.Placeholder((None, 7), dtype=torch.long)
    token = L.Parameter((1, 1, 4), name="cls_token")(ids)
    assert token.shape == (None, 1, 4) and "dtype=torch.float32" in repr(token)
    model = L.Functional(ids, token)
    out = model(torch.zeros(5, 7, dtype=torch.long))
    assert out.shape == (5, 1, 4) and out.dtype == torch.float32
    assert model.cls_token.dtype == torch.float32


def test_a_convnext_block_trains_as_written_by_hand_and_scripts() -> None:
    model = convnext_block()
    data = torch.randn(10, 8, 6, 6)
    model(data)
    assert torch.equal(model.gamma, torch.full((8, 1, 1), 1e-6))
    with torch.no_grad():
        model.gamma.fill_(0.5)
    torch.manual_seed(8)
    got = model(data)
    norm = model.layer_norm2d
    h = model.conv2d(data)
    h = F.layer_norm(h.permute(0, 2, 3, 1), (8,), norm.weight, norm.bias, 1e-6).permute(0, 3, 1, 2)
    h = model.conv2d_2(F.gelu(model.conv2d_1(h))) * model.gamma
    torch.manual_seed(8)
    assert torch.equal(got, data + model.drop_path(h))
    got.sum().backward()
    assert model.gamma.grad is not None and norm.weight.grad is not None
    torch.manual_seed(9)
    expected = model(data)
    torch.manual_seed(9)
    assert torch.equal(torch.jit.script(model)(data), expected)


@pytest.mark.parametrize("suffix", [".json", ".yaml"], ids=["json", "yaml"])
def test_a_convnext_block_round_trips_through_spec_files(suffix: str, tmp_path: Path) -> None:
    model = convnext_block()
    data = torch.randn(10, 8, 6, 6)
    model(data)
    path = tmp_path / f"block{suffix}"
    torchx.save_spec(model, path)
    read = torchx.load_spec(path)
    assert read.to_spec() == model.to_spec()
    read.load_state_dict(model.state_dict())
    assert list(read.state_dict()) == list(model.state_dict())
    for mode in ("train", "eval"):
        getattr(model, mode)()
        getattr(read, mode)()
        torch.manual_seed(6)
        expected = model(data)
        torch.manual_seed(6)
        assert torch.equal(read(data), expected), mode
