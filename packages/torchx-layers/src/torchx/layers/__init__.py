"""torchx.layers (``import torchx.layers as L``): torch.nn layers that infer their input side.

``L.Linear(20)``, ``L.Conv2d(30, kernel_size=7)``, ``L.BatchNorm2d()``: write
only what is new; sizes that follow from the input are read off it when the
layer first sees it (or in ``torchx.build``). ``L.Sequential`` chains them.

Names registered by other installed TorchX plugins (``L.Functional``,
``L.LSTM``, third-party layers) appear here too; a name whose package is not
installed raises an error that says which package to install.
"""

from __future__ import annotations

from torchx.core import FromInput as FromInput, Layer as Layer
from torchx.layers._activation import (
    CELU as CELU,
    ELU as ELU,
    GELU as GELU,
    GLU as GLU,
    Hardshrink as Hardshrink,
    Hardsigmoid as Hardsigmoid,
    Hardswish as Hardswish,
    Hardtanh as Hardtanh,
    LeakyReLU as LeakyReLU,
    LogSigmoid as LogSigmoid,
    LogSoftmax as LogSoftmax,
    Mish as Mish,
    PReLU as PReLU,
    RReLU as RReLU,
    ReLU as ReLU,
    ReLU6 as ReLU6,
    SELU as SELU,
    SiLU as SiLU,
    Sigmoid as Sigmoid,
    Softmax as Softmax,
    Softmax2d as Softmax2d,
    Softmin as Softmin,
    Softplus as Softplus,
    Softshrink as Softshrink,
    Softsign as Softsign,
    Tanh as Tanh,
    Tanhshrink as Tanhshrink,
    Threshold as Threshold,
)
from torchx.layers._attention import (
    MultiheadAttention as MultiheadAttention,
    TransformerDecoderLayer as TransformerDecoderLayer,
    TransformerEncoderLayer as TransformerEncoderLayer,
)
from torchx.layers._conv import (
    Conv1d as Conv1d,
    Conv2d as Conv2d,
    Conv3d as Conv3d,
    ConvTranspose1d as ConvTranspose1d,
    ConvTranspose2d as ConvTranspose2d,
    ConvTranspose3d as ConvTranspose3d,
)
from torchx.layers._dropout import (
    AlphaDropout as AlphaDropout,
    Dropout as Dropout,
    Dropout1d as Dropout1d,
    Dropout2d as Dropout2d,
    Dropout3d as Dropout3d,
    FeatureAlphaDropout as FeatureAlphaDropout,
)
from torchx.layers._embedding import (
    Embedding as Embedding,
    EmbeddingBag as EmbeddingBag,
)
from torchx.layers._lambda import (
    Lambda as Lambda,
)
from torchx.layers._linear import (
    Bilinear as Bilinear,
    Identity as Identity,
    Linear as Linear,
)
from torchx.layers._merge import (
    Add as Add,
    Average as Average,
    Concat as Concat,
    Maximum as Maximum,
    Minimum as Minimum,
    Multiply as Multiply,
    Subtract as Subtract,
)
from torchx.layers._norm import (
    BatchNorm1d as BatchNorm1d,
    BatchNorm2d as BatchNorm2d,
    BatchNorm3d as BatchNorm3d,
    GroupNorm as GroupNorm,
    InstanceNorm1d as InstanceNorm1d,
    InstanceNorm2d as InstanceNorm2d,
    InstanceNorm3d as InstanceNorm3d,
    LayerNorm as LayerNorm,
    LocalResponseNorm as LocalResponseNorm,
    RMSNorm as RMSNorm,
)
from torchx.layers._padding import (
    CircularPad1d as CircularPad1d,
    CircularPad2d as CircularPad2d,
    CircularPad3d as CircularPad3d,
    ConstantPad1d as ConstantPad1d,
    ConstantPad2d as ConstantPad2d,
    ConstantPad3d as ConstantPad3d,
    ReflectionPad1d as ReflectionPad1d,
    ReflectionPad2d as ReflectionPad2d,
    ReflectionPad3d as ReflectionPad3d,
    ReplicationPad1d as ReplicationPad1d,
    ReplicationPad2d as ReplicationPad2d,
    ReplicationPad3d as ReplicationPad3d,
    ZeroPad1d as ZeroPad1d,
    ZeroPad2d as ZeroPad2d,
    ZeroPad3d as ZeroPad3d,
)
from torchx.layers._pool import (
    AdaptiveAvgPool1d as AdaptiveAvgPool1d,
    AdaptiveAvgPool2d as AdaptiveAvgPool2d,
    AdaptiveAvgPool3d as AdaptiveAvgPool3d,
    AdaptiveMaxPool1d as AdaptiveMaxPool1d,
    AdaptiveMaxPool2d as AdaptiveMaxPool2d,
    AdaptiveMaxPool3d as AdaptiveMaxPool3d,
    AvgPool1d as AvgPool1d,
    AvgPool2d as AvgPool2d,
    AvgPool3d as AvgPool3d,
    FractionalMaxPool2d as FractionalMaxPool2d,
    FractionalMaxPool3d as FractionalMaxPool3d,
    LPPool1d as LPPool1d,
    LPPool2d as LPPool2d,
    LPPool3d as LPPool3d,
    MaxPool1d as MaxPool1d,
    MaxPool2d as MaxPool2d,
    MaxPool3d as MaxPool3d,
    MaxUnpool1d as MaxUnpool1d,
    MaxUnpool2d as MaxUnpool2d,
    MaxUnpool3d as MaxUnpool3d,
)
from torchx.layers._reshape import (
    Flatten as Flatten,
    Permute as Permute,
    Reshape as Reshape,
    Unflatten as Unflatten,
)
from torchx.layers._sequential import (
    Sequential as Sequential,
)

__all__ = [
    "FromInput",
    "Layer",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "Add",
    "AlphaDropout",
    "Average",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "Bilinear",
    "CELU",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "Concat",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "ELU",
    "Embedding",
    "EmbeddingBag",
    "FeatureAlphaDropout",
    "Flatten",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "GELU",
    "GLU",
    "GroupNorm",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "Identity",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "Lambda",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LocalResponseNorm",
    "LogSigmoid",
    "LogSoftmax",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "Maximum",
    "Minimum",
    "Mish",
    "MultiheadAttention",
    "Multiply",
    "PReLU",
    "Permute",
    "RMSNorm",
    "RReLU",
    "ReLU",
    "ReLU6",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "Reshape",
    "SELU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Subtract",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "Unflatten",
    "View",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

View = Reshape
"""``View`` is ``Reshape`` (which also handles non-contiguous inputs)."""

_PROVIDED_BY = {
    "Placeholder": "torchx-functional",
    "Functional": "torchx-functional",
    "Input": "torchx-functional",
    "RNN": "torchx-rnn",
    "LSTM": "torchx-rnn",
    "GRU": "torchx-rnn",
    "RNNCell": "torchx-rnn",
    "LSTMCell": "torchx-rnn",
    "GRUCell": "torchx-rnn",
    "TimeDistributed": "torchx-rnn",
    "GetRNNOutput": "torchx-rnn",
    "GetRNNState": "torchx-rnn",
}
"""Façade names owned by other TorchX distributions, for the "install X" error."""


def __getattr__(name: str) -> object:
    """Look ``name`` up among names registered by installed plugins."""
    if name.startswith("__"):
        raise AttributeError(name)
    from torchx.core import MissingPackageError, current_plugins

    found = current_plugins().registry.exported(name)
    if found is not None:
        return found
    package = _PROVIDED_BY.get(name)
    if package is not None:
        raise MissingPackageError(
            f"torchx.layers.{name} is provided by {package}, which is not installed; "
            f"run: pip install {package}"
        )
    raise AttributeError(f"module 'torchx.layers' has no attribute {name!r}")
