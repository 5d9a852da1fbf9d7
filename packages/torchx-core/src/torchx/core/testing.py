"""Test helpers for TorchX and its plugins: a fresh plugin manager, fake installs, a device backend.

Import the fixture into a ``conftest.py``::

    from torchx.core.testing import fresh_plugins  # noqa: F401
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import torch

from torchx.core.hookspecs import hookimpl
from torchx.core.placement import Placement
from torchx.core.plugins import ENTRY_POINT_GROUP, PluginManager, use_plugins

__all__ = ["StaticDeviceBackend", "fresh_plugins", "install_fake_distribution"]


@pytest.fixture
def fresh_plugins() -> Iterator[PluginManager]:
    """A new plugin manager (entry points not yet loaded), current for the test."""
    manager = PluginManager()
    with use_plugins(manager):
        yield manager


def install_fake_distribution(
    root: Path, name: str, *, plugins: Mapping[str, str], modules: Mapping[str, str]
) -> Path:
    """Install distribution ``name`` under ``root``, as pip would lay it out.

    ``plugins`` maps ``torchx.plugins`` entry-point names to module paths;
    ``modules`` maps module names to their source. ``root`` is put on
    ``sys.path`` (remove it, or use ``monkeypatch.syspath_prepend``, to
    uninstall). Returns ``root``.
    """
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    dist_info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir(exist_ok=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = "".join(f"{key} = {value}\n" for key, value in plugins.items())
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}", encoding="utf-8")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


class StaticDeviceBackend:
    """A device backend plugin with a fixed table of ids, for tests that need
    scopes without torchx-device (or without a GPU)::

        fresh_plugins.register(StaticDeviceBackend({"meta": torch.device("meta")}), "static")
    """

    def __init__(self, devices: Mapping[str, torch.device]) -> None:
        self.devices = dict(devices)

    @hookimpl
    def torchx_resolve_device(self, device_id: object) -> Placement | None:
        device = self.devices.get(device_id) if isinstance(device_id, str) else None
        return None if device is None else Placement(device)
