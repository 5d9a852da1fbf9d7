"""``pytest packages/`` collects without the optional test dependencies: the
tests that need one skip, saying what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Collects in a fresh interpreter where the named modules cannot be imported
# (None in sys.modules is how Python spells "not installed" to import and find_spec).
COLLECT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""


@pytest.mark.parametrize(
    ("missing", "paths", "skipped"),
    [
        (
            # every test extra's packages beyond pytest and numpy, and torchx-tune's report extra
            ("keras", "torchinfo", "torchview", "graphviz", "matplotlib"),
            ("packages/",),
            (
                "pip install keras",
                "pip install torchinfo",
                "pip install graphviz",
                "pip install 'torchx-tune[report]'",
            ),
        ),
        (
            # numpy too; torchx-keras and torchx-tune (through Optuna) require numpy to be
            # installed at all, so their suites are left out
            ("numpy", "keras", "torchinfo", "torchview", "graphviz", "matplotlib"),
            ("packages/", "--ignore=packages/torchx-keras", "--ignore=packages/torchx-tune"),
            ("pip install torchinfo", "pip install graphviz"),
        ),
        (("keras",), ("packages/torchx-keras",), ("pip install keras",)),
    ],
    ids=["test-extras", "numpy-too", "keras-suite-alone"],
)
def test_collection_skips_tests_whose_optional_dependency_is_missing(
    missing: tuple[str, ...], paths: tuple[str, ...], skipped: tuple[str, ...]
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", COLLECT, ",".join(missing), *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": "torch"},
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " collected" in result.stdout
    for hint in skipped:
        assert hint in result.stdout
