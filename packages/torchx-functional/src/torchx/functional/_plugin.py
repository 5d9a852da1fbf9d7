"""torchx-functional as a TorchX plugin: ``Functional`` as a spec type, ``Placeholder``, ``Buffer`` and ``Dim`` on the façade."""

from __future__ import annotations

from torchx.core import LayerRegistry, hookimpl
from torchx.functional._dims import Dim
from torchx.functional._functional import Functional
from torchx.functional._placeholder import Buffer, Placeholder


@hookimpl(tryfirst=True)  # TorchX's own names: registered first, never taken by a third party
def torchx_register_layers(registry: LayerRegistry) -> None:
    registry.register(Functional, aliases=("Model",))
    registry.export("Placeholder", Placeholder)
    registry.export("Input", Placeholder)
    registry.export("Buffer", Buffer)
    registry.export("Dim", Dim)
