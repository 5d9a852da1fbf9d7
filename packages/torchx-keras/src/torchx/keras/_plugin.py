"""torchx-keras as a TorchX plugin: the layers a converted model may hold that torch has no module for."""

from __future__ import annotations

from torchx.core import LayerRegistry, hookimpl
from torchx.keras._gru_reset_before import GRUResetBefore


@hookimpl
def torchx_register_layers(registry: LayerRegistry) -> None:
    """Register :class:`GRUResetBefore`, so that converted models holding one write and read specs."""
    registry.register(GRUResetBefore)
