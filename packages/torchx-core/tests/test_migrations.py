"""Spec versions: a plugin renames an argument across two versions, and old specs still load."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
import yaml
from torch import nn
from toy_layers import Chain, Dense

import torchx
import torchx.cli._plugin
from torchx.cli import main
from torchx.core import (
    FromInput,
    FromState,
    LeafLayer,
    PluginManager,
    PluginWarning,
    SpecError,
    hookimpl,
    use_plugins,
)
from torchx.core._arguments import PositiveInt
from torchx.core._errors import SpecMigrationWarning
from torchx.core._registry import LayerRegistry, MigrationRegistry, rename_argument
from torchx.core._specs import from_spec, to_spec


class Projection(LeafLayer):
    """A linear layer whose output-size argument was ``units`` in version 1,
    ``width`` in version 2, and is ``out_features`` (torch's name) in version 3."""

    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1, state=FromState("weight", 1))}
    spec_version = 3

    def __init__(self, out_features: PositiveInt, *, bias: bool = True) -> None:
        super().__init__(out_features=out_features, bias=bias)


class ProjectionPlugin:
    @hookimpl
    def torchx_register_layers(self, registry: LayerRegistry) -> None:
        registry.register(Projection)
        registry.register(Chain)
        registry.register(Dense)

    @hookimpl
    def torchx_register_migrations(self, migrations: MigrationRegistry) -> None:
        migrations.add("Projection", 1, rename_argument("units", "width"))
        migrations.add("Projection", 2, rename_argument("width", "out_features"))


def manager_with(*plugins: tuple[object, str]) -> PluginManager:
    manager = PluginManager(load_entry_points=False)
    for plugin, name in plugins:
        manager.register(plugin, name)
    return manager


@pytest.fixture
def plugin() -> Iterator[PluginManager]:
    manager = manager_with((ProjectionPlugin(), "projection-plugin"), (torchx.cli._plugin, "torchx-core"))
    with use_plugins(manager):
        yield manager


def version_1_spec() -> dict[str, Any]:
    return {
        "format_version": 1,
        "type": "Chain",
        "children": [
            {"type": "Dense", "args": {"out_features": 8}},
            {"type": "Projection", "args": {"units": 3, "bias": False}},
        ],
    }


def test_the_current_version_is_written_when_above_one(plugin: PluginManager) -> None:
    spec = to_spec(Chain(Dense(8), Projection(3)))
    assert spec["children"][0] == {"type": "Dense", "args": {"out_features": 8}}  # version 1: not written
    assert spec["children"][1] == {"type": "Projection", "version": 3, "args": {"out_features": 3}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current version reads without a migration
        assert to_spec(from_spec(spec)) == spec


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_entry_is_migrated_in_order_and_a_warning_names_it(
    plugin: PluginManager, version: int
) -> None:
    spec = version_1_spec()
    if version == 2:
        spec["children"][1] = {"type": "Projection", "version": 2, "args": {"width": 3, "bias": False}}
    with pytest.warns(
        SpecMigrationWarning, match=rf"\$\.children\[1\] \(Projection: version {version} to 3\)"
    ):
        model = from_spec(spec)
    built = torchx.build(model, (None, 4))
    assert isinstance(built.get_submodule("1"), nn.Linear)
    assert built.get_submodule("1").out_features == 3 and built.get_submodule("1").bias is None
    assert to_spec(model)["children"][1] == {
        "type": "Projection",
        "version": 3,
        "args": {"out_features": 3, "bias": False},
    }


def test_a_migration_receives_a_copy_and_leaves_the_document_alone(plugin: PluginManager) -> None:
    spec = version_1_spec()
    before = json.dumps(spec)
    with pytest.warns(SpecMigrationWarning):
        from_spec(spec)
    assert json.dumps(spec) == before


def test_an_entry_newer_than_the_installed_layer_is_refused_naming_both_versions(
    plugin: PluginManager,
) -> None:
    spec = version_1_spec()
    spec["children"][1] = {"type": "Projection", "version": 4, "args": {"out_features": 3}}
    with pytest.raises(SpecError) as caught:
        from_spec(spec)
    assert caught.value.where == "$.children[1].version"
    assert "version 4, newer than the version 3 that the installed projection-plugin reads" in str(
        caught.value
    )
    assert "upgrade projection-plugin" in str(caught.value)


def test_a_document_newer_than_this_torchx_is_refused_naming_both_versions(plugin: PluginManager) -> None:
    with pytest.raises(SpecError, match="format version 7, newer than the 1 this TorchX reads"):
        from_spec({**version_1_spec(), "format_version": 7})


@pytest.mark.parametrize("version", ["2", 0, True])
def test_a_version_is_a_positive_integer(plugin: PluginManager, version: object) -> None:
    spec = version_1_spec()
    spec["children"][1]["version"] = version
    with pytest.raises(SpecError, match=r"\$\.children\[1\]\.version: expected a positive integer"):
        from_spec(spec)


def test_a_missing_step_is_named() -> None:
    class OnlyTheLastStep(ProjectionPlugin):
        @hookimpl
        def torchx_register_migrations(self, migrations: MigrationRegistry) -> None:
            migrations.add("Projection", 2, rename_argument("width", "out_features"))

    manager = manager_with((OnlyTheLastStep(), "projection-plugin"))
    missing = "no migration of Projection from version 1 to 2 is registered"
    with use_plugins(manager), pytest.raises(SpecError, match=missing):
        from_spec(version_1_spec())


def test_a_failing_migration_is_a_spec_error_naming_its_plugin() -> None:
    class Broken(ProjectionPlugin):
        @hookimpl
        def torchx_register_migrations(self, migrations: MigrationRegistry) -> None:
            migrations.add("Projection", 1, lambda fields: fields["missing"])
            migrations.add("Projection", 2, lambda fields: ["not", "fields"])  # type: ignore[arg-type, return-value]

    with use_plugins(manager_with((Broken(), "broken-plugin"))):
        with pytest.raises(SpecError, match=r"from version 1 \(broken-plugin\) failed: KeyError"):
            from_spec(version_1_spec())
        spec = version_1_spec()
        spec["children"][1]["version"] = 2
        with pytest.raises(SpecError, match=r"from version 2 \(broken-plugin\) returned a list"):
            from_spec(spec)


def test_a_plugin_cannot_migrate_another_plugins_types() -> None:
    class Meddler:
        @hookimpl
        def torchx_register_migrations(self, migrations: MigrationRegistry) -> None:
            migrations.add("Projection", 1, lambda fields: {})

    manager = manager_with((ProjectionPlugin(), "projection-plugin"), (Meddler(), "meddler"))
    with (
        use_plugins(manager),
        pytest.warns(
            PluginWarning, match="'migrations of Projection' is already registered by 'projection-plugin'"
        ),
    ):
        registry = manager.registry
    with use_plugins(manager), pytest.warns(SpecMigrationWarning):
        assert (
            from_spec(version_1_spec(), registry=registry).get_submodule("1").arguments["out_features"] == 3
        )


def test_torchx_convert_writes_the_current_versions(
    plugin: PluginManager, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(version_1_spec()))
    assert main(["convert", str(tmp_path / "old.yaml"), "-o", str(tmp_path / "new.yaml")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("torchx convert: SpecMigrationWarning: the spec was written by older versions")
    assert "$.children[1] (Projection: version 1 to 3)" in err
    new = yaml.safe_load((tmp_path / "new.yaml").read_text())
    assert new["children"][1] == {
        "type": "Projection",
        "version": 3,
        "args": {"out_features": 3, "bias": False},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = torchx.build(torchx.load_spec(tmp_path / "new.yaml"), (2, 4))
    assert model(torch.randn(2, 4)).shape == (2, 3)
