"""torchx.core: the Layer protocol, the shape engine, specs, plugins, device scopes and errors."""

from torchx.core._version import __version__ as __version__
from torchx.core.build import build as build
from torchx.core.build import infer_shapes as infer_shapes
from torchx.core.checkpoint import load_model as load_model
from torchx.core.commands import Command as Command
from torchx.core.commands import CommandRegistry as CommandRegistry
from torchx.core.container import Container as Container
from torchx.core.errors import (
    AllocationError as AllocationError,
)
from torchx.core.errors import (
    ArgumentError as ArgumentError,
)
from torchx.core.errors import (
    BuildWarning as BuildWarning,
)
from torchx.core.errors import (
    CheckpointError as CheckpointError,
)
from torchx.core.errors import (
    DeviceError as DeviceError,
)
from torchx.core.errors import (
    DeviceUnavailableError as DeviceUnavailableError,
)
from torchx.core.errors import (
    DeviceWarning as DeviceWarning,
)
from torchx.core.errors import (
    DtypeError as DtypeError,
)
from torchx.core.errors import (
    LayerError as LayerError,
)
from torchx.core.errors import (
    MemoryWarning as MemoryWarning,
)
from torchx.core.errors import (
    MissingPackageError as MissingPackageError,
)
from torchx.core.errors import (
    NotBuiltError as NotBuiltError,
)
from torchx.core.errors import (
    PluginError as PluginError,
)
from torchx.core.errors import (
    PluginWarning as PluginWarning,
)
from torchx.core.errors import (
    ShapeError as ShapeError,
)
from torchx.core.errors import (
    SpecError as SpecError,
)
from torchx.core.errors import (
    SpecMigrationWarning as SpecMigrationWarning,
)
from torchx.core.errors import (
    TorchXError as TorchXError,
)
from torchx.core.hookspecs import hookimpl as hookimpl
from torchx.core.layer import Layer as Layer
from torchx.core.layer import is_built as is_built
from torchx.core.layer import native_module as native_module
from torchx.core.leaf import FromInput as FromInput
from torchx.core.leaf import FromState as FromState
from torchx.core.leaf import LeafLayer as LeafLayer
from torchx.core.module_helpers import ModuleHelpers as ModuleHelpers
from torchx.core.pending import PendingBuffer as PendingBuffer
from torchx.core.pending import PendingParameter as PendingParameter
from torchx.core.placement import Placement as Placement
from torchx.core.plugins import (
    PluginManager as PluginManager,
)
from torchx.core.plugins import (
    current_plugins as current_plugins,
)
from torchx.core.plugins import (
    use_plugins as use_plugins,
)
from torchx.core.record import LayerRecord as LayerRecord
from torchx.core.record import record_of as record_of
from torchx.core.registry import LayerRegistry as LayerRegistry
from torchx.core.registry import MigrationRegistry as MigrationRegistry
from torchx.core.registry import rename_argument as rename_argument
from torchx.core.scope import DeviceScope as DeviceScope
from torchx.core.scope import current_scope as current_scope
from torchx.core.scope import device_scope as device_scope
from torchx.core.scope import resolve_device as resolve_device
from torchx.core.shapes import TypedShape as TypedShape
from torchx.core.specs import FORMAT_VERSION as FORMAT_VERSION
from torchx.core.specs import from_spec as from_spec
from torchx.core.specs import load_spec as load_spec
from torchx.core.specs import save_spec as save_spec
from torchx.core.specs import to_spec as to_spec
from torchx.core.summary import Summary as Summary
from torchx.core.summary import summarize as summarize
from torchx.core.weights import WeightMismatchError as WeightMismatchError
from torchx.core.weights import WeightReport as WeightReport
from torchx.core.weights import load_weights as load_weights

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
    "from_spec",
    "hookimpl",
    "infer_shapes",
    "is_built",
    "load_model",
    "load_spec",
    "load_weights",
    "native_module",
    "record_of",
    "rename_argument",
    "resolve_device",
    "save_spec",
    "summarize",
    "to_spec",
    "use_plugins",
]
