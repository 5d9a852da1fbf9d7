"""The torchx namespace spans distributions; core owns the top level."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch

import torchx
from torchx.core import MissingPackageError


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


def test_the_seed_top_level_names() -> None:
    import torchx.nn as nnx

    assert callable(torchx.device_scope) and torchx.current_scope() is None
    assert issubclass(nnx.Module, torch.nn.Module)


@pytest.mark.skipif(
    importlib.util.find_spec("torchx.device") is not None, reason="torchx-device is installed"
)
def test_data_parallel_without_torchx_device_says_what_to_install() -> None:
    with pytest.raises(MissingPackageError, match="pip install torchx-device"):
        _ = torchx.DataParallel
    with pytest.raises(AttributeError, match="no attribute 'Nonsense'"):
        _ = torchx.Nonsense  # type: ignore[attr-defined]
