"""The ``torchx`` command line: ``torchx summary|validate|plot|plugins|convert|export ...``.

Every subcommand, the built-in ones included, comes from a plugin's
``torchx_register_commands`` hook.
"""

from torchx.cli._main import main as main

__all__ = ["main"]
