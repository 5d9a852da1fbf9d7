"""What subcommands write: an output path checked before the work, and a write failure as a usage error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from torchx.cli._errors import UsageError

__all__ = ["output_path", "writing"]


def output_path(text: str, suffixes: tuple[str, ...]) -> Path:
    """The output file ``text``, checked before any work: its suffix one of ``suffixes``, not a
    directory, in a folder that exists (a :class:`UsageError` otherwise)."""
    path = Path(text)
    if path.suffix.lower() not in suffixes:
        raise UsageError(f"{text}: the output must end in {' or '.join(suffixes)}")
    with writing(path):  # a name too long fails already here
        if path.is_dir():
            raise UsageError(f"{text}: is a directory")
        if not path.parent.is_dir():
            if path.parent.exists():
                raise UsageError(f"{text}: {path.parent} is a file, not a folder")
            raise UsageError(f"{text}: the folder {path.parent} does not exist")
    return path


@contextmanager
def writing(output: Path) -> Iterator[None]:
    """Report a failed write of ``output`` (a full disk, no permission, a name too
    long) as a UsageError: the output path is what has to change."""
    try:
        yield
    except OSError as error:
        raise UsageError(f"{output}: cannot be written: {error.strerror or error}") from None
