"""mkdocs hooks of the documentation site (mkdocs.yml names this file).

- The API reference needs one merged ``torchx`` tree, as installed
  (non-editable) distributions give: griffe reads the sources and does not
  follow ``pkgutil.extend_path`` across editable installs' source folders.
- The README is the site's home page: it is added as ``index.md``, its links
  into ``docs/`` made relative to the site's pages, so one file reads right on
  GitHub and on the site.
- GitHub's tables need a pipe inside a cell's code escaped (``\\|``), which
  Python-Markdown would show: table rows get their pipes back.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

_TABLE_ROW = re.compile(r"^\|.*$", re.MULTILINE)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    portions = [entry for entry in sys.path if entry and (Path(entry) / "torchx").is_dir()]
    if len(portions) > 1:
        raise PluginError(
            f"torchx is split over {len(portions)} folders ({', '.join(portions)}), as editable "
            "installs leave it; the API reference reads one tree: build with `tox -e docs`, "
            "which installs the distributions (non-editable) first"
        )
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    text = readme.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _TABLE_ROW.sub(lambda row: row.group(0).replace("\\|", "|"), markdown)
