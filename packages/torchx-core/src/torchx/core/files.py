"""Writing files so that a failure never leaves a damaged one behind."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

from torchx.core.errors import CheckpointError

__all__ = ["write_atomically"]


def write_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a temporary file beside ``path``, flush it to disk, and
    rename it to ``path``: readers see the old file or the complete new one.

    If anything fails (a full disk, a file-size limit, an interrupt), the
    temporary file is removed and the old file at ``path`` stays as it was.

    :raises CheckpointError: the file could not be written (the original error is its cause).
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        # Mode 0o666 less the umask, as for any new file; an existing file's mode is kept.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise CheckpointError(f"{target}: cannot write there: {error.strerror or error}") from error
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if not isinstance(error, Exception):
            raise  # an interrupt stays an interrupt
        # torch.save reports a failed write of a file object as its own RuntimeError.
        reason = (
            error.strerror
            if isinstance(error, OSError) and error.strerror
            else f"{type(error).__name__}: {error}"
        )
        raise CheckpointError(f"{target}: writing failed, so the old file is kept: {reason}") from error
    _sync_directory(target.parent)


def _sync_directory(folder: Path) -> None:
    """Make the rename itself durable (where the OS allows opening a folder)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
