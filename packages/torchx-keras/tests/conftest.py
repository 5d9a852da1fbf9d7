from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")  # before anything imports keras

from keras_parity import converted  # noqa: F401 - the fixture

from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    # Keras's own deprecations (numpy 2's copy keyword in its torch backend) are not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:keras.*")
    config.addinivalue_line("filterwarnings", "ignore::UserWarning:keras.*")
