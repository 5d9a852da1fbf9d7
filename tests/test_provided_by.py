"""``registry.PROVIDED_BY`` (the names the ``L`` façade and spec errors attribute
to a distribution that is not installed) says exactly what each distribution registers,
and the façade's typed view of those names (its ``TYPE_CHECKING`` block) covers them all."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import torchx.functional._plugin
import torchx.layers
import torchx.layers._plugin
import torchx.rnn._plugin
from torchx.core._registry import PROVIDED_BY, LayerRegistry

PLUGINS = {"torchx-functional": torchx.functional._plugin, "torchx-rnn": torchx.rnn._plugin}


class RecordingRegistry(LayerRegistry):
    """A registry that keeps every name offered to it: types, aliases and façade exports."""

    def __init__(self) -> None:
        super().__init__()
        self.offered: set[str] = set()

    def register(self, cls: type, *, name: str | None = None, aliases: tuple[str, ...] = ()) -> None:  # type: ignore[override]
        self.offered.update([name or cls.__name__, *aliases])
        super().register(cls, name=name, aliases=aliases)

    def export(self, name: str, obj: object) -> None:
        self.offered.add(name)
        super().export(name, obj)


@pytest.mark.parametrize("distribution", sorted(PLUGINS))
def test_provided_by_lists_every_name_a_distribution_registers(distribution: str) -> None:
    plugin: ModuleType = PLUGINS[distribution]
    registry = RecordingRegistry()
    plugin.torchx_register_layers(registry=registry)
    listed = {name for name, provider in PROVIDED_BY.items() if provider == distribution}
    assert registry.offered == listed


def test_provided_by_names_only_those_distributions() -> None:
    assert set(PROVIDED_BY.values()) == set(PLUGINS)


def typed_only_names() -> dict[str, object]:
    """What the ``if TYPE_CHECKING:`` block of ``torchx/layers/__init__.py`` tells
    mypy each name is: the object its import or assignment names."""
    tree = ast.parse(Path(torchx.layers.__file__).read_text(encoding="utf-8"))
    (block,) = [
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    typed: dict[str, object] = {}
    for statement in block.body:
        if isinstance(statement, ast.ImportFrom):
            assert statement.module is not None
            module = importlib.import_module(statement.module)
            for alias in statement.names:
                typed[alias.asname or alias.name] = getattr(module, alias.name)
        else:
            assert isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name)
            (target,) = statement.targets
            assert isinstance(target, ast.Name)
            name = statement.value.id
            typed[target.id] = typed[name] if name in typed else getattr(torchx.layers, name)
    return typed


def test_the_facade_types_every_name_it_finds_at_run_time() -> None:
    typed = typed_only_names()
    own_aliases = {alias for aliases in torchx.layers._plugin.ALIASES.values() for alias in aliases}
    assert set(typed) == set(PROVIDED_BY) | (own_aliases - set(torchx.layers.__all__))
    for name, obj in typed.items():
        assert getattr(torchx.layers, name) is obj, name


def test_the_registry_names_the_provider_of_each_facade_name_as_spelled() -> None:
    registry = LayerRegistry()
    assert {name: registry.provider(name) for name in PROVIDED_BY} == PROVIDED_BY
    assert registry.provider("lstm") is None and registry.provider("Linear") is None
