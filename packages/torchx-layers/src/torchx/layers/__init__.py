"""torchx.layers (``import torchx.layers as L``): torch.nn layers that infer their input side.

``L.Linear(20)``, ``L.Conv2d(30, kernel_size=7)``, ``L.BatchNorm2d()``: write
only what is new; sizes that follow from the input are read off it when the
layer first sees it (or in ``torchx.build``). ``L.Sequential`` chains them.

Names registered by other installed TorchX plugins (``L.Functional``,
``L.LSTM``, third-party layers) appear here too; a name whose package is not
installed raises an error that says which package to install.
"""

# ruff: noqa: F403, F405  (each family module's ``__all__`` is exactly what it adds to the façade)
from typing import TYPE_CHECKING

from torchx.core import FromInput, Layer
from torchx.layers._activation import *
from torchx.layers._attention import *
from torchx.layers._checkpoint import *
from torchx.layers._conv import *
from torchx.layers._distance import *
from torchx.layers._dropout import *
from torchx.layers._embedding import *
from torchx.layers._lambda import *
from torchx.layers._linear import *
from torchx.layers._merge import *
from torchx.layers._norm import *
from torchx.layers._padding import *
from torchx.layers._parameter import *
from torchx.layers._pool import *
from torchx.layers._resample import *
from torchx.layers._reshape import *
from torchx.layers._sequential import *

if TYPE_CHECKING:  # names of other distributions: looked up at run time by ``__getattr__``, typed here
    from torchx.functional import Buffer as Buffer
    from torchx.functional import Dim as Dim
    from torchx.functional import Functional as Functional
    from torchx.functional import Placeholder as Placeholder
    from torchx.rnn import GRU as GRU
    from torchx.rnn import LSTM as LSTM
    from torchx.rnn import RNN as RNN
    from torchx.rnn import GetRNNOutput as GetRNNOutput
    from torchx.rnn import GetRNNState as GetRNNState
    from torchx.rnn import GRUCell as GRUCell
    from torchx.rnn import LSTMCell as LSTMCell
    from torchx.rnn import RNNCell as RNNCell
    from torchx.rnn import TimeDistributed as TimeDistributed

    Input = Placeholder
    Model = Functional
    Dense = Linear  # spec aliases registered by torchx-layers' own plugin, also found by ``__getattr__``
    Concatenate = Concat

# (its order is the order of the layer table in docs/torchx-layers.md: tools/api_docs.py)
__all__ = [
    "Checkpoint", "Parameter", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Add", "AlphaDropout", "Average",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear", "CELU",
    "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d", "Concat", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "CosineSimilarity", "DropPath", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "ELU", "Embedding", "EmbeddingBag", "FeatureAlphaDropout", "Flatten", "Fold", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "FromInput", "GELU", "GLU", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish",
    "Hardtanh", "Identity", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LPPool1d", "LPPool2d",
    "LPPool3d", "Lambda", "Layer", "LayerNorm", "LayerNorm2d", "LeakyReLU", "Linear", "LocalResponseNorm",
    "LogSigmoid", "LogSoftmax", "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d", "Maximum", "Minimum", "Mish", "MultiheadAttention", "Multiply", "PReLU",
    "PairwiseDistance", "Permute", "PixelShuffle", "PixelUnshuffle", "RMSNorm", "RReLU", "ReLU", "ReLU6",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "Reshape", "SELU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin",
    "Softplus", "Softshrink", "Softsign", "Subtract", "Tanh", "Tanhshrink", "Threshold",
    "TransformerDecoderLayer", "TransformerEncoderLayer", "Unflatten", "Unfold", "Upsample", "View",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]  # fmt: skip

for _name in __all__:  # documented, shown and pickled as torchx.layers.<name> (the same object)
    if globals()[_name].__module__.startswith(f"{__name__}._"):
        globals()[_name].__module__ = __name__
del _name


def __getattr__(name: str) -> object:
    """Look ``name`` up among names registered by installed plugins."""
    if name.startswith("__"):
        raise AttributeError(name)
    from torchx.core import MissingPackageError, current_plugins

    registry = current_plugins().registry
    found = registry.exported(name)
    if found is not None:
        return found
    package = registry.provider(name)
    if package is not None:
        raise MissingPackageError(
            f"torchx.layers.{name} is provided by {package}, which is not installed; "
            f"run: pip install {package}"
        )
    raise AttributeError(f"module 'torchx.layers' has no attribute {name!r}")
