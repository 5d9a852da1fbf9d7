"""With every distribution installed, importing them all and ``torchx --help``
(every plugin loaded, Keras's and Optuna's among them) import nothing heavy:
see ``tests/startup.py``."""

from __future__ import annotations

from startup import HELP, heavy_imports

DISTRIBUTIONS = ("layers", "functional", "rnn", "device", "keras", "tune")


def test_importing_every_distribution_imports_nothing_heavy() -> None:
    assert heavy_imports("\n".join(f"import torchx.{package}" for package in DISTRIBUTIONS)) == []


def test_the_torchx_command_with_every_plugin_imports_nothing_heavy() -> None:
    assert heavy_imports(HELP) == []
