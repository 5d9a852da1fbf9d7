"""The torchx namespace spans distributions; core owns the top level."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import torchx


def test_top_level_api() -> None:
    assert callable(torchx.build) and callable(torchx.load_spec)
    assert issubclass(torchx.ShapeError, torchx.TorchXError)


def test_subpackages_of_other_distributions_are_found() -> None:
    assert importlib.util.find_spec("torchx.core") is not None
    if importlib.util.find_spec("torchx.layers") is not None:
        import torchx.layers

        assert torchx.layers.__file__ is not None


def test_importing_torchx_does_not_load_plugins_or_yaml() -> None:
    code = "import sys, torchx, torchx.core; print('yaml' in sys.modules, 'torchx.layers._plugin' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]
