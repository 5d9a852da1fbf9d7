"""The ConvNeXt example (examples/convnext.py): timm's keys, a block that computes
what plain PyTorch does, per-sample stochastic depth, specs, compile and export,
and timm's outputs when timm is installed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from vision_helpers import EXAMPLES  # noqa: F401 - puts examples/ on the path

import torchx
from torchx.functional import Functional, Placeholder

# isort: split
import convnext

IMAGE = (2, 3, 64, 64)


class _Mlp(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(channels, 4 * channels)
        self.fc2 = nn.Linear(4 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class _Block(nn.Module):
    """A ConvNeXt block in plain PyTorch, as timm writes it (drop path off: eval)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv_dw = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        self.mlp = _Mlp(channels)
        self.gamma = nn.Parameter(torch.full((channels,), 1e-6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mlp(self.norm(self.conv_dw(x).permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
        return x + y * self.gamma.reshape(1, -1, 1, 1)


def _one_block(drop_path: float = 0.0, channels: int = 16) -> Functional:
    x = Placeholder((None, channels, 8, 8))
    return Functional(x, convnext.block(x, "block", channels, drop_path))


def _timm_keys(depths: tuple[int, ...]) -> list[str]:
    """timm's ConvNeXt state-dict keys (``conv_mlp=False``), in its order."""
    keys = ["stem.0.weight", "stem.0.bias", "stem.1.weight", "stem.1.bias"]
    for stage, depth in enumerate(depths):
        if stage > 0:
            keys += [f"stages.{stage}.downsample.{i}.{p}" for i in (0, 1) for p in ("weight", "bias")]
        for index in range(depth):
            name = f"stages.{stage}.blocks.{index}"
            keys.append(f"{name}.gamma")
            keys += [f"{name}.{layer}.{p}" for layer in ("conv_dw", "norm", "mlp.fc1", "mlp.fc2") for p in ("weight", "bias")]  # fmt: skip
    return [*keys, "head.norm.weight", "head.norm.bias", "head.fc.weight", "head.fc.bias"]


def _drop_path_rates(model: nn.Module) -> list[float]:
    return [module.p for name, module in model.named_modules() if name.endswith("drop_path")]


def test_the_model_has_timms_state_dict_keys_in_timms_order() -> None:
    model = convnext.convnext_small_config()
    assert list(model.state_dict()) == _timm_keys(convnext.SMALL[0])
    assert model.get_parameter("stages.2.blocks.1.gamma").shape == (64,)
    assert torch.all(model.get_parameter("stages.2.blocks.1.gamma") == 1e-6)
    assert model.get_submodule("stages.2.blocks.1.conv_dw").groups == 64


def test_a_block_computes_what_the_plain_pytorch_block_computes() -> None:
    torch.manual_seed(0)
    model, reference = _one_block(), nn.ModuleDict({"block": _Block(16)})
    with torch.no_grad():
        reference["block"].gamma.normal_()  # 1e-6 would hide the branch
    torchx.load_weights(model, reference, match="name")  # strict: every key of both sides
    x = torch.randn(3, 16, 8, 8)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference["block"](x), rtol=0, atol=0)


def test_drop_path_drops_whole_samples_in_training_and_none_in_eval() -> None:
    torch.manual_seed(0)
    model = _one_block(drop_path=0.5)
    with torch.no_grad():
        model.get_parameter("block.gamma").fill_(1.0)
    x = torch.randn(1, 16, 8, 8).expand(16, -1, -1, -1)  # one sample, 16 times
    with torch.no_grad():
        branch = model.eval()(x) - x
        torch.manual_seed(1)
        out = model.train()(x)
        torch.manual_seed(1)
        again = model(x)
    dropped = [bool(torch.equal(sample, x[0])) for sample in out]
    kept = [bool(torch.allclose(sample, x[0] + 2 * branch[0], atol=1e-5)) for sample in out]
    assert all(d != k for d, k in zip(dropped, kept, strict=True))  # each sample: all of the branch, or none
    assert any(dropped) and any(kept)  # samples differ in which are dropped
    torch.testing.assert_close(again, out, rtol=0, atol=0)  # the seed decides


def test_the_drop_path_rate_rises_linearly_over_the_blocks() -> None:
    model = convnext.convnext_small_config(drop_path_rate=0.4)
    torch.testing.assert_close(torch.tensor(_drop_path_rates(model)), torch.linspace(0, 0.4, 5))


@pytest.mark.parametrize("suffix", [".json", ".yaml"], ids=["json", "yaml"])
def test_the_spec_round_trip_gives_the_same_outputs(tmp_path: Path, suffix: str) -> None:
    torch.manual_seed(0)
    model = convnext.convnext_small_config(drop_path_rate=0.1).eval()
    torchx.save_spec(model, tmp_path / f"convnext{suffix}")
    loaded = torchx.load_spec(tmp_path / f"convnext{suffix}")
    torchx.load_weights(loaded, model.state_dict(), match="name")
    image = torch.randn(IMAGE)
    with torch.no_grad():
        torch.testing.assert_close(loaded.eval()(image), model(image), rtol=0, atol=0)
    assert _drop_path_rates(loaded) == _drop_path_rates(model)


def test_the_model_compiles_whole_and_exports_with_a_dynamic_batch() -> None:
    torch.manual_seed(0)
    model = convnext.convnext_small_config().eval()
    image = torch.randn(IMAGE)
    with torch.no_grad():
        expected = model(image)
        compiled = torch.compile(model, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(image), expected, rtol=0, atol=0)
        batch = torch.export.Dim("batch", min=2)
        exported = torch.export.export(model, (image,), dynamic_shapes=({0: batch},))
        torch.testing.assert_close(exported.module()(image), expected, rtol=0, atol=0)
        five = torch.randn(5, *IMAGE[1:])
        torch.testing.assert_close(exported.module()(five), model(five), rtol=0, atol=0)


def test_timms_convnext_of_the_same_config_gives_the_same_outputs() -> None:
    timm = pytest.importorskip("timm", reason="timm is not installed: the comparison with timm's ConvNeXt")
    depths, dims = convnext.SMALL
    reference = timm.create_model(
        "convnext_atto", pretrained=False, depths=depths, dims=dims, conv_mlp=False, num_classes=10,
        drop_path_rate=0.3,
    )  # fmt: skip
    model = convnext.convnext_small_config(drop_path_rate=0.3)
    torchx.load_weights(model, reference, match="name")
    assert list(model.state_dict()) == list(reference.state_dict())
    image = torch.randn(IMAGE)
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(image), reference.eval()(image))
        torch.manual_seed(2)
        ours = model.train()(image)
        torch.manual_seed(2)
        torch.testing.assert_close(ours, reference.train()(image))  # timm's draws: the same samples dropped
