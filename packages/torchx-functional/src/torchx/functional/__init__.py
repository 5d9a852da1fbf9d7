"""torchx.functional: Placeholder graphs and the Functional model.

Layers and torch operations called on :class:`Placeholder` values are recorded;
:class:`Functional` turns the recorded graph into an ``nn.Module`` whose
forward is generated Python code. A placeholder's ``shape`` is a
:class:`SymbolicShape`, holding a :class:`Size` for each dynamic dim; a
:class:`Dim` names a dynamic dim and bounds it. Also on the façade as
``L.Placeholder``, ``L.Dim`` and ``L.Functional`` once torchx-functional is installed.
"""

from torchx.functional._dims import Dim as Dim
from torchx.functional._functional import Functional as Functional
from torchx.functional._placeholder import Buffer as Buffer
from torchx.functional._placeholder import Placeholder as Placeholder
from torchx.functional._placeholder import Size as Size
from torchx.functional._placeholder import SymbolicShape as SymbolicShape
from torchx.functional._placeholder import accept_placeholders as accept_placeholders
from torchx.functional._program import Input as Input
from torchx.functional._version import __version__ as __version__

__all__ = [
    "Buffer",
    "Dim",
    "Functional",
    "Input",
    "Placeholder",
    "Size",
    "SymbolicShape",
    "__version__",
    "accept_placeholders",
]
