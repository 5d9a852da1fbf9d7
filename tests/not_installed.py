"""A distribution's tests skip, with the line that installs it, where it is not installed.

``pytest packages/`` collects every distribution's tests, in whatever
environment it runs: one where only torchx-core and torchx-layers are installed
skips the others' tests instead of failing to import them. Each
``packages/*/tests/conftest.py`` asks::

    if not_installed("torchx.tune"):
        pytest_pycollect_makemodule = skip_every_module("torchx-tune is not installed; run: pip install torchx-tune")

The skip happens when a test module is collected, not when the conftest is
loaded: pytest loads the conftest of a folder it is given
(``pytest packages/torchx-tune``) before collecting, and a skip raised then
stops pytest with a traceback. Every test folder can import this module: the
root pyproject puts ``tests`` on ``sys.path`` for all suites.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest


def not_installed(module: str) -> bool:
    """Whether ``module`` (``"torchx.tune"``) cannot be imported: its
    distribution, or torchx-core, which owns ``torchx``, is not installed.
    Nothing is imported but its parent package."""
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # a parent package (torchx) is missing too
        return True


class _NotInstalled(pytest.Module):
    """A test module whose distribution is missing: it skips without being imported."""

    reason = ""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        pytest.skip(self.reason)


def skip_every_module(reason: str) -> Callable[[Path, pytest.Collector], pytest.Module]:
    """A ``pytest_pycollect_makemodule`` hook for a conftest: every test module
    of its folder skips with ``reason`` instead of being imported."""

    def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
        module: _NotInstalled = _NotInstalled.from_parent(parent, path=module_path)
        module.reason = reason
        return module

    return pytest_pycollect_makemodule
