"""torchx.core is layered: every import points down, including imports inside
functions (those in ``if TYPE_CHECKING:`` blocks are for annotations only)."""

from __future__ import annotations

import ast
from pathlib import Path

import torchx.core

CORE = Path(torchx.core.__file__).parent
PACKAGE = CORE.parent

LAYERS: list[set[str]] = [
    # plain data and facts: no TorchX import at all, or only errors
    {"errors", "tree", "symbolic", "placement", "files", "_version", "native_signature", "spec_values"},
    {"arguments", "pending", "torch_style"},
    # registries, hookspecs, plugins, device scopes
    {"registry", "hookspecs"},
    {"commands"},
    {"plugins", "testing"},
    {"scope"},
    # the meta engine and the memory check
    {"memory"},
    {"shapes", "safetensors_file"},
    # layers
    {"layer"},
    {"build", "helpers"},
    # what works on whole models
    {"summary"},
    {"specs", "graph"},
    {"checkpoint"},
    {"module_helpers", "weights", "diff"},
    # the public API
    {"__init__"},
]
"""The modules of torchx.core, lowest first; a module imports only from its layer or below."""

UPWARD_EXCEPTIONS = {("layer", "specs")}
"""Imports allowed to point up, each for a reason: ``Layer.to_spec()`` and
``Layer.from_spec()`` are the seed's API on the base class and read specs."""

ABOVE_CORE = {"nn", "cli"}
"""torchx's packages built on core (core never imports them)."""


def core_imports(path: Path) -> list[tuple[str, int]]:
    """The torchx modules ``path`` imports at run time: ``("core.specs", line)``..."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    annotations_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("torchx."):
            module = node.module.removeprefix("torchx.")
            names = [f"{module}.{alias.name}" for alias in node.names] if module == "core" else [module]
            found += [(name, node.lineno) for name in names]
        elif isinstance(node, ast.Import):
            found += [
                (a.name.removeprefix("torchx."), node.lineno)
                for a in node.names
                if a.name.startswith("torchx.")
            ]
    return found


def level(module: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if module in layer)


def test_every_core_module_is_in_a_layer() -> None:
    modules = {path.stem for path in CORE.glob("*.py")}
    placed = set().union(*LAYERS)
    assert modules == placed, f"not placed: {sorted(modules - placed)}; gone: {sorted(placed - modules)}"


def test_every_import_in_core_points_down() -> None:
    upward = []
    for path in sorted(CORE.glob("*.py")):
        importer = path.stem
        for imported, line in core_imports(path):
            first, _, rest = imported.partition(".")
            if first in ABOVE_CORE:
                upward.append(f"core/{path.name}:{line} imports torchx.{imported}, which is built on core")
                continue
            target = rest.split(".")[0] if first == "core" else None
            if target is None or not (CORE / f"{target}.py").exists():
                continue  # torchx.core itself, or a name it re-exports (only __init__ does that)
            if level(target) > level(importer) and (importer, target) not in UPWARD_EXCEPTIONS:
                upward.append(f"core/{path.name}:{line} imports torchx.core.{target}, a layer above it")
    assert not upward, "\n".join(upward)


def test_the_allowed_upward_imports_are_still_needed() -> None:
    for importer, target in UPWARD_EXCEPTIONS:
        imported = {name.partition(".")[2].split(".")[0] for name, _ in core_imports(CORE / f"{importer}.py")}
        assert target in imported, f"{importer} no longer imports {target}: drop the exception"
