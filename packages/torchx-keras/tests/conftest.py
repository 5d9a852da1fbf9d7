from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")  # before anything imports keras

from keras_parity import converted  # noqa: F401 - the fixture

from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture
