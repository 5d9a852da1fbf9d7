"""write_atomically: the old file or the complete new one, never a damaged one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import pytest
from case_ids import case_id

from torchx.core._files import write_atomically, write_bytes_atomically


def test_a_write_replaces_the_file_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o640)
    write_bytes_atomically(path, b"new")
    assert path.read_bytes() == b"new"
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.yaml"]


@pytest.mark.parametrize(
    "error", [OSError(28, "No space left on device"), RuntimeError("writer failed")], ids=case_id
)
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path, error: Exception) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(b"old")

    def half_then_fail(file: IO[bytes]) -> None:
        file.write(b"ne")
        raise error

    with pytest.raises(
        OSError, match="No space left" if isinstance(error, OSError) else "writer failed"
    ) as caught:
        write_atomically(path, half_then_fail)
    assert isinstance(caught.value, OSError) and (caught.value is error or caught.value.__cause__ is error)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


def test_an_interrupt_keeps_the_old_file_and_stays_an_interrupt(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(b"old")

    def interrupted(file: IO[bytes]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, interrupted)
    assert path.read_bytes() == b"old" and len(list(tmp_path.iterdir())) == 1


def test_a_link_stays_a_link_to_the_new_file(tmp_path: Path) -> None:
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old", encoding="utf-8")
    link.symlink_to(real)
    write_bytes_atomically(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null here")
def test_a_device_is_written_in_place_never_replaced() -> None:
    write_bytes_atomically("/dev/null", b"anything")
    assert not Path("/dev/null").is_file() and os.path.exists("/dev/null")
