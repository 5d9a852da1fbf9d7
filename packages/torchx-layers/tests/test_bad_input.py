"""Bad input: each gives a clear TorchX error and leaves nothing half-built."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import (
    AllocationError,
    ArgumentError,
    MissingPackageError,
    PluginManager,
    PluginWarning,
    ShapeError,
    SpecError,
)
from torchx.core.testing import install_fake_distribution


def test_linear_on_a_scalar() -> None:
    with pytest.raises(
        ShapeError,
        match=r"^Linear: expected input of shape \(\*, in_features\) \(at least 1-d\), got \(\) \(0-d\)",
    ):
        L.Linear(3)(torch.tensor(2.0))


def test_conv2d_on_3d_input_suggests_the_batch_dim() -> None:
    with pytest.raises(ShapeError) as info:
        L.Conv2d(4, 3)(torch.zeros(3, 16, 16))
    assert str(info.value) == (
        "Conv2d: expected input of shape (N, C_in, H, W) (4-d), got (3, 16, 16) (3-d)\n"
        "  fix: add the batch dim: x.unsqueeze(0)"
    )


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: L.Linear(0), id="Linear(0)"),
        pytest.param(lambda: L.Linear(-4), id="Linear(-4)"),
        pytest.param(lambda: L.Conv2d(0, 3), id="Conv2d(0, 3)"),
        pytest.param(lambda: L.Embedding(0, 3), id="Embedding(0, 3)"),
        pytest.param(lambda: L.GroupNorm(0), id="GroupNorm(0)"),
        pytest.param(lambda: L.Dropout(1.5), id="Dropout(1.5)"),
        pytest.param(lambda: L.Reshape((0, 2)), id="Reshape((0, 2))"),
        pytest.param(lambda: L.Reshape((-1, -1)), id="Reshape((-1, -1))"),
        pytest.param(lambda: L.MultiheadAttention(-1), id="MultiheadAttention(-1)"),
    ],
)
def test_zero_and_negative_sizes_fail_at_construction(make: object) -> None:
    with pytest.raises(ArgumentError):
        make()  # type: ignore[operator]


def test_incompatible_arguments_name_the_layer_and_shapes() -> None:
    with pytest.raises(
        ShapeError,
        match=r"^GroupNorm: cannot build GroupNorm\(num_groups=3, .*num_channels=4\) for input \(2, 4, 5, 5\)",
    ):
        L.GroupNorm(3)(torch.zeros(2, 4, 5, 5))
    with pytest.raises(
        ShapeError,
        match=r"LayerNorm: normalized_shape=\(7,\) does not match the input's trailing dims \(5,\)",
    ):
        L.LayerNorm(normalized_shape=7)(torch.zeros(2, 5))


def test_merge_shape_mismatch_is_a_shape_error_at_build() -> None:
    with pytest.raises(ShapeError, match=r"^Add: input \(2, 3\), \(2, 4\) does not fit"):
        torchx.build(L.Add(), (2, 3), (2, 4))


def test_unknown_spec_type_lists_close_names(fresh_plugins: PluginManager) -> None:
    with pytest.raises(SpecError, match=r"unknown layer type 'Conv2D_'; did you mean Conv2d"):
        L.Layer.from_spec({"type": "Conv2D_", "args": {"out_channels": 3, "kernel_size": 3}})


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        pytest.param(
            {"type": "Conv2d", "args": {"out_channels": 3, "kernel_size": "3"}},
            r"\$\.args\.kernel_size: expected a positive int or a list of positive ints",
            id="kernel_size-str",
        ),
        pytest.param(
            {"type": "Conv2d", "args": {"out_channels": 3}},
            r"\$\.args: missing required argument 'kernel_size'",
            id="missing-argument",
        ),
        pytest.param(
            {"type": "Conv2d", "args": {"out_channels": 3, "kernel_size": 3, "in_channel": 3}},
            r"\$\.args\.in_channel: unknown argument",
            id="unknown-argument",
        ),
        pytest.param(
            {"type": "Conv2d", "args": {"out_channels": 3, "kernel_size": 3, "device": "cuda"}},
            r"\$\.args\.device: device is where a model runs, not part of its architecture",
            id="device-argument",
        ),
        pytest.param(
            {"type": "Conv2d", "args": {"out_channels": 3, "kernel_size": 3, "padding_mode": "mirror"}},
            r"\$\.args\.padding_mode: expected one of 'zeros'",
            id="padding_mode-unknown",
        ),
        pytest.param(
            {"type": "Sequential", "layers": [{"type": "Linear"}]},
            r"\$\.layers\[0\]\.args: missing required argument 'out_features'",
            id="inner-missing-argument",
        ),
        pytest.param(
            {"type": "Sequential", "layers": "Linear"},
            r"\$\.layers: expected a list of layers",
            id="layers-str",
        ),
        pytest.param(
            {"type": "Sequential", "layers": [], "title": "x"}, r"\$\.title: unknown key", id="unknown-key"
        ),
        pytest.param(
            {"type": "Linear", "name": "a b", "args": {"out_features": 3}},
            r"\$\.name: layer name 'a b'",
            id="name-not-a-path",
        ),
        pytest.param(
            {"type": "Linear", "name": 3, "args": {"out_features": 3}},
            r"\$\.name: a layer name is a string",
            id="name-int",
        ),
        pytest.param(
            {"format_version": 99, "type": "Linear", "args": {"out_features": 3}},
            r"format version 99, newer than",
            id="version-newer",
        ),
    ],
)
def test_bad_specs(fresh_plugins: PluginManager, spec: dict, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        L.Layer.from_spec(spec)


def test_lists_in_specs_become_tuples(fresh_plugins: PluginManager) -> None:
    layer = L.Layer.from_spec({"type": "conv2d", "args": {"out_channels": 3, "kernel_size": [3, 1]}})
    assert layer.arguments["kernel_size"] == (3, 1)


def test_a_yaml_spec_with_python_tags_is_refused(fresh_plugins: PluginManager, tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    path = tmp_path / "model.yaml"
    path.write_text(f"type: !!python/object/apply:os.system ['touch {canary}']\nargs: {{}}\n")
    with pytest.raises(SpecError, match="unsafe YAML"):
        torchx.load_spec(path)
    assert not canary.exists()


def test_yaml_and_json_files_with_aliases(fresh_plugins: PluginManager, tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(
        "type: sequential\nlayers:\n  - {type: Dense, args: {out_features: 8}}\n  - {type: relu}\n  - {type: VIEW, args: {shape: [2, 4]}}\n"
    )
    model = torchx.load_spec(path)
    assert model(torch.zeros(3, 5)).shape == (3, 2, 4)
    torchx.save_spec(model, tmp_path / "model.json")
    assert torchx.load_spec(tmp_path / "model.json").to_spec() == model.to_spec()


@pytest.mark.skipif(
    importlib.util.find_spec("torchx.functional") is not None, reason="torchx-functional is installed"
)
def test_names_of_missing_distributions_say_what_to_install(fresh_plugins: PluginManager) -> None:
    with pytest.raises(
        MissingPackageError,
        match="provided by torchx-functional, which is not installed; run: pip install torchx-functional",
    ):
        L.Placeholder  # noqa: B018
    assert not hasattr(L, "Placeholder")


def test_unknown_names_are_plain_attribute_errors(fresh_plugins: PluginManager) -> None:
    with pytest.raises(AttributeError, match="no attribute 'Lienar'"):
        L.Lienar  # noqa: B018


def install_plugin(site: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    """Install a one-module plugin distribution ``name`` under ``site``."""
    monkeypatch.syspath_prepend(str(site))
    module = "tx_" + name.replace("-", "_")
    install_fake_distribution(site, name, plugins={name: module}, modules={module: source})


SCALED_TANH_PLUGIN = """
    import torch
    from torch import nn
    from torchx.core import FromInput, LeafLayer, hookimpl

    class ScaledTanhModule(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(features))
        def forward(self, x):
            return torch.tanh(x * self.scale)

    class ScaledTanh(LeafLayer):
        native_class = ScaledTanhModule
        inferred_arguments = {"features": FromInput(dim=-1)}
        def __init__(self) -> None:
            super().__init__()

    @hookimpl
    def torchx_register_layers(registry):
        registry.register(ScaledTanh)
"""


def test_a_third_party_layer_appears_on_the_facade_and_in_specs(
    fresh_plugins: PluginManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path, monkeypatch, "torchx-scaled-tanh", SCALED_TANH_PLUGIN)
    model = L.Sequential(L.Linear(6), L.ScaledTanh(), L.Linear(2))
    assert model(torch.zeros(3, 4)).shape == (3, 2)
    assert model[1].scale.shape == (6,)
    assert L.Layer.from_spec(model.to_spec()).to_spec()["layers"][1] == {"type": "ScaledTanh"}


def test_a_broken_plugin_leaves_the_host_working(
    fresh_plugins: PluginManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path, monkeypatch, "torchx-broken", "raise RuntimeError('half-installed')")
    with pytest.warns(
        PluginWarning, match="'torchx-broken' failed \\(import\\): RuntimeError: half-installed"
    ):
        model = L.Layer.from_spec(
            {"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": 2}}]}
        )
    assert model(torch.zeros(1, 3)).shape == (1, 2)


def test_tracing_an_unbuilt_model_asks_for_a_build_and_leaves_it_intact() -> None:
    from torchx.core import TorchXError

    model = L.Sequential(L.Linear(4))
    with pytest.raises(TorchXError, match=r"call torchx\.build"):
        torch.export.export(model, (torch.randn(2, 3),))
    assert not model.is_built
    assert type(model(torch.randn(2, 3))) is torch.Tensor


def test_a_first_call_that_fails_leaves_the_layer_unbuilt() -> None:
    layer = L.Add()
    with pytest.raises(ShapeError, match=r"^Add: input \(2, 3\), \(2, 4\) does not fit"):
        layer(torch.zeros(2, 3), torch.zeros(2, 4))
    assert not layer.is_built


@pytest.mark.parametrize(
    ("layer", "inputs"),
    [
        pytest.param(lambda: L.Softmax2d(), [(2, 5)], id="Softmax2d-2d"),
        pytest.param(  # the closed form gives -1: the meta run says why
            lambda: L.Conv2d(1, kernel_size=3), [(2, 1, 1, 1)], id="Conv2d-kernel-over-input"
        ),
        pytest.param(
            lambda: L.TransformerEncoderLayer(2, dim_feedforward=8),
            [(2, 3, 4, 6)],
            id="TransformerEncoderLayer-4d",
        ),
        pytest.param(
            lambda: L.TransformerDecoderLayer(2, dim_feedforward=8),
            [(5, 2, 6), (7, 2, 10)],
            id="TransformerDecoderLayer-memory-width",
        ),
    ],
)
def test_build_rejects_what_the_layer_rejects(layer: object, inputs: list[tuple[int, ...]]) -> None:
    model = layer()  # type: ignore[operator]
    with pytest.raises(ShapeError):
        torchx.build(model, *inputs)
    assert not model.is_built


def test_memory_errors_are_not_reported_as_shape_errors() -> None:
    from torchx.core._leaf import is_shape_problem

    assert not is_shape_problem(torch.OutOfMemoryError("out of memory"))
    assert is_shape_problem(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_huge_numbers_and_yaml_alias_bombs_are_spec_errors(
    fresh_plugins: PluginManager, tmp_path: Path
) -> None:
    with pytest.raises(
        SpecError, match=r"\$\.args\.p: an integer of about 401 digits; integers in a spec are int64"
    ):
        L.Layer.from_spec({"type": "Dropout", "args": {"p": 10**400}})
    lines = ["type: Sequential", "layers:", "  - &a0 {type: ReLU}"]
    for level in range(1, 25):
        previous = f"*a{level - 1}"
        lines.append(f"  - &a{level} {{type: Sequential, layers: [{previous}, {previous}, {previous}]}}")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError, match=r"more than 100000 layers"):
        torchx.load_spec(path)


def test_the_abstract_layer_base_is_not_a_spec_type(fresh_plugins: PluginManager) -> None:
    with pytest.raises(SpecError, match="unknown layer type 'Layer'"):
        L.Layer.from_spec({"type": "Layer"})


def test_a_sequential_too_large_for_memory_names_the_layer_and_stays_unbuilt() -> None:
    model = L.Sequential(L.Linear(4), L.Linear(10**6), L.ReLU(), L.Linear(10**6))
    largest = r"the largest layer is the Linear at '3', with 3\.6 TiB"
    with pytest.raises(
        AllocationError, match=rf"^Sequential: building it would allocate 3\.6 TiB .*; {largest}"
    ):
        model(torch.zeros(2, 8))
    assert not model.is_built and not torchx.is_built(model[1])
    model[3] = L.Linear(10)
    assert model(torch.zeros(2, 8)).shape == (2, 10)  # fixed, it builds
