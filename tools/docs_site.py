"""mkdocs hooks of the documentation site (mkdocs.yml names this file).

- The README is the site's home page: it is added as ``index.md``, its links
  into ``docs/`` made relative to the site's pages, so one file reads right on
  GitHub and on the site.
- GitHub's tables need a pipe inside a cell's code escaped (``\\|``), which
  Python-Markdown would show: table rows get their pipes back.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

_TABLE_ROW = re.compile(r"^\|.*$", re.MULTILINE)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    text = readme.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _TABLE_ROW.sub(lambda row: row.group(0).replace("\\|", "|"), markdown)
