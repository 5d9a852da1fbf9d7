"""torchx-layers as a TorchX plugin: registers its layers like any third party would."""

from __future__ import annotations

import torchx.layers
from torchx.core import Layer, LayerRegistry, hookimpl

ALIASES: dict[str, tuple[str, ...]] = {
    "Linear": ("Dense",),
    "Reshape": ("View",),
    "Concat": ("Concatenate",),
}
"""Extra spec names, by canonical name."""


@hookimpl(tryfirst=True)  # TorchX's own names: registered first, never taken by a third party
def torchx_register_layers(registry: LayerRegistry) -> None:
    """Register every layer class that ``torchx.layers`` exports."""
    for name in torchx.layers.__all__:
        obj = getattr(torchx.layers, name)
        if isinstance(obj, type) and issubclass(obj, Layer) and obj is not Layer and obj.__name__ == name:
            registry.register(obj, aliases=ALIASES.get(name, ()))
