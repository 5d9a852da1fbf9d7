"""The example plugin, installed as a user would install it: layers, specs, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torchx_plugin_example as example

import torchx
import torchx.layers as L
from torchx.cli import main
from torchx.core import PluginManager, ShapeError

MODEL = {
    "type": "Sequential",
    "layers": [
        {"type": "Conv2d", "args": {"out_channels": 8, "kernel_size": 3, "padding": 1}},
        {"type": "ResidualBlock", "layers": [{"type": "Conv2d", "args": {"out_channels": 8, "kernel_size": 3, "padding": 1}}, {"type": "SE"}]},
        {"type": "Flatten"},
        {"type": "Linear", "args": {"out_features": 10}},
        {"type": "Swish"},
    ],
}  # fmt: skip


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(MODEL), encoding="utf-8")
    return path


def test_the_layers_are_on_the_facade_and_in_specs(fresh_plugins: PluginManager) -> None:
    assert (L.Swish, L.SqueezeExcite, L.ResidualBlock) == (
        example.Swish,
        example.SqueezeExcite,
        example.ResidualBlock,
    )
    model = L.Layer.from_spec(MODEL)
    out = model(torch.randn(2, 3, 8, 8))
    assert out.shape == (2, 10)
    assert model[1].body[1].reduce.in_channels == 8  # channels inferred
    again = model.to_spec()
    assert again["layers"][1]["type"] == "ResidualBlock" and again["layers"][1]["layers"][1] == {
        "type": "SqueezeExcite"
    }
    assert L.Layer.from_spec(again).to_spec() == again


def test_squeeze_excite_matches_the_hand_computation() -> None:
    layer = L.SqueezeExcite(reduction=2)
    x = torch.randn(2, 6, 5, 5)
    out = layer(x)
    squeezed = x.mean((2, 3))
    hidden = torch.relu(squeezed @ layer.reduce.weight.flatten(1).T + layer.reduce.bias)
    gate = torch.sigmoid(hidden @ layer.expand.weight.flatten(1).T + layer.expand.bias)
    assert torch.allclose(out, x * gate[:, :, None, None], atol=1e-6)


def test_a_residual_body_that_changes_the_shape_is_a_clear_error() -> None:
    block = L.ResidualBlock(L.Linear(5))
    with pytest.raises(
        ShapeError, match=r"ResidualBlock: its body maps \(2, 4\) to \(2, 5\).*\n  fix: end the body"
    ):
        block(torch.zeros(2, 4))


def test_summary_and_plugins_show_the_plugin(capsys: pytest.CaptureFixture[str], spec_file: Path) -> None:
    assert main(["summary", str(spec_file), "--input", "None,3,8,8"]) == 0
    table = capsys.readouterr().out
    assert "ResidualBlock  (None, 8, 8, 8)" in table and "SqueezeExcite" in table and "Swish" in table
    assert main(["plugins", "--format", "json"]) == 0
    plugins = {entry["plugin"]: entry for entry in json.loads(capsys.readouterr().out)["plugins"]}
    mine = plugins["torchx-plugin-example"]
    assert mine["distribution"] == "torchx-plugin-example" and mine["commands"] == ["flops"]
    assert mine["layers"] == ["ResidualBlock", "SqueezeExcite", "Swish"]


def test_the_flops_command_counts_a_forward(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "mlp.yaml"
    path.write_text(
        "type: Sequential\nlayers:\n  - {type: Linear, args: {out_features: 20}}\n", encoding="utf-8"
    )
    assert main(["flops", str(path), "--input", "8,10"]) == 0
    assert capsys.readouterr().out.startswith(f"{2 * 8 * 10 * 20:,} FLOPs")
    assert main(["flops", str(tmp_path / "missing.yaml"), "--input", "8,10"]) == 2


def test_the_residual_block_draws_its_skip_connection(spec_file: Path) -> None:
    pytest.importorskip("graphviz", reason="needs graphviz: pip install graphviz (in the test extra)")
    from torchx.core import model_graph

    graph = model_graph(torchx.load_spec(spec_file), (None, 3, 8, 8))
    [add] = [node for node in graph.nodes.values() if node.label == "add"]
    sources = [graph.nodes[source].label for source, target in graph.edges if target == add.id]
    assert sources == ["Conv2d", "SqueezeExcite"]  # the block's input, and its body's output


def test_the_plugin_imports_torchx_only_through_the_plugin_namespace() -> None:
    """``torchx.plugin`` is enough to write a plugin: the example's modules
    import nothing else from TorchX but the public ``torchx.layers`` façade."""
    import ast

    import torchx.plugin

    imported = set()
    for path in Path(example.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    assert {name for name in imported if name.startswith("torchx.") or name == "torchx"} == {
        "torchx.plugin",
        "torchx.layers",
    }
    assert all(hasattr(torchx.plugin, name) for name in torchx.plugin.__all__)
