from __future__ import annotations

import contextlib
import os

import pytest
from not_installed import not_installed, skip_every_module

os.environ.setdefault("KERAS_BACKEND", "torch")  # before anything imports keras

if not_installed("torchx.keras"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-keras is not installed; run: pip install torchx-keras"
    )
else:
    from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture

    # Without Keras (its test extra) the modules that need it skip themselves, saying what to install.
    with contextlib.suppress(pytest.skip.Exception):
        from keras_parity import converted  # noqa: F401 - the fixture
