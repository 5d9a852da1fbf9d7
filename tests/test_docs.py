"""Every Python block of the README and docs/ runs, in order, so the docs cannot rot.

Blocks of one page share a namespace, as a reader's session would. A block
preceded by ``<!-- docs: skip (reason) -->`` is skipped with that reason
(for example, one that needs four GPUs). Blocks run in a fresh folder.
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
_BLOCK = re.compile(r"(?:<!-- docs: skip \((?P<skip>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```", re.DOTALL)


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason)`` of every Python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start("code")) + 1, m.group("code"), m.group("skip"))
        for m in _BLOCK.finditer(text)
    ]


def test_the_api_sections_match_the_code() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "api_docs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_page_has_blocks_to_run() -> None:
    assert all(blocks(page) for page in PAGES if page.name != "comparison.md")


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
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
