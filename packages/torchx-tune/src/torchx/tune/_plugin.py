"""torchx-tune as a TorchX plugin (the ``torchx.plugins`` entry point): ``torchx tune`` and
``torchx tune-report``, added through ``torchx_register_commands`` as every plugin adds its commands."""

from __future__ import annotations

from torchx.plugin import CommandRegistry, hookimpl
from torchx.tune._cli import configure_tune, configure_tune_report, tune, tune_report


@hookimpl
def torchx_register_commands(commands: CommandRegistry) -> None:
    for name, configure, run in (
        ("tune", configure_tune, tune),
        ("tune-report", configure_tune_report, tune_report),
    ):
        commands.add(name, (run.__doc__ or "").splitlines()[0], configure=configure, run=run)
