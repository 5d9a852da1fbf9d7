"""``pytest packages/`` collects whichever TorchX distributions are installed:
the suite of one that is missing skips, saying what to install.

Each case collects in a fresh interpreter where the named modules cannot be
imported (None in ``sys.modules`` is how Python spells "not installed" to
import and to ``find_spec``). ``tox -e packaging`` collects in a real
environment without any TorchX distribution (tests/packaging).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

COLLECT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""

ONLY_CORE_AND_LAYERS = ("torchx.functional", "torchx.rnn", "torchx.device", "torchx.keras", "torchx.tune")


def hint(distribution: str) -> str:
    return f"{distribution} is not installed; run: pip install {distribution}"


@pytest.mark.parametrize(
    ("missing", "paths", "skipped"),
    [
        pytest.param(
            ONLY_CORE_AND_LAYERS,
            ("packages/",),
            [hint(f"torchx-{name}") for name in ("functional", "rnn", "device", "keras", "tune")],
            id="only-core-and-layers",
        ),
        pytest.param(
            ("torchx.keras", "torchx.tune", "keras", "optuna"),
            ("packages/torchx-keras", "packages/torchx-tune"),
            [hint("torchx-keras"), hint("torchx-tune")],
            id="no-keras-no-tune",
        ),
        pytest.param(
            ("torchx.layers", "torchx.functional", "torchx.rnn", "torchx.keras", "torchx.tune"),
            ("packages/torchx-device",),
            [
                "torchx-device's tests need torchx-layers (its test extra); run: pip install 'torchx-device[test]'"
            ],
            id="device-without-its-test-extra",
        ),
        pytest.param(
            ("torchx",),
            ("packages/",),
            [
                hint(f"torchx-{name}")
                for name in ("core", "layers", "functional", "rnn", "device", "keras", "tune")
            ],
            id="no-torchx",
        ),
    ],
)
def test_the_suite_of_a_missing_distribution_skips_with_its_install_line(
    missing: tuple[str, ...], paths: tuple[str, ...], skipped: list[str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", COLLECT, ",".join(missing), *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": "torch"},
        check=False,
        timeout=600,
    )
    no_tests_collected = 5
    assert result.returncode in (0, no_tests_collected), result.stdout[-3000:] + result.stderr[-3000:]
    assert "ERROR" not in result.stdout, result.stdout[-3000:]
    for line in skipped:
        assert line in result.stdout, result.stdout[-3000:]


@pytest.mark.parametrize("path", ["packages/torchx-tune", "packages/torchx-tune/tests/test_space.py"])
def test_a_missing_distribution_given_by_path_skips_too(path: str) -> None:
    """pytest loads the conftest of a folder it is given before collecting: it must not skip there."""
    result = subprocess.run(
        [sys.executable, "-c", COLLECT, "torchx.tune,optuna", path, "-rs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 5, result.stdout[-3000:] + result.stderr[-3000:]  # no tests: all skipped
    assert hint("torchx-tune") in result.stdout
