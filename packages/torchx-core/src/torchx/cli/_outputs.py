"""What subcommands write: an output path checked before the work, and a write failure as a usage error."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from torchx.cli._errors import UsageError
from torchx.core._errors import CheckpointError
from torchx.core._files import replacing

__all__ = ["output_path", "write_together", "writing"]


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
    long; ``model.save`` reports one as a CheckpointError caused by the OSError) as
    a UsageError: the output path is what has to change."""
    try:
        yield
    except (OSError, CheckpointError) as error:
        failed = error if isinstance(error, OSError) else error.__cause__
        if not isinstance(failed, OSError):
            raise
        raise UsageError(f"{output}: cannot be written: {failed.strerror or failed}") from None


def write_together(writes: Mapping[Path, Callable[[Path], object]]) -> None:
    """Write several outputs as one: each ``write(path)`` to a temporary path beside its
    output (with its suffix), and only once all are written, each renamed over its output.
    A failed write leaves every old file as it was and is a UsageError naming its output."""
    try:
        with replacing(list(writes)) as temporaries:
            for (output, write), temporary in zip(writes.items(), temporaries, strict=True):
                with writing(output):
                    write(temporary)
    except OSError as error:  # a rename, once every file was written
        raise UsageError(f"{error.filename}: cannot be written: {error.strerror or error}") from None
