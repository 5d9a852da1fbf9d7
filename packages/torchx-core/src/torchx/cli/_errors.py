"""The command line's own errors, and how every error is shown: in one line.

Exit statuses: 2 for bad arguments and unreadable input (:class:`UsageError`),
1 for a spec or model that is wrong (any other error, a TorchX refusal or not).
"""

from __future__ import annotations

from torchx.core._errors import TorchXError

__all__ = ["USAGE", "ExportError", "UsageError", "described", "one_line"]

USAGE = 2
"""Exit status for bad arguments, paths and files; 1 is a spec or model that is wrong."""


class UsageError(TorchXError):
    """The command cannot start: a bad argument, path or file."""


class ExportError(TorchXError):
    """torch.export could not export a model that TorchX read and built (the
    model runs; tracing it failed): what failed, as torch said it, and a fix where
    one follows from what failed."""


def one_line(text: str) -> str:
    """``text`` in one line: its lines stripped and joined with ``; `` (an error's
    ``fix:`` line follows its message), or a space after a line that ends a sentence."""
    joined = ""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            joined += ("" if not joined else " " if joined[-1] in ".;:" else "; ") + line
    return joined


def described(error: BaseException) -> str:
    """``error``'s message and notes (where torch or TorchX says which step
    raised it), in one line, after its type's name: ``KeyError: 'weight'``
    (the name alone for an error without a message)."""
    parts = [str(error), *(str(note) for note in getattr(error, "__notes__", ()))]
    message = one_line("\n".join(parts))
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
