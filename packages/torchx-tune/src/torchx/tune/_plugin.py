"""torchx-tune as a TorchX plugin (the ``torchx.plugins`` entry point): ``torchx tune`` and
``torchx tune-report``, added through ``torchx_register_commands`` as every plugin adds its commands.

Registering imports only their arguments (:mod:`torchx.tune._arguments`): every
``torchx`` command registers every plugin's commands, and Optuna and SQLAlchemy
(:mod:`torchx.tune._cli`) are imported when one of these two runs."""

from __future__ import annotations

import argparse

from torchx.plugin import CommandRegistry, hookimpl
from torchx.tune._arguments import TUNE_HELP, TUNE_REPORT_HELP, configure_tune, configure_tune_report


def _tune(options: argparse.Namespace) -> int:
    from torchx.tune._cli import tune

    return tune(options)


def _tune_report(options: argparse.Namespace) -> int:
    from torchx.tune._cli import tune_report

    return tune_report(options)


@hookimpl
def torchx_register_commands(commands: CommandRegistry) -> None:
    commands.add("tune", TUNE_HELP, configure=configure_tune, run=_tune)
    commands.add("tune-report", TUNE_REPORT_HELP, configure=configure_tune_report, run=_tune_report)
