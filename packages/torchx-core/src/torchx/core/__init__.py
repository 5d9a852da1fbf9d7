"""torchx.core: the Layer protocol, the shape engine, specs, plugins and errors."""

from torchx.core._version import __version__ as __version__
from torchx.core.build import build as build, infer_shapes as infer_shapes
from torchx.core.errors import (
    ArgumentError as ArgumentError,
    MissingPackageError as MissingPackageError,
    PluginError as PluginError,
    PluginWarning as PluginWarning,
    ShapeError as ShapeError,
    SpecError as SpecError,
    TorchXError as TorchXError,
)
from torchx.core.hookspecs import hookimpl as hookimpl
from torchx.core.layer import FromInput as FromInput, Layer as Layer
from torchx.core.plugins import (
    PluginManager as PluginManager,
    current_plugins as current_plugins,
    use_plugins as use_plugins,
)
from torchx.core.registry import LayerRegistry as LayerRegistry
from torchx.core.specs import (
    FORMAT_VERSION as FORMAT_VERSION,
    from_spec as from_spec,
    load_spec as load_spec,
    save_spec as save_spec,
    to_spec as to_spec,
)

__all__ = [
    "FORMAT_VERSION",
    "ArgumentError",
    "FromInput",
    "Layer",
    "LayerRegistry",
    "MissingPackageError",
    "PluginError",
    "PluginManager",
    "PluginWarning",
    "ShapeError",
    "SpecError",
    "TorchXError",
    "__version__",
    "build",
    "current_plugins",
    "from_spec",
    "hookimpl",
    "infer_shapes",
    "load_spec",
    "save_spec",
    "to_spec",
    "use_plugins",
]
