"""torchx.layers (``import torchx.layers as L``): torch.nn layers that infer their input side.

``L.Linear(20)``, ``L.Conv2d(30, kernel_size=7)``, ``L.BatchNorm2d()``: write
only what is new; sizes that follow from the input are read off it when the
layer first sees it (or in ``torchx.build``). ``L.Sequential`` chains them.

Names registered by other installed TorchX plugins (``L.Functional``,
``L.LSTM``, third-party layers) appear here too; a name whose package is not
installed raises an error that says which package to install.
"""

from __future__ import annotations

from torchx.core import FromInput as FromInput
from torchx.core import Layer as Layer
from torchx.layers._activation import (
    CELU as CELU,
)
from torchx.layers._activation import (
    ELU as ELU,
)
from torchx.layers._activation import (
    GELU as GELU,
)
from torchx.layers._activation import (
    GLU as GLU,
)
from torchx.layers._activation import (
    SELU as SELU,
)
from torchx.layers._activation import (
    Hardshrink as Hardshrink,
)
from torchx.layers._activation import (
    Hardsigmoid as Hardsigmoid,
)
from torchx.layers._activation import (
    Hardswish as Hardswish,
)
from torchx.layers._activation import (
    Hardtanh as Hardtanh,
)
from torchx.layers._activation import (
    LeakyReLU as LeakyReLU,
)
from torchx.layers._activation import (
    LogSigmoid as LogSigmoid,
)
from torchx.layers._activation import (
    LogSoftmax as LogSoftmax,
)
from torchx.layers._activation import (
    Mish as Mish,
)
from torchx.layers._activation import (
    PReLU as PReLU,
)
from torchx.layers._activation import (
    ReLU as ReLU,
)
from torchx.layers._activation import (
    ReLU6 as ReLU6,
)
from torchx.layers._activation import (
    RReLU as RReLU,
)
from torchx.layers._activation import (
    Sigmoid as Sigmoid,
)
from torchx.layers._activation import (
    SiLU as SiLU,
)
from torchx.layers._activation import (
    Softmax as Softmax,
)
from torchx.layers._activation import (
    Softmax2d as Softmax2d,
)
from torchx.layers._activation import (
    Softmin as Softmin,
)
from torchx.layers._activation import (
    Softplus as Softplus,
)
from torchx.layers._activation import (
    Softshrink as Softshrink,
)
from torchx.layers._activation import (
    Softsign as Softsign,
)
from torchx.layers._activation import (
    Tanh as Tanh,
)
from torchx.layers._activation import (
    Tanhshrink as Tanhshrink,
)
from torchx.layers._activation import (
    Threshold as Threshold,
)
from torchx.layers._attention import (
    MultiheadAttention as MultiheadAttention,
)
from torchx.layers._attention import (
    TransformerDecoderLayer as TransformerDecoderLayer,
)
from torchx.layers._attention import (
    TransformerEncoderLayer as TransformerEncoderLayer,
)
from torchx.layers._checkpoint import (
    Checkpoint as Checkpoint,
)
from torchx.layers._conv import (
    Conv1d as Conv1d,
)
from torchx.layers._conv import (
    Conv2d as Conv2d,
)
from torchx.layers._conv import (
    Conv3d as Conv3d,
)
from torchx.layers._conv import (
    ConvTranspose1d as ConvTranspose1d,
)
from torchx.layers._conv import (
    ConvTranspose2d as ConvTranspose2d,
)
from torchx.layers._conv import (
    ConvTranspose3d as ConvTranspose3d,
)
from torchx.layers._distance import (
    CosineSimilarity as CosineSimilarity,
)
from torchx.layers._distance import (
    PairwiseDistance as PairwiseDistance,
)
from torchx.layers._dropout import (
    AlphaDropout as AlphaDropout,
)
from torchx.layers._dropout import (
    Dropout as Dropout,
)
from torchx.layers._dropout import (
    Dropout1d as Dropout1d,
)
from torchx.layers._dropout import (
    Dropout2d as Dropout2d,
)
from torchx.layers._dropout import (
    Dropout3d as Dropout3d,
)
from torchx.layers._dropout import (
    FeatureAlphaDropout as FeatureAlphaDropout,
)
from torchx.layers._embedding import (
    Embedding as Embedding,
)
from torchx.layers._embedding import (
    EmbeddingBag as EmbeddingBag,
)
from torchx.layers._lambda import (
    Lambda as Lambda,
)
from torchx.layers._linear import (
    Bilinear as Bilinear,
)
from torchx.layers._linear import (
    Identity as Identity,
)
from torchx.layers._linear import (
    Linear as Linear,
)
from torchx.layers._merge import (
    Add as Add,
)
from torchx.layers._merge import (
    Average as Average,
)
from torchx.layers._merge import (
    Concat as Concat,
)
from torchx.layers._merge import (
    Maximum as Maximum,
)
from torchx.layers._merge import (
    Minimum as Minimum,
)
from torchx.layers._merge import (
    Multiply as Multiply,
)
from torchx.layers._merge import (
    Subtract as Subtract,
)
from torchx.layers._norm import (
    BatchNorm1d as BatchNorm1d,
)
from torchx.layers._norm import (
    BatchNorm2d as BatchNorm2d,
)
from torchx.layers._norm import (
    BatchNorm3d as BatchNorm3d,
)
from torchx.layers._norm import (
    GroupNorm as GroupNorm,
)
from torchx.layers._norm import (
    InstanceNorm1d as InstanceNorm1d,
)
from torchx.layers._norm import (
    InstanceNorm2d as InstanceNorm2d,
)
from torchx.layers._norm import (
    InstanceNorm3d as InstanceNorm3d,
)
from torchx.layers._norm import (
    LayerNorm as LayerNorm,
)
from torchx.layers._norm import (
    LocalResponseNorm as LocalResponseNorm,
)
from torchx.layers._norm import (
    RMSNorm as RMSNorm,
)
from torchx.layers._padding import (
    CircularPad1d as CircularPad1d,
)
from torchx.layers._padding import (
    CircularPad2d as CircularPad2d,
)
from torchx.layers._padding import (
    CircularPad3d as CircularPad3d,
)
from torchx.layers._padding import (
    ConstantPad1d as ConstantPad1d,
)
from torchx.layers._padding import (
    ConstantPad2d as ConstantPad2d,
)
from torchx.layers._padding import (
    ConstantPad3d as ConstantPad3d,
)
from torchx.layers._padding import (
    ReflectionPad1d as ReflectionPad1d,
)
from torchx.layers._padding import (
    ReflectionPad2d as ReflectionPad2d,
)
from torchx.layers._padding import (
    ReflectionPad3d as ReflectionPad3d,
)
from torchx.layers._padding import (
    ReplicationPad1d as ReplicationPad1d,
)
from torchx.layers._padding import (
    ReplicationPad2d as ReplicationPad2d,
)
from torchx.layers._padding import (
    ReplicationPad3d as ReplicationPad3d,
)
from torchx.layers._padding import (
    ZeroPad1d as ZeroPad1d,
)
from torchx.layers._padding import (
    ZeroPad2d as ZeroPad2d,
)
from torchx.layers._padding import (
    ZeroPad3d as ZeroPad3d,
)
from torchx.layers._parameter import (
    Parameter as Parameter,
)
from torchx.layers._pool import (
    AdaptiveAvgPool1d as AdaptiveAvgPool1d,
)
from torchx.layers._pool import (
    AdaptiveAvgPool2d as AdaptiveAvgPool2d,
)
from torchx.layers._pool import (
    AdaptiveAvgPool3d as AdaptiveAvgPool3d,
)
from torchx.layers._pool import (
    AdaptiveMaxPool1d as AdaptiveMaxPool1d,
)
from torchx.layers._pool import (
    AdaptiveMaxPool2d as AdaptiveMaxPool2d,
)
from torchx.layers._pool import (
    AdaptiveMaxPool3d as AdaptiveMaxPool3d,
)
from torchx.layers._pool import (
    AvgPool1d as AvgPool1d,
)
from torchx.layers._pool import (
    AvgPool2d as AvgPool2d,
)
from torchx.layers._pool import (
    AvgPool3d as AvgPool3d,
)
from torchx.layers._pool import (
    FractionalMaxPool2d as FractionalMaxPool2d,
)
from torchx.layers._pool import (
    FractionalMaxPool3d as FractionalMaxPool3d,
)
from torchx.layers._pool import (
    LPPool1d as LPPool1d,
)
from torchx.layers._pool import (
    LPPool2d as LPPool2d,
)
from torchx.layers._pool import (
    LPPool3d as LPPool3d,
)
from torchx.layers._pool import (
    MaxPool1d as MaxPool1d,
)
from torchx.layers._pool import (
    MaxPool2d as MaxPool2d,
)
from torchx.layers._pool import (
    MaxPool3d as MaxPool3d,
)
from torchx.layers._pool import (
    MaxUnpool1d as MaxUnpool1d,
)
from torchx.layers._pool import (
    MaxUnpool2d as MaxUnpool2d,
)
from torchx.layers._pool import (
    MaxUnpool3d as MaxUnpool3d,
)
from torchx.layers._resample import (
    ChannelShuffle as ChannelShuffle,
)
from torchx.layers._resample import (
    Fold as Fold,
)
from torchx.layers._resample import (
    PixelShuffle as PixelShuffle,
)
from torchx.layers._resample import (
    PixelUnshuffle as PixelUnshuffle,
)
from torchx.layers._resample import (
    Unfold as Unfold,
)
from torchx.layers._resample import (
    Upsample as Upsample,
)
from torchx.layers._reshape import (
    Flatten as Flatten,
)
from torchx.layers._reshape import (
    Permute as Permute,
)
from torchx.layers._reshape import (
    Reshape as Reshape,
)
from torchx.layers._reshape import (
    Unflatten as Unflatten,
)
from torchx.layers._sequential import (
    Sequential as Sequential,
)

__all__ = [
    "Checkpoint",
    "Parameter",
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
    "ChannelShuffle",
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
    "CosineSimilarity",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "ELU",
    "Embedding",
    "EmbeddingBag",
    "FeatureAlphaDropout",
    "Flatten",
    "Fold",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "FromInput",
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
    "Layer",
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
    "PairwiseDistance",
    "Permute",
    "PixelShuffle",
    "PixelUnshuffle",
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
    "Unfold",
    "Upsample",
    "View",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

View = Reshape
"""``View`` is ``Reshape`` (which also handles non-contiguous inputs)."""


def __getattr__(name: str) -> object:
    """Look ``name`` up among names registered by installed plugins."""
    if name.startswith("__"):
        raise AttributeError(name)
    from torchx.core import MissingPackageError, current_plugins
    from torchx.core.registry import PROVIDED_BY

    found = current_plugins().registry.exported(name)
    if found is not None:
        return found
    package = PROVIDED_BY.get(name)
    if package is not None:
        raise MissingPackageError(
            f"torchx.layers.{name} is provided by {package}, which is not installed; "
            f"run: pip install {package}"
        )
    raise AttributeError(f"module 'torchx.layers' has no attribute {name!r}")
