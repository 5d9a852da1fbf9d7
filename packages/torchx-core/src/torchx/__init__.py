"""TorchX: PyTorch with every inferable shape argument inferred.

``torchx`` spans several distributions (torchx-core, torchx-layers, ...); this
file belongs to torchx-core and lets the others' subpackages be found in both
regular and editable installs.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from typing import TYPE_CHECKING

# Named, so that type checkers know ``torchx.core`` after ``import torchx`` (pyright
# reads only what this file binds; the imports below bind it at run time).
from torchx import core as core
from torchx.core import AllocationError as AllocationError
from torchx.core import ArgumentError as ArgumentError
from torchx.core import BuildWarning as BuildWarning
from torchx.core import CheckpointError as CheckpointError
from torchx.core import DeviceError as DeviceError
from torchx.core import DeviceUnavailableError as DeviceUnavailableError
from torchx.core import DeviceWarning as DeviceWarning
from torchx.core import DtypeError as DtypeError
from torchx.core import LayerError as LayerError
from torchx.core import MemoryWarning as MemoryWarning
from torchx.core import MissingPackageError as MissingPackageError
from torchx.core import NotBuiltError as NotBuiltError
from torchx.core import PluginError as PluginError
from torchx.core import PluginWarning as PluginWarning
from torchx.core import ShapeError as ShapeError
from torchx.core import SpecError as SpecError
from torchx.core import SpecMigrationWarning as SpecMigrationWarning
from torchx.core import TorchXError as TorchXError
from torchx.core import WeightMismatchError as WeightMismatchError
from torchx.core import WeightReport as WeightReport
from torchx.core import build as build
from torchx.core import current_scope as current_scope
from torchx.core import device_scope as device_scope
from torchx.core import infer_shapes as infer_shapes
from torchx.core import is_built as is_built
from torchx.core import load_model as load_model
from torchx.core import load_spec as load_spec
from torchx.core import load_weights as load_weights
from torchx.core import native_module as native_module
from torchx.core import save_spec as save_spec
from torchx.core import summarize as summarize
from torchx.core import to_spec as to_spec
from torchx.core._version import __version__ as __version__

if TYPE_CHECKING:
    from torchx.device import DataParallel as DataParallel
    from torchx.device import DistributedDataParallel as DistributedDataParallel

__all__ = [
    "AllocationError",
    "ArgumentError",
    "BuildWarning",
    "CheckpointError",
    "DeviceError",
    "DeviceUnavailableError",
    "DeviceWarning",
    "DtypeError",
    "LayerError",
    "MemoryWarning",
    "MissingPackageError",
    "NotBuiltError",
    "PluginError",
    "PluginWarning",
    "ShapeError",
    "SpecError",
    "SpecMigrationWarning",
    "TorchXError",
    "WeightMismatchError",
    "WeightReport",
    "__version__",
    "build",
    "current_scope",
    "device_scope",
    "infer_shapes",
    "is_built",
    "load_model",
    "load_spec",
    "load_weights",
    "native_module",
    "save_spec",
    "summarize",
    "to_spec",
]

_FROM_TORCHX_DEVICE = ("DataParallel", "DistributedDataParallel")
"""Names of torchx-device offered here (not in ``__all__``: they may be absent)."""


def __getattr__(name: str) -> object:
    """``torchx.DataParallel`` and ``torchx.DistributedDataParallel``, from torchx-device."""
    if name not in _FROM_TORCHX_DEVICE:
        raise AttributeError(f"module 'torchx' has no attribute {name!r}")
    try:
        import torchx.device
    except ModuleNotFoundError as error:
        if error.name != "torchx.device":
            raise
        from torchx.core import MissingPackageError

        raise MissingPackageError(
            f"torchx.{name} is provided by torchx-device, which is not installed; run: pip install torchx-device"
        ) from None
    return getattr(torchx.device, name)
