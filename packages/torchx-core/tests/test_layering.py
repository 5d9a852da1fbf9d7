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
    {
        "_errors",
        "_tree",
        "_symbolic",
        "_placement",
        "_files",
        "_version",
        "_dtypes",
        "_spec_values",
        "_transforms",
        "_scaling",
        "_meta_formulas",
        "_torch_compat",
    },
    {"_arguments", "_pending", "_torch_style", "_record"},
    {"_native_signature"},
    # registries, hookspecs, plugins, device scopes
    {"_registry", "hookspecs"},
    {"_commands"},
    {"_plugins", "testing"},
    {"_scope"},
    # the meta engine and the memory check
    {"_memory"},
    {"_shapes", "_safetensors_file"},
    # specs read and write layers through their records and classes
    {"_specs"},
    # layers: what every layer is, then leaf layers and the build machinery
    {"_layer"},
    {"_leaf"},
    {"_build", "_helpers"},
    # what works on whole models
    {"_summary"},
    {"_graph"},
    {"_checkpoint"},
    {"_module_helpers", "_weights", "_diff"},
    # torchx.nn.Module, and containers (which are torchx.nn.Modules)
    {"_module"},
    {"_container"},
    {"_validate"},
    # the public API
    {"__init__"},
]
"""The modules of torchx.core, lowest first; a module imports only from its layer or below."""

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
            if first != "core":
                continue  # torchx itself: its __init__ only re-exports
            target = rest.split(".")[0]
            if not (CORE / f"{target}.py").exists():
                target = "__init__"  # a name torchx.core re-exports, or torchx.core itself
            if level(target) > level(importer):
                upward.append(f"core/{path.name}:{line} imports torchx.core.{target}, a layer above it")
    assert not upward, "\n".join(upward)


PUBLIC_MODULES = {"hookspecs", "testing"}
"""The modules of torchx.core that are API besides the package itself: the
hook specifications plugins implement, and the test fixtures they use. Every
other module is internal (a leading underscore); the API is what
``torchx``, ``torchx.core``, ``torchx.nn`` and ``torchx.plugin`` export."""


def test_only_the_api_modules_of_core_go_without_an_underscore() -> None:
    public = {path.stem for path in CORE.glob("*.py") if not path.stem.startswith("_")}
    assert public == PUBLIC_MODULES
