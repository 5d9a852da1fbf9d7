"""The entry point of torchx-swish: registers its layer with TorchX."""

from __future__ import annotations

from torchx.core import LayerRegistry, hookimpl
from torchx_swish import Swish


@hookimpl
def torchx_register_layers(registry: LayerRegistry) -> None:
    registry.register(Swish, aliases=("LearnedSwish",))
