"""Test helpers for TorchX and its plugins: a fresh plugin manager, fake installs, a device
backend, a forked child.

Import the fixture into a ``conftest.py``::

    from torchx.core.testing import fresh_plugins  # noqa: F401
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import torch

from torchx.core._placement import Placement
from torchx.core._plugins import ENTRY_POINT_GROUP, PluginManager, use_plugins
from torchx.core.hookspecs import hookimpl

__all__ = ["StaticDeviceBackend", "fresh_plugins", "in_forked_child", "install_fake_distribution"]


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


def in_forked_child(child: Callable[[], None], guard_seconds: int = 30) -> str:
    """Run ``child`` in a forked child process; return ``""`` when it returned,
    else what went wrong (its traceback). A child that hangs is killed by its
    own alarm after ``guard_seconds``, so a regression (a lock the fork left
    held, say) fails instead of hanging the suite. POSIX only."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read)
            signal.alarm(guard_seconds)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                child()
            status = 0
        except BaseException:  # noqa: BLE001 - reported to the parent
            os.write(write, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"the child was killed by signal {os.WTERMSIG(status)} (hung past {guard_seconds} s?)\n{said}"
    return "" if os.WEXITSTATUS(status) == 0 else said or f"the child exited with {os.WEXITSTATUS(status)}"
