"""torchx.core: the layer protocol, the shape engine, specs, plugins, device scopes and errors.

The API is what this package exports (and ``torchx``, ``torchx.nn`` and, for
plugin authors, ``torchx.plugin``), plus two modules: :mod:`torchx.core.hookspecs`,
the hooks a plugin implements, and :mod:`torchx.core.testing`, fixtures for a
plugin's tests. Every other module is internal (a leading underscore); they are
layered, each importing only from those below it (``tests/test_layering.py``).
"""

from torchx.core._build import build as build
from torchx.core._build import infer_shapes as infer_shapes
from torchx.core._checkpoint import load_model as load_model
from torchx.core._commands import Command as Command
from torchx.core._commands import CommandRegistry as CommandRegistry
from torchx.core._container import Container as Container
from torchx.core._diff import diff_specs as diff_specs
from torchx.core._errors import (
    AllocationError as AllocationError,
)
from torchx.core._errors import (
    ArgumentError as ArgumentError,
)
from torchx.core._errors import (
    BuildWarning as BuildWarning,
)
from torchx.core._errors import (
    CheckpointError as CheckpointError,
)
from torchx.core._errors import (
    DeviceError as DeviceError,
)
from torchx.core._errors import (
    DeviceUnavailableError as DeviceUnavailableError,
)
from torchx.core._errors import (
    DeviceWarning as DeviceWarning,
)
from torchx.core._errors import (
    DtypeError as DtypeError,
)
from torchx.core._errors import (
    LayerError as LayerError,
)
from torchx.core._errors import (
    MemoryWarning as MemoryWarning,
)
from torchx.core._errors import (
    MissingPackageError as MissingPackageError,
)
from torchx.core._errors import (
    NotBuiltError as NotBuiltError,
)
from torchx.core._errors import (
    PluginError as PluginError,
)
from torchx.core._errors import (
    PluginWarning as PluginWarning,
)
from torchx.core._errors import (
    ShapeError as ShapeError,
)
from torchx.core._errors import (
    SpecError as SpecError,
)
from torchx.core._errors import (
    SpecMigrationWarning as SpecMigrationWarning,
)
from torchx.core._errors import (
    TorchXError as TorchXError,
)
from torchx.core._graph import model_graph as model_graph
from torchx.core._layer import Layer as Layer
from torchx.core._layer import is_built as is_built
from torchx.core._layer import native_module as native_module
from torchx.core._leaf import FromInput as FromInput
from torchx.core._leaf import FromState as FromState
from torchx.core._leaf import LeafLayer as LeafLayer
from torchx.core._module_helpers import ModuleHelpers as ModuleHelpers
from torchx.core._pending import PendingBuffer as PendingBuffer
from torchx.core._pending import PendingParameter as PendingParameter
from torchx.core._placement import Placement as Placement
from torchx.core._plugins import (
    PluginManager as PluginManager,
)
from torchx.core._plugins import (
    current_plugins as current_plugins,
)
from torchx.core._plugins import (
    use_plugins as use_plugins,
)
from torchx.core._record import LayerRecord as LayerRecord
from torchx.core._record import record_of as record_of
from torchx.core._registry import LayerRegistry as LayerRegistry
from torchx.core._registry import MigrationRegistry as MigrationRegistry
from torchx.core._registry import rename_argument as rename_argument
from torchx.core._scope import DeviceScope as DeviceScope
from torchx.core._scope import current_scope as current_scope
from torchx.core._scope import device_scope as device_scope
from torchx.core._scope import resolve_device as resolve_device
from torchx.core._shapes import TypedShape as TypedShape
from torchx.core._specs import FORMAT_VERSION as FORMAT_VERSION
from torchx.core._specs import from_spec as from_spec
from torchx.core._specs import load_spec as load_spec
from torchx.core._specs import save_spec as save_spec
from torchx.core._specs import to_spec as to_spec
from torchx.core._summary import Summary as Summary
from torchx.core._summary import summarize as summarize
from torchx.core._version import __version__ as __version__
from torchx.core._weights import WeightMismatchError as WeightMismatchError
from torchx.core._weights import WeightReport as WeightReport
from torchx.core._weights import load_weights as load_weights
from torchx.core.hookspecs import hookimpl as hookimpl

_FOREIGN_TORCHX = ("torchx", "torchx-nightly")
"""Distributions on PyPI that install a ``torchx`` package that is not TorchX's:
Meta's job launcher (its releases and nightlies)."""


def _refuse_foreign_torchx() -> None:
    """Raise ImportError naming a distribution of :data:`_FOREIGN_TORCHX` that is
    installed, with what to do.

    Such a distribution and torchx-core overwrite each other's files
    (``torchx/__init__.py``, ``torchx/cli/__init__.py``, the ``torchx``
    command), whichever is installed last. The check is here, not in
    ``torchx/__init__.py``, which the other may have replaced: every TorchX
    import goes through ``torchx.core``, a folder only TorchX installs. It
    costs one metadata lookup per name (no scan of every installed distribution).
    """
    import importlib.metadata
    import os

    for name in _FOREIGN_TORCHX:
        try:
            found = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        where = os.path.abspath(str(found.locate_file("")))
        raise ImportError(
            f"{found.metadata['Name']} {found.version} is installed (in {where}): it is Meta's job launcher,"
            " not TorchX, and installs the same import package, torchx, so each"
            " overwrites files of the other (torchx/__init__.py, torchx/cli/__init__.py, the torchx command)\n"
            f"  fix: pip uninstall {found.metadata['Name']}, then pip install --force-reinstall --no-deps"
            " torchx-core (the uninstall removes the files the two share); to use both, install them in"
            " separate virtual environments"
        )


_refuse_foreign_torchx()

__all__ = [
    "FORMAT_VERSION",
    "AllocationError",
    "ArgumentError",
    "BuildWarning",
    "CheckpointError",
    "Command",
    "Container",
    "CommandRegistry",
    "DeviceError",
    "DeviceScope",
    "DeviceUnavailableError",
    "DeviceWarning",
    "DtypeError",
    "FromInput",
    "FromState",
    "Layer",
    "LayerError",
    "LayerRecord",
    "LayerRegistry",
    "LeafLayer",
    "MemoryWarning",
    "MigrationRegistry",
    "MissingPackageError",
    "ModuleHelpers",
    "NotBuiltError",
    "PendingBuffer",
    "PendingParameter",
    "Placement",
    "PluginError",
    "PluginManager",
    "PluginWarning",
    "ShapeError",
    "SpecError",
    "SpecMigrationWarning",
    "Summary",
    "TorchXError",
    "TypedShape",
    "WeightMismatchError",
    "WeightReport",
    "__version__",
    "build",
    "current_plugins",
    "current_scope",
    "device_scope",
    "diff_specs",
    "from_spec",
    "hookimpl",
    "infer_shapes",
    "is_built",
    "load_model",
    "load_spec",
    "load_weights",
    "model_graph",
    "native_module",
    "record_of",
    "rename_argument",
    "resolve_device",
    "save_spec",
    "summarize",
    "to_spec",
    "use_plugins",
]
