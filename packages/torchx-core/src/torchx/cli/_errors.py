"""The command line's own error: bad arguments or unreadable input (exit status 2)."""

from __future__ import annotations

from torchx.core._errors import TorchXError

__all__ = ["USAGE", "UsageError"]

USAGE = 2
"""Exit status for bad arguments, paths and files; 1 is a spec or model that is wrong."""


class UsageError(TorchXError):
    """The command cannot start: a bad argument, path or file."""
