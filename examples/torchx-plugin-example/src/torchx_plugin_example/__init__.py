"""An example third-party TorchX plugin: three layers and a CLI command.

Installing this distribution adds ``L.Swish``, ``L.SqueezeExcite`` and
``L.ResidualBlock`` (and the spec types of the same names) and the
``torchx flops`` command, through the ``torchx.plugins`` entry point, exactly
as TorchX's own distributions register theirs.
"""

from torchx_plugin_example._layers import LearnedSwish as LearnedSwish
from torchx_plugin_example._layers import ResidualBlock as ResidualBlock
from torchx_plugin_example._layers import SqueezeExcite as SqueezeExcite
from torchx_plugin_example._layers import SqueezeExciteModule as SqueezeExciteModule
from torchx_plugin_example._layers import Swish as Swish

__all__ = ["LearnedSwish", "ResidualBlock", "SqueezeExcite", "SqueezeExciteModule", "Swish"]
