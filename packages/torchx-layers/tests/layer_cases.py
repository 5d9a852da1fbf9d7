"""One case per TorchX layer: the layer, its input(s), and the native module it must equal.

The native factory receives the values TorchX should infer, written out by
hand, so every case also checks the inference itself.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

import torchx.layers as L
from torchx.layers._dropout import DropPathModule
from torchx.layers._lambda import LambdaModule
from torchx.layers._merge import (
    ConcatModule,
    MergeModule,
)
from torchx.layers._norm import LayerNorm2dModule
from torchx.layers._parameter import ParameterModule
from torchx.layers._reshape import PermuteModule, ReshapeModule


@dataclass
class Case:
    layer: Callable[[], L.Layer]
    native: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    spec: bool = True
    id: str = field(default="")


def randn(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape),)


def pooled_with_indices(pool: nn.Module, *shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    def make() -> tuple[torch.Tensor, ...]:
        return tuple(pool(torch.randn(*shape)))

    return make


def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


IMAGE = randn(2, 4, 8, 8)
SEQ = randn(2, 4, 9)
VOLUME = randn(2, 2, 6, 6, 6)
PAIR = lambda: (torch.randn(2, 3), torch.randn(2, 3))  # noqa: E731
ATTENTION = lambda: (torch.randn(5, 2, 8),) * 3  # noqa: E731

CASES: list[Case] = [
    Case(lambda: L.Linear(20), lambda: nn.Linear(10, 20), randn(4, 10)),
    Case(lambda: L.Linear(5, bias=False), lambda: nn.Linear(6, 5, bias=False), randn(2, 3, 6)),
    Case(lambda: L.Bilinear(6), lambda: nn.Bilinear(3, 5, 6), lambda: (torch.randn(4, 3), torch.randn(4, 5))),
    Case(lambda: L.Identity(), lambda: nn.Identity(), randn(3, 2)),
    Case(lambda: L.Conv1d(8, 3), lambda: nn.Conv1d(4, 8, 3), SEQ),
    Case(lambda: L.Conv2d(8, 3, stride=2, padding=1), lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1), IMAGE),
    Case(
        lambda: L.Conv2d(6, (3, 1), padding="same", dilation=2),
        lambda: nn.Conv2d(4, 6, (3, 1), padding="same", dilation=2),
        IMAGE,
    ),
    Case(
        lambda: L.Conv2d(8, 3, groups=2, padding_mode="reflect", padding=1),
        lambda: nn.Conv2d(4, 8, 3, groups=2, padding_mode="reflect", padding=1),
        IMAGE,
    ),
    Case(lambda: L.Conv3d(4, 3), lambda: nn.Conv3d(2, 4, 3), VOLUME),
    Case(lambda: L.ConvTranspose1d(3, 3, stride=2), lambda: nn.ConvTranspose1d(4, 3, 3, stride=2), SEQ),
    Case(
        lambda: L.ConvTranspose2d(3, 4, stride=2, padding=1, output_padding=1),
        lambda: nn.ConvTranspose2d(4, 3, 4, stride=2, padding=1, output_padding=1),
        IMAGE,
    ),
    Case(lambda: L.ConvTranspose3d(3, 2), lambda: nn.ConvTranspose3d(2, 3, 2), VOLUME),
    Case(
        lambda: L.ConvTranspose2d(6, (3, 2), groups=2, bias=False),
        lambda: nn.ConvTranspose2d(4, 6, (3, 2), groups=2, bias=False),
        IMAGE,
    ),
    Case(lambda: L.BatchNorm1d(), lambda: nn.BatchNorm1d(4), SEQ),
    Case(lambda: L.BatchNorm1d(momentum=None), lambda: nn.BatchNorm1d(10, momentum=None), randn(3, 10)),
    Case(lambda: L.BatchNorm2d(), lambda: nn.BatchNorm2d(4), IMAGE),
    Case(lambda: L.BatchNorm3d(affine=False), lambda: nn.BatchNorm3d(2, affine=False), VOLUME),
    Case(lambda: L.InstanceNorm1d(affine=True), lambda: nn.InstanceNorm1d(4, affine=True), SEQ),
    Case(lambda: L.InstanceNorm2d(), lambda: nn.InstanceNorm2d(4), IMAGE),
    Case(
        lambda: L.InstanceNorm3d(track_running_stats=True),
        lambda: nn.InstanceNorm3d(2, track_running_stats=True),
        VOLUME,
    ),
    Case(lambda: L.LayerNorm(), lambda: nn.LayerNorm(9), SEQ),
    Case(lambda: L.LayerNorm2d(), lambda: LayerNorm2dModule(4), IMAGE),
    Case(
        lambda: L.LayerNorm2d(eps=1e-5, bias=False),
        lambda: LayerNorm2dModule(4, eps=1e-5, bias=False),
        IMAGE,
    ),
    Case(
        lambda: L.LayerNorm(normalized_shape=(4, 9), bias=False),
        lambda: nn.LayerNorm((4, 9), bias=False),
        SEQ,
    ),
    Case(lambda: L.RMSNorm(), lambda: nn.RMSNorm(9), SEQ),
    Case(lambda: L.GroupNorm(2), lambda: nn.GroupNorm(2, 4), IMAGE),
    Case(lambda: L.LocalResponseNorm(2), lambda: nn.LocalResponseNorm(2), IMAGE),
    Case(lambda: L.PReLU(), lambda: nn.PReLU(), IMAGE),
    Case(lambda: L.PReLU("channels", init=0.1), lambda: nn.PReLU(4, init=0.1), IMAGE),
    Case(lambda: L.ReLU(), lambda: nn.ReLU(), IMAGE),
    Case(lambda: L.ReLU6(), lambda: nn.ReLU6(), IMAGE),
    Case(lambda: L.SELU(), lambda: nn.SELU(), IMAGE),
    Case(lambda: L.SiLU(), lambda: nn.SiLU(), IMAGE),
    Case(lambda: L.Mish(), lambda: nn.Mish(), IMAGE),
    Case(lambda: L.Hardsigmoid(), lambda: nn.Hardsigmoid(), IMAGE),
    Case(lambda: L.Hardswish(), lambda: nn.Hardswish(), IMAGE),
    Case(lambda: L.Sigmoid(), lambda: nn.Sigmoid(), IMAGE),
    Case(lambda: L.Tanh(), lambda: nn.Tanh(), IMAGE),
    Case(lambda: L.LogSigmoid(), lambda: nn.LogSigmoid(), IMAGE),
    Case(lambda: L.Softsign(), lambda: nn.Softsign(), IMAGE),
    Case(lambda: L.Tanhshrink(), lambda: nn.Tanhshrink(), IMAGE),
    Case(lambda: L.Softmax2d(), lambda: nn.Softmax2d(), IMAGE),
    Case(lambda: L.Hardshrink(0.3), lambda: nn.Hardshrink(0.3), IMAGE),
    Case(lambda: L.Softshrink(), lambda: nn.Softshrink(), IMAGE),
    Case(lambda: L.ELU(alpha=0.5), lambda: nn.ELU(alpha=0.5), IMAGE),
    Case(lambda: L.CELU(), lambda: nn.CELU(), IMAGE),
    Case(lambda: L.Softmax(dim=1), lambda: nn.Softmax(dim=1), IMAGE),
    Case(lambda: L.Softmin(dim=-1), lambda: nn.Softmin(dim=-1), IMAGE),
    Case(lambda: L.LogSoftmax(dim=1), lambda: nn.LogSoftmax(dim=1), IMAGE),
    Case(lambda: L.LeakyReLU(0.2), lambda: nn.LeakyReLU(0.2), IMAGE),
    Case(lambda: L.RReLU(), lambda: nn.RReLU(), IMAGE),
    Case(lambda: L.Hardtanh(-2.0, 2.0), lambda: nn.Hardtanh(-2.0, 2.0), IMAGE),
    Case(lambda: L.Softplus(beta=2.0), lambda: nn.Softplus(beta=2.0), IMAGE),
    Case(lambda: L.Threshold(0.1, 20.0), lambda: nn.Threshold(0.1, 20.0), IMAGE),
    Case(lambda: L.GELU("tanh"), lambda: nn.GELU("tanh"), IMAGE),
    Case(lambda: L.GLU(dim=1), lambda: nn.GLU(dim=1), IMAGE),
    Case(lambda: L.Dropout(0.3), lambda: nn.Dropout(0.3), IMAGE),
    Case(lambda: L.Dropout1d(), lambda: nn.Dropout1d(), SEQ),
    Case(lambda: L.Dropout2d(), lambda: nn.Dropout2d(), IMAGE),
    Case(lambda: L.Dropout3d(), lambda: nn.Dropout3d(), VOLUME),
    Case(lambda: L.AlphaDropout(0.2), lambda: nn.AlphaDropout(0.2), IMAGE),
    Case(lambda: L.FeatureAlphaDropout(), lambda: nn.FeatureAlphaDropout(), IMAGE),
    Case(lambda: L.DropPath(0.5), lambda: DropPathModule(0.5), randn(16, 3, 4)),
    Case(lambda: L.DropPath(0.2, scale_by_keep=False), lambda: DropPathModule(0.2, False), IMAGE),
    Case(lambda: L.MaxPool1d(2), lambda: nn.MaxPool1d(2), SEQ),
    Case(
        lambda: L.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        IMAGE,
    ),
    Case(lambda: L.MaxPool3d(2), lambda: nn.MaxPool3d(2), VOLUME),
    Case(lambda: L.AvgPool1d(3), lambda: nn.AvgPool1d(3), SEQ),
    Case(lambda: L.AvgPool2d(2, divisor_override=3), lambda: nn.AvgPool2d(2, divisor_override=3), IMAGE),
    Case(lambda: L.AvgPool3d(2), lambda: nn.AvgPool3d(2), VOLUME),
    Case(lambda: L.AdaptiveMaxPool1d(3), lambda: nn.AdaptiveMaxPool1d(3), SEQ),
    Case(lambda: L.AdaptiveMaxPool2d((3, None)), lambda: nn.AdaptiveMaxPool2d((3, None)), IMAGE),
    Case(lambda: L.AdaptiveMaxPool3d(2), lambda: nn.AdaptiveMaxPool3d(2), VOLUME),
    Case(lambda: L.AdaptiveAvgPool1d(3), lambda: nn.AdaptiveAvgPool1d(3), SEQ),
    Case(lambda: L.AdaptiveAvgPool2d(1), lambda: nn.AdaptiveAvgPool2d(1), IMAGE),
    Case(lambda: L.AdaptiveAvgPool2d((None, 3)), lambda: nn.AdaptiveAvgPool2d((None, 3)), IMAGE),
    Case(lambda: L.AdaptiveAvgPool3d(2), lambda: nn.AdaptiveAvgPool3d(2), VOLUME),
    Case(lambda: L.LPPool1d(2, 3), lambda: nn.LPPool1d(2, 3), SEQ),
    Case(lambda: L.LPPool2d(2.0, 2), lambda: nn.LPPool2d(2.0, 2), IMAGE),
    Case(lambda: L.LPPool3d(1, 2), lambda: nn.LPPool3d(1, 2), VOLUME),
    Case(
        lambda: L.FractionalMaxPool2d(2, output_size=4),
        lambda: nn.FractionalMaxPool2d(2, output_size=4),
        IMAGE,
    ),
    Case(
        lambda: L.FractionalMaxPool3d(2, output_ratio=0.5),
        lambda: nn.FractionalMaxPool3d(2, output_ratio=0.5),
        VOLUME,
    ),
    Case(
        lambda: L.MaxUnpool1d(2),
        lambda: nn.MaxUnpool1d(2),
        pooled_with_indices(nn.MaxPool1d(2, return_indices=True), 2, 4, 8),
    ),
    Case(
        lambda: L.MaxUnpool2d(2),
        lambda: nn.MaxUnpool2d(2),
        pooled_with_indices(nn.MaxPool2d(2, return_indices=True), 2, 4, 8, 8),
    ),
    Case(
        lambda: L.MaxUnpool3d(2),
        lambda: nn.MaxUnpool3d(2),
        pooled_with_indices(nn.MaxPool3d(2, return_indices=True), 2, 2, 4, 4, 4),
    ),
    Case(lambda: L.ReflectionPad1d(2), lambda: nn.ReflectionPad1d(2), SEQ),
    Case(lambda: L.ReflectionPad2d((1, 0, 2, 1)), lambda: nn.ReflectionPad2d((1, 0, 2, 1)), IMAGE),
    Case(lambda: L.ReflectionPad3d(1), lambda: nn.ReflectionPad3d(1), VOLUME),
    Case(lambda: L.ReplicationPad1d(2), lambda: nn.ReplicationPad1d(2), SEQ),
    Case(lambda: L.ReplicationPad2d(1), lambda: nn.ReplicationPad2d(1), IMAGE),
    Case(lambda: L.ReplicationPad3d(1), lambda: nn.ReplicationPad3d(1), VOLUME),
    Case(lambda: L.ZeroPad1d(2), lambda: nn.ZeroPad1d(2), SEQ),
    Case(lambda: L.ZeroPad2d(1), lambda: nn.ZeroPad2d(1), IMAGE),
    Case(lambda: L.ZeroPad3d(1), lambda: nn.ZeroPad3d(1), VOLUME),
    Case(lambda: L.CircularPad1d(2), lambda: nn.CircularPad1d(2), SEQ),
    Case(lambda: L.CircularPad2d(1), lambda: nn.CircularPad2d(1), IMAGE),
    Case(lambda: L.CircularPad3d(1), lambda: nn.CircularPad3d(1), VOLUME),
    Case(lambda: L.ConstantPad1d(2, 0.5), lambda: nn.ConstantPad1d(2, 0.5), SEQ),
    Case(lambda: L.ConstantPad2d(1, -1.0), lambda: nn.ConstantPad2d(1, -1.0), IMAGE),
    Case(lambda: L.ConstantPad3d(1, 2.0), lambda: nn.ConstantPad3d(1, 2.0), VOLUME),
    Case(
        lambda: L.Embedding(10, 4, padding_idx=0),
        lambda: nn.Embedding(10, 4, padding_idx=0),
        lambda: (torch.randint(0, 10, (2, 5)),),
    ),
    Case(
        lambda: L.EmbeddingBag(10, 4, mode="sum"),
        lambda: nn.EmbeddingBag(10, 4, mode="sum"),
        lambda: (torch.randint(0, 10, (2, 5)),),
    ),
    Case(lambda: L.MultiheadAttention(2), lambda: nn.MultiheadAttention(8, 2), ATTENTION),
    Case(
        lambda: L.MultiheadAttention(2, kdim=4, vdim=6, batch_first=True),
        lambda: nn.MultiheadAttention(8, 2, kdim=4, vdim=6, batch_first=True),
        lambda: (torch.randn(2, 5, 8), torch.randn(2, 6, 4), torch.randn(2, 6, 6)),
    ),
    Case(
        lambda: L.TransformerEncoderLayer(2, dim_feedforward=16, dropout=0.0),
        lambda: nn.TransformerEncoderLayer(8, 2, 16, 0.0),
        randn(5, 2, 8),
    ),
    Case(
        lambda: L.TransformerEncoderLayer(
            2, dim_feedforward=16, activation="gelu", batch_first=True, norm_first=True
        ),
        lambda: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True, norm_first=True),
        randn(2, 5, 8),
    ),
    Case(
        lambda: L.TransformerDecoderLayer(2, dim_feedforward=16, dropout=0.0),
        lambda: nn.TransformerDecoderLayer(8, 2, 16, 0.0),
        lambda: (torch.randn(5, 2, 8), torch.randn(6, 2, 8)),
    ),
    Case(lambda: L.Flatten(), lambda: nn.Flatten(), IMAGE),
    Case(lambda: L.Flatten(2, 3), lambda: nn.Flatten(2, 3), IMAGE),
    Case(lambda: L.Unflatten(1, (2, 5)), lambda: nn.Unflatten(1, (2, 5)), randn(3, 10)),
    Case(lambda: L.Reshape((16, -1)), lambda: ReshapeModule((16, -1)), IMAGE),
    Case(lambda: L.Permute((0, 2, 3, 1)), lambda: PermuteModule((0, 2, 3, 1)), IMAGE),
    Case(lambda: L.Add(), lambda: MergeModule("add"), PAIR),
    Case(lambda: L.Subtract(), lambda: MergeModule("subtract"), PAIR),
    Case(lambda: L.Multiply(), lambda: MergeModule("multiply"), PAIR),
    Case(
        lambda: L.Average(),
        lambda: MergeModule("average"),
        lambda: (torch.randn(2, 3), torch.randn(2, 3), torch.randn(1, 3)),
    ),
    Case(lambda: L.Maximum(), lambda: MergeModule("maximum"), PAIR),
    Case(lambda: L.Minimum(), lambda: MergeModule("minimum"), PAIR),
    Case(lambda: L.Concat(), lambda: ConcatModule(1), lambda: (torch.randn(2, 3), torch.randn(2, 5))),
    Case(lambda: L.Concat(dim=0), lambda: ConcatModule(0), PAIR),
    Case(lambda: L.PixelShuffle(2), lambda: nn.PixelShuffle(2), IMAGE),
    Case(lambda: L.PixelUnshuffle(2), lambda: nn.PixelUnshuffle(2), IMAGE),
    Case(lambda: L.ChannelShuffle(2), lambda: nn.ChannelShuffle(2), IMAGE),
    Case(
        lambda: L.Upsample(scale_factor=2.0, mode="bilinear"),
        lambda: nn.Upsample(scale_factor=2.0, mode="bilinear"),
        IMAGE,
    ),
    Case(lambda: L.Upsample(size=(5, 7)), lambda: nn.Upsample(size=(5, 7)), IMAGE),
    Case(lambda: L.Unfold(3, padding=1), lambda: nn.Unfold(3, padding=1), IMAGE),
    Case(lambda: L.Fold((4, 4), 2), lambda: nn.Fold((4, 4), 2), randn(2, 12, 9)),
    Case(lambda: L.CosineSimilarity(), lambda: nn.CosineSimilarity(), PAIR),
    Case(
        lambda: L.PairwiseDistance(p=1.0, keepdim=True),
        lambda: nn.PairwiseDistance(p=1.0, keepdim=True),
        PAIR,
    ),
    Case(lambda: L.Lambda(twice), lambda: LambdaModule(twice), randn(2, 3), spec=False),
    Case(lambda: L.Parameter((1, 1, 4)), lambda: ParameterModule((1, 1, 4)), randn(3, 5, 4)),
    Case(
        lambda: L.Parameter((5, 4), init="trunc_normal", std=0.5),
        lambda: ParameterModule((5, 4), "trunc_normal", 0.5),
        randn(3, 5, 4),
    ),
    Case(
        lambda: L.Parameter((4, 1, 1), init="constant", value=1e-6),
        lambda: ParameterModule((4, 1, 1), "constant", value=1e-6),
        IMAGE,
    ),
]


def describe(layer: L.Layer) -> str:
    """A case's test id: the layer and the arguments given to it, as written
    (``Conv2d(out_channels=8, kernel_size=3, stride=2)``), a function by its name."""
    defaults = inspect.signature(type(layer)).parameters
    given = [
        f"{name}={value.__name__ if inspect.isfunction(value) else repr(value)}"
        for name, value in layer.arguments.items()
        if value != defaults[name].default
    ]
    return f"{type(layer).__name__}({', '.join(given)})"


for case in CASES:
    case.id = describe(case.layer())
_repeated = [name for name, count in Counter(case.id for case in CASES).items() if count > 1]
if _repeated:  # the ids name the tests, so two equal cases would share one
    raise ValueError(f"cases that build the same layer (keep one of each): {_repeated}")
