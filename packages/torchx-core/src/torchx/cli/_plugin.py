"""torchx-core as a TorchX plugin: the built-in subcommands, registered as any plugin's are."""

from __future__ import annotations

from torchx.cli import _commands, _diff
from torchx.core._commands import CommandRegistry
from torchx.core.hookspecs import hookimpl


@hookimpl(tryfirst=True)  # TorchX's own names: registered first, never taken by a third party
def torchx_register_commands(commands: CommandRegistry) -> None:
    """summary, validate, plot, plugins, convert, export and diff."""
    for name, run, configure in (
        ("summary", _commands.summary, _commands.configure_summary),
        ("validate", _commands.validate, _commands.configure_validate),
        ("plot", _commands.plot, _commands.configure_plot),
        ("plugins", _commands.plugins, _commands.configure_plugins),
        ("convert", _commands.convert, _commands.configure_convert),
        ("export", _commands.export, _commands.configure_export),
        ("diff", _diff.diff, _diff.configure_diff),
    ):
        commands.add(name, (run.__doc__ or "").splitlines()[0], configure=configure, run=run)
