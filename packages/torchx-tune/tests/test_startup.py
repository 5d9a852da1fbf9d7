"""torchx-tune registers ``torchx tune`` and ``torchx tune-report`` without
importing Optuna or SQLAlchemy: every ``torchx`` command loads every plugin,
and only these two need them (see ``tests/startup.py``)."""

from __future__ import annotations

from startup import HELP, heavy_imports, imported_by


def test_the_torchx_command_registers_tune_without_importing_optuna_or_sqlalchemy() -> None:
    assert heavy_imports(HELP) == []
    assert heavy_imports(HELP.replace("['--help']", "['tune', '--help']")) == []


def test_importing_torchx_tune_imports_optuna_with_the_first_name_that_needs_it() -> None:
    assert heavy_imports("import torchx.tune\ntorchx.tune.load_space") == []
    assert {"optuna", "sqlalchemy"} <= imported_by("import torchx.tune\ntorchx.tune.search")
