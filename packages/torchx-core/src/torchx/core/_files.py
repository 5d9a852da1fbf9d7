"""Writing files so that a failure never leaves a damaged one behind."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["replacing", "write_atomically", "write_bytes_atomically", "write_path_atomically"]


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
    target = _target(path)
    if target.exists() and not target.is_file():  # a device or a pipe: written in place
        if by_path:
            write(str(target))
            return
        with target.open("wb") as file:
            write(file)
        return
    temporary = _temporary(target)
    descriptor, mode = _create(temporary)
    try:
        with os.fdopen(descriptor, "wb") as file:
            if not by_path:
                write(file)
                file.flush()
                os.fsync(file.fileno())
        if by_path:  # the writer may put a file of its own there (safetensors renames one in)
            write(str(temporary))
            _fsync(temporary)
        _rename(temporary, target, mode)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if isinstance(error, OSError) or not isinstance(error, Exception):
            raise  # an OSError as it is; an interrupt stays an interrupt
        raise OSError(errno.EIO, f"writing failed ({type(error).__name__}: {error})", str(target)) from error
    _sync_directory(target.parent)


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_atomically` of ``data``."""
    write_atomically(path, lambda file: file.write(data))


@contextmanager
def replacing(paths: Sequence[str | os.PathLike[str]]) -> Iterator[list[Path]]:
    """Temporary paths beside ``paths`` for the block to write, each ending in its path's
    suffix (so a writer that picks its format by suffix picks the same). When the block ends
    without an error, the files are flushed to disk and renamed over ``paths``; otherwise
    they are removed. The files at ``paths`` change together or not at all: a new spec
    never sits beside old weights. Links and modes are kept as :func:`write_atomically` keeps them.

    :raises OSError: a temporary file was not written, or a rename failed (its ``filename``
        is the path; files renamed before it are new, which only a failing disk can cause).
    """
    targets = [_target(path) for path in paths]
    temporaries = [_temporary(target, target.suffix) for target in targets]
    modes: list[int] = []
    try:
        for temporary in temporaries:
            descriptor, mode = _create(temporary)
            os.close(descriptor)
            modes.append(mode)
        yield temporaries
        for temporary in temporaries:
            _fsync(temporary)
        for temporary, target, mode in zip(temporaries, targets, modes, strict=True):
            try:
                _rename(temporary, target, mode)
            except OSError as error:
                raise OSError(error.errno, error.strerror, str(target)) from error
    finally:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
    for folder in dict.fromkeys(target.parent for target in targets):
        _sync_directory(folder)


def _target(path: str | os.PathLike[str]) -> Path:
    """The file to replace for ``path``: the file a symbolic link points to, so the link stays."""
    target = Path(path)
    return target.resolve() if target.is_symlink() else target


def _temporary(target: Path, suffix: str = "") -> Path:
    """A new hidden name beside ``target``."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp{suffix}")


def _create(path: Path) -> tuple[int, int]:
    """Create the new file ``path``: its descriptor, and the mode it got (0o666 less
    the umask, as ``open(path, "w")`` gives a new file)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    return descriptor, os.fstat(descriptor).st_mode & 0o7777


def _fsync(path: Path) -> None:
    """Flush the file at ``path`` to disk, whoever wrote it."""
    with path.open("rb") as file:
        os.fsync(file.fileno())


def _rename(temporary: Path, target: Path, mode: int) -> None:
    """Rename ``temporary`` over ``target``, with the mode of the file it replaces, else
    ``mode``: a writer that made a file of its own at the temporary name (safetensors
    writes one with mode 0o600) does not decide the permissions."""
    os.chmod(temporary, target.stat().st_mode & 0o7777 if target.exists() else mode)
    os.replace(temporary, target)


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
