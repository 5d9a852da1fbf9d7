"""Writing files so that a failure never leaves a damaged one behind."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["write_atomically", "write_bytes_atomically", "write_path_atomically"]


def write_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a temporary file beside ``path``, flush it to disk, and
    rename it to ``path``: readers see the old file or the complete new one.

    If anything fails (a full disk, a file-size limit, an interrupt), the
    temporary file is removed and the old file at ``path`` stays as it was. A
    symbolic link stays a link to the new file; a path that is not a regular
    file (``/dev/stdout``, a pipe) is written in place.

    :raises OSError: the file could not be written; an error of ``write`` that
        is not an OSError (torch's archive writer reports a failed write as a
        RuntimeError) becomes one, with the original as its cause.
    """
    _replace(path, write, by_path=False)


def write_path_atomically(path: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """:func:`write_atomically` for writers that take a file name (such as
    safetensors' ``save_file``, which writes without a copy in memory):
    ``write`` is called with the temporary file's name."""
    _replace(path, write, by_path=True)


def _replace(path: str | os.PathLike[str], write: Callable[[Any], object], *, by_path: bool) -> None:
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()  # replace the file the link points to, keep the link
    if target.exists() and not target.is_file():  # a device or a pipe: written in place
        if by_path:
            write(str(target))
            return
        with target.open("wb") as file:
            write(file)
        return
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # Mode 0o666 less the umask, as for any new file; an existing file's mode is kept.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as file:
            if by_path:
                write(str(temporary))
            else:
                write(file)
                file.flush()
            os.fsync(file.fileno())  # the same file, whoever wrote it
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if isinstance(error, OSError) or not isinstance(error, Exception):
            raise  # an OSError as it is; an interrupt stays an interrupt
        raise OSError(errno.EIO, f"writing failed ({type(error).__name__}: {error})", str(target)) from error
    _sync_directory(target.parent)


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_atomically` of ``data``."""
    write_atomically(path, lambda file: file.write(data))


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
