"""TorchX: PyTorch with every inferable shape argument inferred.

``torchx`` spans several distributions (torchx-core, torchx-layers, ...); this
file belongs to torchx-core and lets the others' subpackages be found in both
regular and editable installs.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from torchx.core import (
    ShapeError as ShapeError,
)
from torchx.core import (
    SpecError as SpecError,
)
from torchx.core import (
    TorchXError as TorchXError,
)
from torchx.core import (
    build as build,
)
from torchx.core import (
    infer_shapes as infer_shapes,
)
from torchx.core import (
    load_spec as load_spec,
)
from torchx.core import (
    save_spec as save_spec,
)
from torchx.core._version import __version__ as __version__

__all__ = [
    "ShapeError",
    "SpecError",
    "TorchXError",
    "__version__",
    "build",
    "infer_shapes",
    "load_spec",
    "save_spec",
]
