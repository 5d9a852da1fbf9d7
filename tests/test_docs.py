"""Every Python block of the README and docs/ runs, in order, so the docs cannot rot.

Each page states how its blocks run, in a paragraph that starts with
``> **Running the examples.**``, and they run exactly so: in order, in one
namespace (a reader's Python session), in a fresh empty folder; with a
clone's ``examples/`` on ``sys.path`` only where the paragraph says
``PYTHONPATH=``; a page that says ``pip install keras`` skips without Keras.
A block preceded by ``<!-- docs: skip (reason) -->`` is skipped with that
reason (for example, one that needs four GPUs).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_SETTING = re.compile(r"^> \*\*Running the examples\.\*\*.*?(?=\n\n|\Z)", re.DOTALL | re.MULTILINE)
_BLOCK = re.compile(r"(?:<!-- docs: skip \((?P<skip>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```", re.DOTALL)


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason)`` of every Python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start("code")) + 1, m.group("code"), m.group("skip"))
        for m in _BLOCK.finditer(text)
    ]


def setting(page: Path) -> str:
    """The paragraph of ``page`` that says how its examples run ("" if none)."""
    found = _SETTING.search(page.read_text(encoding="utf-8"))
    return found.group(0) if found else ""


def test_the_api_sections_match_the_code() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "api_docs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_page_has_blocks_to_run() -> None:
    assert all(blocks(page) for page in PAGES if page.name != "comparison.md")


def test_every_page_with_blocks_says_how_they_run() -> None:
    assert [page.name for page in PAGES if blocks(page) and not setting(page)] == []


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stated = setting(page)
    if "pip install keras" in stated:
        pytest.importorskip("keras", reason=f"{page.name} needs Keras: pip install keras")
    monkeypatch.chdir(tmp_path)
    if "PYTHONPATH=" in stated:
        monkeypatch.syspath_prepend(str(ROOT / "examples"))
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    skipped = []
    for line, code, skip in blocks(page):
        if skip is not None:
            skipped.append(f"line {line}: {skip}")
            continue
        try:
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(
                f"{page.name}, the block at line {line} fails: {type(error).__name__}: {error}"
            ) from error
    if skipped:
        print(f"{page.name}: skipped {'; '.join(skipped)}")
