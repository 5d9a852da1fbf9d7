from __future__ import annotations

import pytest
from fake_backend import FakeBackend, RecordingWrapper
from toy_layers import Chain, Dense, Norm

from torchx.core import LayerRegistry, PluginManager
from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture


@pytest.fixture
def registry() -> LayerRegistry:
    registry = LayerRegistry()
    registry.register(Dense, aliases=("FullyConnected",))
    registry.register(Norm)
    registry.register(Chain)
    return registry


@pytest.fixture
def backend(fresh_plugins: PluginManager) -> FakeBackend:  # noqa: F811 - the fixture
    """The fake device backend, registered in a fresh plugin manager."""
    RecordingWrapper.made.clear()
    plugin = FakeBackend()
    fresh_plugins.register(plugin, "fake-backend")
    return plugin
