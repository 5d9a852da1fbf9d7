"""``import torchx.layers`` and ``torchx --help`` with core and layers import
nothing heavy (torch's compiler and sympy among them): see ``tests/startup.py``."""

from __future__ import annotations

from startup import HELP, heavy_imports


def test_importing_torchx_layers_imports_nothing_heavy() -> None:
    assert heavy_imports("import torchx.layers") == []


def test_the_torchx_command_loads_its_plugins_without_importing_anything_heavy() -> None:
    assert heavy_imports(HELP) == []
