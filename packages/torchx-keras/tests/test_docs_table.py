from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import torchx.keras

TOOL = Path(__file__).resolve().parents[3] / "tools" / "keras_table.py"


@pytest.mark.skipif(not TOOL.exists(), reason="runs from the repository")
def test_the_docs_table_lists_every_supported_layer() -> None:
    done = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_supported_layer_says_what_it_becomes() -> None:
    table = torchx.keras.supported_layers()
    assert {"Dense", "Conv2D", "BatchNormalization", "Concatenate"} <= set(table)
    assert all(becomes for becomes in table.values())
