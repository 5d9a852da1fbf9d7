"""Distributions meet at public doors: no code outside a distribution imports
its private modules (a ``torchx.<package>._*`` path), so each distribution can
change its insides between releases. torchx-layers, -functional, -rnn, -device
and -keras use core as a third-party plugin does (``torchx.plugin``,
``torchx``, ``torchx.core``, ``torchx.nn``), and so do the examples.

Every import counts, those inside functions and ``if TYPE_CHECKING:`` blocks
too. Tests are left out: they may look inside what they test."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = sorted(path.parent.parent.name for path in ROOT.glob("packages/*/src/torchx"))


def owned(distribution: str) -> set[str]:
    """The top-level names under ``torchx`` that ``distribution`` ships
    (torchx-core: ``core``, ``cli``, ``nn``, ``plugin``)."""
    return {
        path.stem
        for path in (ROOT / "packages" / distribution / "src" / "torchx").iterdir()
        if path.is_dir() or (path.suffix == ".py" and path.stem != "__init__")
    }


OWNER = {name: distribution for distribution in DISTRIBUTIONS for name in owned(distribution)}
"""Which distribution ships ``torchx.<name>``."""


def imported_modules(source: str, module: str) -> list[tuple[str, int]]:
    """Every module path the code of ``module`` imports, with its line.

    ``module`` is dotted from its file's path (``torchx.layers._conv``,
    ``torchx.layers.__init__``); ``from a.b import c`` counts as ``a.b.c``
    (``c`` may be a module); relative imports are resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, *([base] if base else [])])
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def private_import(imported: str, importer: str | None) -> bool:
    """Whether ``imported`` is a private module (or a name in one) of a
    distribution other than ``importer`` (None: code of no distribution)."""
    parts = imported.split(".")
    if parts[0] != "torchx" or len(parts) < 2:
        return False
    if OWNER.get(parts[1]) == importer:
        return False
    return any(part.startswith("_") and not part.startswith("__") for part in parts[1:])


def sources() -> list[tuple[Path, str, str | None]]:
    """Each checked file, its module path and its distribution: every
    distribution's ``src`` and everything under ``examples/`` but tests."""
    found = []
    for distribution in DISTRIBUTIONS:
        src = ROOT / "packages" / distribution / "src"
        for path in sorted(src.rglob("*.py")):
            module = ".".join(path.relative_to(src).with_suffix("").parts)
            found.append((path, module, distribution))
    for path in sorted((ROOT / "examples").rglob("*.py")):
        if "tests" in path.relative_to(ROOT / "examples").parts:
            continue
        src = next((parent for parent in path.parents if parent.name == "src"), path.parent)
        module = ".".join(path.relative_to(src).with_suffix("").parts)
        found.append((path, module, None))
    return found


def test_the_checked_tree_has_every_distribution_and_the_plugin_example() -> None:
    assert {"torchx-core", "torchx-layers", "torchx-functional", "torchx-rnn"} <= set(DISTRIBUTIONS)
    assert OWNER["core"] == OWNER["plugin"] == OWNER["cli"] == "torchx-core"
    assert any(module.startswith("torchx_plugin_example") for _, module, _ in sources())


def test_no_distribution_or_example_imports_another_distributions_private_modules() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {imported}"
        for path, module, distribution in sources()
        for imported, line in imported_modules(path.read_text(encoding="utf-8"), module)
        if private_import(imported, distribution)
    ]
    assert not found, "\n".join(
        [*found, "use the public name (torchx.plugin, torchx.core, ...) or make the name public there"]
    )


PRIVATE, PUBLIC = True, False


@pytest.mark.parametrize(
    ("source", "module", "distribution", "private"),
    [
        pytest.param("from torchx.core._shapes import Shape", "torchx.layers._conv", "torchx-layers", PRIVATE, id="from-core-private"),
        pytest.param("import torchx.core._leaf", "torchx.rnn._modules", "torchx-rnn", PRIVATE, id="import-core-private"),
        pytest.param("from torchx.core import _errors", "torchx.rnn._modules", "torchx-rnn", PRIVATE, id="private-module-as-name"),
        pytest.param("from torchx.cli._inputs import read", "torchx.keras._command", "torchx-keras", PRIVATE, id="cli-private"),
        pytest.param("from torchx.layers._parameter import P", "torchx.functional._program", "torchx-functional", PRIVATE, id="sibling-private"),
        pytest.param("from ..core._errors import add_note", "torchx.layers._norm", "torchx-layers", PRIVATE, id="relative"),
        pytest.param(
            "def f():\n    from torchx.core._record import layer_name", "torchx_plugin_example._layers", None, PRIVATE, id="in-a-function"
        ),
        pytest.param("from torchx.plugin import Shape", "torchx.layers._conv", "torchx-layers", PUBLIC, id="plugin-namespace"),
        pytest.param("from torchx.core import __version__", "torchx.layers._version", "torchx-layers", PUBLIC, id="dunder"),
        pytest.param("from torchx.layers._conv import Conv2d", "torchx.layers.__init__", "torchx-layers", PUBLIC, id="own-private"),
        pytest.param("from torchx.core._shapes import Shape", "torchx.plugin", "torchx-core", PUBLIC, id="core-inside-core"),
        pytest.param("from torchx.layers import Parameter", "torchx.functional._program", "torchx-functional", PUBLIC, id="sibling-public"),
    ],
)  # fmt: skip
def test_private_imports_of_another_distribution_are_told_from_the_rest(
    source: str, module: str, distribution: str | None, private: bool
) -> None:
    (imported,) = imported_modules(source, module)
    assert private_import(imported[0], distribution) is private
