"""torchx.nn (``import torchx.nn as nnx``): ``nn.Module`` with device scopes and training helpers.

``nnx.Module`` is a strict superset of ``torch.nn.Module``: it moves itself to
the ``torchx.device_scope`` it is called in and has helper methods. The
helpers also exist as functions that take any ``nn.Module``
(``nnx.soft_update(target_net, online_net, tau=0.005)``).
"""

from torchx.core._checkpoint import Checkpoint as Checkpoint
from torchx.core._checkpoint import read_checkpoint as read_checkpoint
from torchx.core._helpers import clip_grad_norm as clip_grad_norm
from torchx.core._helpers import clip_grad_value as clip_grad_value
from torchx.core._helpers import clone as clone
from torchx.core._helpers import freeze as freeze
from torchx.core._helpers import hard_update as hard_update
from torchx.core._helpers import num_parameters as num_parameters
from torchx.core._helpers import soft_update as soft_update
from torchx.core._helpers import unfreeze as unfreeze
from torchx.core._module import Module as Module
from torchx.core._module import release_parallel_wrappers as release_parallel_wrappers

__all__ = [
    "Checkpoint",
    "Module",
    "clip_grad_norm",
    "clip_grad_value",
    "clone",
    "freeze",
    "hard_update",
    "num_parameters",
    "read_checkpoint",
    "release_parallel_wrappers",
    "soft_update",
    "unfreeze",
]
