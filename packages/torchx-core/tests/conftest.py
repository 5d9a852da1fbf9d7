from __future__ import annotations

import pytest
from toy_layers import Chain, Dense, Norm

from torchx.core import LayerRegistry
from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture


@pytest.fixture
def registry() -> LayerRegistry:
    registry = LayerRegistry()
    registry.register(Dense, aliases=("FullyConnected",))
    registry.register(Norm)
    registry.register(Chain)
    return registry
