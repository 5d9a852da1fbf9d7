"""mkdocs hooks of the documentation site (mkdocs.yml names this file).

- The API reference needs one merged ``torchx`` tree, as installed
  (non-editable) distributions give: griffe reads the sources and does not
  follow ``pkgutil.extend_path`` across editable installs' source folders.
- The README is the site's home page: it is added as ``index.md``, its links
  into ``docs/`` made relative to the site's pages, so one file reads right on
  GitHub and on the site.
- GitHub's tables need a pipe inside a cell's code escaped (``\\|``), which
  Python-Markdown would show: table rows get their pipes back.
- A name exported by several modules (``torchx.build``, ``torchx.core.build``,
  ``torchx.plugin.build``) is rendered once per page, under the first module
  that the page documents: one anchor per object, so references resolve.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

_TABLE_ROW = re.compile(r"^\|.*$", re.MULTILINE)
_MODULE_REFERENCE = re.compile(r"^::: (torchx(?:\.\w+)*)[ \t]*$", re.MULTILINE)


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
    markdown = _TABLE_ROW.sub(lambda row: row.group(0).replace("\\|", "|"), markdown)
    shown: set[str] = set()
    return _MODULE_REFERENCE.sub(lambda reference: _members_once(reference.group(1), shown), markdown)


def _members_once(module_name: str, shown: set[str]) -> str:
    """The reference to ``module_name`` rendering only the exported objects not ``shown`` yet on its page."""
    module = _torchx().get_member(module_name.split(".")[1:]) if "." in module_name else _torchx()
    exported = [str(name) for name in module.exports or ()]
    targets = {name: _target(module.members[name]) for name in exported if name in module.members}
    members = [name for name, target in targets.items() if target not in shown]
    shown.update(targets.values())
    listed = "[" + ", ".join(members) + "]" if members else "false"
    return f"::: {module_name}\n    options:\n      members: {listed}"


def _target(member: griffe.Object | griffe.Alias) -> str:
    """Where ``member`` is defined (an alias's final target)."""
    return member.final_target.path if isinstance(member, griffe.Alias) else member.path


@functools.cache
def _torchx() -> griffe.Module:
    """The installed ``torchx`` package as griffe reads it (the sources, not imported), aliases resolved."""
    loader = griffe.GriffeLoader()
    package = loader.load("torchx")
    loader.resolve_aliases(implicit=False, external=False)
    assert isinstance(package, griffe.Module)
    return package
