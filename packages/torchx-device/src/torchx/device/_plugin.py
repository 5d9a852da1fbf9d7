"""torchx-device as a TorchX plugin: the standard device ids, as any backend registers."""

from __future__ import annotations

from torchx.core import Placement, hookimpl
from torchx.device._parse import parse_or_none


@hookimpl(trylast=True)
def torchx_resolve_device(device_id: object) -> Placement | None:
    """Resolve the standard ids; other backends are asked first."""
    return parse_or_none(device_id)
