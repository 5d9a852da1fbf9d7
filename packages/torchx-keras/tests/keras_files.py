"""Hand-edited ``.keras`` archives: a saved model with members replaced, and its config read back."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any


def rewritten(path: Path, replace: dict[str, bytes], extra: dict[str, bytes] | None = None) -> Path:
    """A copy of the archive with members replaced (and ``extra`` ones added)."""
    target = path.with_name(f"changed-{path.name}")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info.filename, replace.get(info.filename, source.read(info.filename)))
        for name, data in (extra or {}).items():
            out.writestr(name, data)
    return target


def config_of(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("config.json"))


def with_config(path: Path, change: Any) -> Path:
    """A copy of the archive whose config is ``change(config)`` (or the config ``change`` edited in place)."""
    config = config_of(path)
    config = change(config) or config
    return rewritten(path, {"config.json": json.dumps(config).encode()})
