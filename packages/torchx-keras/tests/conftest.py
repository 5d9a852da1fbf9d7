from __future__ import annotations

import contextlib
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")  # before anything imports keras

from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture

# Without Keras the modules that need it skip themselves, saying what to install.
with contextlib.suppress(pytest.skip.Exception):
    from keras_parity import converted  # noqa: F401 - the fixture
