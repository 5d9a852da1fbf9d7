from __future__ import annotations

from collections.abc import Iterator

import pytest
from not_installed import not_installed, skip_every_module

if not_installed("torchx.core"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-core is not installed; run: pip install torchx-core"
    )
else:
    from fake_backend import FakeBackend, RecordingWrapper
    from toy_layers import Chain, Dense, Norm

    from torchx.core import LayerRegistry, PluginManager, hookimpl, use_plugins
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

    class ToyLayers:
        @hookimpl
        def torchx_register_layers(self, registry: LayerRegistry) -> None:
            registry.register(Dense)
            registry.register(Norm)
            registry.register(Chain)

    @pytest.fixture
    def toy_layers() -> Iterator[None]:
        """Only the toy layers are registered (installed distributions are not loaded)."""
        manager = PluginManager(load_entry_points=False)
        manager.register(ToyLayers(), "toy-layers")
        with use_plugins(manager):
            yield
