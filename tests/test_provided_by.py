"""``registry.PROVIDED_BY`` (the names the ``L`` façade and spec errors attribute
to a distribution that is not installed) says exactly what each distribution registers."""

from __future__ import annotations

from types import ModuleType

import pytest

import torchx.functional._plugin
import torchx.rnn._plugin
from torchx.core.registry import PROVIDED_BY, LayerRegistry

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
