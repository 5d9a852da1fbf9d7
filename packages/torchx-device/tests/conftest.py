from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from not_installed import not_installed, skip_every_module

if not_installed("torchx.device"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-device is not installed; run: pip install torchx-device"
    )
elif not_installed("torchx.layers"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-device's tests need torchx-layers (its test extra); run: pip install 'torchx-device[test]'"
    )
else:
    import torch

    from torchx.core import PluginManager
    from torchx.core.testing import fresh_plugins
    from torchx.device import _data_parallel, _inventory

    __all__ = ["fresh_plugins"]

    @pytest.fixture(autouse=True)
    def plugins(fresh_plugins: PluginManager) -> PluginManager:
        """Every test resolves ids afresh (resolved placements are cached per manager)."""
        return fresh_plugins

    @pytest.fixture
    def fake_gpus(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
        """Pretend this machine has ``n`` CUDA devices (only ids are parsed: no tensors)."""

        def pretend(count: int, current: int = 0) -> None:
            real = _inventory.device_count
            monkeypatch.setattr(
                _inventory, "device_count", lambda kind: count if kind == "cuda" else real(kind)
            )
            monkeypatch.setattr(_inventory, "current_index", lambda kind: current)

        return pretend

    @pytest.fixture
    def no_gpu() -> None:
        if torch.cuda.is_available():
            pytest.skip("this test is about a machine without a GPU")

    @pytest.fixture
    def fresh_no_gpu_warning() -> Iterator[None]:
        """DataParallel's no-GPU warning is once per process; let each test see it."""
        _data_parallel._no_gpu_warned.clear()
        yield
        _data_parallel._no_gpu_warned.clear()
